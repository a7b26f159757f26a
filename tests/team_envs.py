"""Toy multi-team environments and fakes for the self-play tests.

``TeamArenaEnv`` is a tiny vectorised ``BaseEnv`` with several behaviors (teams), one agent of each
per arena. Every step each agent sees a one-hot target among 3 and scores a point when its
discrete action hits it. Step semantics are those of a Unity build where every agent decides every
step: an agent whose episode ended shows up in ``TerminalSteps`` (final observation and reward)
*and*, in the same step, in ``DecisionSteps`` with the first observation of its next episode.

Final rewards (only the last step of an episode pays):

- equal episode lengths (one match per arena): the arena's unique top scorer gets +1, every other
  agent -1; a tie at the top gives everyone 0 (a draw);
- different lengths per behavior: each agent on its own, +1 if it hit more than half its steps,
  else -1;
- ``final_rewards`` given: behavior ``i`` always ends with ``final_rewards[i]`` (for stats tests).

The second half of the module holds what the unit tests need to drive a ``GhostTrainer`` without an
environment: ``RecordingTrainer`` (a wrapped trainer that records what reaches it),
``GhostRig`` (a ghost trainer wired like ``SelfPlaySession.connect_behaviors`` does) and
``make_batch`` (a ``StepBatch`` from plain lists).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from mlagents_envs.base_env import (
    ActionSpec,
    ActionTuple,
    BaseEnv,
    BehaviorSpec,
    DecisionSteps,
    TerminalSteps,
)

from envs.behavior_id import BehaviorId
from envs.specs import vector_observation_spec
from envs.stepping import BehaviorSteps
from ghost.config.settings import BehaviorSettings
from ghost.core.controller import GhostController
from ghost.core.self_play import SelfPlayState
from ghost.core.settings import SelfPlaySettings
from ghost.running.ghost_trainer import GhostTrainer
from trainers.base import ActionOutput, ExperienceQueue, PolicyQueue, StepBatch, Trainer
from trainers.policy import TorchPolicy
from trainers.run_layout import RunLayout
from trainers.settings import NetworkSettings

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


# -- fakes for unit tests of the ghost layer ---------------------------------------------------------


def tiny_policy(spec: BehaviorSpec = SPEC) -> TorchPolicy:
    return TorchPolicy(
        behavior_spec=spec, network_settings=NetworkSettings(hidden_units=8, num_layers=1)
    )


class RecordingTrainer(Trainer):
    """A wrapped trainer that learns nothing and records every step batch that reaches it.

    Its trainer step is the number of agent steps (decisions + terminations) it received.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.received: list[StepBatch] = []
        self.policy: TorchPolicy | None = None
        self._step = 0
        self.episodes_ended = 0

    def create_policy(self, behavior_id: BehaviorId, behavior_spec: BehaviorSpec) -> TorchPolicy:
        return tiny_policy(behavior_spec)

    def add_policy(self, behavior_id: BehaviorId, policy: Any) -> None:
        if self.policy is None:
            self.policy = policy

    def get_policy(self, behavior_id: BehaviorId) -> TorchPolicy:
        assert self.policy is not None
        return self.policy

    @property
    def step(self) -> int:
        return self._step

    def advance(self) -> None:
        for queue in self.trajectory_queues:
            for batch in queue.drain():
                self.received.append(batch)
                self._step += batch.agent_steps

    def end_episode(self) -> None:
        self.episodes_ended += 1

    def state_dict(self) -> dict[str, Any]:
        return {"step": self._step}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._step = int(state["step"])


class GhostRig:
    """A ``GhostTrainer`` around a ``RecordingTrainer``, wired like ``connect_behaviors`` does."""

    def __init__(
        self,
        *,
        artifact_dir: Path,
        name: str = "Arena",
        teams: Sequence[int] = (0, 1),
        controller: GhostController | None = None,
        seed: int = 0,
        **self_play: Any,
    ) -> None:
        self.controller = controller if controller is not None else GhostController()
        settings = BehaviorSettings(max_steps=10**9, self_play=SelfPlaySettings(**self_play))
        self.inner = RecordingTrainer(
            behavior_name=name, settings=settings, artifact_dir=Path(artifact_dir) / name
        )
        state = SelfPlayState(behavior_name=name, settings=settings.self_play, seed=seed)
        self.ghost = GhostTrainer(
            trainer=self.inner, controller=self.controller, state=state,
            layout=RunLayout(artifact_dir),
        )  # fmt: skip
        self.name = name
        self.queues: dict[int, ExperienceQueue] = {}
        self.policy_queues: dict[int, PolicyQueue] = {}
        for team in teams:
            self.connect(team)

    def connect(self, team: int) -> None:
        bid = BehaviorId(self.name, team)
        self.ghost.add_policy(bid, self.ghost.create_policy(bid, SPEC))
        self.queues[team] = ExperienceQueue(bid)
        self.ghost.subscribe_trajectory_queue(self.queues[team])
        self.policy_queues[team] = PolicyQueue(bid)
        self.ghost.publish_policy_queue(self.policy_queues[team])

    def put(self, team: int, **batch: Any) -> StepBatch:
        """Queue a step batch of ``team`` (``make_batch`` keywords)."""
        step_batch = make_batch(BehaviorId(self.name, team), **batch)
        self.queues[team].put(step_batch)
        return step_batch

    def opponents(self, team: int):  # type: ignore[no-untyped-def]
        return self.ghost.opponent_policies[BehaviorId(self.name, team)].opponents


def apply_team_change(controller: GhostController, *rigs: GhostRig) -> bool:
    """What ``SelfPlaySession.between_steps`` does: make a requested team change and tell every
    ghost (the session also resets the environments); whether a change happened."""
    change = controller.take_team_change()
    if change is None:
        return False
    for rig in rigs:
        rig.ghost.on_team_change(change)
    return True


def make_batch(
    behavior_id: BehaviorId,
    *,
    decisions: int = 0,
    terminal_ids: Sequence[int] = (),
    rewards: Sequence[float] | None = None,
    group_rewards: Sequence[float] | None = None,
    interrupted: Sequence[bool] | None = None,
    group_ids: Sequence[int] | None = None,
    arenas: Sequence[int] | None = None,
    first_id: int = 0,
) -> StepBatch:
    """A ``StepBatch`` with ``decisions`` deciding agents (ids from ``first_id``) and terminals."""
    k = len(terminal_ids)
    decision = DecisionSteps(
        [np.zeros((decisions, OBS_SIZE), np.float32)],
        np.zeros(decisions, np.float32),
        np.arange(first_id, first_id + decisions, dtype=np.int32),
        None,
        np.zeros(decisions, np.int32),
        np.zeros(decisions, np.float32),
    )
    terminal = TerminalSteps(
        [np.zeros((k, OBS_SIZE), np.float32)],
        np.asarray(rewards if rewards is not None else [0.0] * k, np.float32),
        np.asarray(interrupted if interrupted is not None else [False] * k, bool),
        np.asarray(terminal_ids, np.int32),
        np.asarray(group_ids if group_ids is not None else [0] * k, np.int32),
        np.asarray(group_rewards if group_rewards is not None else [0.0] * k, np.float32),
    )
    steps = BehaviorSteps(
        behavior_id=behavior_id,
        decision=decision,
        terminal=terminal,
        decision_arenas=np.zeros(decisions, np.int64),
        terminal_arenas=np.asarray(arenas if arenas is not None else [0] * k, np.int64),
    )
    output = ActionOutput(
        actions=ActionTuple(discrete=np.zeros((decisions, 1), np.int32)),
        log_probs=np.zeros((decisions, 1), np.float32),
        continuous_raw=np.zeros((decisions, 0), np.float32),
    )
    return StepBatch(steps=steps, output=output)
