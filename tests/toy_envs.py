"""Tiny vectorised BaseEnvs with known optimal returns, for trainer tests.

- ``TargetEnv`` (discrete): each step shows a one-hot target among 3; choosing it pays +1.
  One random *wrong* action is masked every step. Episodes last ``episode_length`` steps, so the
  best cumulative reward is ``episode_length``; a random policy gets about a half of it.
- ``ReachEnv`` (continuous): each step shows a target in [-1, 1]^2; the reward is
  ``1 - mean |action - target|``; best ``episode_length``, random policy about 0.3 of it.
"""

from __future__ import annotations

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


class _ToyEnv(BaseEnv):
    name = "Toy"

    def __init__(self, *, num_agents: int = 16, episode_length: int = 5, seed: int = 0) -> None:
        self.num_agents = num_agents
        self.episode_length = episode_length
        self.rng = np.random.default_rng(seed)
        self.agent_ids = np.arange(num_agents, dtype=np.int32)
        self.t = np.zeros(num_agents, dtype=np.int64)
        self._action: ActionTuple | None = None
        self._terminal_mask = np.zeros(num_agents, bool)
        self._rewards = np.zeros(num_agents, np.float32)
        self._new_targets()
        self._terminal_obs = self._obs()

    # what a subclass defines
    def _new_targets(self) -> None: ...
    def _obs(self) -> np.ndarray: ...
    def _reward(self, action: ActionTuple) -> np.ndarray: ...
    def _mask(self) -> list[np.ndarray] | None:
        return None

    @property
    def behavior_specs(self):  # type: ignore[no-untyped-def]
        return {self.name: self.spec}

    def reset(self) -> None:
        self.t[:] = 0
        self._rewards[:] = 0
        self._terminal_mask[:] = False
        self._new_targets()

    def set_actions(self, behavior_name: str, action: ActionTuple) -> None:
        self._action = action

    def set_action_for_agent(self, behavior_name: str, agent_id: int, action: ActionTuple) -> None:
        raise NotImplementedError("toy envs take whole-batch actions")

    def step(self) -> None:
        assert self._action is not None, "set_actions before step"
        self._rewards = self._reward(self._action).astype(np.float32)
        self.t += 1
        self._terminal_mask = self.t >= self.episode_length
        self._terminal_obs = self._obs()
        self.t[self._terminal_mask] = 0
        self._new_targets()
        self._action = None

    def get_steps(self, behavior_name: str) -> tuple[DecisionSteps, TerminalSteps]:
        done = self._terminal_mask
        n = self.num_agents
        decision = DecisionSteps(
            [self._obs()],
            np.where(done, 0.0, self._rewards).astype(np.float32),
            self.agent_ids,
            self._mask(),
            np.zeros(n, np.int32),
            np.zeros(n, np.float32),
        )
        terminal = TerminalSteps(
            [self._terminal_obs[done]],
            self._rewards[done],
            np.zeros(int(done.sum()), bool),
            self.agent_ids[done],
            np.zeros(int(done.sum()), np.int32),
            np.zeros(int(done.sum()), np.float32),
        )
        return decision, terminal

    def close(self) -> None:
        pass


class TargetEnv(_ToyEnv):
    name = "Target"
    spec = BehaviorSpec([vector_observation_spec(3)], ActionSpec(0, (3,)))

    def _new_targets(self) -> None:
        self.target = self.rng.integers(0, 3, self.num_agents)
        wrong = (self.target + self.rng.integers(1, 3, self.num_agents)) % 3
        self.masked = np.zeros((self.num_agents, 3), bool)
        self.masked[np.arange(self.num_agents), wrong] = True
        self.chosen_masked = getattr(self, "chosen_masked", 0)

    def _obs(self) -> np.ndarray:
        return np.eye(3, dtype=np.float32)[self.target]

    def _mask(self) -> list[np.ndarray]:
        return [self.masked.copy()]

    def _reward(self, action: ActionTuple) -> np.ndarray:
        chosen = action.discrete[:, 0]
        self.chosen_masked += int(self.masked[np.arange(self.num_agents), chosen].sum())
        return (chosen == self.target).astype(np.float32)


class ReachEnv(_ToyEnv):
    name = "Reach"
    spec = BehaviorSpec([vector_observation_spec(2)], ActionSpec(2, ()))

    def _new_targets(self) -> None:
        self.target = self.rng.uniform(-0.8, 0.8, (self.num_agents, 2)).astype(np.float32)

    def _obs(self) -> np.ndarray:
        return self.target.copy()

    def _reward(self, action: ActionTuple) -> np.ndarray:
        return 1.0 - np.abs(action.continuous - self.target).mean(axis=1)


def make_target_env(worker_id: int = 0, seed: int = 0) -> TargetEnv:
    return TargetEnv(seed=seed + 1000 * worker_id)


def make_reach_env(worker_id: int = 0, seed: int = 0) -> ReachEnv:
    return ReachEnv(seed=seed + 1000 * worker_id)


class TwoTeamTargetEnv(BaseEnv):
    """``TargetEnv`` played by two teams at once (``Target?team=0`` and ``Target?team=1``).

    Each team's agents solve their own copy of the task; ``recent_accuracy(team)`` is the share
    of correct choices over the last ``window`` steps, so a test can see how well the policy
    *acting* for each team plays, learning or ghosted.
    """

    def __init__(self, *, num_agents: int = 8, seed: int = 0, window: int = 300) -> None:
        self.teams = {
            f"Target?team={team}": TargetEnv(num_agents=num_agents, seed=seed + team)
            for team in (0, 1)
        }
        self.window = window
        self.history: dict[str, list[float]] = {name: [] for name in self.teams}

    @property
    def behavior_specs(self):  # type: ignore[no-untyped-def]
        return {name: TargetEnv.spec for name in self.teams}

    def reset(self) -> None:
        for env in self.teams.values():
            env.reset()

    def set_actions(self, behavior_name: str, action: ActionTuple) -> None:
        env = self.teams[behavior_name]
        correct = (action.discrete[:, 0] == env.target).mean()
        self.history[behavior_name] = (self.history[behavior_name] + [float(correct)])[
            -self.window :
        ]
        env.set_actions(behavior_name, action)

    def set_action_for_agent(self, behavior_name: str, agent_id: int, action: ActionTuple) -> None:
        raise NotImplementedError("toy envs take whole-batch actions")

    def step(self) -> None:
        for env in self.teams.values():
            env.step()

    def get_steps(self, behavior_name: str) -> tuple[DecisionSteps, TerminalSteps]:
        return self.teams[behavior_name].get_steps(behavior_name)

    def recent_accuracy(self, team: int) -> float:
        return float(np.mean(self.history[f"Target?team={team}"]))

    def close(self) -> None:
        pass
