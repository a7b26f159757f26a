"""Preparing a run's results folder: the ``--resume`` / ``--force`` / ``--initialize-from`` rules.

A prepared folder stays locked (``trainers.run_files.lock``) until the run releases it, so that no second
process trains into it, or ``--force``s it away, while the first one runs; meanwhile what the run
prints goes to ``run_logs/console.log`` too (``trainers.run_files.logs.ConsoleLog``). The layout of the
folder itself is ``trainers.run_files.layout.RunLayout``'s to name.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import sys
from pathlib import Path

import attrs

from ghost.config.run_folders import has_results, missing_run_message
from ghost.config.settings import CheckpointSettings, RunOptions
from ghost.exceptions import RunDirectoryError
from ghost.running.run_configuration import record_configuration
from trainers.run_files.console_log import CONSOLE_LOG_NAME, ConsoleLog
from trainers.run_files.layout import RunLayout, has_unsafe_characters
from trainers.run_files.lock import LOCK_FILE_NAME, RunLock

logger = logging.getLogger(__name__)


def _check_run_id(run_id: str) -> None:
    if not run_id or run_id in (".", "..") or has_unsafe_characters(run_id):
        raise RunDirectoryError(
            f"run id {run_id!r} cannot name a folder; use letters, digits, '-', '_' or '.' "
            "(for example --run-id tennis-01)"
        )


def _delete_contents(root: Path, *, ignore_errors: bool = False) -> None:
    """Delete everything in ``root`` but its lock file, which the caller holds."""
    for entry in root.iterdir():
        if entry.name == LOCK_FILE_NAME:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=ignore_errors)
        else:
            with contextlib.suppress(*((OSError,) if ignore_errors else ())):
                entry.unlink()


def _create(folder: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise RunDirectoryError(
            f"cannot create the run folder {folder}: {error.strerror}; choose a writable "
            "--results-dir"
        ) from error


def _console_log(run_logs: Path) -> ConsoleLog:
    try:
        return ConsoleLog(run_logs / CONSOLE_LOG_NAME)
    except OSError as error:
        raise RunDirectoryError(
            f"cannot write the console log in {run_logs}: {error.strerror}; choose a writable "
            "--results-dir"
        ) from error


def _lock(root: Path, run_id: str) -> RunLock:
    """The lock of run folder ``root`` (created if missing), taken.

    Raises:
        RunLockedError: another live process holds it.
        RunDirectoryError: the folder or its lock file cannot be created.
    """
    _create(root)
    try:
        return RunLock(root, run_name=run_id).acquire()
    except OSError as error:
        raise RunDirectoryError(
            f"cannot create the lock file of run {run_id!r} in {root}: {error.strerror}; "
            "choose a writable --results-dir"
        ) from error


def _check_flags(settings: CheckpointSettings, *, root: Path, exists: bool) -> None:
    if settings.resume and not exists:
        raise RunDirectoryError(missing_run_message(settings.run_id, settings.results_dir))
    if exists and not (settings.resume or settings.force):
        raise RunDirectoryError(
            f"run {settings.run_id!r} already exists at {root}; pass --resume to continue it, "
            "--force to overwrite it, or choose another --run-id"
        )


def _checked_root(settings: CheckpointSettings) -> Path:
    """The run folder of ``settings``, once its run id and ``--resume``/``--force`` pass."""
    _check_run_id(settings.run_id)
    if settings.resume and settings.force:
        raise RunDirectoryError(
            "--resume and --force contradict each other: --resume continues run "
            f"{settings.run_id!r}, --force deletes it; pass only one"
        )
    return Path(settings.results_dir) / settings.run_id


def _initialize_from(settings: CheckpointSettings) -> Path | None:
    if settings.initialize_from is None:
        return None
    _check_run_id(settings.initialize_from)
    initialize_from = Path(settings.results_dir) / settings.initialize_from
    if not initialize_from.is_dir():
        raise RunDirectoryError(
            f"cannot initialize from run {settings.initialize_from!r}: nothing found at "
            f"{initialize_from}; train that run first or fix --initialize-from"
        )
    return initialize_from


@attrs.frozen(kw_only=True)
class RunDirectory:
    """Paths of one run's results; ``prepare`` checks, locks and creates it, the helpers create
    subfolders.

    Attributes:
        root: ``<results_dir>/<run_id>``.
        resumed: the run continues an earlier one (``--resume``): read its checkpoints.
        initialize_from: ``<results_dir>/<other run id>`` whose policies start this run, or None.
        created: ``prepare`` created the folder (it held no results before).
        lock: the folder's lock, held from ``prepare`` until ``release`` (None for a folder
            opened to read with ``existing``).
        console: ``run_logs/console.log``, written from ``prepare`` until ``release``.
    """

    root: Path
    resumed: bool = False
    initialize_from: Path | None = None
    created: bool = False
    lock: RunLock | None = attrs.field(default=None, eq=False, repr=False)
    console: ConsoleLog | None = attrs.field(default=None, eq=False, repr=False)

    @classmethod
    def check(cls, checkpoint_settings: CheckpointSettings) -> Path:
        """What ``prepare`` refuses about the flags and the disk, without locking or creating
        anything (``ghost-learn --check``, and every run before it looks for its environment);
        returns the run folder's path.

        Raises:
            RunDirectoryError: as ``prepare``.
        """
        settings = checkpoint_settings
        root = _checked_root(settings)
        _check_flags(settings, root=root, exists=has_results(root))
        _initialize_from(settings)
        return root

    @classmethod
    def prepare(cls, checkpoint_settings: CheckpointSettings) -> RunDirectory:
        """Check ``--resume``/``--force``/``--initialize-from`` against the disk, lock the run
        folder and create it; the caller ``release``s it when the run ends.

        A run id whose folder already holds results needs ``--resume`` (continue it) or
        ``--force`` (delete it and start over); ``--resume`` needs the folder to exist. A folder
        that another live process trains into is refused before anything in it is read or
        deleted.

        Raises:
            RunDirectoryError: the flags do not fit what is on disk (the message says which
                flag to use).
            RunLockedError: another live process holds the run folder (the message names it).
        """
        settings = checkpoint_settings
        root = _checked_root(settings)
        lock = _lock(root, settings.run_id) if root.is_dir() else None
        try:
            exists = has_results(root)
            _check_flags(settings, root=root, exists=exists)
            initialize_from = _initialize_from(settings)
            if lock is None:
                lock = _lock(root, settings.run_id)
                exists = has_results(root)  # another run may have begun since we looked
                _check_flags(settings, root=root, exists=exists)
            if exists and settings.force:
                logger.info(
                    "--force: deleting the previous results of run %r at %s", settings.run_id, root
                )
                _delete_contents(root)
            run_logs = RunLayout(root).run_logs_dir
            _create(run_logs)
            run_dir = cls(
                root=root,
                resumed=settings.resume,
                initialize_from=initialize_from,
                created=not settings.resume,
                lock=lock,
                console=_console_log(run_logs),
            )
        except BaseException:
            if lock is not None:
                lock.release()
            raise
        return run_dir

    def discard_if_unused(self) -> bool:
        """Delete a folder ``prepare`` created for a run that failed before its first checkpoint,
        so that retrying needs no ``--force``; returns whether it was deleted. Releases the lock."""
        if not self.created or self.layout.checkpoint_index_path.exists():
            return False
        if self.console is not None:
            self.console.close()
        # emptied while still locked, so that no run starting meanwhile loses its files
        _delete_contents(self.root, ignore_errors=True)
        self.release()
        with contextlib.suppress(OSError):
            self.root.rmdir()
        logger.info("The run ended before its first checkpoint; removed %s", self.root)
        return True

    def release(self) -> None:
        """Let other processes use the run folder (its lock file goes) and close its console log;
        harmless to repeat. Called while an exception propagates (from a ``finally:``), the log
        ends with it, as the console shows it."""
        if self.console is not None:
            self.console.close(sys.exc_info()[1])
        if self.lock is not None:
            self.lock.release()

    @classmethod
    def existing(cls, *, results_dir: str | Path, run_id: str) -> RunDirectory:
        """An earlier run's folder, to read from (evaluation, ``--initialize-from``).

        Raises:
            RunDirectoryError: there is no such run.
        """
        _check_run_id(run_id)
        root = Path(results_dir) / run_id
        if not root.is_dir():
            raise RunDirectoryError(
                f"run {run_id!r} not found at {root}; check the run id and --results-dir"
            )
        return cls(root=root, resumed=True)

    @property
    def layout(self) -> RunLayout:
        """The paths inside the run folder."""
        return RunLayout(self.root)

    def write_configuration(self, options: RunOptions) -> Path:
        """Write ``configuration.yaml`` (every key, flags applied; a resumed run keeps the earlier
        one beside it when it changed); returns its path."""
        return record_configuration(self.layout, options, resumed=self.resumed)
