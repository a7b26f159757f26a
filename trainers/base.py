"""The trainer plugin interface: what ``ghost/`` wraps and what a third-party trainer implements.

Vocabulary
----------
- **behavior id**: ``envs.behavior_id.BehaviorId`` (``Name?team=N``). A trainer serves one behavior
  *name*; it may hand out policies for several teams of that name.
- **step batch**: what one behavior id saw in one environment step, for all its agents at once
  (``StepBatch``): the environment's ``DecisionSteps``/``TerminalSteps`` plus the actions the acting
  policy chose. Experience travels in step batches, never agent by agent, so the hot path stays
  vectorised.
- **trainer step**: one agent step of experience the trainer has consumed (``Trainer.step``).
- **policy**: observations in, actions out (``Policy``). A trainer *updates* a policy; a ghost only
  needs a policy to *act*.

Data flow: the environment produces step batches → an ``ExperienceQueue`` per behavior id → the
trainer's ``advance()`` consumes them and updates its policy → the trainer publishes the acting
policy to each ``PolicyQueue`` → the run loop lets that policy act in the environment.

Writing a trainer plugin
------------------------
Subclass ``Trainer`` (and ``Policy`` if ``trainers.policy.TorchPolicy`` does not fit), subclass
``trainers.settings.HyperparamSettings`` for the ``hyperparameters`` section, and expose a function
returning ``({"my_type": MyTrainer}, {"my_type": MyHyperparams})`` in the ``ghost.trainer_type``
entry-point group of your package's ``setup.py``::

    entry_points={"ghost.trainer_type": ["my_type=my_pkg.plugin:get_types"]}

A behavior with ``trainer_type: my_type`` is then trained by ``MyTrainer`` in
``trainers.training_loop.TrainingLoop``; with ``self_play`` the ghost trainer wraps it without any
change to it.
"""

from __future__ import annotations

import abc
from collections import deque
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import torch
from mlagents_envs.base_env import ActionSpec, ActionTuple, BehaviorSpec

from envs.behavior_id import BehaviorId
from envs.stepping import BehaviorSteps
from trainers.settings import TrainerSettings
from trainers.stats import StatsReporter

Weights = dict[str, torch.Tensor]


@attrs.frozen
class ActionOutput:
    """A policy's answer for a batch of agents.

    ``actions`` go to the environment; ``continuous_raw`` are the continuous actions before
    clipping or squashing (what the log-probabilities were computed for); ``log_probs`` are
    ``[agents, components]``: one per continuous dimension and per discrete branch
    (``action_components(spec)`` of them).
    """

    actions: ActionTuple
    log_probs: np.ndarray
    continuous_raw: np.ndarray
    #: with memory: each agent's memory *before* this decision (training starts sequences there)
    memories: np.ndarray | None = None


def action_components(spec: ActionSpec) -> int:
    """Continuous dimensions plus discrete branches: the columns of ``ActionOutput.log_probs``."""
    return spec.continuous_size + len(spec.discrete_branches)


@attrs.frozen
class StepBatch:
    """One environment step of one behavior id: what the agents saw and what they were told to do.

    ``output`` is aligned with ``steps.decision`` (one row per deciding agent).
    """

    steps: BehaviorSteps
    output: ActionOutput

    @property
    def behavior_id(self) -> BehaviorId:
        return self.steps.behavior_id

    @property
    def agent_steps(self) -> int:
        """How many agent steps this batch holds (decisions and terminations)."""
        return len(self.steps.decision) + len(self.steps.terminal)


class Policy(abc.ABC):
    """Observations in, actions out, for a batch of agents of one behavior spec.

    A policy with memory (``memory_size`` > 0) carries a state per agent from one decision to the
    next: its ``sample`` and ``act`` then take ``agent_ids`` (one per row), and ``forget`` drops
    the state of agents whose episode ended.
    """

    behavior_spec: BehaviorSpec
    #: floats of state carried per agent between decisions (0: a policy without memory)
    memory_size: int = 0

    def forget(self, agent_ids: np.ndarray | None = None) -> None:  # noqa: B027 - optional hook
        """Drop the memory of ``agent_ids`` (every agent when None); nothing without memory."""

    @abc.abstractmethod
    def sample(
        self, obs: list[np.ndarray], action_mask: list[np.ndarray] | None = None
    ) -> ActionOutput:
        """Draw actions for a batch of agents during training (with their log-probabilities)."""

    @abc.abstractmethod
    def act(
        self,
        obs: list[np.ndarray],
        action_mask: list[np.ndarray] | None = None,
        deterministic: bool = False,
    ) -> ActionTuple:
        """Actions for a batch of agents (``deterministic`` takes the most likely action)."""

    @abc.abstractmethod
    def get_weights(self) -> Weights:
        """A detached copy of everything that defines how this policy acts (normalizer included)."""

    @abc.abstractmethod
    def load_weights(self, weights: Weights) -> None:
        """Act from now on with ``weights`` (as returned by ``get_weights``)."""

    @abc.abstractmethod
    def save(self, path: Path, weights: Weights | None = None) -> None:
        """Write a policy file ``trainers.load_policy`` can read (``weights`` default: current)."""


class ArenaPolicy(Policy):
    """A policy whose answer depends on the arena each agent plays in (several opponents at once)."""

    @abc.abstractmethod
    def sample_in_arenas(
        self,
        obs: list[np.ndarray],
        action_mask: list[np.ndarray] | None,
        arenas: np.ndarray,
        agent_ids: np.ndarray | None = None,
    ) -> ActionOutput:
        """Like ``sample``, with the arena key of every agent (and its id, with memory)."""


class ExperienceQueue:
    """Step batches of one behavior id on their way from the environment to a trainer.

    ``counts_steps=False``: extra experience (another team's, acted by a copy of the learner):
    the trainer learns from it, but it adds no trainer steps and no episode statistics.
    """

    def __init__(self, behavior_id: BehaviorId, *, counts_steps: bool = True) -> None:
        self.behavior_id = behavior_id
        self.counts_steps = counts_steps
        self._items: deque[StepBatch] = deque()

    def put(self, batch: StepBatch) -> None:
        self._items.append(batch)

    def drain(self) -> list[StepBatch]:
        """Everything queued so far, oldest first; the queue is empty afterwards."""
        items = list(self._items)
        self._items.clear()
        return items

    def __len__(self) -> int:
        return len(self._items)


class PolicyQueue:
    """The policy that should act for one behavior id, as published by its trainer."""

    def __init__(self, behavior_id: BehaviorId) -> None:
        self.behavior_id = behavior_id
        self._latest: Policy | None = None

    def put(self, policy: Policy) -> None:
        self._latest = policy

    def take(self) -> Policy | None:
        """The newest published policy since the last call, or None."""
        policy, self._latest = self._latest, None
        return policy


class Trainer(abc.ABC):
    """Turns step batches of one behavior name into an improving policy.

    Life cycle, driven by the run loop: ``create_policy`` + ``add_policy`` for each behavior id the
    environment reports, ``subscribe_trajectory_queue`` / ``publish_policy_queue`` to connect it,
    then ``advance()`` after every environment step until ``should_still_train`` is false.
    ``state_dict``/``load_state_dict`` must capture everything needed to continue exactly.
    Statistics go to ``self.stats`` (a ``StatsReporter`` writing the behavior's TensorBoard
    events and console summaries).
    """

    def __init__(
        self,
        *,
        behavior_name: str,
        settings: TrainerSettings,
        artifact_dir: Path,
        seed: int = 0,
        device: str = "cpu",
        acting_device: str | None = None,
        training: bool = True,
    ) -> None:
        self.behavior_name = behavior_name
        self.settings = settings
        self.artifact_dir = Path(artifact_dir)
        self.seed = seed
        #: where updates run; ``acting_device`` (default: the same) is where policies decide
        self.device = device
        self.acting_device = acting_device or device
        self.training = training
        self.trajectory_queues: list[ExperienceQueue] = []
        self.policy_queues: list[PolicyQueue] = []
        self.stats = StatsReporter(
            behavior_name=behavior_name,
            log_dir=self.artifact_dir if training else None,
            summary_freq=settings.summary_freq,
            max_steps=settings.max_steps,
        )
        self.stats.training = training

    # -- wiring ----------------------------------------------------------------------------
    @abc.abstractmethod
    def create_policy(self, behavior_id: BehaviorId, behavior_spec: BehaviorSpec) -> Policy:
        """A new policy with this trainer's architecture for ``behavior_spec`` (not yet added)."""

    def create_opponent_policy(
        self, behavior_id: BehaviorId, behavior_spec: BehaviorSpec
    ) -> Policy:
        """A policy of this trainer's architecture that only ever acts (a frozen opponent's
        network, loaded with snapshot weights); by default ``create_policy``'s."""
        return self.create_policy(behavior_id, behavior_spec)

    @abc.abstractmethod
    def add_policy(self, behavior_id: BehaviorId, policy: Policy) -> None:
        """Train ``policy`` for ``behavior_id`` (a trainer trains one policy per behavior name)."""

    @abc.abstractmethod
    def get_policy(self, behavior_id: BehaviorId) -> Policy:
        """The policy this trainer trains for ``behavior_id``."""

    def acting_policy(self, behavior_id: BehaviorId) -> Policy:
        """The policy that acts for ``behavior_id`` in the environment (default: the trained one)."""
        return self.get_policy(behavior_id)

    def export_policy(self, behavior_id: BehaviorId) -> Policy:
        """The policy written as the run's final ``<Behavior>.pt`` (default: the trained one)."""
        return self.get_policy(behavior_id)

    def subscribe_trajectory_queue(self, queue: ExperienceQueue) -> None:
        """Consume the step batches put on ``queue``."""
        self.trajectory_queues.append(queue)

    def publish_policy_queue(self, queue: PolicyQueue) -> None:
        """Publish the acting policy of ``queue.behavior_id`` there after each update."""
        self.policy_queues.append(queue)

    # -- training --------------------------------------------------------------------------
    @property
    @abc.abstractmethod
    def step(self) -> int:
        """Trainer steps consumed so far."""

    @property
    def should_still_train(self) -> bool:
        return self.step < self.settings.max_steps

    @abc.abstractmethod
    def advance(self) -> None:
        """Consume queued step batches; update the policy when enough experience is in."""

    @abc.abstractmethod
    def end_episode(self) -> None:
        """Forget partial trajectories (the environments are about to be reset)."""

    def forget_partial(self, behavior_id: BehaviorId) -> None:  # noqa: B027 - optional hook
        """Forget ``behavior_id``'s partial trajectories: its experience stops arriving for a
        while, and what arrives later must not continue them. Nothing by default."""

    # -- persistence -----------------------------------------------------------------------
    @abc.abstractmethod
    def state_dict(self) -> dict[str, Any]:
        """Everything needed to resume exactly: weights, optimizer, normalizer, step, schedules."""

    @abc.abstractmethod
    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from a ``state_dict``."""

    def after_checkpoint(self) -> None:  # noqa: B027 - optional hook
        """Called once a checkpoint set naming this trainer's state is complete on disk."""

    def close(self) -> None:
        """Flush stats and release resources."""
        self.stats.close()
