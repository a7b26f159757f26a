"""The actor network and its action distribution (continuous, multi-branch discrete, or both).

Continuous actions are Gaussian. PPO sends ``clamp(a, -3, 3) / 3`` to the environment (ML-Agents'
convention); SAC squashes with ``tanh`` and corrects the log-probability. Discrete branches are
categorical; masked actions (``True`` in the environment's action mask) get a logit of -1e8 so they
are never drawn and carry no probability. Log-probabilities come per action *component* (each
continuous dimension, each discrete branch), as ML-Agents' PPO clips its ratio per component; the
joint log-probability is their sum.
"""

from __future__ import annotations

import math

import torch
from mlagents_envs.base_env import ActionSpec, ObservationSpec
from torch import nn

from trainers.memory import MemoryCore
from trainers.networks import ObservationEncoder, linear_layer, mlp
from trainers.sequence_grid import SequenceGrid
from trainers.settings import NetworkSettings

#: log of the standard normal density's normalizer, sqrt(2 pi)
LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)
#: the logit of an action the environment's mask makes unavailable
MASKED_LOGIT = -1.0e8


class ActionDistribution:
    """The action distribution of a batch of agents (one row per agent)."""

    def __init__(
        self,
        *,
        mean: torch.Tensor | None,
        log_std: torch.Tensor | None,
        logits: list[torch.Tensor],
        squash: bool,
    ) -> None:
        self.mean = mean
        self.log_std = log_std
        self.logits = logits
        self.squash = squash
        self.log_probs_by_branch = [torch.log_softmax(branch, dim=-1) for branch in logits]

    def sample(self) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        """Raw continuous actions (before clipping/squashing) and discrete choices."""
        continuous = None
        if self.mean is not None:
            continuous = self.mean + torch.randn_like(self.mean) * self.log_std.exp()
        discrete = None
        if self.logits:
            choices = [torch.multinomial(lp.exp(), 1) for lp in self.log_probs_by_branch]
            discrete = torch.cat(choices, dim=1)
        return continuous, discrete

    def most_likely(self) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        discrete = None
        if self.logits:
            discrete = torch.stack([branch.argmax(dim=-1) for branch in self.logits], dim=1)
        return self.mean, discrete

    def log_prob_components(
        self, continuous: torch.Tensor | None, discrete: torch.Tensor | None
    ) -> torch.Tensor:
        """Log-probability per component ``[n, continuous dims + discrete branches]``."""
        parts = []
        if self.mean is not None and continuous is not None:
            z = (continuous - self.mean) / self.log_std.exp()
            per_dim = -0.5 * z**2 - self.log_std - LOG_SQRT_2PI
            if self.squash:
                per_dim = per_dim - torch.log(1.0 - torch.tanh(continuous) ** 2 + 1e-6)
            parts.append(per_dim)
        if self.logits and discrete is not None:
            for branch, log_probs in enumerate(self.log_probs_by_branch):
                chosen = discrete[:, branch : branch + 1].long()
                parts.append(log_probs.gather(1, chosen))
        return parts[0] if len(parts) == 1 else torch.cat(parts, dim=1)

    def log_prob(
        self, continuous: torch.Tensor | None, discrete: torch.Tensor | None
    ) -> torch.Tensor:
        """Joint log-probability of raw continuous actions and discrete choices."""
        return self.log_prob_components(continuous, discrete).sum(dim=-1)

    def _entropy_parts(self) -> list[torch.Tensor]:
        """``[n, 1]`` per part: the Gaussian's mean entropy per dimension, then each branch's."""
        parts = []
        if self.log_std is not None:
            per_dim = (0.5 + LOG_SQRT_2PI + self.log_std).expand_as(self.mean)
            parts.append(per_dim.mean(dim=-1, keepdim=True))
        for log_probs in self.log_probs_by_branch:
            parts.append(-(log_probs.exp() * log_probs).sum(dim=-1, keepdim=True))
        return parts

    def entropy(self) -> torch.Tensor:
        """Joint entropy per agent (Gaussian part before squashing)."""
        total = 0.0
        if self.log_std is not None:
            per_dim = 0.5 + LOG_SQRT_2PI + self.log_std
            total = total + per_dim.expand_as(self.mean).sum(dim=-1)
        for part in self._entropy_parts()[1 if self.log_std is not None else 0 :]:
            total = total + part.squeeze(-1)
        return total  # type: ignore[return-value]

    def bonus_entropy(self) -> torch.Tensor:
        """The entropy ML-Agents' PPO and POCA maximize, per agent: the sum over the parts of
        the Gaussian's mean entropy per dimension and each branch's entropy."""
        return torch.cat(self._entropy_parts(), dim=1).sum(dim=-1)

    def env_continuous(self, raw: torch.Tensor) -> torch.Tensor:
        """The continuous action the environment receives, in [-1, 1]."""
        return torch.tanh(raw) if self.squash else torch.clamp(raw, -3.0, 3.0) / 3.0


class Actor(nn.Module):
    """Observations (and action masks) → ``ActionDistribution``.

    ``conditional_std``: the Gaussian's spread depends on the observation (SAC) instead of being
    one learned vector (PPO). With ``settings.memory`` an LSTM (``trainers.memory``) sits between
    the body and the heads, as in ML-Agents; it takes and returns a memory per agent.
    """

    def __init__(
        self,
        *,
        obs_specs: list[ObservationSpec],
        action_spec: ActionSpec,
        settings: NetworkSettings,
        squash: bool = False,
        conditional_std: bool = False,
    ) -> None:
        super().__init__()
        self.squash = squash
        self.conditional_std = conditional_std
        self.continuous_size = action_spec.continuous_size
        self.branches = tuple(action_spec.discrete_branches)
        self.encoder = ObservationEncoder(obs_specs, settings)
        self.body = mlp(self.encoder.output_size, settings.hidden_units, settings.num_layers)
        hidden = settings.hidden_units
        self.memory_size = settings.memory.memory_size if settings.memory is not None else 0
        self.memory = MemoryCore(hidden, self.memory_size) if self.memory_size else None
        if self.memory is not None:
            hidden = self.memory.output_size
        if self.continuous_size:
            self.mean_head = linear_layer(hidden, self.continuous_size, gain=0.2)
            if conditional_std:
                self.log_std_head = nn.Linear(hidden, self.continuous_size)
            else:
                self.log_std = nn.Parameter(torch.zeros(self.continuous_size))
        if self.branches:
            self.logits_head = linear_layer(hidden, sum(self.branches), gain=0.1)

    def head_outputs(
        self,
        obs: list[torch.Tensor],
        action_mask: torch.Tensor | None = None,
        memory: torch.Tensor | None = None,
        sequence_length: int = 1,
        grid: SequenceGrid | None = None,
    ) -> dict[str, torch.Tensor]:
        """The network's raw outputs: ``mean`` and ``log_std`` (continuous actions), ``logits``
        (all discrete branches side by side, masked). Plain tensors, so many actors can be mapped
        over at once (``trainers.policy_stack``).

        With memory: ``memory`` ``[sequences, memory_size]`` (zeros when None) starts sequences of
        ``sequence_length`` consecutive rows of ``obs``; ``memory`` is then also among the outputs,
        each sequence's memory after its last row. With a ``grid`` instead, ``obs`` are only the
        real steps of its sequences (``MemoryCore.over_grid``), and no memory is returned.
        """
        hidden = self.body(self.encoder(obs))
        heads: dict[str, torch.Tensor] = {}
        if self.memory is not None and grid is not None:
            assert memory is not None, "a grid's sequences start from their stored memories"
            hidden = self.memory.over_grid(hidden, memory, grid)
        elif self.memory is not None:
            if memory is None:
                rows = hidden.shape[0] // sequence_length
                memory = hidden.new_zeros(rows, self.memory_size)
            hidden, heads["memory"] = self.memory(hidden, memory, sequence_length)
        if self.continuous_size:
            heads["mean"] = self.mean_head(hidden)
            if self.conditional_std:
                heads["log_std"] = torch.clamp(self.log_std_head(hidden), -20.0, 2.0)
            else:
                heads["log_std"] = self.log_std
        if self.branches:
            flat = self.logits_head(hidden)
            if action_mask is not None:
                flat = flat.masked_fill(action_mask, MASKED_LOGIT)
            heads["logits"] = flat
        return heads

    def distribution(self, heads: dict[str, torch.Tensor]) -> ActionDistribution:
        """The action distribution of ``head_outputs``."""
        logits = list(torch.split(heads["logits"], self.branches, dim=1)) if self.branches else []
        return ActionDistribution(
            mean=heads.get("mean"), log_std=heads.get("log_std"), logits=logits, squash=self.squash
        )

    def forward(
        self,
        obs: list[torch.Tensor],
        action_mask: torch.Tensor | None = None,
        memory: torch.Tensor | None = None,
    ) -> ActionDistribution:
        """``action_mask``: bool ``[n, sum(branches)]``, True where an action is unavailable;
        ``memory``: each row's memory (with ``settings.memory``; zeros when None)."""
        return self.distribution(self.head_outputs(obs, action_mask, memory))
