"""The results folder of one run, laid out like ML-Agents': the one place that names its paths.

::

    <results_dir>/<run_id>/
        configuration.yaml          the resolved configuration (flags applied); loads as is
        checkpoint.json             names the latest consistent checkpoint set (written last)
        run_logs/                   logs of the whole run: training_status.json (steps,
                                    checkpoints, reward and Elo per behavior), timers.json
                                    (where the time went), a Unity build's player logs
        <Behavior>/                 one folder per behavior name: stats (TensorBoard events)
            checkpoints/            <Behavior>-<step>.pt: resumable training state
            snapshots/              snapshot-<id>.pt: self-play snapshots, one policy file each
            payoff.csv              self-play results per learner version and opponent
        <Behavior>.pt               the final policy of each behavior
        <Behavior>.onnx             the same as a Unity ML-Agents brain (with the onnx extra)

Behavior names may hold characters a file name cannot (``/``, ``:``...); those become ``_``.
Nothing here writes: writers create the folders they write into.
"""

from __future__ import annotations

import re
from pathlib import Path

import attrs

CONFIGURATION_FILE = "configuration.yaml"
CHECKPOINT_INDEX_FILE = "checkpoint.json"
_UNSAFE = re.compile(r'[\\/:*?"<>|\x00-\x1f]')
_SNAPSHOT_FILE = re.compile(r"snapshot-(\d+)\.pt")


def safe_name(name: str) -> str:
    """``name`` usable as one file or folder name on every platform."""
    cleaned = _UNSAFE.sub("_", name).strip()
    return cleaned if cleaned not in ("", ".", "..") else "_"


def has_unsafe_characters(name: str) -> bool:
    """Whether ``name`` holds a character ``safe_name`` would replace."""
    return _UNSAFE.search(name) is not None


def snapshot_id_of(path: Path) -> int | None:
    """The id in a ``snapshot-<id>.pt`` file name, or None for any other name."""
    match = _SNAPSHOT_FILE.fullmatch(path.name)
    return int(match.group(1)) if match else None


@attrs.frozen
class RunLayout:
    """The paths of one run folder ``root`` (see the module docstring)."""

    root: Path = attrs.field(converter=Path)

    @property
    def configuration_path(self) -> Path:
        return self.root / CONFIGURATION_FILE

    @property
    def checkpoint_index_path(self) -> Path:
        return self.root / CHECKPOINT_INDEX_FILE

    @property
    def run_logs_dir(self) -> Path:
        return self.root / "run_logs"

    @property
    def training_status_path(self) -> Path:
        return self.run_logs_dir / "training_status.json"

    @property
    def timers_path(self) -> Path:
        return self.run_logs_dir / "timers.json"

    def behavior_dir(self, behavior_name: str) -> Path:
        """``<Behavior>/``: the stats of one behavior name."""
        return self.root / safe_name(behavior_name)

    def checkpoints_dir(self, behavior_name: str) -> Path:
        return self.behavior_dir(behavior_name) / "checkpoints"

    def checkpoint_path(self, behavior_name: str, step: int) -> Path:
        return self.checkpoints_dir(behavior_name) / f"{safe_name(behavior_name)}-{step}.pt"

    def checkpoint_files(self, behavior_name: str) -> list[Path]:
        """The checkpoint files of a behavior on disk, oldest first."""
        pattern = f"{safe_name(behavior_name)}-*.pt"
        files = self.checkpoints_dir(behavior_name).glob(pattern)
        return sorted(files, key=lambda path: path.stat().st_mtime)

    def snapshots_dir(self, behavior_name: str) -> Path:
        return self.behavior_dir(behavior_name) / "snapshots"

    def snapshot_path(self, behavior_name: str, snapshot_id: int) -> Path:
        return self.snapshots_dir(behavior_name) / f"snapshot-{snapshot_id}.pt"

    def snapshot_files(self, behavior_name: str) -> dict[int, Path]:
        """``{snapshot id: file}`` of the snapshots of a behavior on disk."""
        found = {}
        for path in self.snapshots_dir(behavior_name).glob("snapshot-*.pt"):
            snapshot_id = snapshot_id_of(path)
            if snapshot_id is not None:
                found[snapshot_id] = path
        return dict(sorted(found.items()))

    def payoff_path(self, behavior_name: str) -> Path:
        return self.behavior_dir(behavior_name) / "payoff.csv"

    def final_onnx_path(self, behavior_name: str) -> Path:
        """``<Behavior>.onnx``: the final policy as a Unity ML-Agents brain."""
        return self.root / f"{safe_name(behavior_name)}.onnx"

    def final_policy_path(self, behavior_name: str) -> Path:
        """``<Behavior>.pt`` beside ``configuration.yaml``: the policy a finished run leaves."""
        return self.root / f"{safe_name(behavior_name)}.pt"
