"""The runs a results folder holds, to name them when a run id finds nothing.

``--resume --run-id nosuch`` is refused before anything else happens (no environment is looked
for), with the run ids that do exist, newest first.
"""

from __future__ import annotations

from pathlib import Path

from trainers.run_files.layout import CHECKPOINT_INDEX_FILE, CONFIGURATION_FILE
from trainers.run_files.lock import LOCK_FILE_NAME

#: run ids named in a message; the rest are counted
SHOWN_RUN_IDS = 5


def has_results(root: Path) -> bool:
    """Whether run folder ``root`` holds anything but a lock file."""
    return root.is_dir() and any(entry.name != LOCK_FILE_NAME for entry in root.iterdir())


def run_ids(results_dir: str | Path) -> list[str]:
    """The runs in ``results_dir`` (folders with a ``configuration.yaml`` or a checkpoint
    index), the most recently changed first."""
    folder = Path(results_dir)
    if not folder.is_dir():
        return []
    runs = [
        entry
        for entry in folder.iterdir()
        if entry.is_dir()
        and ((entry / CONFIGURATION_FILE).is_file() or (entry / CHECKPOINT_INDEX_FILE).is_file())
    ]
    runs.sort(key=lambda entry: (-entry.stat().st_mtime, entry.name))
    return [entry.name for entry in runs]


def runs_there(results_dir: str | Path) -> str:
    """``runs there: b, a`` (at most ``SHOWN_RUN_IDS``, then how many more), or why there are
    none."""
    folder = Path(results_dir)
    if not folder.is_dir():
        return f"there is no folder {folder}"
    ids = run_ids(folder)
    if not ids:
        return f"{folder} holds no run yet"
    shown = ", ".join(ids[:SHOWN_RUN_IDS])
    more = len(ids) - SHOWN_RUN_IDS
    return f"runs there: {shown}" + (f" and {more} more" if more > 0 else "")


def missing_run_message(run_id: str, results_dir: str | Path) -> str:
    """Why ``--resume --run-id run_id`` cannot resume: the run does not exist, and which do."""
    return (
        f"cannot resume run {run_id!r}: it does not exist under {results_dir} "
        f"({runs_there(results_dir)}); check --run-id and --results-dir, or start it without "
        "--resume"
    )
