"""Run checkpoints: every trainer's state plus the controller, written as one consistent set.

Each behavior's state goes to ``<run>/<Behavior>/checkpoints/<Behavior>-<step>.pt`` (atomically);
only then is ``<run>/checkpoint.json`` replaced (atomically) to name the new set. A kill at any
moment leaves the previous complete set in place, and ``--resume`` reads the set the index names.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from ghost.controller import GhostController
from ghost.exceptions import CheckpointError
from ghost.run_dir import safe_name
from trainers.base import Trainer
from trainers.policy_file import atomic_save

logger = logging.getLogger("ghost.checkpoint")
INDEX = "checkpoint.json"


def _atomic_write_text(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


class RunCheckpointer:
    """Writes and reads the checkpoint sets of one run folder."""

    def __init__(self, run_path: Path) -> None:
        self.run_path = Path(run_path)

    def checkpoint_dir(self, behavior_name: str) -> Path:
        return self.run_path / safe_name(behavior_name) / "checkpoints"

    def save(self, trainers: dict[str, Trainer], controller: GhostController) -> Path:
        """Checkpoint every trainer and the controller; returns the index file."""
        entries = {}
        for name, trainer in trainers.items():
            path = self.checkpoint_dir(name) / f"{safe_name(name)}-{trainer.step}.pt"
            atomic_save(trainer.state_dict(), path)
            entries[name] = {"file": str(path.relative_to(self.run_path)), "step": trainer.step}
        index = self.run_path / INDEX
        _atomic_write_text(
            index,
            json.dumps(
                {
                    "created": time.time(),
                    "controller": controller.state_dict(),
                    "behaviors": entries,
                },
                indent=2,
            ),
        )
        for name, trainer in trainers.items():
            self._prune(name, keep=trainer.settings.keep_checkpoints, current=entries[name]["file"])
            trainer.after_checkpoint()
        logger.info(
            "Checkpoint written: %s", ", ".join(f"{n} step {e['step']}" for n, e in entries.items())
        )
        return index

    def _prune(self, name: str, *, keep: int, current: str) -> None:
        files = sorted(
            self.checkpoint_dir(name).glob(f"{safe_name(name)}-*.pt"),
            key=lambda p: p.stat().st_mtime,
        )
        for old in files[:-keep]:
            if str(old.relative_to(self.run_path)) != current:
                old.unlink(missing_ok=True)

    def exists(self) -> bool:
        return (self.run_path / INDEX).is_file()

    def load(self, trainers: dict[str, Trainer], controller: GhostController) -> None:
        """Restore the set named by the index into ``trainers`` and ``controller``."""
        index_path = self.run_path / INDEX
        try:
            index: dict[str, Any] = json.loads(index_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise CheckpointError(f"cannot read {index_path}: {error}") from error
        for name, trainer in trainers.items():
            entry = index["behaviors"].get(name)
            if entry is None:
                logger.warning("No checkpoint for behavior %s; it starts fresh", name)
                continue
            state = torch.load(
                self.run_path / entry["file"], map_location="cpu", weights_only=False
            )
            trainer.load_state_dict(state)
        controller.load_state_dict(index["controller"])
        logger.info(
            "Resumed from %s",
            ", ".join(f"{n} step {e['step']}" for n, e in index["behaviors"].items()),
        )
