"""``RunEvaluation``: what evaluating a run against one player gives, whatever the game.

A run on a built-in game is judged snapshot by snapshot (``ghost.evaluation.snapshots``): one
``SnapshotEvaluation`` per snapshot, oldest first, and the evaluation reads as the sequence of
them. A run on an OpenSpiel or PettingZoo game is judged by its final policy in every seat
(``ghost.evaluation.seated_runs``): one ``SeatResult`` per seat, summed up by ``win_rate`` and
``mean_reward``. Both kinds keep the labels of the two players and the run they came from.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple, overload

import attrs
import numpy as np

from ghost.play.head_to_head import EvaluationResult
from ghost.play.seated_matches import BothSeats, SeatResult


class SnapshotEvaluation(NamedTuple):
    """One snapshot of a run and how it did: ``(snapshot_id, step, rating, result)``."""

    snapshot_id: int
    step: int | None
    rating: float | None
    result: EvaluationResult

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready values."""
        return {
            "snapshot_id": self.snapshot_id,
            "step": self.step,
            "rating": self.rating,
            "result": self.result.to_dict(),
        }


@attrs.frozen(kw_only=True)
class RunEvaluation(Sequence[SnapshotEvaluation]):
    """A run's policies against one player: per snapshot, or its final policy per seat.

    Attributes:
        run: the run folder evaluated.
        policy, opponent: labels of the evaluated player and of the one it met.
        snapshots: built-in games: each snapshot's evaluation, oldest first (also the items of
            the sequence).
        seats: OpenSpiel/PettingZoo games: the final policy's results in each seat.
    """

    run: Path
    policy: str
    opponent: str
    snapshots: tuple[SnapshotEvaluation, ...] = ()
    seats: tuple[SeatResult, ...] = ()

    @classmethod
    def of_seats(cls, run: Path, both: BothSeats) -> RunEvaluation:
        """The evaluation of ``run`` made of ``evaluate_both_seats``' result."""
        return cls(run=run, policy=both.policy, opponent=both.opponent, seats=both.seats)

    @overload
    def __getitem__(self, index: int) -> SnapshotEvaluation: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[SnapshotEvaluation]: ...

    def __getitem__(self, index: int | slice) -> Any:
        return self.snapshots[index]

    def __len__(self) -> int:
        return len(self.snapshots)

    @property
    def win_rate(self) -> float:
        """Wins over all seats' games, every seat's games counted alike."""
        return sum(s.wins for s in self.seats) / max(sum(s.games for s in self.seats), 1)

    @property
    def mean_reward(self) -> float:
        """The mean of the per-seat mean rewards (a game's value averaged over seats)."""
        return float(np.mean([s.mean_reward for s in self.seats])) if self.seats else np.nan

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready values: per seat (as ``BothSeats.to_dict``) or per snapshot."""
        if self.seats:
            both = BothSeats(policy=self.policy, opponent=self.opponent, seats=self.seats)
            return both.to_dict()
        return {
            "run": str(self.run),
            "policy": self.policy,
            "opponent": self.opponent,
            "evaluations": [snapshot.to_dict() for snapshot in self.snapshots],
        }
