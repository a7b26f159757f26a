"""Tiny ``BaseEnv`` implementations for the worker tests.

Factories are module-level so they pickle under the ``spawn``/``forkserver`` start methods; bind
options with ``functools.partial``.
"""

from __future__ import annotations

import time

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

# Observation columns of EchoEnv.
WORKER, SEED, STEP, LOCAL_ID, ECHO_WORKER, ECHO_ID, ECHO_DISCRETE, NOISE = range(8)
OBS_SIZE = 8
CONTINUOUS_SIZE = 2
BRANCHES = (3,)


class InjectedCrash(RuntimeError):
    """What EchoEnv raises when told to crash."""


def _spec(obs_size: int) -> BehaviorSpec:
    return BehaviorSpec(
        observation_specs=[vector_observation_spec(obs_size)],
        action_spec=ActionSpec(CONTINUOUS_SIZE, BRANCHES),
    )


class EchoEnv(BaseEnv):
    """Agents whose observation echoes the last action they received.

    Behaviors ``Echo?team=0`` and ``Echo?team=1`` with ``agents_per_team`` agents each (local ids
    ``team * agents_per_team + k``), plus ``Solo`` (one agent, id 0) on worker ``solo_worker``.
    Each step every agent asks for a decision with probability 3/4 (seeded), so row counts differ
    between workers. Every ``episode_length`` steps all agents end an episode (terminal steps, then
    a decision with the same id). Arena of agent ``k`` is ``k % arenas``; team 0 agents are in group
    ``arena + 1``, team 1 agents in no group. Team 0 gets action masks (except on worker
    ``unmasked_worker``), team 1 does not.

    ``crash_at_step``: raise ``InjectedCrash`` from ``step()`` number ``crash_at_step`` (counted
    from 1 after each reset), only when ``seed == crash_seed`` (``crash_seed=None``: always).
    ``crash_in_reset``: raise from ``reset()`` instead, under the same seed rule.
    ``slow_worker``: the worker whose every ``step()`` first sleeps ``slow_step_s`` seconds.
    """

    def __init__(
        self,
        *,
        worker_id: int,
        seed: int,
        agents_per_team: int = 3,
        arenas: int = 2,
        episode_length: int = 4,
        solo_worker: int | None = None,
        unmasked_worker: int | None = None,
        crash_at_step: int | None = None,
        crash_in_reset: bool = False,
        crash_seed: int | None = None,
        slow_worker: int | None = None,
        slow_step_s: float = 0.0,
    ) -> None:
        self.worker_id = worker_id
        self.seed = seed
        self.agents_per_team = agents_per_team
        self.arenas = arenas
        self.episode_length = episode_length
        self.crash_at_step = crash_at_step
        self.crash_in_reset = crash_in_reset
        self.crash_seed = crash_seed
        self.step_delay_s = slow_step_s if slow_worker == worker_id else 0.0
        self.rng = np.random.default_rng(seed)
        self.names = ["Echo?team=0", "Echo?team=1"]
        if solo_worker == worker_id:
            self.names.append("Solo")
        self.masked = unmasked_worker != worker_id
        self.specs = {name: _spec(OBS_SIZE) for name in self.names}
        self.step_count = 0
        self.closed = False
        self.echo: dict[str, np.ndarray] = {}
        self.deciders: dict[str, np.ndarray] = {}
        self.ended = False

    def _ids(self, name: str) -> np.ndarray:
        if name == "Solo":
            return np.zeros(1, dtype=np.int32)
        team = int(name[-1])
        return np.arange(self.agents_per_team, dtype=np.int32) + team * self.agents_per_team

    def _crash_armed(self) -> bool:
        return self.crash_seed is None or self.seed == self.crash_seed

    @property
    def behavior_specs(self):
        return self.specs

    def reset(self) -> None:
        if self.crash_in_reset and self._crash_armed():
            raise InjectedCrash(f"injected reset crash in worker {self.worker_id}")
        self.step_count = 0
        self.ended = False
        self.echo = {name: np.full((len(self._ids(name)), 3), -1.0) for name in self.names}
        self.deciders = {name: self._ids(name) for name in self.names}

    def step(self) -> None:
        if self.step_delay_s:
            time.sleep(self.step_delay_s)
        self.step_count += 1
        if self.crash_at_step == self.step_count and self._crash_armed():
            raise InjectedCrash(f"injected step crash in worker {self.worker_id}")
        self.ended = self.step_count % self.episode_length == 0
        for name in self.names:
            ids = self._ids(name)
            asks = self.rng.random(len(ids)) < 0.75
            self.deciders[name] = ids if self.ended else ids[asks]

    def set_actions(self, behavior_name: str, action: ActionTuple) -> None:
        rows = self.deciders[behavior_name] - self._ids(behavior_name)[0]
        assert action.continuous.shape == (len(rows), CONTINUOUS_SIZE), action.continuous.shape
        assert action.discrete.shape == (len(rows), len(BRANCHES)), action.discrete.shape
        self.echo[behavior_name][rows, :2] = action.continuous
        self.echo[behavior_name][rows, 2] = action.discrete[:, 0]

    def set_action_for_agent(self, behavior_name, agent_id, action) -> None:
        raise NotImplementedError

    def _obs(self, name: str, ids: np.ndarray) -> np.ndarray:
        rows = ids - self._ids(name)[0]
        obs = np.empty((len(ids), OBS_SIZE), dtype=np.float32)
        obs[:, WORKER] = self.worker_id
        obs[:, SEED] = self.seed
        obs[:, STEP] = self.step_count
        obs[:, LOCAL_ID] = ids
        obs[:, ECHO_WORKER : ECHO_DISCRETE + 1] = self.echo[name][rows]
        obs[:, NOISE] = self.rng.random(len(ids))
        return obs

    def get_steps(self, behavior_name: str) -> tuple[DecisionSteps, TerminalSteps]:
        name = behavior_name
        ids = self.deciders[name]
        team0 = name == "Echo?team=0"
        decision = DecisionSteps(
            obs=[self._obs(name, ids)],
            reward=self.rng.random(len(ids)).astype(np.float32),
            agent_id=ids,
            action_mask=[self.rng.random((len(ids), BRANCHES[0])) < 0.3]
            if team0 and self.masked
            else None,
            group_id=self._groups(name, ids),
            group_reward=np.full(len(ids), 0.5, dtype=np.float32),
        )
        ended = ids if self.ended else ids[:0]
        terminal = TerminalSteps(
            obs=[self._obs(name, ended)],
            reward=np.ones(len(ended), dtype=np.float32),
            interrupted=np.full(len(ended), self.step_count % 8 == 0),
            agent_id=ended,
            group_id=self._groups(name, ended),
            group_reward=np.zeros(len(ended), dtype=np.float32),
        )
        return decision, terminal

    def _groups(self, name: str, ids: np.ndarray) -> np.ndarray:
        if name != "Echo?team=0":
            return np.zeros(len(ids), dtype=np.int32)
        return (self.arena_of(name, ids) + 1).astype(np.int32)

    def arena_of(self, behavior_name: str, agent_ids: np.ndarray) -> np.ndarray:
        if behavior_name == "Solo":
            return np.zeros(len(agent_ids), dtype=np.int64)
        return (np.asarray(agent_ids) % self.agents_per_team) % self.arenas

    def close(self) -> None:
        self.closed = True


def make_echo_env(*, worker_id: int, seed: int, **options) -> EchoEnv:
    """``SubprocessStepper`` factory; ``options`` go to ``EchoEnv``."""
    return EchoEnv(worker_id=worker_id, seed=seed, **options)


def make_broken_env(*, worker_id: int, seed: int) -> EchoEnv:
    """A factory that always fails to build its environment."""
    raise InjectedCrash(f"cannot build environment {worker_id}")


def raise_on_create(worker_id: int = 0, seed: int = 0) -> EchoEnv:
    """``--env`` factory whose constructor fails (a missing level file, say)."""
    raise RuntimeError("level file arena-3.json not found")


def make_crash_after_60(worker_id: int = 0, seed: int = 0) -> EchoEnv:
    """An ``Echo`` game (one arena, self-play) whose 60th step raises."""
    return EchoEnv(worker_id=worker_id, seed=seed, arenas=1, crash_at_step=60)


class ParameterEchoEnv(EchoEnv):
    """An EchoEnv that takes environment parameters and raises on ``{"crash": -1}``."""

    def set_environment_parameters(self, values) -> None:
        if values.get("crash") == -1:
            raise InjectedCrash(f"injected parameter crash in worker {self.worker_id}")
        self.parameters = dict(values)


def make_parameter_env(*, worker_id: int, seed: int) -> ParameterEchoEnv:
    """Factory of ``ParameterEchoEnv``."""
    return ParameterEchoEnv(worker_id=worker_id, seed=seed)
