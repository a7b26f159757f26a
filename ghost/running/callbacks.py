"""Callbacks of a self-play run: the trainer stack's events plus snapshots and team changes.

Subclass ``SelfPlayCallback`` (or plain ``trainers.callbacks.TrainingCallback``) and pass it to
``ghost.train(callbacks=[...])``; returning ``False`` from any event stops the run (a checkpoint
and the final policies are written first).
"""

from __future__ import annotations

import attrs

from trainers.callbacks import Checkpoint, Summary, TrainingCallback

__all__ = ["Checkpoint", "SelfPlayCallback", "SnapshotTaken", "Summary", "TeamChanged"]


@attrs.frozen(kw_only=True)
class SnapshotTaken:
    """Behavior ``behavior_name`` added snapshot ``snapshot_id`` of its learner at ``step``."""

    behavior_name: str
    snapshot_id: int
    step: int
    rating: float


@attrs.frozen(kw_only=True)
class TeamChanged:
    """Learning passed from ``previous_team`` to ``learning_team``; ``count`` changes so far."""

    previous_team: int | None
    learning_team: int
    count: int


class SelfPlayCallback(TrainingCallback):
    """Adds the self-play events to ``TrainingCallback``'s; return ``False`` to stop the run."""

    def on_snapshot(self, snapshot: SnapshotTaken) -> bool | None:
        """A ghost trainer took a snapshot of its learner."""
        return None

    def on_team_change(self, change: TeamChanged) -> bool | None:
        """Another team learns now (the environments were reset)."""
        return None
