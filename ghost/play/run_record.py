"""``RunRecord``: what a run left in its results folder, read back in one place.

A run folder (``results/<run-id>``, laid out as ``trainers.run_layout.RunLayout`` describes)
holds the configuration the run trained with (``configuration.yaml``), its final policies
(``<Behavior>.pt``), the snapshots of its self-play behaviors and its checkpoints. A snapshot's
step and rating live in the run's latest checkpoint (``checkpoint.json`` names it), not in the
snapshot file, so they are ``None`` for a run that never wrote a checkpoint.

Evaluation, leagues, exploiters and replays all read runs through this class; nothing else
parses a run's ``configuration.yaml`` by hand.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import yaml

from envs.env_kinds import EnvPath, describe_env
from envs.games import BUILTIN_GAMES
from envs.sources import resolve_env
from ghost.config.loader import load_options
from ghost.config.settings import RunOptions
from ghost.exceptions import CheckpointError, ConfigError, RunDirectoryError
from trainers.run_layout import CONFIGURATION_FILE, RunLayout

logger = logging.getLogger(__name__)


@attrs.frozen(kw_only=True)
class SnapshotInfo:
    """One snapshot file of a run, with the step it was taken at and its current rating."""

    snapshot_id: int
    step: int | None
    rating: float | None
    path: Path


# not slots: ``functools.cached_property`` keeps the parsed configuration in the instance dict
@attrs.frozen(slots=False)
class RunRecord:
    """One run folder, read back (nothing is read until asked for).

    :param root: the run folder, ``results/<run-id>``.
    """

    root: Path = attrs.field(converter=Path)

    @property
    def layout(self) -> RunLayout:
        """Where each file of the run lives."""
        return RunLayout(self.root)

    def check(self) -> None:
        """Raise ``RunDirectoryError`` unless the run folder exists."""
        if not self.root.is_dir():
            raise RunDirectoryError(f"run folder {self.root} does not exist; pass results/<run-id>")

    # -- the configuration ---------------------------------------------------------------------
    @functools.cached_property
    def configuration(self) -> Mapping[str, Any]:
        """``configuration.yaml`` as written; empty when it is missing or unreadable."""
        path = self.layout.configuration_path
        try:
            configuration = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as error:
            logger.debug("cannot read %s: %s", path, error)
            return {}
        return configuration if isinstance(configuration, Mapping) else {}

    def options(self) -> RunOptions:
        """The configuration parsed and checked as ``ghost-learn`` parses it.

        :raises GhostError: the file is missing or invalid (a ``ConfigError`` names the key).
        """
        return load_options(self.layout.configuration_path)

    @property
    def env_path(self) -> str | None:
        """``env_settings.env_path``: what the run trained on (``None`` when not recorded)."""
        env_path = (self.configuration.get("env_settings") or {}).get("env_path")
        return str(env_path) if env_path else None

    @property
    def described_env(self) -> EnvPath:
        """``env_path`` read by its environment kind (``envs.env_kinds.describe_env``)."""
        return describe_env(self.env_path)

    @property
    def builtin_game(self) -> str | None:
        """The built-in game the run trained on (``envs.games.BUILTIN_GAMES``), or ``None``."""
        return self.env_path if self.described_env.capabilities.arenas else None

    def require_builtin_game(self) -> str:
        """``builtin_game``; a ``ConfigError`` naming the choices when the run has none."""
        if self.builtin_game is None:
            raise ConfigError(
                f"{self.root} is not the folder of a run on a built-in game (its "
                f"configuration.yaml env_settings.env_path is none of "
                f"{', '.join(sorted(BUILTIN_GAMES))})"
            )
        return self.builtin_game

    @property
    def seated_env_path(self) -> str | None:
        """``env_path`` when the run trained on an OpenSpiel or PettingZoo game, else ``None``."""
        return self.env_path if self.described_env.capabilities.seated else None

    @property
    def base_env_path(self) -> str | None:
        """``env_path`` when the run trained on a Unity build or a ``module:callable``
        environment (neither a built-in game nor an OpenSpiel/PettingZoo one), else ``None``."""
        if self.env_path is None or not self.described_env.capabilities.base_env:
            return None
        return self.env_path

    def env_source(self) -> Any:
        """The environment factory of ``env_path`` (``envs.sources.resolve_env``)."""
        if self.env_path is None:
            raise ConfigError(
                f"{self.root}/{CONFIGURATION_FILE} names no env_settings.env_path; pass the "
                "folder of a run trained on a named environment"
            )
        return resolve_env(self.env_path)

    @property
    def behaviors(self) -> list[str]:
        """The behavior names configured under ``behaviors:``, in file order."""
        return [str(name) for name in self.configuration.get("behaviors") or {}]

    # -- what training left ----------------------------------------------------------------------
    def final_policy_path(self, behavior_name: str) -> Path:
        """``<run>/<Behavior>.pt``: the final policy of ``behavior_name`` (``Name``, no team)."""
        return self.layout.final_policy_path(behavior_name)

    def final_policy(self, behavior_name: str) -> Any:
        """The final policy of ``behavior_name``, loaded.

        :raises ConfigError: the run has no final policy of that behavior.
        """
        from trainers.policy import load_policy

        path = self.final_policy_path(behavior_name)
        if not path.is_file():
            raise ConfigError(f"run {self.root} has no final policy {path.name}")
        return load_policy(path)

    def checkpoint_steps(self) -> dict[str, int]:
        """Behavior name → step of the run's latest checkpoint (empty without one)."""
        try:
            index = json.loads(self.layout.checkpoint_index_path.read_text(encoding="utf-8"))
            return {name: int(entry["step"]) for name, entry in index["behaviors"].items()}
        except (OSError, ValueError, KeyError, TypeError) as error:
            logger.info("no checkpoint steps in %s: %s", self.root, error)
            return {}

    def snapshots(self, behavior_name: str) -> list[SnapshotInfo]:
        """The snapshot files of ``behavior_name`` (``Name``, no team), oldest first.

        :raises RunDirectoryError: the run or its snapshot folder is missing or empty.
        """
        self.check()
        folder = self.layout.snapshots_dir(behavior_name)
        files = self.layout.snapshot_files(behavior_name)
        if not files:
            raise RunDirectoryError(
                f"run {self.root} has no snapshots of {behavior_name} (looked in {folder}); "
                "snapshots exist only for behaviors trained with self_play"
            )
        metadata = self._window_metadata(behavior_name)
        return [
            SnapshotInfo(
                snapshot_id=snapshot_id,
                step=int(metadata[snapshot_id]["step"]) if snapshot_id in metadata else None,
                rating=float(metadata[snapshot_id]["rating"]) if snapshot_id in metadata else None,
                path=files[snapshot_id],
            )
            for snapshot_id in sorted(files)
        ]

    def _window_metadata(self, behavior_name: str) -> dict[int, dict[str, Any]]:
        """Snapshot id → ``{step, rating}`` from the run's latest checkpoint (empty without one)."""
        from trainers.safe_load import load_pt  # torch loads here, not for reading a folder

        try:
            index = json.loads(self.layout.checkpoint_index_path.read_text(encoding="utf-8"))
            entry = index["behaviors"][behavior_name]
            state = load_pt(self.root / entry["file"])
            window = state["ghost"]["window"]
        except (OSError, ValueError, KeyError, TypeError, CheckpointError) as error:
            logger.info(
                "no snapshot steps or ratings for %s in %s: %s", behavior_name, self.root, error
            )
            return {}
        return {int(m["snapshot_id"]): m for m in window}
