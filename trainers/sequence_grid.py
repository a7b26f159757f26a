"""``SequenceGrid``: a minibatch of sequences laid out for a network with memory, padding left out.

Only the real steps go through the layers before and after the memory; the memory (an LSTM) runs
over a ``[sequences, steps]`` grid just long enough for the longest of them. Padding sits at each
sequence's end, so no real step ever reads it: the outputs at real steps are those of the
full-length padded run, at a fraction of its arithmetic where episodes are short.

Where the minibatch's sequences differ much in length, the grid comes in two parts, its longer
and its shorter half, each run as long as its own longest sequence: an LSTM over a batch of
sequences costs about the same per step of each one at 8 sequences as at 16 (it is bound by its
arithmetic), so the shorter half stops early instead of running the longest sequence's steps.
"""

from __future__ import annotations

import attrs
import numpy as np


@attrs.frozen
class GridPart:
    """Some of a grid's sequences, run through the memory in one call."""

    #: which of the grid's sequences, longest first
    sequences: np.ndarray
    #: which of the grid's real steps (indices into ``SequenceGrid.rows``), in the grid's order
    steps_taken: np.ndarray
    #: where each of those steps sits in this part's flattened ``[sequences, steps]`` grid
    positions: np.ndarray
    #: this part's longest sequence: how many steps the memory runs for it
    steps: int


@attrs.frozen
class SequenceGrid:
    """A minibatch of sequences as a network with memory trains on it (see the module doc)."""

    #: the buffer row of each real step, sequence by sequence and in order within each
    rows: np.ndarray
    #: where each real step sits in the flattened ``[sequences, steps]`` grid
    positions: np.ndarray
    sequences: int
    #: the longest sequence's real steps: how many steps the memory runs
    steps: int

    @staticmethod
    def of(layout: np.ndarray) -> SequenceGrid:
        """The grid of sequences laid out ``[sequences, sequence_length]`` as buffer rows,
        -1 at padding (which comes after a sequence's real steps)."""
        steps = int((layout >= 0).sum(axis=1).max()) if len(layout) else 0
        flat = layout[:, :steps].reshape(-1)
        positions = np.flatnonzero(flat >= 0)
        return SequenceGrid(rows=flat[positions], positions=positions, sequences=len(layout),
                            steps=steps)  # fmt: skip

    @property
    def lengths(self) -> np.ndarray:
        """Real steps of each sequence."""
        return np.bincount(self.positions // max(self.steps, 1), minlength=self.sequences)

    def parts(self) -> list[GridPart]:
        """The calls the memory makes: the whole grid, or its longer and shorter halves where
        the shorter half's longest sequence is at most half the grid's steps."""
        lengths = self.lengths
        longest_first = np.argsort(-lengths, kind="stable")
        half = self.sequences // 2
        if self.sequences < 4 or lengths[longest_first[half]] * 2 > self.steps:
            return [GridPart(sequences=np.arange(self.sequences),
                             steps_taken=np.arange(len(self.rows)), positions=self.positions,
                             steps=self.steps)]  # fmt: skip
        return [self._part(longest_first[:half]), self._part(longest_first[half:])]

    def _part(self, sequences: np.ndarray) -> GridPart:
        sequence_of_step = self.positions // self.steps
        place = np.full(self.sequences, -1)
        place[sequences] = np.arange(len(sequences))
        taken = np.flatnonzero(place[sequence_of_step] >= 0)
        steps = int(self.lengths[sequences].max())
        local = place[sequence_of_step[taken]] * steps + self.positions[taken] % self.steps
        return GridPart(sequences=sequences, steps_taken=taken, positions=local, steps=steps)

    def stacked(self, copies: int) -> SequenceGrid:
        """The grid of ``copies`` minibatches like this one, one after the other (two questions
        asked of the same steps in one pass, as POCA's value and baseline are)."""
        cells = self.sequences * self.steps
        return SequenceGrid(
            rows=np.tile(self.rows, copies),
            positions=np.concatenate([self.positions + k * cells for k in range(copies)]),
            sequences=self.sequences * copies,
            steps=self.steps,
        )
