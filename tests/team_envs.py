"""Toy multi-team environments and fakes for the self-play tests.

``TeamArenaEnv`` (``scripts/team_arena.py``, shared with the cost curve) is a tiny vectorised
``BaseEnv`` with several behaviors (teams), one agent of each per arena, each scoring by hitting a
one-hot target; its module docstring gives the rewards.

The rest of the module holds what the unit tests need to drive a ``GhostTrainer`` without an
environment: ``RecordingTrainer`` (a wrapped trainer that records what reaches it),
``GhostRig`` (a ghost trainer wired like ``SelfPlaySession.connect_behaviors`` does) and
``make_batch`` (a ``StepBatch`` from plain lists).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from mlagents_envs.base_env import ActionTuple, BehaviorSpec, DecisionSteps, TerminalSteps

from envs.behavior_id import BehaviorId
from envs.stepping import BehaviorSteps
from ghost.config.settings import BehaviorSettings
from ghost.core.controller import GhostController
from ghost.core.self_play import SelfPlayState
from ghost.core.self_play_host import SelfPlayHost
from ghost.core.settings import SelfPlaySettings
from ghost.running.ghost_trainer import GhostTrainer
from trainers.base import ActionOutput, ExperienceQueue, PolicyQueue, StepBatch, Trainer
from trainers.policy import TorchPolicy
from trainers.run_files.layout import RunLayout
from trainers.settings import NetworkSettings

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

from team_arena import OBS_SIZE, SPEC, TeamArenaEnv  # noqa: E402, F401 - TeamArenaEnv re-exported

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
            trainer=self.inner, kit=SelfPlayHost(controller=self.controller), state=state,
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
