"""The sliding window of past policies a ghosted team draws its opponents from."""

from __future__ import annotations

from collections import deque
from pathlib import Path
from typing import Any

import attrs


@attrs.define
class Snapshot:
    """Frozen weights of the learner, its rating (updated as it plays) and when it was taken."""

    snapshot_id: int
    step: int
    rating: float
    #: opaque to the core: whatever the trainer's policy hands out and takes back
    weights: Any = attrs.field(repr=False)
    path: Path | None = None

    def metadata(self) -> dict[str, Any]:
        return {"snapshot_id": self.snapshot_id, "step": self.step, "rating": self.rating,
                "path": str(self.path) if self.path else None}  # fmt: skip


class SnapshotWindow:
    """The last ``size`` snapshots; adding one to a full window evicts the oldest."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._snapshots: deque[Snapshot] = deque(maxlen=size)
        self._next_id = 0

    def add(self, *, weights: Any, rating: float, step: int) -> Snapshot:
        snapshot = Snapshot(snapshot_id=self._next_id, step=step, rating=rating, weights=weights)
        self._next_id += 1
        self._snapshots.append(snapshot)
        return snapshot

    def __len__(self) -> int:
        return len(self._snapshots)

    def __getitem__(self, index: int) -> Snapshot:
        return self._snapshots[index]

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self._snapshots)

    def by_id(self, snapshot_id: int) -> Snapshot | None:
        return next((s for s in self._snapshots if s.snapshot_id == snapshot_id), None)

    def restore(self, snapshots: list[Snapshot], next_id: int) -> None:
        self._snapshots = deque(snapshots, maxlen=self.size)
        self._next_id = next_id

    @property
    def next_id(self) -> int:
        return self._next_id
