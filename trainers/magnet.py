"""A magnet for on-policy updates: a slowly moving copy of the actor the policy is pulled toward.

Magnetic mirror descent (Sokota et al., 2023) adds ``strength × KL(π ‖ magnet)`` to the policy loss
and moves the magnet toward the policy a little after every update. In two-player zero-sum games
the pull damps the cycling of plain self-play: the last iterate settles near an equilibrium of the
regularized game instead of chasing the best response to its opponents. Here the magnet's weights
follow the actor's as an exponential moving average (``rate`` of the way after each update); its
observation normalizer is the actor's own, so both see the same inputs.
"""

from __future__ import annotations

import copy
from typing import Any

import torch

from trainers.actor import ActionDistribution, Actor


def kl_divergence(policy: ActionDistribution, magnet: ActionDistribution) -> torch.Tensor:
    """``KL(policy ‖ magnet)`` per row, averaged over action parts like the entropy bonus: the
    Gaussian's mean over dimensions, then each discrete branch."""
    parts = []
    if policy.mean is not None and magnet.mean is not None:
        variance, magnet_variance = (2 * policy.log_std).exp(), (2 * magnet.log_std).exp()
        per_dim = (
            magnet.log_std
            - policy.log_std
            + (variance + (policy.mean - magnet.mean) ** 2) / (2 * magnet_variance)
            - 0.5
        )
        parts.append(per_dim.mean(dim=-1, keepdim=True))
    for mine, theirs in zip(policy.log_probs_by_branch, magnet.log_probs_by_branch, strict=True):
        # masked actions have probability 0 under both: their terms vanish
        parts.append((mine.exp() * (mine - theirs)).sum(dim=-1, keepdim=True))
    return torch.cat(parts, dim=1).mean(dim=-1)


class Magnet:
    """The magnet policy of one learner (see module docstring)."""

    def __init__(self, actor: Actor, *, rate: float) -> None:
        self.actor = copy.deepcopy(actor)
        self.actor.requires_grad_(False)
        self.rate = rate

    def divergence(
        self, policy: ActionDistribution, obs: list[torch.Tensor], mask: torch.Tensor | None
    ) -> torch.Tensor:
        """Mean ``KL(policy ‖ magnet)`` over the rows of ``obs``."""
        with torch.no_grad():
            magnet = self.actor(obs, mask)
        return kl_divergence(policy, magnet).mean()

    def follow(self, actor: Actor) -> None:
        """Move ``rate`` of the way toward ``actor``'s weights; take its normalizer as is."""
        with torch.no_grad():
            for mine, theirs in zip(self.actor.parameters(), actor.parameters(), strict=True):
                mine.lerp_(theirs, self.rate)
            self.actor.encoder.load_state_dict(
                {**self.actor.encoder.state_dict(), **dict(actor.encoder.named_buffers())}
            )

    def state_dict(self) -> dict[str, Any]:
        return self.actor.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.actor.load_state_dict(state)
