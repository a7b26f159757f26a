"""Run checkpoints: every trainer's state plus the run's own state, written as one consistent set.

Each behavior's state goes to ``<run>/<Behavior>/checkpoints/<Behavior>-<step>.pt`` (atomically);
only then is ``<run>/checkpoint.json`` replaced (atomically) to name the new set. A kill at any
moment leaves the previous complete set in place, and a resumed run reads the set the index names.
A file damaged since (truncated, emptied, overwritten) costs only itself: that behavior resumes
from its newest older checkpoint that loads, and without a readable index every behavior resumes
from its newest loadable file.
The index also carries the loop's own JSON-safe state (a self-play run keeps its team rotation
and ratings there).
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from envs.exceptions import GhostError
from trainers.base import Trainer
from trainers.exceptions import CheckpointError, UnreadableFileError
from trainers.policy_file import find_policy_record, network_settings_changes
from trainers.run_files.atomic import atomic_save, atomic_write_text
from trainers.run_files.layout import CHECKPOINT_INDEX_FILE, RunLayout, safe_name
from trainers.run_files.safe_load import load_pt
from trainers.state_mismatch import require_fit

logger = logging.getLogger(__name__)


class RunCheckpointer:
    """Writes and reads the checkpoint sets of one run folder."""

    def __init__(self, layout: RunLayout) -> None:
        self.layout = layout

    def save(self, trainers: Mapping[str, Trainer], run_state: dict[str, Any]) -> Path:
        """Checkpoint every trainer and ``run_state`` (JSON-safe); returns the index file."""
        entries: dict[str, dict[str, Any]] = {}
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
        """Whether there is anything to resume from: the index, or checkpoint files without it."""
        return self.layout.checkpoint_index_path.is_file() or any(
            self.layout.root.glob("*/checkpoints/*.pt")
        )

    def read_index(self) -> dict[str, Any]:
        """The checkpoint index (``behaviors``: file and step of each; ``run_state``)."""
        path = self.layout.checkpoint_index_path
        try:
            index = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError as error:
            raise CheckpointError(f"{path} does not exist") from error
        except (OSError, ValueError) as error:
            raise CheckpointError(f"cannot read {path}: {error}") from error
        behaviors = index.get("behaviors") if isinstance(index, dict) else None
        if not isinstance(behaviors, dict) or not all(
            isinstance(entry, dict) and isinstance(entry.get("file"), str)
            for entry in behaviors.values()
        ):
            raise CheckpointError(f"cannot read {path}: it names no checkpoint set")
        return index

    def load(self, trainers: Mapping[str, Trainer]) -> dict[str, Any]:
        """Restore the set named by the index into ``trainers``; returns the saved run state.

        A behavior whose named file does not load resumes from its newest older checkpoint that
        does (with a warning). Without a readable index, each behavior resumes from its newest
        checkpoint file that loads, and the run state is empty.

        Raises:
            CheckpointError: no checkpoint of a behavior loads (the message names the files).
            NetworkMismatchError: the checkpoints hold a network other than the configured one.
        """
        index = self._index_or_none()
        steps = {}
        for name, trainer in trainers.items():
            entry = index["behaviors"].get(name) if index is not None else None
            if index is not None and entry is None:
                logger.warning("No checkpoint for behavior %s; it starts fresh", name)
                continue
            named = self.layout.root / entry["file"] if entry is not None else None
            if named is None and not self.layout.checkpoint_files(name):
                logger.warning("No checkpoint files of behavior %s; it starts fresh", name)
                continue
            steps[name] = self._restore(name, trainer, named=named)
        if not steps and index is None:
            raise CheckpointError(
                f"nothing to resume in {self.layout.root}: {CHECKPOINT_INDEX_FILE} cannot be read "
                f"and there is no checkpoint of {', '.join(trainers)} under it; restore the run "
                "folder or start over with --force"
            )
        logger.info("Resumed from %s", ", ".join(f"{n} step {s}" for n, s in steps.items()))
        if index is None:
            return {}
        if "run_state" not in index and "controller" in index:  # written before run_state existed
            return {"controller": index["controller"]}
        return index.get("run_state", {})

    def _index_or_none(self) -> dict[str, Any] | None:
        """The index, or None (with a warning) when it is missing or unreadable."""
        try:
            return self.read_index()
        except CheckpointError as error:
            logger.warning(
                "%s; resuming each behavior from its newest checkpoint file that loads, without "
                "the run's own state (team rotation, curriculum lessons start over)",
                error,
            )
            return None

    def _restore(self, name: str, trainer: Trainer, *, named: Path | None) -> int:
        """Load the newest loadable checkpoint of ``name`` into ``trainer``, starting at ``named``
        (the index's file) or, without one, at the newest file on disk; returns its step."""
        failures: list[tuple[Path, str]] = []
        for path in self._candidates(name, named):
            reason = self._try_load(path, trainer)
            if reason is None:
                if failures:
                    logger.warning(
                        "%s; resuming %s from %s, the newest that loads",
                        _unreadable(failures), name, path.name,
                    )  # fmt: skip
                return trainer.step
            failures.append((path, reason))
        if not failures:
            raise CheckpointError(
                f"no checkpoint of {name} in {self.layout.checkpoints_dir(name)} to resume from; "
                "restore one there or start over with --force"
            )
        raise CheckpointError(
            f"cannot resume {name}: {_unreadable(failures)}"
            + ("" if len(failures) > 1 else ", and there is no older one")
            + f"; restore a checkpoint file in {self.layout.checkpoints_dir(name)} or start over "
            "with --force"
        )

    def _candidates(self, name: str, named: Path | None) -> list[Path]:
        """``named`` then the older checkpoint files of ``name``, newest first (without
        ``named``: every checkpoint file of ``name``)."""
        on_disk = sorted(
            (step, path)
            for path in self.layout.checkpoint_files(name)
            if (step := self._step_in_name(name, path)) is not None
        )
        if named is None:
            return [path for _, path in reversed(on_disk)]
        newest = self._step_in_name(name, named)
        older = [
            path
            for step, path in reversed(on_disk)
            if path != named and (newest is None or step < newest)
        ]
        return [named, *older]

    @staticmethod
    def _step_in_name(name: str, path: Path) -> int | None:
        match = re.fullmatch(rf"{re.escape(safe_name(name))}-(\d+)\.pt", path.name)
        return int(match.group(1)) if match else None

    def _try_load(self, path: Path, trainer: Trainer) -> str | None:
        """Load ``path`` into ``trainer``; None when it did, else why not."""
        try:
            state = load_pt(path)
        except UnreadableFileError as error:
            return error.reason
        self._check_network(path, state, trainer)
        try:
            trainer.load_state_dict(state)
        except Exception as error:  # a file that unpickles may still hold anything at all
            logger.debug("%s does not load into %s", path, trainer.behavior_name, exc_info=True)
            if isinstance(error, GhostError):  # already says which file and why
                return str(error)
            detail = str(error).strip().split("\n", 1)[0]
            return f"not a checkpoint of this trainer: {type(error).__name__}: {detail}"
        return None

    def _check_network(self, path: Path, state: Any, trainer: Trainer) -> None:
        """Raise ``NetworkMismatchError`` when the policy in ``state`` does not fit the trainer's:
        every checkpoint of a run has the same network, so no older one would fit either."""
        record = find_policy_record(state)
        learner = next(iter(trainer.policy_queues), None)
        if record is None or learner is None or not isinstance(record.get("weights"), dict):
            return  # the trainer's own loading finds what is wrong
        policy = trainer.get_policy(learner.behavior_id)
        changed = network_settings_changes(
            record.get("network_settings"), trainer.settings.network_settings
        )
        advice = (
            f"resume with the network_settings it was trained with ({changed}) or start a new run"
            if changed
            else "the environment's observations or actions changed since; resume with the "
            "environment it was trained in or start a new run"
        )
        require_fit(
            {"actor": record["weights"]},
            {"actor": policy.get_weights()},
            source=path,
            advice=advice,
        )


def _unreadable(failures: list[tuple[Path, str]]) -> str:
    """``checkpoint <first> cannot be read (why), nor can <older> (why)``: the files tried."""
    (first, why), *older = failures
    text = f"checkpoint {first} cannot be read ({why})"
    if older:
        text += ", nor can " + ", ".join(f"{path.name} ({reason})" for path, reason in older)
    return text
