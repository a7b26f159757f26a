"""``RunRecord``: what a run left in its results folder, read back in one place.

A run folder of ``ghost-learn`` (``results/<run-id>``, laid out as ``trainers.run_files.layout.RunLayout``
describes) holds the configuration the run trained with (``configuration.yaml``), its final
policies (``<Behavior>.pt``), the snapshots of its self-play behaviors and its checkpoints. A
snapshot's step and rating live in the run's latest checkpoint (``checkpoint.json`` names it), not
in the snapshot file, so they are ``None`` for a run that never wrote a checkpoint.

Runs of the other hosts of our self-play (``mlagents-learn`` with our plugin, Stable-Baselines3,
RLlib) are read the same way: ``host`` is the run as ``ghost.play.run_layouts`` recognises it,
and the snapshots, final policy, checkpoint steps, payoff table and tournament file come from it.
``notes`` says what such a run cannot give (its game, its final policy...).

Evaluation, tournaments, exploiters and replays all read runs through this class; nothing else
parses a run's ``configuration.yaml`` by hand.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import yaml

from envs.env_kinds import EnvPath, describe_env
from envs.games import BUILTIN_GAMES
from envs.sources import resolve_env
from ghost.config.loader import load_options, options_from_dict
from ghost.config.settings import RunOptions
from ghost.config.structuring import ConfigProblem, converter
from ghost.core.settings import SelfPlaySettings
from ghost.exceptions import ConfigError, RunDirectoryError
from ghost.play.run_layouts import (
    GHOST_LEARN,
    MLAGENTS,
    FinalPolicy,
    HostRun,
    SnapshotInfo,
    read_run,
)
from trainers.run_files.layout import CONFIGURATION_FILE, RunLayout

__all__ = ["RunRecord", "SnapshotInfo"]

logger = logging.getLogger(__name__)


# not slots: ``functools.cached_property`` keeps the parsed configuration in the instance dict
@attrs.frozen(slots=False)
class RunRecord:
    """One run folder, read back (nothing is read until asked for)."""

    #: the run folder, ``results/<run-id>``; for other hosts, what
    #: ``ghost.play.run_layouts.read_run`` takes (an SB3 model's folder, an RLlib checkpoint)
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

        A run of ``mlagents-learn`` gives its ``env_settings`` and ``engine_settings`` only (its
        behaviors are ML-Agents' trainers, which ghost-learn's parser does not take); a run of
        SB3 or RLlib, which writes no configuration, the defaults.

        Raises:
            GhostError: the file is missing or invalid (a ``ConfigError`` names the key).
        """
        if self.host.host == GHOST_LEARN:
            return load_options(self.layout.configuration_path)
        if self.host.host != MLAGENTS:
            return RunOptions()
        sections = ("env_settings", "engine_settings")
        return options_from_dict(
            {k: self.configuration[k] for k in sections if k in self.configuration}
        )

    def self_play_settings(self, behavior_name: str) -> SelfPlaySettings | None:
        """The ``self_play`` section ``behavior_name`` trained with (``None``: none, or the host
        does not record it).

        Raises:
            GhostError: the configuration is invalid.
        """
        if self.host.host == GHOST_LEARN:
            return self.options().settings_for(behavior_name).self_play
        if self.host.host != MLAGENTS:
            return None
        behavior = (self.configuration.get("behaviors") or {}).get(behavior_name) or {}
        section = behavior.get("self_play") if isinstance(behavior, Mapping) else None
        if section is None:
            return None
        try:
            return converter.structure(section, SelfPlaySettings)
        except ConfigProblem as problem:
            raise problem.to_error(("behaviors", behavior_name, "self_play")) from None

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
    @functools.cached_property
    def host(self) -> HostRun:
        """The run as its host laid it out (``ghost.play.run_layouts``)."""
        return read_run(self.root)

    def notes(self, behavior_name: str) -> list[str]:
        """What evaluation should say about ``behavior_name``'s final policy: one line when the
        host keeps none that can be read safely and another file stands for it (RLlib)."""
        final = self.host.final_policy(behavior_name)
        return [final.note] if final is not None and final.note else []

    def final_policy_path(self, behavior_name: str) -> Path:
        """The final policy of ``behavior_name`` (``Name``, no team): ``<run>/<Behavior>.pt`` of
        ghost-learn; mlagents-learn's ``<Behavior>/checkpoint.pt``, SB3's ``model.zip``, the
        newest snapshot of RLlib (see ``notes``)."""
        final = self.final(behavior_name)
        return final.path if final is not None else self.layout.final_policy_path(behavior_name)

    def final(self, behavior_name: str) -> FinalPolicy | None:
        """The final policy of ``behavior_name`` with its step and note (``None``: none)."""
        return self.host.final_policy(behavior_name)

    def final_policy(self, behavior_name: str, *, behavior_spec: Any = None) -> Any:
        """The final policy of ``behavior_name``, loaded (``ghost.play.host_policies``).

        Args:
            behavior_spec: the behavior it will play (RLlib's snapshots need it).

        Raises:
            ConfigError: the run has no final policy of that behavior.
        """
        from ghost.play.host_policies import load_host_policy

        path = self.final_policy_path(behavior_name)
        if not path.is_file():
            raise ConfigError(f"run {self.root} has no final policy {path.name}")
        return load_host_policy(path, behavior_spec=behavior_spec)

    def checkpoint_steps(self) -> dict[str, int]:
        """Behavior name → step of the run's latest checkpoint (empty without one)."""
        return self.host.checkpoint_steps()

    def snapshots(self, behavior_name: str) -> list[SnapshotInfo]:
        """The snapshot files of ``behavior_name`` (``Name``, no team), oldest first. A run of
        SB3 or RLlib has one learner for every team: its snapshots, whatever the name.

        Raises:
            RunDirectoryError: the run or its snapshot folder is missing or empty.
        """
        self.check()
        return self.host.snapshots(behavior_name)

    def payoff_path(self, behavior_name: str) -> Path:
        """The payoff table of ``behavior_name``'s self-play (``payoff.csv``)."""
        return self.host.payoff_path(behavior_name)
