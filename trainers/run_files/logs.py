"""``run_logs/``: the run's status and timers, as ML-Agents writes them for its users.

- ``training_status.json``: per behavior, its step, checkpoints (step, file, mean reward, time)
  and last Elo; updated with every checkpoint.
- ``timers.json``: seconds and calls of each phase of the training loop (acting, stepping the
  environments, trainer updates, checkpoints), to see where a run spends its time.
- ``console.log``: what the run printed on the console, each session appended after a line of
  its own (``trainers.run_files.console_log``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any, Protocol

from trainers.run_files.atomic import atomic_write_text
from trainers.run_files.layout import RunLayout
from trainers.stats import CUMULATIVE_REWARD, ELO

STATUS_FORMAT_VERSION = 1


class CheckpointedTrainer(Protocol):
    """What the status file reads of a trainer (``trainers.base.Trainer`` has it)."""

    @property
    def step(self) -> int: ...
    @property
    def stats(self) -> Any: ...
    @property
    def settings(self) -> Any: ...


class PhaseTimers:
    """Seconds spent per named phase; ``add(phase, seconds)`` is cheap enough for every step."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.totals: dict[str, float] = {}
        self.counts: dict[str, int] = {}

    def add(self, phase: str, seconds: float) -> None:
        self.totals[phase] = self.totals.get(phase, 0.0) + seconds
        self.counts[phase] = self.counts.get(phase, 0) + 1

    def as_dict(self) -> dict[str, Any]:
        """``{"name": "root", "total": s, "self": s, "children": {phase: {...}}}``, ML-Agents'
        timer-tree shape with one level."""
        total = time.perf_counter() - self.started
        children = {
            phase: {"total": seconds, "count": self.counts[phase], "self": seconds}
            for phase, seconds in self.totals.items()
        }
        return {
            "name": "root",
            "total": total,
            "count": 1,
            "self": max(total - sum(self.totals.values()), 0.0),
            "children": children,
        }

    def write(self, path: Path) -> None:
        atomic_write_text(path, json.dumps(self.as_dict(), indent=2))


class TrainingStatus:
    """The content of ``training_status.json``, kept up to date as checkpoints are written."""

    def __init__(self, layout: RunLayout) -> None:
        self.layout = layout
        self.behaviors: dict[str, dict[str, Any]] = {}
        self._read_earlier()

    def _read_earlier(self) -> None:
        """A resumed run keeps the checkpoint history of its earlier sessions."""
        try:
            earlier = json.loads(self.layout.training_status_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return
        self.behaviors = {k: v for k, v in earlier.items() if k != "metadata"}

    def record_checkpoint(
        self, trainers: Mapping[str, CheckpointedTrainer], *, final: bool = False
    ) -> None:
        """Add the checkpoint just written for ``trainers`` and write the file."""
        now = time.time()
        for name, trainer in trainers.items():
            status = self.behaviors.setdefault(name, {"checkpoints": []})
            latest = trainer.stats.latest
            entry = {
                "steps": trainer.step,
                "file_path": str(self.layout.checkpoint_path(name, trainer.step)),
                "reward": latest.get(CUMULATIVE_REWARD),
                "creation_time": now,
            }
            kept = [c for c in status["checkpoints"] if c["steps"] != trainer.step]
            status["checkpoints"] = (kept + [entry])[-trainer.settings.keep_checkpoints :]
            status["steps"] = trainer.step
            if ELO in latest:
                status["elo"] = latest[ELO]
            if final:
                status["final_checkpoint"] = {
                    **entry,
                    "file_path": str(self.layout.final_policy_path(name)),
                }
        document = {"metadata": _metadata(), **self.behaviors}
        atomic_write_text(self.layout.training_status_path, json.dumps(document, indent=2))


def _metadata() -> dict[str, Any]:
    versions = {"stats_format_version": STATUS_FORMAT_VERSION}
    for package in ("ghost-trainer", "torch", "mlagents-envs"):
        try:
            versions[f"{package.replace('-', '_')}_version"] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[f"{package.replace('-', '_')}_version"] = None
    return versions
