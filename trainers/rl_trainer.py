"""Machinery PPO and SAC share: the learner policy, step-batch intake, stats and persistence.

A subclass writes only what makes its algorithm: ``_make_learner`` (critics, optimizers),
``_take`` (store completed transitions), ``_ready`` / ``_update`` and its extra state. Behavioral
cloning (``behavioral_cloning``) is built here for all of them; each algorithm calls
``clone_demonstrations`` where ML-Agents updates it.
"""

from __future__ import annotations

import abc
from typing import Any

import numpy as np
import torch
from mlagents_envs.base_env import BehaviorSpec

from envs.behavior_id import BehaviorId
from trainers.base import Policy, Trainer
from trainers.behavioral_cloning import PRETRAINING_LOSS, BehavioralCloning
from trainers.demonstrations import load_demonstration
from trainers.exceptions import UnsupportedFeatureError
from trainers.policy import TorchPolicy
from trainers.policy_file import policy_record
from trainers.rollout import FinishedEpisodes, TransitionAssembler, Transitions
from trainers.settings import ScheduleType
from trainers.stats import CUMULATIVE_REWARD, EPISODE_LENGTH, EXTRINSIC_REWARD, Aggregation


def decayed(
    schedule: ScheduleType, initial: float, final: float, step: int, max_steps: int
) -> float:
    """A hyperparameter at ``step``: constant, or linear from ``initial`` to ``final``."""
    if schedule is ScheduleType.CONSTANT or max_steps <= 0:
        return initial
    fraction = min(step / max_steps, 1.0)
    return initial + (final - initial) * fraction


class RLTrainer(Trainer):
    """One learner ``TorchPolicy`` per behavior name, fed by transition assemblers."""

    #: continuous actions squashed with tanh (SAC) rather than clipped (PPO)
    squash = False
    conditional_std = False
    #: whether the algorithm trains networks with ``network_settings.memory``
    supports_memory = False

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.hyperparameters = self.settings.hyperparameters
        self.policy: TorchPolicy | None = None
        self.cloning: BehavioralCloning | None = None
        self.assemblers: dict[BehaviorId, TransitionAssembler] = {}
        # one slot numbering for all assemblers: slots key trajectories in the buffers
        self._slot_table: dict[tuple[int, int], int] = {}
        self._step = 0
        self.rng = np.random.default_rng(self.seed)
        torch.manual_seed(self.seed)

    # -- wiring ----------------------------------------------------------------------------
    def create_policy(self, behavior_id: BehaviorId, behavior_spec: BehaviorSpec) -> TorchPolicy:
        if self.settings.network_settings.memory is not None and not self.supports_memory:
            raise UnsupportedFeatureError(
                f"network_settings.memory is not supported with trainer_type "
                f"{self.settings.trainer_type} yet; remove the memory section"
            )
        return self._torch_policy(behavior_spec, self.device)

    def create_opponent_policy(
        self, behavior_id: BehaviorId, behavior_spec: BehaviorSpec
    ) -> TorchPolicy:
        # never trained: its network lives where it acts, and snapshot weights load straight there
        return self._torch_policy(behavior_spec, self.acting_device)

    def _torch_policy(self, behavior_spec: BehaviorSpec, device: str) -> TorchPolicy:
        return TorchPolicy(
            behavior_spec=behavior_spec,
            network_settings=self.settings.network_settings,
            squash=self.squash,
            conditional_std=self.conditional_std,
            device=device,
            acting_device=self.acting_device,
        )

    def add_policy(self, behavior_id: BehaviorId, policy: Policy) -> None:
        assert isinstance(policy, TorchPolicy), "PPO and SAC train TorchPolicy networks"
        self.assemblers[behavior_id] = TransitionAssembler(
            behavior_spec=policy.behavior_spec,
            time_horizon=self.settings.time_horizon,
            slot_table=self._slot_table,
            table_key=len(self.assemblers),
            memory_size=policy.memory_size,
        )
        if self.policy is None:
            self.policy = policy
            self._make_learner(policy)
            self.cloning = self._make_cloning(policy)

    def _make_cloning(self, policy: TorchPolicy) -> BehavioralCloning | None:
        """Behavioral cloning of the ``behavioral_cloning`` section's demonstrations, if any."""
        settings = self.settings.behavioral_cloning
        if settings is None:
            return None
        where = f"behaviors.{self.behavior_name}.behavioral_cloning.demo_path"
        return BehavioralCloning(
            policy=policy,
            settings=settings,
            demo=load_demonstration(settings.demo_path, policy.behavior_spec, where=where),
            learning_rate=self.hyperparameters.learning_rate,
            batch_size=self.hyperparameters.batch_size,
            rng=self.rng,
            device=self.device,
        )

    @property
    def reward_signals_key(self) -> str:
        """The key path of this behavior's ``reward_signals``, for errors about them."""
        return f"behaviors.{self.behavior_name}.reward_signals"

    def get_policy(self, behavior_id: BehaviorId) -> TorchPolicy:
        assert self.policy is not None, "add_policy comes first"
        return self.policy

    # -- training --------------------------------------------------------------------------
    @property
    def step(self) -> int:
        return self._step

    def advance(self) -> None:
        for queue in self.trajectory_queues:
            assembler = self.assemblers.get(queue.behavior_id)
            for batch in queue.drain():
                if assembler is None:
                    continue
                transitions, episodes = assembler.add(batch)
                if episodes is not None and queue.counts_steps:
                    self._record_episodes(episodes)
                if transitions is not None and self.should_still_train:
                    if queue.counts_steps:
                        self._step += len(transitions)
                    if not self.training:
                        continue
                    self._take(transitions)
                    if self._ready():
                        self._update()
                        assert self.policy is not None
                        self.policy.weights_changed()
                        for policy_queue in self.policy_queues:
                            policy_queue.put(self.get_policy(policy_queue.behavior_id))
        self.stats.maybe_write(self._step)

    def _record_episodes(self, episodes: FinishedEpisodes) -> None:
        self.stats.record(CUMULATIVE_REWARD, episodes.rewards, Aggregation.HISTOGRAM)
        self.stats.add(EPISODE_LENGTH, episodes.lengths)
        self._record_extrinsic(episodes.rewards)

    def _record_extrinsic(self, rewards: np.ndarray) -> None:
        """``Policy/Extrinsic Reward``: the finished episodes' ``rewards`` as the extrinsic
        signal weighs them (times its ``strength``); nothing without an extrinsic signal."""
        if "extrinsic" in self.settings.reward_signals:
            self.stats.add(EXTRINSIC_REWARD, rewards * self.settings.reward_strength)

    def end_episode(self) -> None:
        for assembler in self.assemblers.values():
            assembler.reset()
        self._on_environment_reset()

    def forget_partial(self, behavior_id: BehaviorId) -> None:
        assembler = self.assemblers.get(behavior_id)
        if assembler is None:
            return
        assembler.reset()
        self._on_environment_reset(assembler.slots())

    def _on_environment_reset(self, slots: np.ndarray | None = None) -> None:
        """Stored experience must not link to what comes after the reset (of the agents in
        ``slots`` only, when given)."""

    def scaled_rewards(self, transitions: Transitions) -> np.ndarray:
        return transitions.rewards * self.settings.reward_strength

    def clone_demonstrations(self, updates: int = 1) -> None:
        """``updates`` behavioral cloning updates (none without ``behavioral_cloning``), their
        mean loss recorded."""
        if self.cloning is None or updates < 1:
            return
        losses = [self.cloning.update(self._step)[PRETRAINING_LOSS] for _ in range(updates)]
        self.stats.add(PRETRAINING_LOSS, float(np.mean(losses)))

    def record_losses(self, losses: dict[str, float]) -> None:
        for key, value in losses.items():
            self.stats.add(key, value)

    # -- algorithm hooks -------------------------------------------------------------------
    @abc.abstractmethod
    def _make_learner(self, policy: TorchPolicy) -> None:
        """Build critics and optimizers around the learner policy."""

    @abc.abstractmethod
    def _take(self, transitions: Transitions) -> None:
        """Store newly completed transitions."""

    @abc.abstractmethod
    def _ready(self) -> bool:
        """Whether enough experience is stored for an update."""

    @abc.abstractmethod
    def _update(self) -> None:
        """Improve the policy from stored experience."""

    @abc.abstractmethod
    def _learner_state(self) -> dict[str, Any]:
        """Critics, optimizers and buffers."""

    @abc.abstractmethod
    def _load_learner_state(self, state: dict[str, Any]) -> None: ...

    # -- persistence -----------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        assert self.policy is not None
        return {
            "policy": policy_record(self.policy, self.policy.get_weights()),
            "step": self._step,
            "learner": self._learner_state(),
            "assemblers": {str(b): a.state_dict() for b, a in self.assemblers.items()},
            "slot_table": dict(self._slot_table),
            "rng": {"numpy": self.rng.bit_generator.state, "torch": torch.get_rng_state()},
            **({"cloning": self.cloning.state_dict()} if self.cloning is not None else {}),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        assert self.policy is not None
        self.policy.load_weights(state["policy"]["weights"])
        self._step = int(state["step"])
        self._load_learner_state(state["learner"])
        if self.cloning is not None and "cloning" in state:  # cloning added at resume starts fresh
            self.cloning.load_state_dict(state["cloning"])
        self._slot_table.clear()
        self._slot_table.update(state["slot_table"])
        for behavior_id, assembler in self.assemblers.items():
            if str(behavior_id) in state["assemblers"]:
                assembler.load_state_dict(state["assemblers"][str(behavior_id)])
        self.rng.bit_generator.state = state["rng"]["numpy"]
        torch.set_rng_state(state["rng"]["torch"])
        self.stats.set_start(self._step)
