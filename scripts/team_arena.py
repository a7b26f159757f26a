"""``TeamArenaEnv``: a toy game of any number of teams, for the cost curve
(``scripts/cost_curve.py``) and the self-play tests (``tests/team_envs.py``).

A tiny vectorised ``BaseEnv`` with several behaviors (teams), one agent of each per arena. Every
step each agent sees a one-hot target among 3 and scores a point when its discrete action hits it.
Step semantics are those of a Unity build where every agent decides every step: an agent whose
episode ended shows up in ``TerminalSteps`` (final observation and reward) *and*, in the same
step, in ``DecisionSteps`` with the first observation of its next episode.

Final rewards (only the last step of an episode pays):

- equal episode lengths (one match per arena): the arena's unique top scorer gets +1, every other
  agent -1; a tie at the top gives everyone 0 (a draw);
- different lengths per behavior: each agent on its own, +1 if it hit more than half its steps,
  else -1;
- ``final_rewards`` given: behavior ``i`` always ends with ``final_rewards[i]`` (for stats tests).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from mlagents_envs.base_env import (
    ActionSpec,
    ActionTuple,
    BaseEnv,
    BehaviorSpec,
    DecisionSteps,
    TerminalSteps,
)

from envs.specs import vector_observation_spec

OBS_SIZE = 3
SPEC = BehaviorSpec([vector_observation_spec(OBS_SIZE)], ActionSpec(0, (3,)))


class TeamArenaEnv(BaseEnv):
    """``num_arenas`` arenas, one agent per behavior in each (see module docstring)."""

    def __init__(
        self,
        *,
        behaviors: Sequence[str] = ("Arena?team=0", "Arena?team=1", "Arena?team=2"),
        num_arenas: int = 4,
        episode_length: int | Sequence[int] = 4,
        final_rewards: Sequence[float] | None = None,
        seed: int = 0,
    ) -> None:
        self.names = list(behaviors)
        roles = len(self.names)
        lengths = (
            [episode_length] * roles if isinstance(episode_length, int) else list(episode_length)
        )
        assert len(lengths) == roles and min(lengths) >= 1
        self.lengths = np.asarray(lengths, dtype=np.int64)
        self.final_rewards = (
            None if final_rewards is None else np.asarray(final_rewards, np.float32)
        )
        self.num_arenas = num_arenas
        self.rng = np.random.default_rng(seed)
        self.resets = 0
        arenas = np.arange(num_arenas)
        # agent id = arena * roles + role: unique over the whole environment
        self.agent_ids = [(arenas * roles + r).astype(np.int32) for r in range(roles)]
        self.t = np.zeros((roles, num_arenas), dtype=np.int64)
        self.hits = np.zeros((roles, num_arenas), dtype=np.int64)
        self.target = np.zeros((roles, num_arenas), dtype=np.int64)
        self._actions: dict[int, np.ndarray] = {}
        self._steps: dict[str, tuple[DecisionSteps, TerminalSteps]] = {}
        self.reset()
        self.resets = 0

    @property
    def behavior_specs(self):  # type: ignore[no-untyped-def]
        return {name: SPEC for name in self.names}

    def arena_of(self, behavior_name: str, agent_ids: np.ndarray) -> np.ndarray:
        return np.asarray(agent_ids, dtype=np.int64) // len(self.names)

    def _obs(self, role: int, arenas: np.ndarray) -> np.ndarray:
        return np.eye(OBS_SIZE, dtype=np.float32)[self.target[role, arenas]]

    def reset(self) -> None:
        self.resets += 1
        self.t[:] = 0
        self.hits[:] = 0
        self.target[:] = self.rng.integers(0, OBS_SIZE, self.target.shape)
        self._actions.clear()
        everything = np.arange(self.num_arenas)
        for role, name in enumerate(self.names):
            self._steps[name] = (
                self._decision(role, np.zeros(self.num_arenas, np.float32)),
                self._terminal(role, everything[:0], np.zeros((0, OBS_SIZE), np.float32), None),
            )

    def set_actions(self, behavior_name: str, action: ActionTuple) -> None:
        self._actions[self.names.index(behavior_name)] = np.asarray(action.discrete)[:, 0]

    def set_action_for_agent(self, behavior_name: str, agent_id: int, action: ActionTuple) -> None:
        raise NotImplementedError("TeamArenaEnv takes whole-batch actions")

    def step(self) -> None:
        roles = len(self.names)
        for role in range(roles):
            chosen = self._actions.get(role, np.zeros(self.num_arenas, np.int64))
            self.hits[role] += chosen == self.target[role]
        self._actions.clear()
        self.t += 1
        ended = self.t >= self.lengths[:, None]
        final = np.zeros((roles, self.num_arenas), np.float32)
        if self.final_rewards is not None:
            final[:] = self.final_rewards[:, None]
        elif (self.lengths == self.lengths[0]).all():
            best = self.hits.max(axis=0)
            top = self.hits == best
            unique = top.sum(axis=0) == 1
            final[:] = np.where(top, 1.0, -1.0)
            final[:, ~unique] = 0.0
        else:
            final[:] = np.where(2 * self.hits > self.lengths[:, None], 1.0, -1.0)
        final_obs = [self._obs(role, np.arange(self.num_arenas)) for role in range(roles)]
        self.t[ended] = 0
        self.hits[ended] = 0
        self.target[:] = self.rng.integers(0, OBS_SIZE, self.target.shape)
        for role, name in enumerate(self.names):
            done = np.flatnonzero(ended[role])
            self._steps[name] = (
                self._decision(role, np.zeros(self.num_arenas, np.float32)),
                self._terminal(role, done, final_obs[role][done], final[role, done]),
            )

    def _decision(self, role: int, rewards: np.ndarray) -> DecisionSteps:
        n = self.num_arenas
        return DecisionSteps(
            [self._obs(role, np.arange(n))],
            rewards.astype(np.float32),
            self.agent_ids[role],
            None,
            np.zeros(n, np.int32),
            np.zeros(n, np.float32),
        )

    def _terminal(
        self, role: int, arenas: np.ndarray, obs: np.ndarray, rewards: np.ndarray | None
    ) -> TerminalSteps:
        k = len(arenas)
        return TerminalSteps(
            [np.asarray(obs, np.float32).reshape(k, OBS_SIZE)],
            np.zeros(k, np.float32) if rewards is None else np.asarray(rewards, np.float32),
            np.zeros(k, bool),
            self.agent_ids[role][arenas],
            np.zeros(k, np.int32),
            np.zeros(k, np.float32),
        )

    def get_steps(self, behavior_name: str) -> tuple[DecisionSteps, TerminalSteps]:
        return self._steps[behavior_name]

    def close(self) -> None:
        pass
