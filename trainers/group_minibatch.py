"""Group-aware minibatches for MA-POCA's critic: each group step's arithmetic done once.

A buffer row is one agent's step; a group of ``k`` agents gives ``k`` rows per step that see the
same members. Row by row, the critic encodes every member's observation for every row (``k²``
encodings per group step) and computes the group's value once per row (``k`` times) although
it is one number. ``GroupIndex`` knows which rows share a group step, so that

- an epoch's minibatches take whole group steps, in random order (``epoch_order``): a group's
  rows land in the same minibatch (except where a minibatch boundary cuts one);
- in a minibatch (``GroupIndex.minibatch``) each distinct row is encoded once and each group's
  value is computed once, then handed to each of its rows; each row keeps its own baseline (its
  own observation, its mates' observations with their actions).

For pairs that is about 1.7× fewer critic FLOPs. The losses are the same sums over rows as
before: a group's value gets the gradient of each of its rows.
"""

from __future__ import annotations

import attrs
import numpy as np
import torch


@attrs.frozen
class GroupMinibatch:
    """The critic's view of one minibatch: ``rows`` distinct agent rows to encode, then indices
    into them (``[groups or minibatch rows, members]``, any index where absent)."""

    #: buffer rows encoded once each
    rows: torch.Tensor
    #: each group's members, and which are present
    value_members: torch.Tensor
    value_present: torch.Tensor
    #: each minibatch row's members, itself first, and which are present
    baseline_members: torch.Tensor
    baseline_present: torch.Tensor
    #: each minibatch row's group (index into ``value_members``)
    group_of_row: torch.Tensor


class GroupIndex:
    """Which buffer rows share a group step, from ``members`` ``[rows, 1 + mates]`` (the row
    itself, then its mates; -1: absent), as ``GroupTransitions.members`` gives them."""

    def __init__(self, members: np.ndarray, device: str = "cpu") -> None:
        self.members = members
        self.device = device
        n = len(members)
        # a group step is its set of member rows: sorted, with absent slots last
        sets = np.sort(np.where(members >= 0, members, n), axis=1)
        self.sets, self.group_of_row = np.unique(sets, axis=0, return_inverse=True)
        self.group_of_row = self.group_of_row.reshape(-1)
        self.set_present = self.sets < n

    def epoch_order(self, rng: np.random.Generator) -> np.ndarray:
        """Every row once: group steps in random order, each group's rows together."""
        rank = np.empty(len(self.sets), dtype=np.int64)
        rank[rng.permutation(len(self.sets))] = np.arange(len(self.sets))
        return np.argsort(rank[self.group_of_row], kind="stable")

    def minibatch(self, rows: np.ndarray) -> GroupMinibatch:
        """The group view of minibatch ``rows``."""
        groups, group_of_row = np.unique(self.group_of_row[rows], return_inverse=True)
        sets, present = self.sets[groups], self.set_present[groups]
        needed = np.unique(sets[present])
        # position of each needed buffer row among ``needed`` (absent slots point at 0)
        position = np.zeros(len(self.members) + 1, dtype=np.int64)
        position[needed] = np.arange(len(needed))
        own_members = self.members[rows]
        tensor = lambda a: torch.as_tensor(a, device=self.device)  # noqa: E731
        return GroupMinibatch(
            rows=tensor(needed),
            value_members=tensor(position[np.where(present, sets, len(self.members))]),
            value_present=tensor(present),
            baseline_members=tensor(position[np.where(own_members >= 0, own_members, -1)]),
            baseline_present=tensor(own_members >= 0),
            group_of_row=tensor(group_of_row.reshape(-1)),
        )
