"""Preparing a run's results folder: the ``--resume`` / ``--force`` / ``--initialize-from`` rules.

The layout of the folder itself is ``trainers.run_layout.RunLayout``'s to name.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import attrs

from ghost.config.loader import write_options
from ghost.config.settings import CheckpointSettings, RunOptions
from ghost.exceptions import RunDirectoryError
from trainers.run_layout import RunLayout, has_unsafe_characters

logger = logging.getLogger(__name__)


def _check_run_id(run_id: str) -> None:
    if not run_id or run_id in (".", "..") or has_unsafe_characters(run_id):
        raise RunDirectoryError(
            f"run id {run_id!r} cannot name a folder; use letters, digits, '-', '_' or '.' "
            "(for example --run-id tennis-01)"
        )


def _has_content(path: Path) -> bool:
    return path.is_dir() and any(path.iterdir())


@attrs.frozen(kw_only=True)
class RunDirectory:
    """Paths of one run's results; ``prepare`` checks and creates it, the helpers create subfolders.

    Attributes:
        root: ``<results_dir>/<run_id>``.
        resumed: the run continues an earlier one (``--resume``): read its checkpoints.
        initialize_from: ``<results_dir>/<other run id>`` whose policies start this run, or None.
        created: ``prepare`` created the folder (it held no results before).
    """

    root: Path
    resumed: bool = False
    initialize_from: Path | None = None
    created: bool = False

    @classmethod
    def prepare(cls, checkpoint_settings: CheckpointSettings) -> RunDirectory:
        """Check ``--resume``/``--force``/``--initialize-from`` against the disk and create the run.

        A run id whose folder already holds results needs ``--resume`` (continue it) or
        ``--force`` (delete it and start over); ``--resume`` needs the folder to exist.

        Raises:
            RunDirectoryError: the flags do not fit what is on disk (the message says which
                flag to use).
        """
        settings = checkpoint_settings
        _check_run_id(settings.run_id)
        results = Path(settings.results_dir)
        root = results / settings.run_id
        if settings.resume and settings.force:
            raise RunDirectoryError(
                "--resume and --force contradict each other: --resume continues run "
                f"{settings.run_id!r}, --force deletes it; pass only one"
            )
        exists = _has_content(root)
        if settings.resume and not exists:
            raise RunDirectoryError(
                f"cannot resume run {settings.run_id!r}: nothing found at {root}; "
                "start it without --resume (or check --run-id and --results-dir)"
            )
        if exists and not (settings.resume or settings.force):
            raise RunDirectoryError(
                f"run {settings.run_id!r} already exists at {root}; pass --resume to continue it, "
                "--force to overwrite it, or choose another --run-id"
            )
        initialize_from = None
        if settings.initialize_from is not None:
            _check_run_id(settings.initialize_from)
            initialize_from = results / settings.initialize_from
            if not initialize_from.is_dir():
                raise RunDirectoryError(
                    f"cannot initialize from run {settings.initialize_from!r}: nothing found at "
                    f"{initialize_from}; train that run first or fix --initialize-from"
                )
        if exists and settings.force:
            logger.info(
                "--force: deleting the previous results of run %r at %s", settings.run_id, root
            )
            shutil.rmtree(root)
        run_dir = cls(
            root=root,
            resumed=settings.resume,
            initialize_from=initialize_from,
            created=not settings.resume,
        )
        try:
            run_dir.layout.run_logs_dir.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise RunDirectoryError(
                f"cannot create the run folder {root}: {error.strerror}; choose a writable "
                "--results-dir"
            ) from error
        return run_dir

    def discard_if_unused(self) -> bool:
        """Delete a folder ``prepare`` created for a run that failed before its first checkpoint,
        so that retrying needs no ``--force``; returns whether it was deleted."""
        if not self.created or self.layout.checkpoint_index_path.exists():
            return False
        shutil.rmtree(self.root, ignore_errors=True)
        logger.info("The run ended before its first checkpoint; removed %s", self.root)
        return True

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
        """Write ``configuration.yaml`` (every key, flags applied); returns its path."""
        path = self.layout.configuration_path
        write_options(options, path)
        return path
