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
    #: the calls the memory makes: the whole grid, or its longer and shorter halves where the
    #: shorter half's longest sequence is at most half the grid's steps
    parts: tuple[GridPart, ...]

    @staticmethod
    def of(layout: np.ndarray) -> SequenceGrid:
        """The grid of sequences laid out ``[sequences, sequence_length]`` as buffer rows,
        -1 at padding (which comes after a sequence's real steps)."""
        steps = int((layout >= 0).sum(axis=1).max()) if len(layout) else 0
        flat = layout[:, :steps].reshape(-1)
        positions = np.flatnonzero(flat >= 0)
        return SequenceGrid.laid(flat[positions], positions, len(layout), steps)

    @staticmethod
    def laid(rows: np.ndarray, positions: np.ndarray, sequences: int, steps: int) -> SequenceGrid:
        """The grid of real steps ``rows`` at ``positions`` of ``sequences`` × ``steps``."""
        return SequenceGrid(rows=rows, positions=positions, sequences=sequences, steps=steps,
                            parts=_split(positions, sequences, steps))  # fmt: skip

    @property
    def lengths(self) -> np.ndarray:
        """Real steps of each sequence."""
        return _lengths(self.positions, self.sequences, self.steps)

    def stacked(self, copies: int) -> SequenceGrid:
        """The grid of ``copies`` minibatches like this one, one after the other (two questions
        asked of the same steps in one pass, as POCA's value and baseline are)."""
        cells = self.sequences * self.steps
        positions = np.concatenate([self.positions + k * cells for k in range(copies)])
        return SequenceGrid.laid(
            np.tile(self.rows, copies), positions, self.sequences * copies, self.steps
        )


def _lengths(positions: np.ndarray, sequences: int, steps: int) -> np.ndarray:
    return np.bincount(positions // max(steps, 1), minlength=sequences)


def _split(positions: np.ndarray, sequences: int, steps: int) -> tuple[GridPart, ...]:
    """``SequenceGrid.parts`` of the real steps at ``positions``."""
    lengths = _lengths(positions, sequences, steps)
    longest_first = np.argsort(-lengths, kind="stable")
    half = sequences // 2
    if sequences < 4 or lengths[longest_first[half]] * 2 > steps:
        whole = GridPart(sequences=np.arange(sequences), steps_taken=np.arange(len(positions)),
                         positions=positions, steps=steps)  # fmt: skip
        return (whole,)
    sequence_of_step = positions // steps

    def part(chosen: np.ndarray) -> GridPart:
        place = np.full(sequences, -1)
        place[chosen] = np.arange(len(chosen))
        taken = np.flatnonzero(place[sequence_of_step] >= 0)
        longest = int(lengths[chosen].max())
        local = place[sequence_of_step[taken]] * longest + positions[taken] % steps
        return GridPart(sequences=chosen, steps_taken=taken, positions=local, steps=longest)

    return part(longest_first[:half]), part(longest_first[half:])
