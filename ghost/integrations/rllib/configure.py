"""``ghost_self_play``: one call that gives an RLlib ``PPOConfig`` our self-play.

::

    config = ghost_self_play(PPOConfig(), env="openspiel:connect_four", self_play={"window": 5})
    algorithm = config.build_algo()

It sets the environment (``GhostMultiAgentEnv``), the modules (``"main"`` learns, and so does
each ``self_play.league`` exploiter's ``"exploiter_<index>"``; one frozen
``"ghost_t<team>_<slot>"`` per ghosted team and opponent in play, masked where the game has
action masks), the policy mapping function and ``policies_to_train``, and adds the
``GhostSelfPlayCallback`` beside any callbacks the config already has. Everything else (learning
rate, batch sizes, env runners, ``model_config``) stays as the user configures it.
"""

from __future__ import annotations

import functools
from typing import Any

from ray.rllib.callbacks.callbacks import RLlibCallback
from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
from ray.rllib.core.rl_module.rl_module import RLModuleSpec

from envs.behavior_id import BehaviorId
from ghost.core.settings import SelfPlaySettings
from ghost.exceptions import GhostError
from ghost.integrations.rllib.algorithm import with_self_play_checkpoints
from ghost.integrations.rllib.callback import GhostSelfPlayCallback, SelfPlayOptions
from ghost.integrations.rllib.env import EnvSource, GhostMultiAgentEnv, team_of
from ghost.integrations.rllib.modules import MaskedPPOTorchRLModule
from ghost.integrations.rllib.routing import (
    LEARNER_MODULE,
    exploiter_module,
    ghost_module,
    map_agent_to_module,
)
from ghost.integrations.rllib.settings import SelfPlaySource, self_play_settings


def ghost_self_play(
    config: Any,
    *,
    env: EnvSource,
    self_play: SelfPlaySource = None,
    seed: int | None = None,
    action_mask: bool | None = None,
    max_steps: int | None = None,
    behavior: str | None = None,
) -> Any:
    """Configure ``config`` (an RLlib ``AlgorithmConfig``, e.g. ``PPOConfig()``) to learn ``env``
    by our self-play; returns the same config.

    Args:
        env: an ``--env`` string (``"openspiel:leduc_poker"``, ``"tennis"``...), a BaseEnv or a
            factory ``factory(*, worker_id, seed) -> BaseEnv`` of one arena.
        self_play: the ``self_play:`` keys (a mapping, a ``SelfPlaySettings`` or a YAML path).
        seed: seeds opponent draws and, when given, RLlib and the games
            (``config.debugging(seed=...)``); by default the config's seed, else 0 (the games
            then start from fresh entropy).
        action_mask: end observations with legal-action flags and use
            ``MaskedPPOTorchRLModule`` (None: for turn-based games).
        max_steps: learner steps after which each turn ends at once (None: no limit).
        behavior: the behavior whose ``self_play`` a trainer-config YAML supplies.

    Raises:
        ConfigError: a wrong or unsupported ``self_play`` key.
        GhostError: a game this integration cannot play (one behavior name, two or more teams).
    """
    settings = self_play_settings(self_play, behavior=behavior)
    algo_class = with_self_play_checkpoints(config.algo_class)
    env_config = {"env": env, "action_mask": action_mask}
    behavior_name, teams, specs = _probe_game(env_config, settings, config)
    if seed is None:
        seed = config.seed if config.seed is not None else 0
    else:
        config.debugging(seed=seed)
    options = SelfPlayOptions(
        settings=settings, teams=tuple(teams), seed=seed, behavior_name=behavior_name,
        max_steps=max_steps,
    )  # fmt: skip
    # RLlib's env check steps random actions, which turn-based games refuse when illegal
    config.environment(GhostMultiAgentEnv, env_config=env_config, disable_env_checking=True)
    config.multi_agent(
        policies=list(specs),
        policy_mapping_fn=map_agent_to_module,
        policies_to_train=[LEARNER_MODULE, *_exploiter_modules(settings)],
    )
    config.rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs=specs))
    config.callbacks(callbacks_class=[*_user_callbacks(config), _callback_for(options)])
    config.algo_class = algo_class
    return config


def _probe_game(
    env_config: dict[str, Any], settings: SelfPlaySettings, config: Any
) -> tuple[str, list[int], dict[str, RLModuleSpec]]:
    """One arena of the game, opened to read its behavior name, its teams and the module specs
    of its agents' spaces.

    Raises:
        GhostError: the game is not one behavior name played by two or more teams.
    """
    probe = GhostMultiAgentEnv(env_config)
    try:
        names = {BehaviorId.parse(name).name for name in probe.behavior_names}
        teams = sorted({team_of(str(agent)) for agent in probe.possible_agents})
        specs = _module_specs(probe, teams, settings, config)
    finally:
        probe.close()
    if len(names) != 1 or len(teams) < 2:
        raise GhostError(
            f"RLlib self-play needs one behavior name played by two or more teams; this game "
            f"has behaviors {sorted(names)} and teams {teams}"
        )
    return next(iter(names)), teams, specs


def _exploiter_modules(settings: SelfPlaySettings) -> list[str]:
    return [exploiter_module(index) for index in range(settings.league.exploiters)]


def _module_specs(
    probe: GhostMultiAgentEnv, teams: list[int], settings: SelfPlaySettings, config: Any
) -> dict[str, RLModuleSpec]:
    """The learner, the league's exploiters and every ghost module, with the spaces of the
    game's agents."""
    agent = {team_of(str(a)): str(a) for a in reversed(probe.possible_agents)}
    module_class = MaskedPPOTorchRLModule if probe.action_mask else None

    def spec(team: int) -> RLModuleSpec:
        observation_space, action_space = probe.spaces_of(agent[team])
        return RLModuleSpec(
            module_class=module_class,
            observation_space=observation_space,
            action_space=action_space,
            model_config=config.model_config,
        )

    specs = {LEARNER_MODULE: spec(teams[0])}
    for module_id in _exploiter_modules(settings):
        specs[module_id] = spec(teams[0])
    for team in teams:
        for slot in range(settings.opponents_per_swap):
            specs[ghost_module(team, slot)] = spec(team)
    return specs


def _user_callbacks(config: Any) -> list[Any]:
    """The config's callbacks other than RLlib's empty default and an earlier self-play one."""
    found = config.callbacks_class
    found = found if isinstance(found, list | tuple) else [found]
    return [
        c
        for c in found
        if c is not RLlibCallback and getattr(c, "func", None) is not GhostSelfPlayCallback
    ]


def _callback_for(options: SelfPlayOptions) -> Any:
    return functools.partial(GhostSelfPlayCallback, options)
