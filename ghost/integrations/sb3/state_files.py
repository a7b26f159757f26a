"""Self-play state beside an SB3 model: ``model.zip`` and ``model.self_play/``.

The folder is the one every host writes (``ghost.core.state_folder.SelfPlayFolder``):
``snapshot-<id>.pt`` (a window snapshot: the policy's ``state_dict``), ``state.pt`` (the
``SelfPlayState``, the controller, the step they belong to) and ``payoff.csv``, saved and restored
by ``GhostCallback``'s host kit. Everything is read back with the weights-only loader (no pickled
code runs), and snapshots are found by file name in the folder, so the pair can be moved together.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ghost.core.state_folder import SelfPlayFolder, StateFolderError
from ghost.exceptions import CheckpointError
from trainers.run_files.access import RUN_FILES

SUFFIX = ".self_play"


def self_play_folder(model_path: str | Path) -> Path:
    """``run/model`` or ``run/model.zip`` → ``run/model.self_play``."""
    path = Path(model_path)
    if path.suffix == ".zip":
        path = path.with_suffix("")
    return path.with_name(path.name + SUFFIX)


def state_folder(model_path: str | Path) -> SelfPlayFolder:
    """The self-play folder beside the model at ``model_path``."""
    return SelfPlayFolder(self_play_folder(model_path), files=RUN_FILES)


def read_record(folder: SelfPlayFolder) -> dict[str, Any]:
    """The saved record in ``folder``.

    Raises:
        CheckpointError: the folder has no readable state of this format.
    """
    try:
        record = folder.load()
    except StateFolderError:
        raise CheckpointError(
            f"{folder.state_path} is not a self-play state this version writes"
        ) from None
    if record is None:
        raise CheckpointError(
            f"no self-play state at {folder.state_path}; resume from a model saved with "
            "GhostCallback.save (it writes <model>.self_play/ beside <model>.zip)"
        )
    return record
