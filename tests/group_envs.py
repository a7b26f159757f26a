"""A cooperative task that needs credit for agents who leave early: ``SacrificeEnv``.

Many arenas, each one group of two agents (``group_id`` = arena + 1). Every step each agent still
in the episode chooses to stay (0) or to leave (1). Leaving ends that agent's episode at once with
no reward. After ``episode_length`` steps the agents still there end the episode with group reward
+1 if exactly one agent of the group left, else 0; if both left, the episode ends without reward.

The agent who leaves never sees the reward its leaving earns: a trainer that credits each agent
only with what arrives in its own episode (PPO) learns that leaving is worth 0 and staying is worth
something, so nobody leaves and the group scores ~0. A trainer whose value target for the leaver
keeps following its group (POCA's bootstrap from the group value) can learn that one agent leaves.

Observations: ``[is first agent, is second agent, steps done / episode_length, has left]``.
Agents keep their ids across episodes (as Unity's do).
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

STAY, LEAVE = 0, 1


class SacrificeEnv(BaseEnv):
    """See module docstring."""

    name = "Pair"
    spec = BehaviorSpec([vector_observation_spec(4)], ActionSpec.create_discrete((2,)))

    def __init__(self, *, num_arenas: int = 32, episode_length: int = 3, seed: int = 0) -> None:
        self.num_arenas = num_arenas
        self.episode_length = episode_length
        self.rng = np.random.default_rng(seed)
        self.active = np.ones((num_arenas, 2), bool)
        self.t = np.zeros(num_arenas, np.int64)
        self.successes: list[bool] = []
        self._steps = self._start(np.arange(num_arenas), terminal=None)

    def _obs(self, arenas: np.ndarray, agents: np.ndarray, left: np.ndarray) -> np.ndarray:
        obs = np.zeros((len(arenas), 4), np.float32)
        obs[np.arange(len(arenas)), agents] = 1.0
        obs[:, 2] = self.t[arenas] / self.episode_length
        obs[:, 3] = left
        return obs

    def _start(
        self, arenas: np.ndarray, terminal: TerminalSteps | None
    ) -> tuple[DecisionSteps, TerminalSteps]:
        self.active[arenas] = True
        self.t[arenas] = 0
        alive_arenas, agents = np.nonzero(self.active)
        decision = DecisionSteps(
            [self._obs(alive_arenas, agents, np.zeros(len(agents)))],
            np.zeros(len(agents), np.float32),
            (alive_arenas * 2 + agents).astype(np.int32),
            [np.zeros((len(agents), 2), bool)],
            (alive_arenas + 1).astype(np.int32),
            np.zeros(len(agents), np.float32),
        )
        if terminal is None:
            terminal = TerminalSteps.empty(self.spec)
            terminal.group_id = np.zeros(0, np.int32)
        return decision, terminal

    @property
    def behavior_specs(self):  # type: ignore[no-untyped-def]
        return {self.name: self.spec}

    def reset(self) -> None:
        self._steps = self._start(np.arange(self.num_arenas), terminal=None)

    def set_actions(self, behavior_name: str, action: ActionTuple) -> None:
        self._action = np.asarray(action.discrete)[:, 0]

    def set_action_for_agent(self, behavior_name, agent_id, action):  # type: ignore[no-untyped-def]
        raise NotImplementedError

    def step(self) -> None:
        decision = self._steps[0]
        arenas, agents = decision.agent_id // 2, decision.agent_id % 2
        leaving = self._action == LEAVE
        self.active[arenas[leaving], agents[leaving]] = False
        self.t += 1
        over = (self.t >= self.episode_length) | ~self.active.any(axis=1)
        success = self.active.sum(axis=1) == 1
        # who ends now: leavers, and everybody still there in an arena whose episode is over
        ends = leaving | over[arenas]
        group_reward = (~leaving & over[arenas] & success[arenas]).astype(np.float32)
        terminal = TerminalSteps(
            [self._obs(arenas[ends], agents[ends], leaving[ends])],
            np.zeros(int(ends.sum()), np.float32),
            np.zeros(int(ends.sum()), bool),
            decision.agent_id[ends],
            decision.group_id[ends],
            group_reward[ends],
        )
        self.successes.extend(success[over].tolist())
        self._steps = self._start(np.flatnonzero(over), terminal)

    def get_steps(self, behavior_name: str) -> tuple[DecisionSteps, TerminalSteps]:
        return self._steps

    def close(self) -> None:
        pass

    def success_rate(self, last: int = 500) -> float:
        """Share of the last ``last`` finished episodes in which exactly one agent left."""
        recent = self.successes[-last:]
        return float(np.mean(recent)) if recent else 0.0
