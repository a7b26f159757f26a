"""One folder of a behavior's self-play state, the format every host writes.

A host (the ``mlagents-learn`` plugin, Stable-Baselines3, RLlib) keeps its self-play state in a
folder of its own choosing, always laid out the same way:

- ``snapshot-<id>.pt``: the weights of each snapshot in the window, in the host's own form (an
  actor's ``state_dict``);
- ``state.pt``: a record with ``format``, the ``SelfPlayState`` (``self_play``), the controller and
  whatever else the host keeps (its step, league turns...);
- ``payoff.csv``: the learner's results against each pool member.

Snapshots are written before the state that names them, and stale ones removed only after it, so
a kill at any moment leaves a folder that loads. The folder is self-contained: snapshots are found
in it by file name wherever it was written, so it can be moved. How files are written and read is
passed in (atomically, and read without running pickled code), which keeps this module free of
torch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ghost.core.self_play import SelfPlayState

#: the version of ``state.pt``'s record
FORMAT = 1
STATE_FILE = "state.pt"
PAYOFF_FILE = "payoff.csv"


class StateFolderError(ValueError):
    """The folder holds a state this version cannot read."""


class SelfPlayFolder:
    """The self-play state folder at ``folder``.

    Args:
        save: writes an object to a path atomically (``trainers.run_files.atomic.atomic_save``).
        load: reads an object from a path without running pickled code (``load_pt``).
        write_text: writes text to a path atomically.
    """

    def __init__(
        self,
        folder: str | Path,
        *,
        save: Callable[[Any, Path], None],
        load: Callable[[Path], Any],
        write_text: Callable[[Path, str], None],
    ) -> None:
        self.folder = Path(folder)
        self._save, self._load, self._write_text = save, load, write_text

    @property
    def state_path(self) -> Path:
        return self.folder / STATE_FILE

    def snapshot_path(self, snapshot_id: int) -> Path:
        return self.folder / f"snapshot-{snapshot_id}.pt"

    def save(self, state: SelfPlayState, record: Mapping[str, Any]) -> None:
        """Write the window's snapshots not yet in this folder, then ``state.pt`` (``record``'s
        entries beside ``format`` and ``self_play``), then ``payoff.csv``; then drop the
        snapshots the window no longer holds."""
        self.folder.mkdir(parents=True, exist_ok=True)
        for snapshot in state.window:
            path = self.snapshot_path(snapshot.snapshot_id)
            if snapshot.path != path or not path.exists():
                self._save(snapshot.weights, path)
                snapshot.path = path
        self._save({"format": FORMAT, **record, "self_play": state.state_dict()}, self.state_path)
        self._write_text(self.folder / PAYOFF_FILE, state.win_rates.payoff_csv())
        keep = {self.snapshot_path(snapshot.snapshot_id) for snapshot in state.window}
        for stale in self.folder.glob("snapshot-*.pt"):
            if stale not in keep:
                stale.unlink(missing_ok=True)

    def load(self) -> dict[str, Any] | None:
        """The saved record (its snapshots found in this folder), or None when there is none.

        Raises:
            StateFolderError: ``state.pt`` is of another format.
        """
        if not self.state_path.is_file():
            return None
        record = self._load(self.state_path)
        if not isinstance(record, dict) or record.get("format") != FORMAT:
            found = record.get("format") if isinstance(record, dict) else type(record).__name__
            raise StateFolderError(f"{self.state_path} has an unknown format {found!r}")
        for entry in record["self_play"]["window"]:
            entry["path"] = str(self.folder / Path(entry["path"]).name)
        return record

    def restore(self, record: Mapping[str, Any], state: SelfPlayState) -> None:
        """Continue ``state`` from ``record`` (from ``load``), reading its snapshots' weights."""
        state.load_state_dict(record["self_play"], read_weights=self._load)
