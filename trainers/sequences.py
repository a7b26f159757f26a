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

    def gather_rows(self) -> np.ndarray:
        """Row indices, flattened sequence by sequence, with padding pointing at row 0 (its
        values are never used: ``valid`` masks them out)."""
        return np.where(self.valid, self.rows, 0).reshape(-1)


def trajectories(next_index: np.ndarray) -> list[np.ndarray]:
    """The rows of each trajectory, in the order their first rows arrived."""
    linked = next_index[next_index >= 0]
    followed = np.zeros(len(next_index), dtype=bool)
    followed[linked] = True
    chains = []
    for head in np.flatnonzero(~followed).tolist():
        chain = [head]
        while next_index[chain[-1]] >= 0:
            chain.append(int(next_index[chain[-1]]))
        chains.append(np.asarray(chain, dtype=np.int64))
    return chains


def cut_sequences(next_index: np.ndarray, slots: np.ndarray, sequence_length: int) -> Sequences:
    """Cut every trajectory of a rollout (``next_index`` as ``RolloutBuffer.contents`` gives it,
    ``slots`` each row's agent slot) into padded sequences of ``sequence_length`` steps."""
    pieces: list[np.ndarray] = []
    owners: list[int] = []
    for chain in trajectories(next_index):
        for start in range(0, len(chain), sequence_length):
            piece = np.full(sequence_length, -1, dtype=np.int64)
            part = chain[start : start + sequence_length]
            piece[: len(part)] = part
            pieces.append(piece)
            owners.append(int(slots[chain[0]]))
    rows = np.stack(pieces) if pieces else np.zeros((0, sequence_length), np.int64)
    owner = np.asarray(owners, dtype=np.int64)
    depth = np.zeros(len(owner), dtype=np.int64)
    seen: dict[int, int] = {}
    for index, slot in enumerate(owners):
        depth[index] = seen.get(slot, 0)
        seen[slot] = depth[index] + 1
    return Sequences(rows=rows, slots=owner, depth=depth)
