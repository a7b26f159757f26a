"""What a run refuses before its first step, once the environment has named its behaviors.

``check_start`` is called by training (``SelfPlaySession.settings_for``) and by ``ghost-learn
--check`` alike, so a check that passes is a run that starts, and both say the same words. It
matches the behaviors to the configuration (``ghost.config.behavior_matching``: self-play turned
on where teams oppose, presets filled in) and refuses, naming the key and the fix:

- a ``trainer_type`` that is not registered;
- a network with memory and a key it cannot train with (the magnet, ``learn_from_latest``, the
  average policy), with where the value came from: the settings are checked as matched, so a key a
  preset set or another behavior's ``self_play`` section lent counts too;
- observations the networks cannot encode (``trainers.networks.check_observations``);
- ``learn_from_latest`` with a trainer that cannot drop a team's partial trajectories;
- fixed opponents that cannot be loaded, and a scheduled evaluation outside a built-in game;
- curriculum lessons measured by an Elo or a win rate the behavior does not have.

The run folder's rules (``--resume``, ``--force``, ``--initialize-from``) are
``RunDirectory.check``'s. Left to training, because they need its networks or its files: a
checkpoint that cannot be read on ``--resume``, and a policy file (``init_path``,
``--initialize-from``) whose network differs or that the earlier run lacks.

Demonstrations (each ``demo_path``) are read by training when it builds the trainers, so
``check_start`` leaves them alone; ``ghost-learn --check`` reads them too
(``check_demonstrations``), which refuses what training would, in the same words.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from envs.behavior_id import BehaviorId
from envs.games import BUILTIN_GAMES
from ghost.config.behavior_matching import match_behaviors
from ghost.config.curriculum import Curriculum
from ghost.config.memory_support import memory_conflict, memory_refusal
from ghost.config.origins import value_origin
from ghost.config.settings import BehaviorSettings, RunOptions
from ghost.core.settings import SelfPlaySettings
from ghost.exceptions import ConfigError, UnsupportedFeatureError
from ghost.running.fixed_opponents import build_fixed_opponents
from ghost.running.learn_from_latest import check_learn_from_latest
from ghost.running.scheduled_evaluation import check_evaluation_game
from trainers import registry
from trainers.demonstrations import load_demonstration
from trainers.networks import check_observations
from trainers.settings import GAILSettings


def builtin_game(options: RunOptions) -> str | None:
    """The built-in game a run trains, if it is one."""
    env_path = options.env_settings.env_path
    return env_path if env_path in BUILTIN_GAMES else None


def check_start(
    options: RunOptions, behavior_specs: Mapping[BehaviorId, Any]
) -> dict[str, BehaviorSettings]:
    """The settings each behavior of the environment trains with, once everything training
    refuses at its start has been checked (see the module docstring).

    Args:
        options: the run configuration, as ``resolve_options`` returns it.
        behavior_specs: what the environment reports after its first reset.

    Raises:
        ConfigError: a setting that cannot train (``UnsupportedFeatureError``,
            ``TrainerTypeError`` are ConfigErrors too).
        EnvironmentSpecError: the environment's behaviors do not fit the configuration.
    """
    matched = match_behaviors(options, behavior_specs)
    training = not options.checkpoint_settings.inference
    game = builtin_game(options)
    curriculum = Curriculum(options.environment_parameters or {})
    specs: dict[str, Any] = {}  # every team of a name reports the same (match_behaviors checks)
    for behavior_id in sorted(behavior_specs):
        specs.setdefault(behavior_id.name, behavior_specs[behavior_id])
    for name, settings in matched.items():
        trainer_class = registry.trainer_class(settings.trainer_type)
        spec = specs[name]
        _check_memory(options, name, settings)
        _check_network(name, settings, spec)
        self_play = settings.self_play
        if self_play is not None:
            check_learn_from_latest(name, self_play, trainer_class)
            _check_fixed_opponents(name, self_play, spec, game)
            if training and self_play.evaluation is not None:
                check_evaluation_game(name, game)
        names = None if self_play is None else [f.name for f in self_play.fixed_opponents]
        problem = curriculum.self_play_problem(name, names)
        if problem is not None:
            raise ConfigError(problem)
    return matched


def check_demonstrations(
    settings: Mapping[str, BehaviorSettings], behavior_specs: Mapping[BehaviorId, Any]
) -> None:
    """Each behavior's demonstrations (``reward_signals.<key>.demo_path`` of a GAIL signal, then
    ``behavioral_cloning.demo_path``, as training reads them) can be read and fit its spec.

    Args:
        settings: each behavior's settings, as ``check_start`` returns them.
        behavior_specs: what the environment reports after its first reset.

    Raises:
        DemoFileError: a ``demo_path`` that names nothing, or demonstrations that cannot be read
            or do not fit the behavior (the message starts with the key path).
    """
    specs = {behavior_id.name: spec for behavior_id, spec in behavior_specs.items()}
    for name, behavior in settings.items():
        paths = [
            (f"reward_signals.{key}", signal.demo_path)
            for key, signal in behavior.reward_signals.items()
            if isinstance(signal, GAILSettings)
        ]
        if behavior.behavioral_cloning is not None:
            paths.append(("behavioral_cloning", behavior.behavioral_cloning.demo_path))
        for key, path in paths:
            load_demonstration(path, specs[name], where=f"behaviors.{name}.{key}.demo_path")


def _check_memory(options: RunOptions, name: str, settings: BehaviorSettings) -> None:
    conflict = memory_conflict(settings)
    if conflict is not None:
        origin = value_origin(options, name, conflict.key, settings)
        raise UnsupportedFeatureError(
            f"behaviors.{name}.network_settings.memory: {memory_refusal(conflict, origin)}"
        )


def _check_network(name: str, settings: BehaviorSettings, spec: Any) -> None:
    try:
        check_observations(list(spec.observation_specs), settings.network_settings)
    except UnsupportedFeatureError as error:
        raise UnsupportedFeatureError(f"behaviors.{name}.network_settings: {error}") from None


def _check_fixed_opponents(
    name: str, self_play: SelfPlaySettings, spec: Any, game: str | None
) -> None:
    """Each fixed opponent loads (its scripted level or policy file) and fits the behavior."""
    try:
        build_fixed_opponents(self_play, behavior_name=name, behavior_spec=spec, builtin_game=game)
    except ConfigError as error:
        raise ConfigError(f"behaviors.{name}.self_play.fixed_opponents: {error}") from None
