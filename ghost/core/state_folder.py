"""One folder of a behavior's self-play state, the format every host writes.

Every host (ghost-learn, the ``mlagents-learn`` plugin, Stable-Baselines3, RLlib) keeps its
self-play state in a folder of its own choosing, always laid out the same way:

- ``snapshot-<id>.pt``: the weights of each snapshot in the window, in the host's own form
  (written and read by the functions the host passes in: ghost-learn writes loadable policy
  files, the others an actor's ``state_dict``);
- ``state.pt``: a record with ``format``, the ``SelfPlayState`` (``self_play``), the controller and
  whatever else the host keeps (its step, league turns...). ghost-learn keeps this record inside
  each checkpoint instead, so a checkpoint set and its self-play state always match;
- ``payoff.csv``: the learner's results against each pool member (ghost-learn's sits beside the
  folder, ``<Behavior>/payoff.csv``, where its runs have always had it).

Snapshots are written before the state that names them, and stale ones removed only after it, so
a kill at any moment leaves a folder that loads. The folder is self-contained: snapshots are found
in it by file name wherever it was written, so it can be moved. How files are written and read is
passed in (``trainers.run_files.access.RUN_FILES``: atomically, and read without running pickled
code), which keeps this module free of torch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

from ghost.core.self_play import SelfPlayState

#: the version of ``state.pt``'s record
FORMAT = 1
STATE_FILE = "state.pt"
PAYOFF_FILE = "payoff.csv"


class StateFolderError(ValueError):
    """The folder holds a state this version cannot read."""


class FileAccess(Protocol):
    """How a host writes and reads files (``trainers.run_files.access.RunFiles``)."""

    def save(self, obj: Any, path: Path) -> None: ...
    def load(self, path: Path) -> Any: ...
    def write_text(self, path: Path, text: str) -> None: ...


class SelfPlayFolder:
    """The self-play state folder at ``folder``.

    Args:
        folder: where the snapshots and ``state.pt`` go.
        files: writes files atomically and reads them without running pickled code.
        write_weights: writes one snapshot's weights to a path (default ``files.save``).
        read_weights: reads them back (default ``files.load``).
        payoff_path: where ``payoff.csv`` goes (default inside ``folder``).
    """

    def __init__(
        self,
        folder: str | Path,
        *,
        files: FileAccess,
        write_weights: Callable[[Any, Path], None] | None = None,
        read_weights: Callable[[Path], Any] | None = None,
        payoff_path: Path | None = None,
    ) -> None:
        self.folder = Path(folder)
        self.files = files
        self._write_weights = write_weights or files.save
        self._read_weights = read_weights or files.load
        self.payoff_path = payoff_path or self.folder / PAYOFF_FILE

    @property
    def state_path(self) -> Path:
        return self.folder / STATE_FILE

    def snapshot_path(self, snapshot_id: int) -> Path:
        return self.folder / f"snapshot-{snapshot_id}.pt"

    def save(self, state: SelfPlayState, record: Mapping[str, Any]) -> None:
        """Everything, in the order that survives a kill: the snapshots, then ``state.pt``
        (``record``'s entries beside ``format`` and ``self_play``), then ``finish``."""
        self.write_snapshots(state)
        self.files.save(
            {"format": FORMAT, **record, "self_play": state.state_dict()}, self.state_path
        )
        self.finish(state)

    def write_snapshots(self, state: SelfPlayState) -> None:
        """Write each snapshot of the window this folder does not hold yet."""
        self.folder.mkdir(parents=True, exist_ok=True)
        for snapshot in state.window:
            path = self.snapshot_path(snapshot.snapshot_id)
            if snapshot.path != path or not path.exists():
                self._write_weights(snapshot.weights, path)
                snapshot.path = path

    def finish(self, state: SelfPlayState) -> None:
        """After the state naming the window is safe: write the payoff table, then drop the
        snapshots the window no longer holds."""
        self.files.write_text(self.payoff_path, state.win_rates.payoff_csv())
        keep = {self.snapshot_path(snapshot.snapshot_id) for snapshot in state.window}
        for stale in self.folder.glob("snapshot-*.pt"):
            if stale not in keep:
                stale.unlink(missing_ok=True)

    def load(self) -> dict[str, Any] | None:
        """The saved record of ``state.pt``, or None when there is none.

        Raises:
            StateFolderError: ``state.pt`` is of another format.
        """
        if not self.state_path.is_file():
            return None
        record = self.files.load(self.state_path)
        if not isinstance(record, dict) or record.get("format") != FORMAT:
            found = record.get("format") if isinstance(record, dict) else type(record).__name__
            raise StateFolderError(f"{self.state_path} has an unknown format {found!r}")
        return record

    def restore(self, record: Mapping[str, Any], state: SelfPlayState) -> None:
        """Continue ``state`` from ``record`` (from ``load``), reading its snapshots' weights."""
        self.restore_state(record["self_play"], state)

    def restore_state(self, saved: Mapping[str, Any], state: SelfPlayState) -> None:
        """Continue ``state`` from a ``SelfPlayState.state_dict`` (``state.pt``'s or one kept in
        a checkpoint), its snapshots found in this folder by file name (where the folder was
        moved) or else where they were written."""
        saved = dict(saved)
        saved["window"] = [
            {**entry, "path": self._find(entry["path"])} for entry in saved["window"]
        ]
        state.load_state_dict(saved, read_weights=self._read_weights)

    def _find(self, written: str) -> str:
        here = self.folder / Path(written).name
        return str(here) if here.is_file() or not Path(written).is_file() else written
