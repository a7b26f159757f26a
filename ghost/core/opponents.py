"""Pool members a ghosted team can field: snapshots of the learner, league members (promoted
exploiters, ``ghost.core.league``) and fixed opponents.

Opponents are bookkeeping only (who plays, with which rating); acting with them is the
running layer's job (``ghost.running.opponent_policy``). Weights are opaque here.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from envs.stepping import ARENA_STRIDE
from ghost.core.snapshots import Snapshot

LATEST = -1


@attrs.define
class FixedOpponent:
    """A permanent pool member: a scripted policy or another run's policy, never evicted."""

    name: str
    policy: Any = attrs.field(repr=False)
    rating: float
    pinned: bool = True


@attrs.define
class Opponent:
    """A drawn opponent: a snapshot (``snapshot_id == LATEST``: a frozen copy of the learner at
    swap time), a league member (a snapshot of a promoted exploiter, named ``member``) or a fixed
    opponent."""

    snapshot: Snapshot | None = None
    fixed: FixedOpponent | None = None
    member: str | None = None

    @property
    def is_latest(self) -> bool:
        return self.snapshot is not None and self.snapshot.snapshot_id == LATEST

    @property
    def is_fixed(self) -> bool:
        return self.fixed is not None

    @property
    def key(self) -> str:
        """Names the pool member in win-rate tables: ``latest``, ``snapshot-3``, ``fixed:medium``,
        ``exploiter-0-2`` (a league member)."""
        if self.fixed is not None:
            return f"fixed:{self.fixed.name}"
        if self.member is not None:
            return self.member
        assert self.snapshot is not None
        return "latest" if self.is_latest else f"snapshot-{self.snapshot.snapshot_id}"

    @property
    def rating(self) -> float:
        return self.fixed.rating if self.fixed is not None else self.snapshot.rating  # type: ignore[union-attr]

    def adjust_rating(self, change: float) -> None:
        """Move the rating by ``change`` (a pinned fixed opponent keeps its rating)."""
        if self.fixed is not None:
            if not self.fixed.pinned:
                self.fixed.rating += change
        else:
            assert self.snapshot is not None
            self.snapshot.rating += change


def opponent_slots(arenas: np.ndarray, count: int) -> np.ndarray:
    """Which of ``count`` opponents plays in each arena (worker and arena both spread it)."""
    return (arenas + arenas // ARENA_STRIDE) % count


@attrs.frozen
class Pool:
    """Everything a ghosted team may face right now."""

    latest: Opponent
    window: list[Opponent]
    fixed: list[Opponent]
    league: list[Opponent] = attrs.Factory(list)

    @property
    def past(self) -> list[Opponent]:
        """Window snapshots, league members and fixed opponents (all but the latest copy)."""
        return self.window + self.league + self.fixed
