"""A two-team BaseEnv that can bend the BaseEnv contract (legally) or break it (on purpose).

``ContractEnv``: behaviors ``Duel?team=0`` and ``Duel?team=1``, ``agents`` agents per team, two
discrete branches (3, 2), 4 observations. An episode lasts ``episode_length`` steps; then every
agent gets a terminal step, team 0 winning (+1/-1) when its agents chose action 0 more often.

Legal quirks, which must train:
  ``no_mask``: ``action_mask=None`` although there are several discrete branches;
  ``idle_steps``: team 1 has no deciding agents on every third step;
  ``churn``: agents leave mid-episode without a terminal step and new ids join.
Faults (from step ``fault_step`` on), which must end the run with a clear error:
  ``nan_obs``, ``inf_reward``, ``wrong_obs_shape``, ``wrong_mask_shape``, ``spec_change``,
  ``wrong_types``, ``raise``.

The factories at the bottom are what ``--env tests.contract_envs:NAME`` names.
"""

from __future__ import annotations

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

from envs.specs import vector_observation_spec

OBS_SIZE = 4
BRANCHES = (3, 2)
FAULTS = ("nan_obs", "inf_reward", "wrong_obs_shape", "wrong_mask_shape", "spec_change",
          "wrong_types", "raise", "refilled_ids")  # fmt: skip


def _spec(obs_size: int = OBS_SIZE) -> BehaviorSpec:
    return BehaviorSpec([vector_observation_spec(obs_size)], ActionSpec(0, BRANCHES))


class ContractEnv(BaseEnv):
    """See the module docstring."""

    def __init__(
        self,
        *,
        seed: int = 0,
        agents: int = 2,
        episode_length: int = 8,
        no_mask: bool = False,
        idle_steps: bool = False,
        churn: bool = False,
        fault: str | None = None,
        fault_step: int = 40,
    ) -> None:
        assert fault is None or fault in FAULTS, fault
        self.rng = np.random.default_rng(seed)
        self.agents = agents
        self.episode_length = episode_length
        self.no_mask, self.idle_steps, self.churn = no_mask, idle_steps, churn
        self.fault, self.fault_step = fault, fault_step
        self.names = [f"Duel?team={team}" for team in (0, 1)]
        self._specs = {name: _spec() for name in self.names}
        self.steps_taken = 0
        self.next_id = 0
        self._start_episode()

    @property
    def faulty(self) -> bool:
        return self.fault is not None and self.steps_taken >= self.fault_step

    # -- the game ------------------------------------------------------------------------------
    def _start_episode(self) -> None:
        self.t = 0
        if self.fault == "refilled_ids" and self.faulty:  # new ids written into the old array
            for name in self.names:
                self.ids[name][:] = self._new_ids(self.agents)
        else:
            self.ids = {name: self._new_ids(self.agents) for name in self.names}
        self.zeros = {name: 0 for name in self.names}
        self.terminal: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def _new_ids(self, count: int) -> np.ndarray:
        ids = np.arange(self.next_id, self.next_id + count)
        self.next_id += count
        return ids

    @property
    def behavior_specs(self) -> BehaviorMapping:
        if self.fault == "spec_change" and self.faulty:
            return BehaviorMapping({name: _spec(OBS_SIZE + 1) for name in self.names})
        return BehaviorMapping(self._specs)

    def reset(self) -> None:
        self._start_episode()

    def set_actions(self, behavior_name: str, action: ActionTuple) -> None:
        self.zeros[behavior_name] += int((action.discrete[:, 0] == 0).sum())

    def set_action_for_agent(self, behavior_name: str, agent_id: int, action: ActionTuple) -> None:
        raise NotImplementedError

    def step(self) -> None:
        if self.fault == "raise" and self.faulty:
            raise RuntimeError("the simulation diverged")
        self.steps_taken += 1
        self.t += 1
        self.terminal = {}
        if self.t >= self.episode_length:
            first, second = (self.zeros[name] for name in self.names)
            score = 1.0 if first > second else -1.0
            ended = {name: self.ids[name] for name in self.names}
            self._start_episode()
            self.terminal = {
                self.names[0]: (ended[self.names[0]], np.full(self.agents, score, np.float32)),
                self.names[1]: (ended[self.names[1]], np.full(self.agents, -score, np.float32)),
            }
        elif self.churn and self.t % 3 == 0:
            for name in self.names:  # one agent leaves without a terminal step, a new one joins
                ids = self.ids[name]
                self.ids[name] = np.concatenate([ids[1:], self._new_ids(1)])

    def get_steps(self, behavior_name: str) -> tuple[DecisionSteps, TerminalSteps]:
        if self.fault == "wrong_types" and self.faulty:
            return [], []  # type: ignore[return-value]
        ids = self.ids[behavior_name]
        if self.idle_steps and behavior_name.endswith("=1") and self.t % 3 == 1:
            ids = ids[:0]
        n = len(ids)
        obs = self.rng.normal(size=(n, OBS_SIZE)).astype(np.float32)
        reward = np.zeros(n, np.float32)
        if self.faulty and self.fault == "nan_obs" and n:
            obs[0, 1] = np.nan
        if self.faulty and self.fault == "inf_reward" and n:
            reward[0] = np.inf
        if self.faulty and self.fault == "wrong_obs_shape":
            obs = obs[:, :-1]
        masks = None
        if not self.no_mask:
            masks = [np.zeros((n, size), bool) for size in BRANCHES]
            if self.faulty and self.fault == "wrong_mask_shape":
                masks = masks[:1]
        group = np.zeros(n, np.int32)
        decision = DecisionSteps([obs], reward, ids, masks, group, np.zeros(n, np.float32))
        ended, rewards = self.terminal.get(
            behavior_name, (np.zeros(0, np.int64), np.zeros(0, np.float32))
        )
        m = len(ended)
        terminal = TerminalSteps(
            [np.zeros((m, OBS_SIZE), np.float32)], rewards, np.zeros(m, bool), ended,
            np.zeros(m, np.int32), np.zeros(m, np.float32),
        )  # fmt: skip
        return decision, terminal

    def close(self) -> None:
        pass


def healthy(worker_id: int = 0, seed: int = 0) -> ContractEnv:
    return ContractEnv(seed=seed)


def all_quirks(worker_id: int = 0, seed: int = 0) -> ContractEnv:
    """Every legal quirk at once."""
    return ContractEnv(seed=seed, no_mask=True, idle_steps=True, churn=True)


def _faulty(fault: str):  # type: ignore[no-untyped-def]
    def make(worker_id: int = 0, seed: int = 0) -> ContractEnv:
        return ContractEnv(seed=seed, fault=fault)

    make.__name__ = make.__qualname__ = fault
    return make


nan_obs = _faulty("nan_obs")
inf_reward = _faulty("inf_reward")
wrong_obs_shape = _faulty("wrong_obs_shape")
wrong_mask_shape = _faulty("wrong_mask_shape")
spec_change = _faulty("spec_change")
wrong_types = _faulty("wrong_types")
raises = _faulty("raise")
refilled_ids = _faulty("refilled_ids")
