"""The run folders of every host of our self-play, read as one thing.

Four hosts train with the ghost cycle, and each leaves its self-play state its own way:

- **ghost-learn**: ``results/<run>/`` (``trainers.run_files.layout.RunLayout``): ``configuration.yaml``,
  ``checkpoint.json``, the final ``<Behavior>.pt``, ``<Behavior>/snapshots/snapshot-<id>.pt``
  (policy files of ours), ``<Behavior>/payoff.csv``, TensorBoard events in ``<Behavior>/``.
- **mlagents-learn** with our plugin: ``results/<run>/`` as ML-Agents writes it
  (``configuration.yaml``, ``run_logs/training_status.json``, ``<Behavior>/checkpoint.pt``, its
  TensorBoard events in ``<Behavior>/``) and ``<Behavior>/self_play/``: ``snapshot-<id>.pt``
  (ML-Agents' actor ``state_dict``), ``state.pt``, ``payoff.csv``.
- **Stable-Baselines3**: ``<model>.zip`` and ``<model>.self_play/`` beside it:
  ``snapshot-<id>.pt`` (the SB3 policy's ``state_dict``), ``state.pt``, ``payoff.csv``;
  TensorBoard events where the model's ``tensorboard_log`` says.
- **RLlib**: a checkpoint folder (``algorithm.save_to_path``) holding ``ghost_self_play/``:
  ``snapshot-<id>.pt`` (the ``"main"`` module's state), ``state.pt``, ``payoff.csv``.

``read_run`` recognises the layout of a folder and gives a ``HostRun``: the behaviors, the final
policy (or the latest weights), the snapshots with their steps and ratings, the payoff table, the
TensorBoard logs, and ``notes``, one line for each thing the host's files cannot give evaluation.
``find_run_root`` finds the run a path lies in. The game a run trained on is
``configuration.yaml``'s ``env_settings`` (read by ``ghost.play.run_record.RunRecord``); SB3 and
RLlib record none that can be read safely, so their ``game_note`` says to name it.

Nothing here imports a framework or unpickles: ``state.pt`` files are read by
``trainers.run_files.safe_load.load_pt``, SB3's ``data`` and ML-Agents' status as JSON. Which player acts
with a snapshot's weights is ``ghost.play.host_policies``' business.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import attrs
import yaml

from ghost.exceptions import CheckpointError, RunDirectoryError
from trainers.run_files.layout import CONFIGURATION_FILE, RunLayout, snapshot_id_of

logger = logging.getLogger(__name__)

GHOST_LEARN = "ghost-learn"
MLAGENTS = "mlagents-learn"
SB3 = "stable-baselines3"
RLLIB = "rllib"

#: the self-play folders of the other hosts (``ghost.mlagents_plugin.state_files``,
#: ``ghost.integrations.sb3.state_files``, ``ghost.integrations.rllib.host``)
MLAGENTS_FOLDER = "self_play"
SB3_SUFFIX = ".self_play"
RLLIB_FOLDER = "ghost_self_play"
STATE_FILE = "state.pt"
PAYOFF_FILE = "payoff.csv"
TOURNAMENT_FILE = "tournament.json"
#: where ``ghost-eval league`` kept it before the command was named ``tournament`` (still read)
LEGACY_TOURNAMENT_FILE = "league.json"

#: the TensorBoard tags of the Elo and of the reward, in ML-Agents' names
ELO_TAG = "Self-play/ELO"
REWARD_TAG = "Environment/Cumulative Reward"
SB3_REWARD_TAG = "rollout/ep_rew_mean"
#: an SB3 event file belongs to the model whose ``start_time`` is this close to its own
_SB3_LOG_MATCH_S = 120.0


@attrs.frozen(kw_only=True)
class SnapshotInfo:
    """One snapshot file of a run, with the step it was taken at and its current rating."""

    snapshot_id: int
    step: int | None
    rating: float | None
    path: Path


@attrs.frozen(kw_only=True)
class FinalPolicy:
    """The policy a run ends with: its file, its step (``None`` when not recorded) and, when it
    is not what the host calls its final policy, a ``note`` saying what stands for it."""

    path: Path
    step: int | None = None
    note: str | None = None


@attrs.frozen(kw_only=True)
class CurveSource:
    """A folder of TensorBoard events: whose curves they are, and the tags the host writes the
    Elo and the reward under (``None``: it writes none)."""

    folder: Path
    label: str
    elo_tag: str | None = ELO_TAG
    reward_tag: str | None = REWARD_TAG


# -- the hosts -----------------------------------------------------------------------------------
@attrs.frozen(slots=False)
class HostRun:
    """What one host left in one run folder (subclasses: one per host).

    Args:
        root: the folder that names the run: ``results/<run>`` (ghost-learn, mlagents-learn),
            ``<model>.self_play`` (SB3), the checkpoint folder (RLlib).
    """

    host: ClassVar[str]
    #: whether a snapshot stands for the final policy (the host's own cannot be read safely)
    final_is_snapshot: ClassVar[bool] = False
    root: Path = attrs.field(converter=Path)

    @property
    def label(self) -> str:
        """``"<host> run <root>"``, for messages."""
        return f"{self.host} run {self.root}"

    @property
    def name(self) -> str:
        """The run's short name: its folder's (an SB3 model's file name)."""
        return self.root.resolve().name

    def configuration_path(self) -> Path | None:
        """The run's ``configuration.yaml`` (``None``: the host writes none)."""
        return None

    @property
    def game_note(self) -> str | None:
        """Why the run's game cannot be read from its files (``None``: it can)."""
        return None

    def behaviors(self) -> list[str]:
        """The behavior names the run trained (empty when the host does not record them)."""
        return []

    def snapshot_folder(self, behavior_name: str) -> Path:
        """Where the snapshots of ``behavior_name`` lie."""
        raise NotImplementedError

    def snapshots(self, behavior_name: str) -> list[SnapshotInfo]:
        """The snapshot files of ``behavior_name`` (``Name``, no team), oldest first.

        Raises:
            RunDirectoryError: the run has none.
        """
        folder = self.snapshot_folder(behavior_name)
        files: dict[int, Path] = {}
        for path in folder.glob("snapshot-*.pt"):
            snapshot_id = snapshot_id_of(path)
            if snapshot_id is not None:
                files[snapshot_id] = path
        if not files:
            raise RunDirectoryError(
                f"{self.label} has no snapshots of {behavior_name} (looked in {folder}); "
                "snapshots exist only for behaviors trained with self_play"
            )
        metadata = self.window_metadata(behavior_name)
        return [
            SnapshotInfo(
                snapshot_id=snapshot_id,
                step=int(metadata[snapshot_id]["step"]) if snapshot_id in metadata else None,
                rating=float(metadata[snapshot_id]["rating"]) if snapshot_id in metadata else None,
                path=files[snapshot_id],
            )
            for snapshot_id in sorted(files)
        ]

    def window_metadata(self, behavior_name: str) -> dict[int, Mapping[str, Any]]:
        """Snapshot id → ``{step, rating}`` from the run's self-play state (empty without)."""
        state = self.self_play_state(behavior_name)
        window = (state or {}).get("window") or []
        return {int(m["snapshot_id"]): m for m in window if isinstance(m, Mapping)}

    def self_play_state(self, behavior_name: str) -> Mapping[str, Any] | None:
        """``SelfPlayState.state_dict()`` as the host saved it last (``None`` without)."""
        return None

    def final_policy(self, behavior_name: str) -> FinalPolicy | None:
        """The final policy of ``behavior_name`` (``None`` when the run has none)."""
        raise NotImplementedError

    def checkpoint_steps(self) -> dict[str, int]:
        """Behavior name → the step of its latest checkpoint (empty when not recorded)."""
        return {}

    def payoff_path(self, behavior_name: str) -> Path:
        """The payoff table of ``behavior_name``: results per learner version and opponent."""
        return self.snapshot_folder(behavior_name) / PAYOFF_FILE

    def curve_sources(self) -> tuple[list[CurveSource], list[str]]:
        """The folders of TensorBoard events with the run's curves, and one line for each curve
        the host's files cannot give."""
        return [], []

    @property
    def tournament_result_path(self) -> Path:
        """Where ``ghost-eval tournament`` keeps the run's last tournament (in a folder of ours)."""
        raise NotImplementedError


def _events_in(folder: Path) -> bool:
    return folder.is_dir() and any(folder.glob("events.out.tfevents.*"))


def _behavior_event_folders(root: Path) -> list[CurveSource]:
    """Every behavior folder of ``root`` with TensorBoard events, in ML-Agents' tag names."""
    if not root.is_dir():
        return []
    return [
        CurveSource(folder=folder, label=folder.name)
        for folder in sorted(root.iterdir())
        if _events_in(folder)
    ]


def _read_state(path: Path, *, what: str) -> Mapping[str, Any] | None:
    """A host's ``state.pt`` (weights-only), or ``None`` (logged) when it cannot be read."""
    from trainers.run_files.safe_load import (
        load_pt,  # torch loads here, not for recognising a folder
    )

    try:
        record = load_pt(path)
    except (OSError, CheckpointError) as error:
        logger.info("no self-play state for %s: %s", what, error)
        return None
    return record if isinstance(record, Mapping) else None


@attrs.frozen(slots=False)
class GhostLearnRun(HostRun):
    """A run folder of ``ghost-learn`` (``trainers.run_files.layout.RunLayout``)."""

    host: ClassVar[str] = GHOST_LEARN

    @property
    def layout(self) -> RunLayout:
        return RunLayout(self.root)

    def configuration_path(self) -> Path | None:
        return self.layout.configuration_path

    def behaviors(self) -> list[str]:
        return _configured_behaviors(self.layout.configuration_path)

    def snapshot_folder(self, behavior_name: str) -> Path:
        return self.layout.snapshots_dir(behavior_name)

    def self_play_state(self, behavior_name: str) -> Mapping[str, Any] | None:
        """The ghost's state in the run's latest checkpoint (``checkpoint.json`` names it)."""
        from trainers.run_files.safe_load import load_pt

        try:
            index = json.loads(self.layout.checkpoint_index_path.read_text(encoding="utf-8"))
            entry = index["behaviors"][behavior_name]
            return load_pt(self.root / entry["file"])["ghost"]
        except (OSError, ValueError, KeyError, TypeError, CheckpointError) as error:
            logger.info(
                "no snapshot steps or ratings for %s in %s: %s", behavior_name, self.root, error
            )
            return None

    def final_policy(self, behavior_name: str) -> FinalPolicy | None:
        path = self.layout.final_policy_path(behavior_name)
        return FinalPolicy(path=path, step=self.checkpoint_steps().get(behavior_name))

    def checkpoint_steps(self) -> dict[str, int]:
        try:
            index = json.loads(self.layout.checkpoint_index_path.read_text(encoding="utf-8"))
            return {name: int(entry["step"]) for name, entry in index["behaviors"].items()}
        except (OSError, ValueError, KeyError, TypeError) as error:
            logger.info("no checkpoint steps in %s: %s", self.root, error)
            return {}

    def payoff_path(self, behavior_name: str) -> Path:
        return self.layout.payoff_path(behavior_name)

    def curve_sources(self) -> tuple[list[CurveSource], list[str]]:
        return _behavior_event_folders(self.root), []

    @property
    def tournament_result_path(self) -> Path:
        return self.layout.run_logs_dir / TOURNAMENT_FILE


@attrs.frozen(slots=False)
class MLAgentsRun(HostRun):
    """A results folder of ``mlagents-learn`` with our plugin (``ghost.mlagents_plugin``)."""

    host: ClassVar[str] = MLAGENTS

    def configuration_path(self) -> Path | None:
        return self.root / CONFIGURATION_FILE

    def behaviors(self) -> list[str]:
        return _configured_behaviors(self.root / CONFIGURATION_FILE)

    def behavior_folder(self, behavior_name: str) -> Path:
        """ML-Agents' artifact folder of a behavior (named as the behavior is)."""
        return self.root / behavior_name

    def snapshot_folder(self, behavior_name: str) -> Path:
        return self.behavior_folder(behavior_name) / MLAGENTS_FOLDER

    def self_play_state(self, behavior_name: str) -> Mapping[str, Any] | None:
        path = self.snapshot_folder(behavior_name) / STATE_FILE
        record = _read_state(path, what=f"{behavior_name} in {self.root}")
        return None if record is None else record.get("self_play")

    def training_status(self) -> Mapping[str, Any]:
        """ML-Agents' ``run_logs/training_status.json`` (empty when missing)."""
        path = RunLayout(self.root).training_status_path
        try:
            status = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            logger.info("cannot read %s: %s", path, error)
            return {}
        return status if isinstance(status, Mapping) else {}

    def final_policy(self, behavior_name: str) -> FinalPolicy | None:
        """ML-Agents' latest checkpoint of the behavior (``checkpoint.pt``: its actor under
        ``Policy``), at the step of its final checkpoint."""
        folder = self.behavior_folder(behavior_name)
        path = folder / "checkpoint.pt"
        steps = {
            int(match): candidate
            for candidate in folder.glob(f"{behavior_name}-*.pt")
            if (match := candidate.stem.rpartition("-")[2]).isdigit()
        }
        if not path.is_file() and steps:
            path = steps[max(steps)]
        return FinalPolicy(path=path, step=self.checkpoint_steps().get(behavior_name))

    def checkpoint_steps(self) -> dict[str, int]:
        found = {}
        for name, entry in self.training_status().items():
            final = entry.get("final_checkpoint") if isinstance(entry, Mapping) else None
            checkpoints = entry.get("checkpoints") if isinstance(entry, Mapping) else None
            latest = final or (checkpoints[-1] if checkpoints else None)
            if isinstance(latest, Mapping) and isinstance(latest.get("steps"), int):
                found[str(name)] = int(latest["steps"])
        return found

    def curve_sources(self) -> tuple[list[CurveSource], list[str]]:
        return _behavior_event_folders(self.root), []

    @property
    def tournament_result_path(self) -> Path:
        return RunLayout(self.root).run_logs_dir / TOURNAMENT_FILE


@attrs.frozen(slots=False)
class SB3Run(HostRun):
    """A model saved by SB3 with ``GhostCallback``: ``<model>.zip`` and ``root``, its
    ``<model>.self_play`` folder (``ghost.integrations.sb3.state_files``)."""

    host: ClassVar[str] = SB3

    @property
    def model_path(self) -> Path:
        """``<model>.zip`` beside the self-play folder."""
        return self.root.with_name(self.root.name[: -len(SB3_SUFFIX)] + ".zip")

    @property
    def name(self) -> str:
        return self.model_path.name

    @property
    def game_note(self) -> str | None:
        return (
            f"Stable-Baselines3 records no game in {self.model_path.name} (GhostVecEnv's env is "
            "not saved); pass --game with the built-in game it trained on, or --env with its "
            "Unity build or module:callable"
        )

    def snapshot_folder(self, behavior_name: str) -> Path:
        return self.root  # one learner plays every team: its snapshots whatever the name

    @functools.cached_property
    def _state(self) -> Mapping[str, Any] | None:
        return _read_state(self.root / STATE_FILE, what=str(self.root))

    def self_play_state(self, behavior_name: str) -> Mapping[str, Any] | None:
        return None if self._state is None else self._state.get("self_play")

    @functools.cached_property
    def model_data(self) -> Mapping[str, Any]:
        """The JSON ``data`` of ``<model>.zip`` as SB3 wrote it (pickled fields left as text)."""
        return sb3_model_data(self.model_path)

    def final_policy(self, behavior_name: str) -> FinalPolicy | None:
        step = self.model_data.get("num_timesteps")
        return FinalPolicy(path=self.model_path, step=step if isinstance(step, int) else None)

    def checkpoint_steps(self) -> dict[str, int]:
        return {}

    def curve_sources(self) -> tuple[list[CurveSource], list[str]]:
        log = self.model_data.get("tensorboard_log")
        if not isinstance(log, str) or not log:
            return [], [
                f"{self.model_path.name} was trained without tensorboard_log: no Elo or reward "
                "curves to draw"
            ]
        folder = self._log_folder(Path(log))
        if folder is None:
            return [], [
                f"SB3's TensorBoard logs of {self.model_path.name} (tensorboard_log: {log}) are "
                "not found from the current folder or beside the model: no Elo or reward curves"
            ]
        return [
            CurveSource(folder=folder, label=self.model_path.stem, reward_tag=SB3_REWARD_TAG)
        ], []

    def _log_folder(self, log: Path) -> Path | None:
        """The folder of ``log`` whose events began when the model's last ``learn`` did."""
        bases = [log] if log.is_absolute() else [Path.cwd() / log]
        bases += [] if log.is_absolute() else [p / log for p in self.root.parents[:3]]
        start = self.model_data.get("start_time")
        started = start / 1e9 if isinstance(start, int | float) else None
        best: tuple[float, Path] | None = None
        for base in bases:
            for events in sorted(base.glob("*/events.out.tfevents.*")):
                stamp = events.name.split(".")[3]
                if not stamp.isdigit():
                    continue
                gap = abs(int(stamp) - started) if started is not None else 0.0
                if best is None or gap < best[0]:
                    best = (gap, events.parent)
        if best is None or best[0] > _SB3_LOG_MATCH_S:
            return None
        return best[1]

    @property
    def tournament_result_path(self) -> Path:
        return self.root / TOURNAMENT_FILE


@attrs.frozen(slots=False)
class RLlibRun(HostRun):
    """An RLlib checkpoint with our self-play state (``ghost.integrations.rllib``)."""

    host: ClassVar[str] = RLLIB
    final_is_snapshot: ClassVar[bool] = True

    @property
    def game_note(self) -> str | None:
        return (
            "RLlib keeps the game (env_config) only in its pickle files, which ghost-eval does "
            "not load (they could run code); pass --game with the built-in game it trained on "
            "(its snapshots play in built-in games only: their weights do not say what the "
            "actions are)"
        )

    def snapshot_folder(self, behavior_name: str) -> Path:
        return self.root / RLLIB_FOLDER  # one learner ("main") plays every team

    @functools.cached_property
    def _state(self) -> Mapping[str, Any] | None:
        return _read_state(self.root / RLLIB_FOLDER / STATE_FILE, what=str(self.root))

    def self_play_state(self, behavior_name: str) -> Mapping[str, Any] | None:
        return None if self._state is None else self._state.get("self_play")

    def final_policy(self, behavior_name: str) -> FinalPolicy | None:
        """The newest snapshot: RLlib's own modules are pickle files, which are not loaded."""
        try:
            newest = self.snapshots(behavior_name)[-1]
        except RunDirectoryError:
            return None
        steps = (self._state or {}).get("learner_steps")
        at = f"; the checkpoint is at step {steps}" if isinstance(steps, int) else ""
        note = (
            f"RLlib keeps its modules in pickle files, which ghost-eval does not load (they "
            f"could run code): the newest snapshot, snapshot-{newest.snapshot_id} (step "
            f"{newest.step}{at}), stands for the final policy"
        )
        return FinalPolicy(path=newest.path, step=newest.step, note=note)

    def curve_sources(self) -> tuple[list[CurveSource], list[str]]:
        return [], [
            "RLlib writes its TensorBoard logs into its own results folder (~/ray_results by "
            "default), not into checkpoints: no Elo or reward curves here"
        ]

    @property
    def tournament_result_path(self) -> Path:
        return self.root / RLLIB_FOLDER / TOURNAMENT_FILE


def _configured_behaviors(configuration: Path) -> list[str]:
    """The behavior names under ``behaviors:`` of a ``configuration.yaml``, in file order."""
    try:
        raw = yaml.safe_load(configuration.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError):
        return []
    behaviors = raw.get("behaviors") if isinstance(raw, Mapping) else None
    return [str(name) for name in behaviors] if isinstance(behaviors, Mapping) else []


def sb3_model_data(model: Path) -> Mapping[str, Any]:
    """The ``data`` JSON inside an SB3 ``model.zip``, read as JSON (its pickled fields are left
    as the text SB3 wrote).

    Raises:
        CheckpointError: the file is not a model saved by SB3.
    """
    try:
        with zipfile.ZipFile(model) as archive:
            data = json.loads(archive.read("data"))
    except (OSError, KeyError, ValueError, zipfile.BadZipFile) as error:
        raise CheckpointError(
            f"{model} is not a model saved by SB3's model.save ({error})"
        ) from None
    if not isinstance(data, Mapping):
        raise CheckpointError(f"{model} is not a model saved by SB3's model.save")
    return data


# -- recognising a run ---------------------------------------------------------------------------
def _is_mlagents(folder: Path) -> bool:
    """Whether the run folder ``folder`` (it has a ``configuration.yaml``) was written by
    ``mlagents-learn``: our plugin's self-play folders, or ML-Agents' own status file."""
    if any(folder.glob(f"*/{MLAGENTS_FOLDER}/{STATE_FILE}")):
        return True
    try:
        status = json.loads(RunLayout(folder).training_status_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    metadata = status.get("metadata") if isinstance(status, Mapping) else None
    return isinstance(metadata, Mapping) and "mlagents_version" in metadata


def _sb3_folders(folder: Path) -> list[Path]:
    """The ``<model>.self_play`` folders in ``folder`` that have their ``<model>.zip``."""
    return sorted(
        path
        for path in folder.glob(f"*{SB3_SUFFIX}")
        if path.is_dir() and SB3Run(path).model_path.is_file()
    )


def _recognise(path: Path, *, given: bool) -> HostRun | None:
    """The run whose root is ``path``, or ``None``.

    Args:
        given: ``path`` is what the user named (not a parent of it): a folder holding one SB3 model
            with its self-play folder then stands for that model.

    Raises:
        RunDirectoryError: ``path`` holds several SB3 models (which one is meant?).
    """
    if path.is_file():
        if path.suffix == ".zip" and given:
            folder = path.with_name(path.stem + SB3_SUFFIX)
            return SB3Run(folder) if folder.is_dir() else None
        return None
    if not path.is_dir():
        return None
    if (path / CONFIGURATION_FILE).is_file():
        return MLAgentsRun(path) if _is_mlagents(path) else GhostLearnRun(path)
    if (path / RLLIB_FOLDER).is_dir():
        return RLlibRun(path)
    if path.name.endswith(SB3_SUFFIX) and SB3Run(path).model_path.is_file():
        return SB3Run(path)
    if given:
        models = _sb3_folders(path)
        if len(models) > 1:
            names = ", ".join(str(SB3Run(m).model_path) for m in models)
            raise RunDirectoryError(
                f"{path} holds several models saved with their self-play state ({names}); "
                "pass the one to read"
            )
        if models:
            return SB3Run(models[0])
    return None


def find_run(path: str | os.PathLike[str], *, levels: int = 3) -> HostRun | None:
    """The run ``path`` is, or lies in (up to ``levels`` folders up), of whichever host.

    Raises:
        RunDirectoryError: ``path`` is a folder of several SB3 models.
    """
    path = Path(path)
    for index, candidate in enumerate([path, *path.parents][: levels + 1]):
        found = _recognise(candidate, given=index == 0)
        if found is not None:
            return found
    return None


def find_run_root(path: str | os.PathLike[str], *, levels: int = 3) -> Path | None:
    """The root of the run ``path`` is or lies in (``HostRun.root``), or ``None``."""
    run = find_run(path, levels=levels)
    return None if run is None else run.root


def read_run(root: str | os.PathLike[str]) -> HostRun:
    """The run at ``root`` (any host's layout); a folder of none is read as ghost-learn's, whose
    reading then says what is missing.

    Raises:
        RunDirectoryError: ``root`` is a folder of several SB3 models.
    """
    root = Path(root)
    return _recognise(root, given=True) or GhostLearnRun(root)
