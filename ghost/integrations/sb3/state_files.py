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
from ghost.exceptions import CheckpointError
from trainers.atomic_files import atomic_save, atomic_write_text
from trainers.safe_load import load_pt

logger = logging.getLogger(__name__)

FORMAT = 1
SUFFIX = ".self_play"


def self_play_folder(model_path: str | Path) -> Path:
    """``run/model`` or ``run/model.zip`` → ``run/model.self_play``."""
    path = Path(model_path)
    if path.suffix == ".zip":
        path = path.with_suffix("")
    return path.with_name(path.name + SUFFIX)


def save_self_play(
    folder: Path, *, step: int, state: SelfPlayState, controller: GhostController
) -> None:
    """Write the window's snapshots, the state and ``payoff.csv`` into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    for snapshot in state.window:
        path = folder / f"snapshot-{snapshot.snapshot_id}.pt"
        if snapshot.path != path or not path.exists():
            atomic_save(snapshot.weights, path)
            snapshot.path = path
    record = {
        "format": FORMAT,
        "step": int(step),
        "self_play": state.state_dict(),
        "controller": controller.state_dict(),
    }
    atomic_save(record, folder / "state.pt")
    atomic_write_text(folder / "payoff.csv", state.win_rates.payoff_csv())
    keep = {folder / f"snapshot-{snapshot.snapshot_id}.pt" for snapshot in state.window}
    for stale in folder.glob("snapshot-*.pt"):
        if stale not in keep:
            stale.unlink(missing_ok=True)


def load_self_play(
    folder: Path, *, state: SelfPlayState, controller: GhostController, step: int
) -> None:
    """Continue ``state`` and ``controller`` from ``folder`` (``step``: the loaded model's).

    Raises:
        CheckpointError: the folder has no readable state of this format.
    """
    path = folder / "state.pt"
    if not path.is_file():
        raise CheckpointError(
            f"no self-play state at {path}; resume from a model saved with GhostCallback.save "
            "(it writes <model>.self_play/ beside <model>.zip)"
        )
    record = load_pt(path)
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        raise CheckpointError(f"{path} is not a self-play state this version writes")
    if record["step"] != step:
        logger.warning(
            "%s: self-play state of step %d, model of step %d; continuing with that state",
            folder, record["step"], step,
        )  # fmt: skip
    saved = record["self_play"]
    for entry in saved["window"]:  # found in this folder, wherever it was written
        entry["path"] = str(folder / Path(entry["path"]).name)
    controller.load_state_dict(record["controller"])
    state.load_state_dict(saved, read_weights=load_pt)
    logger.info(
        "resumed self-play at step %d: window %s, Elo %.1f, learning team %s",
        step, [s.snapshot_id for s in state.window], state.rating, controller.learning_team,
    )  # fmt: skip
