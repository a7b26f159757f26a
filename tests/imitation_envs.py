"""Stand-ins for the Unity games of ML-Agents' imitation configs, with ``.demo`` files that fit.

``StandIn`` is a one-team ``BaseEnv`` with one behavior: ``agents`` agents, each observing one
vector of random floats and ending its episode every ``episode_length`` steps, when it is paid
+1 if it mostly took action 0 (the first discrete action, or a first continuous action below 0).
The games' behavior names, observation sizes and actions are the ones ML-Agents' example docs
give (``GAMES``); the factories at the bottom are what ``--env tests.imitation_envs:NAME`` names.
``write_demo`` records episodes of a player who always takes action 0 (-1 on every continuous
action) for any of them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from mlagents_envs.base_env import (
    ActionSpec,
    ActionTuple,
    BaseEnv,
    BehaviorMapping,
    BehaviorSpec,
    DecisionSteps,
    TerminalSteps,
)

from envs.demo_writer import DemoWriter
from envs.specs import vector_observation_spec


def _spec(observations: int, actions: ActionSpec) -> BehaviorSpec:
    return BehaviorSpec([vector_observation_spec(observations)], actions)


#: behavior name: its spec (ML-Agents' docs: Learning-Environment-Examples)
GAMES = {
    "Crawler": _spec(172, ActionSpec.create_continuous(20)),
    "Hallway": _spec(30, ActionSpec.create_discrete((4,))),
    "PushBlock": _spec(70, ActionSpec.create_discrete((7,))),
    "Pyramids": _spec(148, ActionSpec.create_discrete((4,))),
}


class StandIn(BaseEnv):
    """See the module docstring."""

    def __init__(
        self, name: str, *, agents: int = 4, episode_length: int = 16, seed: int = 0
    ) -> None:
        self.name, self.spec = name, GAMES[name]
        self.agents, self.episode_length = agents, episode_length
        self.rng = np.random.default_rng(seed)
        self.ids = np.arange(agents)
        self.reset()

    @property
    def behavior_specs(self) -> BehaviorMapping:
        return BehaviorMapping({self.name: self.spec})

    def reset(self) -> None:
        self.t, self.zeros, self.ended = 0, np.zeros(self.agents), False
        self.obs = self._observe()

    def _observe(self) -> np.ndarray:
        size = self.spec.observation_specs[0].shape[0]
        return self.rng.normal(size=(self.agents, size)).astype(np.float32)

    def set_actions(self, behavior_name: str, action: ActionTuple) -> None:
        if self.spec.action_spec.continuous_size:
            self.zeros += action.continuous[:, 0] < 0
        else:
            self.zeros += action.discrete[:, 0] == 0

    def set_action_for_agent(self, behavior_name: str, agent_id: int, action: ActionTuple) -> None:
        raise NotImplementedError("ghost-trainer sets every agent's actions at once")

    def step(self) -> None:
        self.t += 1
        self.ended = self.t >= self.episode_length
        self.last_obs, self.obs = self.obs, self._observe()
        if self.ended:
            self.score = (self.zeros > self.t / 2).astype(np.float32)
            self.t, self.zeros = 0, np.zeros(self.agents)

    def get_steps(self, behavior_name: str) -> tuple[DecisionSteps, TerminalSteps]:
        n, none = self.agents, np.zeros(0, np.float32)
        group = np.zeros(n, np.int32)
        decision = DecisionSteps(
            [self.obs], np.zeros(n, np.float32), self.ids, None, group, np.zeros(n)
        )
        if not self.ended:
            return decision, TerminalSteps(
                [self.obs[:0]], none, none.astype(bool), self.ids[:0], group[:0], none
            )
        # every agent ends its episode and starts the next at once, as Unity's agents do
        terminal = TerminalSteps(
            [self.last_obs], self.score, np.zeros(n, bool), self.ids, group, np.zeros(n)
        )
        return decision, terminal

    def close(self) -> None:
        pass


def write_demo(path: str | Path, name: str, *, episodes: int = 4, length: int = 16) -> Path:
    """``episodes`` episodes of ``name`` played by the action-0 player, written to ``path``."""
    spec = GAMES[name]
    rng = np.random.default_rng(0)
    size = spec.observation_specs[0].shape[0]
    actions = spec.action_spec
    with DemoWriter(path, name, spec) as writer:
        for _ in range(episodes):
            for t in range(length + 1):
                done = t == length
                continuous = None if done else -np.ones(actions.continuous_size, np.float32)
                writer.add(
                    [rng.normal(size=size).astype(np.float32)],
                    reward=1.0 if done else 0.0,
                    done=done,
                    continuous=continuous,
                )
    return Path(path)


def crawler(worker_id: int = 0, seed: int = 0) -> StandIn:
    return StandIn("Crawler", seed=seed + 1000 * worker_id)


def hallway(worker_id: int = 0, seed: int = 0) -> StandIn:
    return StandIn("Hallway", seed=seed + 1000 * worker_id)


def push_block(worker_id: int = 0, seed: int = 0) -> StandIn:
    return StandIn("PushBlock", seed=seed + 1000 * worker_id)


def pyramids(worker_id: int = 0, seed: int = 0) -> StandIn:
    return StandIn("Pyramids", seed=seed + 1000 * worker_id)
