"""Callbacks: user code told what a run does, able to stop it.

A callback subclasses ``TrainingCallback`` and overrides the events it cares about; returning
``False`` from any of them asks the run to stop (it then writes a checkpoint and the final
policies, as after Ctrl-C). The self-play layer adds its events in a subclass
(``ghost.running.callbacks.SelfPlayCallback``).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import attrs


@attrs.frozen(kw_only=True)
class Summary:
    """One behavior's summary, as printed and written to TensorBoard every ``summary_freq`` steps.

    ``values`` holds the mean of every statistic since the previous summary, by TensorBoard tag
    (``Environment/Cumulative Reward``, ``Self-play/ELO``, ``Losses/Policy Loss``...).
    """

    behavior_name: str
    step: int
    elapsed_s: float
    values: dict[str, float]


@attrs.frozen(kw_only=True)
class Checkpoint:
    """A complete checkpoint set is on disk: ``steps`` per behavior, named by ``index_path``."""

    steps: dict[str, int]
    index_path: Path


class TrainingCallback:
    """Override the events you need; return ``False`` to stop the run."""

    def on_summary(self, summary: Summary) -> bool | None:
        """A behavior wrote a summary."""
        return None

    def on_checkpoint(self, checkpoint: Checkpoint) -> bool | None:
        """A checkpoint set was written."""
        return None


class CallbackList:
    """Sends each event to every callback that handles it and remembers a request to stop."""

    def __init__(self, callbacks: Iterable[TrainingCallback] = ()) -> None:
        self.callbacks = list(callbacks)
        self.stop_requested = False

    def emit(self, event: str, payload: object) -> None:
        """Call ``callback.<event>(payload)`` on each callback that defines ``event``."""
        for callback in self.callbacks:
            handler = getattr(callback, event, None)
            if handler is not None and handler(payload) is False:
                self.stop_requested = True
