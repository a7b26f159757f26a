"""Self-play state beside an SB3 model: ``model.zip`` and ``model.self_play/``.

The folder holds ``snapshot-<id>.pt`` (a window snapshot: the policy's ``state_dict``),
``state.pt`` (the ``SelfPlayState``, the controller, the step they belong to) and ``payoff.csv``.
Every file is written atomically; snapshots before the state that names them, and stale ones
removed only after it. Everything is read back with the weights-only loader (no pickled code
runs), and snapshots are found by file name in the folder, so the pair can be moved together.
"""

from __future__ import annotations

import logging
from pathlib import Path

from ghost.core.controller import GhostController
from ghost.core.self_play import SelfPlayState
from ghost.core.state_folder import SelfPlayFolder, StateFolderError
from ghost.exceptions import CheckpointError
from trainers.run_files.atomic import atomic_save, atomic_write_text
from trainers.run_files.safe_load import load_pt

logger = logging.getLogger(__name__)

SUFFIX = ".self_play"


def self_play_folder(model_path: str | Path) -> Path:
    """``run/model`` or ``run/model.zip`` → ``run/model.self_play``."""
    path = Path(model_path)
    if path.suffix == ".zip":
        path = path.with_suffix("")
    return path.with_name(path.name + SUFFIX)


def _folder(folder: Path) -> SelfPlayFolder:
    return SelfPlayFolder(folder, save=atomic_save, load=load_pt, write_text=atomic_write_text)


def save_self_play(
    folder: Path, *, step: int, state: SelfPlayState, controller: GhostController
) -> None:
    """Write the window's snapshots, the state and ``payoff.csv`` into ``folder``."""
    _folder(folder).save(state, {"step": int(step), "controller": controller.state_dict()})


def load_self_play(
    folder: Path, *, state: SelfPlayState, controller: GhostController, step: int
) -> None:
    """Continue ``state`` and ``controller`` from ``folder`` (``step``: the loaded model's).

    Raises:
        CheckpointError: the folder has no readable state of this format.
    """
    files = _folder(folder)
    try:
        record = files.load()
    except StateFolderError:
        raise CheckpointError(
            f"{files.state_path} is not a self-play state this version writes"
        ) from None
    if record is None:
        raise CheckpointError(
            f"no self-play state at {files.state_path}; resume from a model saved with "
            "GhostCallback.save (it writes <model>.self_play/ beside <model>.zip)"
        )
    if record["step"] != step:
        logger.warning(
            "%s: self-play state of step %d, model of step %d; continuing with that state",
            folder, record["step"], step,
        )  # fmt: skip
    controller.load_state_dict(record["controller"])
    files.restore(record, state)
    logger.info(
        "resumed self-play at step %d: window %s, Elo %.1f, learning team %s",
        step, [s.snapshot_id for s in state.window], state.rating, controller.learning_team,
    )  # fmt: skip
