"""Behavioral cloning alongside reinforcement learning: ML-Agents' ``behavioral_cloning`` section.

After every policy update (PPO and POCA: after the epochs over the buffer; SAC: after every
gradient step, as ML-Agents does), the policy takes ``num_epoch`` shuffled passes over the
demonstrations (``trainers.demonstrations``) in minibatches of ``batch_size`` steps, with an Adam
optimizer of its own on the actor's weights. The loss of a minibatch is:

- continuous actions: the mean squared error between the policy's action and the
  demonstrator's, both as the environment receives them (PPO clips, SAC squashes with ``tanh``;
  ML-Agents compares the unclipped sample with the recorded action, which teaches a PPO policy a
  third of the demonstrated action). With ``continuous_loss: sample`` (the default, as in
  ML-Agents) the policy's action is a sampled one (the reparameterisation trick, so the gradient
  also reaches the spread), which narrows the spread towards none: a clone alone then acts as
  surely as its demonstrator, but on volley self-play was left with no exploration once cloning
  stopped. With ``mean`` it is the policy's mean, so cloning moves where the policy aims and
  leaves its spread to the reinforcement learner, which is how to bootstrap self-play
  (docs/benchmarks.md, "Take-off on volley with behavioral cloning");
- discrete branches: the cross-entropy of the demonstrator's choice under the policy, the
  recorded action masks applied, averaged over branches.

``strength`` scales the optimizer's step size (the trainer's ``learning_rate`` times
``strength``); with ``steps`` > 0 it falls linearly to 0 at ``steps`` trainer steps, after which
cloning stops. With ``network_settings.memory`` a minibatch is ``batch_size // sequence_length``
sequences of one episode's consecutive steps, each started from a zero memory (as ML-Agents), the
padding after an episode's last step left out of the loss.

TensorBoard: ``Losses/Pretraining Loss``, the mean minibatch loss of an update (0 once cloning
has stopped, as ML-Agents writes it).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from trainers.actor import ActionDistribution
from trainers.adam import Adam
from trainers.demonstrations import DemoRows
from trainers.memory import masked_mean
from trainers.policy import TorchPolicy
from trainers.sequences import Sequences, cut_sequences
from trainers.settings import BehavioralCloningSettings, CloningLoss

PRETRAINING_LOSS = "Losses/Pretraining Loss"
#: passes over the demonstrations per update when ``num_epoch`` is unset (ML-Agents' value)
DEFAULT_NUM_EPOCH = 3
#: the step size below which cloning has stopped (ML-Agents' threshold)
_STOPPED = 1e-10


class BehavioralCloning:
    """Cloning the demonstrator's actions into ``policy`` (see the module docstring).

    Args:
        policy: the learner; its actor is trained in place.
        settings: the ``behavioral_cloning`` section.
        demo: the demonstrations' acting rows.
        learning_rate: the trainer's ``learning_rate`` (before its schedule).
        batch_size: the trainer's ``batch_size``, used where ``settings.batch_size`` is unset.
        rng: draws the order of every pass (the trainer's, so a checkpoint keeps it).
        device: where ``policy.actor`` trains.
    """

    def __init__(
        self,
        *,
        policy: TorchPolicy,
        settings: BehavioralCloningSettings,
        demo: DemoRows,
        learning_rate: float,
        batch_size: int,
        rng: np.random.Generator,
        device: str = "cpu",
    ) -> None:
        self.actor = policy.actor
        self.settings = settings
        self.initial_rate = learning_rate * settings.strength
        self.optimizer = Adam(self.actor.parameters(), lr=self.initial_rate)
        self.batch_size = settings.batch_size or batch_size
        self.num_epoch = settings.num_epoch or DEFAULT_NUM_EPOCH
        self.rng = rng
        self.rows = len(demo)
        self.obs = [torch.as_tensor(o, device=device) for o in demo.obs]
        self.continuous = torch.as_tensor(demo.continuous, device=device)
        self.discrete = torch.as_tensor(demo.discrete, device=device)
        masks = demo.action_mask
        self.masks = None if masks is None else torch.as_tensor(masks, device=device)
        memory = policy.network_settings.memory
        self.sequences: Sequences | None = None
        if policy.memory_size and memory is not None:
            self.sequences = cut_sequences(demo.next_index, demo.episode, memory.sequence_length)
        self.device = device

    def learning_rate(self, step: int) -> float:
        """The cloning step size at trainer step ``step``."""
        steps = self.settings.steps
        if steps <= 0:
            return self.initial_rate
        return self.initial_rate * max(1.0 - step / steps, 0.0)

    def _minibatches(self) -> tuple[int, int]:
        """Units (rows, or sequences with memory) per minibatch, and minibatches per pass."""
        length = 1 if self.sequences is None else self.sequences.sequence_length
        units = self.rows if self.sequences is None else len(self.sequences)
        size = min(max(self.batch_size // length, 1), units)
        count = units // size
        if self.settings.samples_per_update > 0:
            count = min(count, max(self.settings.samples_per_update // (size * length), 1))
        return size, count

    def update(self, step: int) -> dict[str, float]:
        """``num_epoch`` passes over the demonstrations at trainer step ``step``; the mean loss."""
        rate = self.learning_rate(step)
        if rate <= _STOPPED:
            return {PRETRAINING_LOSS: 0.0}
        for group in self.optimizer.param_groups:
            group["lr"] = rate
        units = self.rows if self.sequences is None else len(self.sequences)
        size, count = self._minibatches()
        losses = []
        for _ in range(self.num_epoch):
            order = self.rng.permutation(units)
            for start in range(0, count * size, size):
                loss = self.loss(order[start : start + size])
                self.optimizer.zero_grad(set_to_none=True)
                loss.backward()
                self.optimizer.step()
                losses.append(loss.item())
        return {PRETRAINING_LOSS: float(np.mean(losses))}

    def loss(self, chosen: np.ndarray) -> torch.Tensor:
        """The cloning loss on the demonstration rows (sequences, with memory) ``chosen``."""
        valid = None
        if self.sequences is None:
            rows = torch.as_tensor(chosen, device=self.device)
            masks = None if self.masks is None else self.masks[rows]
            dist = self.actor([o[rows] for o in self.obs], masks)
        else:
            picked = self.sequences.rows[chosen]
            valid = torch.as_tensor(picked >= 0, device=self.device).reshape(-1)
            rows = torch.as_tensor(np.where(picked >= 0, picked, 0).reshape(-1), device=self.device)
            masks = None if self.masks is None else self.masks[rows]
            heads = self.actor.head_outputs(
                [o[rows] for o in self.obs], masks, None, self.sequences.sequence_length
            )
            dist = self.actor.distribution(heads)
        return masked_mean(self._row_losses(dist, rows), valid)

    def _row_losses(self, dist: ActionDistribution, rows: torch.Tensor) -> torch.Tensor:
        """Each row's loss: the squared error of the continuous action plus the mean
        cross-entropy of the discrete branches."""
        total = torch.zeros(len(rows), device=self.device)
        if dist.mean is not None:
            assert dist.log_std is not None
            raw = dist.mean
            if self.settings.continuous_loss == CloningLoss.SAMPLE:
                raw = raw + torch.randn_like(dist.mean) * dist.log_std.exp()
            error = dist.env_continuous(raw) - self.continuous[rows]
            total = total + error.pow(2).mean(dim=1)
        if dist.logits:
            chosen = self.discrete[rows]
            surprise = [
                -log_probs.gather(1, chosen[:, branch : branch + 1]).squeeze(1)
                for branch, log_probs in enumerate(dist.log_probs_by_branch)
            ]
            total = total + torch.stack(surprise, dim=1).mean(dim=1)
        return total

    def state_dict(self) -> dict[str, Any]:
        """The cloning optimizer's state (the step it anneals by is the trainer's)."""
        return {"optimizer": self.optimizer.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.optimizer.load_state_dict(state["optimizer"])
