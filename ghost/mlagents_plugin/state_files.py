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
from ghost.mlagents_plugin.runs import GhostRun
from trainers.atomic_files import atomic_save, atomic_write_text
from trainers.safe_load import load_pt

logger = get_logger(__name__)

FORMAT = 1


class SelfPlayFiles:
    """The ``self_play`` folder of one behavior's ML-Agents artifact folder."""

    def __init__(self, artifact_path: str | Path) -> None:
        self.folder = Path(artifact_path) / "self_play"

    @property
    def state_path(self) -> Path:
        return self.folder / "state.pt"

    def snapshot_path(self, snapshot_id: int) -> Path:
        return self.folder / f"snapshot-{snapshot_id}.pt"

    def save(self, *, step: int, state: SelfPlayState, controller: dict[str, Any]) -> None:
        """Write the window's new snapshots, then the state, then drop evicted snapshots."""
        for snapshot in state.window:
            if snapshot.path is None or not snapshot.path.exists():
                snapshot.path = self.snapshot_path(snapshot.snapshot_id)
                atomic_save(snapshot.weights, snapshot.path)
        record = {
            "format": FORMAT,
            "step": int(step),
            "self_play": state.state_dict(),
            "controller": controller,
        }
        atomic_save(record, self.state_path)
        atomic_write_text(self.folder / "payoff.csv", state.win_rates.payoff_csv())
        keep = {snapshot.path for snapshot in state.window}
        for stale in self.folder.glob("snapshot-*.pt"):
            if stale not in keep:
                stale.unlink(missing_ok=True)

    def load(self) -> dict[str, Any] | None:
        """The saved record, or None when this behavior has none yet."""
        if not self.state_path.exists():
            return None
        record = load_pt(self.state_path)
        if record.get("format") != FORMAT:
            raise ValueError(f"{self.state_path} has an unknown format {record.get('format')!r}")
        return record


def restore(record: dict[str, Any], *, state: SelfPlayState, run: GhostRun, step: int) -> None:
    """Continue ``state`` and ``run``'s controller from a ``SelfPlayFiles.load`` record; ``step``
    is the trainer step of the model checkpoint just loaded."""
    name = state.behavior_name
    if record["step"] != step:
        logger.warning(
            "%s: the self-play state on disk is from step %d, the model checkpoint from step "
            "%d (the run stopped between the two writes); continuing with that state",
            name, record["step"], step,
        )  # fmt: skip
    state.load_state_dict(record["self_play"], read_weights=read_snapshot)
    run.restore_controller(record["controller"])
    logger.info(
        "%s: resumed self-play at step %d: window %s, Elo %.1f, learning team %s",
        name, step, [s.snapshot_id for s in state.window], state.rating,
        run.controller.learning_team,
    )  # fmt: skip


def read_snapshot(path: Path) -> Any:
    """A snapshot's weights as written by ``SelfPlayFiles.save``."""
    return torch.load(path, map_location="cpu", weights_only=True)


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
