"""Cutting a rollout into the fixed-length sequences a network with memory trains on.

Each trajectory in the rollout buffer (a chain of ``next_index`` links: one agent's consecutive
transitions) is cut into sequences of ``sequence_length`` steps; the last one of a trajectory is
padded to full length, and ``valid`` marks the real steps, so padding never counts in a loss.
ML-Agents pads a trajectory's *first* sequence at its front; we pad the last at its end, so that
an LSTM reaches every real step straight from the memory stored at the sequence's first step, with
no padding run through it before.

``depth`` orders sequences for passes that carry a memory from one sequence of an agent to its
next (the critic's value pass): all sequences of depth ``d`` follow one of depth ``d - 1`` of the
same slot, or begin that slot's part of the rollout.
"""

from __future__ import annotations

import attrs
import numpy as np

from trainers.sequence_grid import SequenceGrid


@attrs.frozen
class Sequences:
    """A rollout's rows laid out as ``[sequences, sequence_length]`` (-1: padding)."""

    rows: np.ndarray
    #: the slot (agent) of each sequence
    slots: np.ndarray
    #: how many sequences of the same slot come before each one in the rollout
    depth: np.ndarray

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def sequence_length(self) -> int:
        return self.rows.shape[1]

    @property
    def valid(self) -> np.ndarray:
        """True at real steps, False at padding."""
        return self.rows >= 0

    @property
    def lengths(self) -> np.ndarray:
        """Real steps per sequence (at least 1)."""
        return self.valid.sum(axis=1)

    @property
    def last_rows(self) -> np.ndarray:
        """Each sequence's last real row."""
        return self.rows[np.arange(len(self.rows)), self.lengths - 1]

    def grid(self, chosen: np.ndarray) -> SequenceGrid:
        """The minibatch of sequences ``chosen`` (indices), trimmed to its longest real run."""
        return SequenceGrid.of(self.rows[chosen])

    def gather_rows(self) -> np.ndarray:
        """Row indices, flattened sequence by sequence, with padding pointing at row 0 (its
        values are never used: ``valid`` masks them out)."""
        return np.where(self.valid, self.rows, 0).reshape(-1)


def chain_positions(next_index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's trajectory (the row it starts at) and its step in it, by pointer jumping:
    ``log2`` of the longest trajectory rounds of array work, rather than one Python step per
    row."""
    count = len(next_index)
    linked = np.flatnonzero(next_index >= 0)
    previous = np.arange(count)  # a trajectory's first row points at itself
    previous[next_index[linked]] = linked
    step = (previous != np.arange(count)).astype(np.int64)
    while True:
        further = previous[previous]
        if np.array_equal(further, previous):
            return previous, step
        step = step + step[previous]
        previous = further


def cut_sequences(next_index: np.ndarray, slots: np.ndarray, sequence_length: int) -> Sequences:
    """Cut every trajectory of a rollout (``next_index`` as ``RolloutBuffer.contents`` gives it,
    ``slots`` each row's agent slot) into padded sequences of ``sequence_length`` steps."""
    head, step = chain_positions(next_index)
    heads = np.flatnonzero(step == 0)  # in arrival order
    lengths = np.bincount(head, minlength=len(next_index))[heads]
    per_trajectory = -(-lengths // sequence_length)  # sequences of each trajectory
    first_sequence = np.zeros(len(heads), np.int64)  # the index of each one's first sequence
    np.cumsum(per_trajectory[:-1], out=first_sequence[1:])
    trajectory = np.zeros(len(next_index), np.int64)
    trajectory[heads] = np.arange(len(heads))
    trajectory = trajectory[head]
    rows = np.full((int(per_trajectory.sum()), sequence_length), -1, dtype=np.int64)
    sequence = first_sequence[trajectory] + step // sequence_length
    rows[sequence, step % sequence_length] = np.arange(len(next_index))
    owner = np.repeat(np.asarray(slots, np.int64)[heads], per_trajectory)
    # depth: the sequences of the same slot before each one (a stable sort keeps their order)
    by_slot = np.argsort(owner, kind="stable")
    sorted_slots = owner[by_slot]
    group_start = np.flatnonzero(np.r_[True, sorted_slots[1:] != sorted_slots[:-1]])
    group_sizes = np.diff(np.r_[group_start, len(owner)])
    depth = np.zeros(len(owner), np.int64)
    depth[by_slot] = np.arange(len(owner)) - np.repeat(group_start, group_sizes)
    return Sequences(rows=rows, slots=owner, depth=depth)
