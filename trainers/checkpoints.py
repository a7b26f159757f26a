"""Run checkpoints: every trainer's state plus the run's own state, written as one consistent set.

Each behavior's state goes to ``<run>/<Behavior>/checkpoints/<Behavior>-<step>.pt`` (atomically);
only then is ``<run>/checkpoint.json`` replaced (atomically) to name the new set. A kill at any
moment leaves the previous complete set in place, and a resumed run reads the set the index names.
The index also carries the loop's own JSON-safe state (a self-play run keeps its team rotation
and ratings there).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from trainers.atomic_files import atomic_save, atomic_write_text
from trainers.base import Trainer
from trainers.exceptions import CheckpointError
from trainers.run_layout import RunLayout
from trainers.safe_load import load_pt

logger = logging.getLogger(__name__)


class RunCheckpointer:
    """Writes and reads the checkpoint sets of one run folder."""

    def __init__(self, layout: RunLayout) -> None:
        self.layout = layout

    def save(self, trainers: Mapping[str, Trainer], run_state: dict[str, Any]) -> Path:
        """Checkpoint every trainer and ``run_state`` (JSON-safe); returns the index file."""
        entries = {}
        for name, trainer in trainers.items():
            path = self.layout.checkpoint_path(name, trainer.step)
            atomic_save(trainer.state_dict(), path)
            entries[name] = {"file": str(path.relative_to(self.layout.root)), "step": trainer.step}
        index = self.layout.checkpoint_index_path
        document = {"created": time.time(), "run_state": run_state, "behaviors": entries}
        atomic_write_text(index, json.dumps(document, indent=2))
        for name, trainer in trainers.items():
            self._prune(name, keep=trainer.settings.keep_checkpoints, current=entries[name]["file"])
            trainer.after_checkpoint()
        logger.info(
            "Checkpoint written: %s", ", ".join(f"{n} step {e['step']}" for n, e in entries.items())
        )
        return index

    def _prune(self, name: str, *, keep: int, current: str) -> None:
        for old in self.layout.checkpoint_files(name)[:-keep]:
            if str(old.relative_to(self.layout.root)) != current:
                old.unlink(missing_ok=True)

    def exists(self) -> bool:
        return self.layout.checkpoint_index_path.is_file()

    def read_index(self) -> dict[str, Any]:
        """The checkpoint index (``behaviors``: file and step of each; ``run_state``)."""
        path = self.layout.checkpoint_index_path
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise CheckpointError(f"cannot read {path}: {error}") from error

    def load(self, trainers: Mapping[str, Trainer]) -> dict[str, Any]:
        """Restore the set named by the index into ``trainers``; returns the saved run state."""
        index = self.read_index()
        for name, trainer in trainers.items():
            entry = index["behaviors"].get(name)
            if entry is None:
                logger.warning("No checkpoint for behavior %s; it starts fresh", name)
                continue
            state = load_pt(self.layout.root / entry["file"])
            trainer.load_state_dict(state)
        logger.info(
            "Resumed from %s",
            ", ".join(f"{n} step {e['step']}" for n, e in index["behaviors"].items()),
        )
        if "run_state" not in index and "controller" in index:  # written before run_state existed
            return {"controller": index["controller"]}
        return index.get("run_state", {})
