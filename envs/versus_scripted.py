"""A built-in game with one side played by a scripted level: a one-team ``BaseEnv`` to train on.

Plain PPO against a fixed opponent, for any trainer that drives a ``BaseEnv``: ours without
``self_play``, and Unity ML-Agents' own trainers through ``../shared/peers/mlagents_run.py``. The
learner's behaviors are the only ones the environment reports; before every step the scripted
level acts for the other side's agents, inside the environment::

    env_settings:
      env_path: envs.versus_scripted:tennis_vs_medium     # learner: team 0, tennis's `medium` plays team 1

Any ``<game>_vs_<level>`` of ``envs.games.BUILTIN_GAMES`` and ``scripted_levels(game)`` is a
factory of this module (``factory(worker_id=..., seed=...)``), built on first use; from Python,
``VersusScripted(game=..., level=..., learner=...)`` also picks the learner's side.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
import numpy as np
from mlagents_envs.base_env import ActionTuple, BaseEnv, BehaviorSpec, DecisionSteps, TerminalSteps

from envs.games import BUILTIN_GAMES, make_game, scripted_levels, scripted_policy
from envs.vector_game import mix_seed

_SEPARATOR = "_vs_"


class VersusScripted(BaseEnv):
    """``game`` with every behavior off the learner's team played by the scripted ``level``.

    Args:
        game: a built-in game name.
        level: one of ``envs.games.scripted_levels(game)``; it plays with its noise.
        learner: the behavior the learner plays (``"Goalie"``, ``"Tennis?team=1"``); default
            team 0's behaviors. The learner's whole team is exposed.
        worker_id: as every environment factory's; with ``seed``, it seeds the game and the
            level.
        seed: as every environment factory's; with ``worker_id``, it seeds the game and the
            level.
        **game_options: forwarded to the game (``num_arenas``, ``max_episode_steps``...).

    Raises:
        ValueError: an unknown game, level or learner behavior (the message lists the valid
            ones).
    """

    #: ML-Agents' env workers read this attribute of a UnityEnvironment
    academy_capabilities = None

    def __init__(
        self,
        *,
        game: str,
        level: str,
        learner: str | None = None,
        worker_id: int = 0,
        seed: int = 0,
        **game_options: Any,
    ) -> None:
        if level not in scripted_levels(game):
            raise ValueError(
                f"unknown level {level!r} for game {game!r}; valid levels: "
                f"{', '.join(scripted_levels(game))}"
            )
        self.game = make_game(game, worker_id=worker_id, seed=seed, **game_options)
        roles = self.game.ROLES
        team = min(role.team for role in roles)
        if learner is not None:
            name, _, wanted = learner.partition("?team=")
            matching = [
                r for r in roles if r.name == name and (not wanted or r.team == int(wanted))
            ]
            if not matching:
                valid = sorted({r.name for r in roles} | {r.behavior_name for r in roles})
                raise ValueError(
                    f"learner {learner!r} is not a behavior of {game}; choose one of {valid}"
                )
            team = matching[0].team
        mixed = mix_seed(seed, worker_id)
        self.learners = tuple(r.behavior_name for r in roles if r.team == team)
        self.opponents = {
            role.behavior_name: scripted_policy(
                game,
                level,
                behavior=role.name,
                seed=None if mixed is None else mixed + 1 + index,
            )
            for index, role in enumerate(roles)
            if role.team != team
        }

    @property
    def behavior_specs(self) -> Mapping[str, BehaviorSpec]:
        """The learner's behaviors only."""
        specs = self.game.behavior_specs
        return {name: specs[name] for name in self.learners}

    @property
    def num_arenas(self) -> int:
        """Matches played at once."""
        return self.game.num_arenas

    def arena_of(self, behavior_name: str, agent_ids: np.ndarray) -> np.ndarray:
        """The arena index of each of ``agent_ids`` (agents of ``behavior_name``)."""
        return self.game.arena_of(self._learner(behavior_name), agent_ids)

    def reset(self) -> None:
        """Start a new episode in every arena."""
        self.game.reset()

    def step(self) -> None:
        """The scripted level acts for the other side, then the game advances one step."""
        for name, policy in self.opponents.items():
            decision, _ = self.game.get_steps(name)
            self.game.set_actions(name, policy.act(decision.obs, decision.action_mask))
        self.game.step()

    def get_steps(self, behavior_name: str) -> tuple[DecisionSteps, TerminalSteps]:
        """The learner's decision and terminal steps since the last step."""
        return self.game.get_steps(self._learner(behavior_name))

    def set_actions(self, behavior_name: str, action: ActionTuple) -> None:
        """Actions for every agent of one of the learner's behaviors."""
        self.game.set_actions(self._learner(behavior_name), action)

    def set_action_for_agent(self, behavior_name: str, agent_id: int, action: ActionTuple) -> None:
        """The action of one learner agent."""
        self.game.set_action_for_agent(self._learner(behavior_name), agent_id, action)

    def close(self) -> None:
        """Close the game."""
        self.game.close()

    def _learner(self, behavior_name: str) -> str:
        if behavior_name not in self.learners:
            raise KeyError(
                f"unknown behavior {behavior_name!r}; this game exposes only the learner's "
                f"{list(self.learners)} (the scripted side plays inside it)"
            )
        return behavior_name


@attrs.frozen
class VersusScriptedFactory:
    """A picklable factory ``factory(worker_id=..., seed=...)`` of ``VersusScripted``."""

    game: str
    level: str
    learner: str | None = None

    def __call__(self, worker_id: int = 0, seed: int = 0, **game_options: Any) -> VersusScripted:
        return VersusScripted(
            game=self.game,
            level=self.level,
            learner=self.learner,
            worker_id=worker_id,
            seed=seed,
            **game_options,
        )


def factory_name(game: str, level: str) -> str:
    """The attribute of this module that makes ``game`` against ``level``."""
    return f"{game}{_SEPARATOR}{level}"


def __getattr__(name: str) -> VersusScriptedFactory:
    # `module:callable` sources (ours and the ML-Agents peer runner) look factories up by name
    game, separator, level = name.rpartition(_SEPARATOR)
    if separator and game in BUILTIN_GAMES and level in scripted_levels(game):
        return VersusScriptedFactory(game, level)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
