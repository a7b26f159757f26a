"""``PolicyStack``: several ``TorchPolicy`` networks of one architecture acting in one call.

A ghosted team with ``opponents_per_swap`` > 1 plays a different snapshot in each arena. Calling
each snapshot's network on its own rows pays the fixed cost of a forward pass (Python, operator
dispatch, the numpy round trip) once per snapshot and step, which dominates for small networks and
few rows each. The stack holds the snapshots' weights side by side and maps the actor over them
with ``torch.func.vmap``: one batched forward pass and one draw per step, however many snapshots.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import numpy as np
import torch
from torch import nn
from torch.func import functional_call, stack_module_state, vmap

from trainers.actor import ActionDistribution, Actor
from trainers.base import ActionOutput
from trainers.normalizer import RunningNormalizer
from trainers.policy import TorchPolicy, mask_tensor, sampled_output, to_tensors


class _Heads(nn.Module):
    """Calls ``Actor.head_outputs`` as ``forward`` (``functional_call`` calls ``forward``)."""

    def __init__(self, actor: Actor) -> None:
        super().__init__()
        self.actor = actor

    def forward(
        self, obs: list[torch.Tensor], action_mask: torch.Tensor | None
    ) -> dict[str, torch.Tensor]:
        return self.actor.head_outputs(obs, action_mask)


def stackable(policies: Sequence[object]) -> bool:
    """Whether ``policies`` can form a ``PolicyStack`` (all ``TorchPolicy``, one architecture)."""
    if len(policies) < 2 or not all(isinstance(p, TorchPolicy) for p in policies):
        return False
    if any(p.memory_size for p in policies):  # type: ignore[attr-defined]
        return False  # each network keeps its own agents' memories
    shapes = [{k: v.shape for k, v in p.actor.state_dict().items()} for p in policies]  # type: ignore[attr-defined]
    first = policies[0]
    return all(s == shapes[0] for s in shapes) and all(
        p.squash == first.squash and p.conditional_std == first.conditional_std  # type: ignore[attr-defined]
        for p in policies
    )


class PolicyStack:
    """The current weights of ``policies`` (copied at construction) as one batched policy.

    Args:
        policies: at least two ``TorchPolicy`` of one architecture (see ``stackable``).
    """

    def __init__(self, policies: Sequence[TorchPolicy]) -> None:
        self.size = len(policies)
        self.device = policies[0].acting_device
        actors = [p.acting_actor for p in policies]
        self._actor = actors[0]
        with torch.no_grad():
            params, buffers = stack_module_state([_Heads(actor) for actor in actors])
        self._params = {k: v.detach() for k, v in params.items()}
        self._buffers = buffers
        skeleton = copy.deepcopy(_Heads(actors[0])).to("meta")
        for module in skeleton.modules():
            if isinstance(module, RunningNormalizer):
                module.cache = False

        def heads(params, buffers, obs, action_mask):  # type: ignore[no-untyped-def]
            return functional_call(skeleton, (params, buffers), (obs, action_mask))

        self._heads_masked = vmap(heads)
        self._heads_unmasked = vmap(heads, in_dims=(0, 0, 0, None))

    def sample(
        self, obs: list[np.ndarray], action_mask: list[np.ndarray] | None, members: np.ndarray
    ) -> ActionOutput:
        """Actions for each row of ``obs``, drawn from policy ``members[row]`` of the stack."""
        with torch.inference_mode():
            return sampled_output(self.distribution(obs, action_mask, members))

    def distribution(
        self, obs: list[np.ndarray], action_mask: list[np.ndarray] | None, members: np.ndarray
    ) -> ActionDistribution:
        """Row ``i``'s action distribution under policy ``members[i]`` of the stack."""
        members = np.asarray(members, dtype=np.int64)
        n = len(members)
        # each row's position among the rows of its member: rows are laid out member by member,
        # padded to the busiest member's count, so the stack sees [size, width, ...] tensors
        order = np.argsort(members, kind="stable")
        counts = np.bincount(members, minlength=self.size)
        width = int(counts.max())
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        rank = np.empty(n, dtype=np.int64)
        rank[order] = np.arange(n) - starts[members[order]]
        flat = torch.as_tensor(members * width + rank, device=self.device)
        member_of_row = torch.as_tensor(members, device=self.device)

        def padded(rows: torch.Tensor) -> torch.Tensor:
            out = rows.new_zeros((self.size * width, *rows.shape[1:]))
            out[flat] = rows
            return out.reshape(self.size, width, *rows.shape[1:])

        stacked_obs = [padded(o) for o in to_tensors(obs, self.device)]
        mask = mask_tensor(action_mask, self.device)
        if mask is None:
            heads = self._heads_unmasked(self._params, self._buffers, stacked_obs, None)
        else:
            heads = self._heads_masked(self._params, self._buffers, stacked_obs, padded(mask))
        per_row = {}
        for name, value in heads.items():
            if value.dim() == 2:  # one vector per member (PPO's log_std), not one per row
                per_row[name] = value[member_of_row]
            else:
                per_row[name] = value.reshape(self.size * width, -1)[flat]
        return self._actor.distribution(per_row)
