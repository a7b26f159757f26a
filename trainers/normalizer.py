"""Running mean/variance of vector observations, kept as module buffers so checkpoints carry it."""

from __future__ import annotations

import torch
from torch import nn


class RunningNormalizer(nn.Module):
    """Normalizes inputs to zero mean and unit variance with statistics gathered so far.

    Statistics are merged batch by batch (Chan et al.'s parallel update), so the result does not
    depend on how experience was split into batches. Outputs are clipped to [-5, 5] as in ML-Agents.
    """

    def __init__(self, size: int) -> None:
        super().__init__()
        self.register_buffer("count", torch.zeros((), dtype=torch.float64))
        self.register_buffer("mean", torch.zeros(size, dtype=torch.float64))
        self.register_buffer("m2", torch.zeros(size, dtype=torch.float64))
        self._cache: tuple[torch.Tensor, torch.Tensor] | None = None
        #: reuse the statistics until the next update; off where the buffers are swapped for
        #: every call (``trainers.policy_stack``)
        self.cache = True

    def update(self, batch: torch.Tensor) -> None:
        """Fold a batch ``[n, size]`` into the statistics."""
        n = batch.shape[0]
        if n == 0:
            return
        batch = batch.to(torch.float64)
        batch_mean = batch.mean(dim=0)
        batch_m2 = ((batch - batch_mean) ** 2).sum(dim=0)
        total = self.count + n
        delta = batch_mean - self.mean
        self.mean += delta * (n / total)
        self.m2 += batch_m2 + delta**2 * (self.count * n / total)
        self.count.fill_(total)
        self._cache = None

    def statistics(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean and standard deviation (float32); before any data, 0 and 1 pass inputs through."""
        # torch.where, not an if: stacked policies map this over many normalizers at once
        variance = torch.where(
            self.count > 1, self.m2 / self.count.clamp(min=1.0), torch.ones_like(self.m2)
        )
        return self.mean.to(torch.float32), torch.sqrt(variance + 1e-8).to(torch.float32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.cache:
            mean, std = self.statistics()
        else:
            if self._cache is None:
                self._cache = self.statistics()
            mean, std = self._cache
        return torch.clamp((x - mean) / std, -5.0, 5.0)

    def _load_from_state_dict(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        self._cache = None
        super()._load_from_state_dict(*args, **kwargs)
