"""Self-play state of a ``ghost_*`` behavior on disk, beside ML-Agents' own checkpoints.

``<results>/<run-id>/<Behavior>/self_play/`` holds:

- ``snapshot-<id>.pt``: the weights (ML-Agents' actor ``state_dict``) of each snapshot in the window;
- ``state.pt``: the ``SelfPlayState`` (window, ratings, counters, opponents in play, win rates), the
  controller (learning team, team changes) and the trainer step they belong to;
- ``payoff.csv``: the learner's results against each pool member.

Everything is written atomically and when ML-Agents writes a checkpoint of the wrapped trainer, so
``--resume`` finds a self-play state of the same step as the model it loads. Snapshot files are
written before the state that names them and removed only after a state that no longer does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from mlagents_envs.logging_util import get_logger

from ghost.core.self_play import SelfPlayState
from ghost.core.state_folder import SelfPlayFolder
from ghost.mlagents_plugin.runs import GhostRun
from trainers.run_files.atomic import atomic_save, atomic_write_text
from trainers.run_files.safe_load import load_pt

logger = get_logger(__name__)


def self_play_folder(artifact_path: str | Path) -> SelfPlayFolder:
    """The ``self_play`` folder of one behavior's ML-Agents artifact folder."""
    return SelfPlayFolder(
        Path(artifact_path) / "self_play", save=atomic_save, load=load_pt,
        write_text=atomic_write_text,
    )  # fmt: skip


def save(folder: SelfPlayFolder, *, step: int, state: SelfPlayState, controller: Any) -> None:
    """Write the self-play state of trainer step ``step`` (``controller``: its state dict)."""
    folder.save(state, {"step": int(step), "controller": controller})


def restore(
    folder: SelfPlayFolder,
    record: dict[str, Any],
    *,
    state: SelfPlayState,
    run: GhostRun,
    step: int,
) -> None:
    """Continue ``state`` and ``run``'s controller from a ``SelfPlayFolder.load`` record; ``step``
    is the trainer step of the model checkpoint just loaded."""
    name = state.behavior_name
    if record["step"] != step:
        logger.warning(
            "%s: the self-play state on disk is from step %d, the model checkpoint from step "
            "%d (the run stopped between the two writes); continuing with that state",
            name, record["step"], step,
        )  # fmt: skip
    folder.restore(record, state)
    run.restore_controller(record["controller"])
    logger.info(
        "%s: resumed self-play at step %d: window %s, Elo %.1f, learning team %s",
        name, step, [s.snapshot_id for s in state.window], state.rating,
        run.controller.learning_team,
    )  # fmt: skip


def read_checkpoint_policy(path: str | Path) -> Any:
    """The actor weights of a ``.pt`` checkpoint written by mlagents-learn (for fixed opponents).

    Raises:
        ValueError: the file is missing or is not an ML-Agents checkpoint.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"policy file {path} does not exist")
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # torch raises many kinds for a file that is not its own
        raise ValueError(f"{path} is not a torch checkpoint ({error})") from None
    if not isinstance(data, dict) or "Policy" not in data:
        raise ValueError(
            f"{path} is not a checkpoint written by mlagents-learn (it has no 'Policy' entry); "
            "use results/<run>/<Behavior>/checkpoint.pt or <Behavior>-<step>.pt"
        )
    return data["Policy"]
