"""The ``self_play:`` section for RLlib: the same keys and the same strict errors as ghost-learn.

``self_play_settings`` takes a mapping (the section itself), a ``SelfPlaySettings``, or the path of
a YAML file holding either the section (``self_play:`` at the top, or the keys alone) or a whole
ghost-learn trainer configuration (``behaviors: {Name: {self_play: ...}}``). Keys that need
ghost-learn's own trainer or environment stepping are refused with the reason, never ignored.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ghost.config.loader import options_from_dict, read_yaml
from ghost.config.structuring import ConfigProblem, converter
from ghost.core.settings import SelfPlaySettings
from ghost.exceptions import ConfigError

SECTION = "self_play"

SelfPlaySource = Mapping[str, Any] | SelfPlaySettings | str | os.PathLike[str] | None


def self_play_settings(value: SelfPlaySource, *, behavior: str | None = None) -> SelfPlaySettings:
    """Strict ``SelfPlaySettings`` from ``value`` (see the module docstring); None means every
    default. ``behavior`` picks the behavior of a trainer configuration with several.

    Raises:
        ConfigError: an unknown key, a wrong type or value (named by its ``self_play.`` path),
            or a key this integration does not support.
    """
    if value is None:
        settings = SelfPlaySettings()
    elif isinstance(value, SelfPlaySettings):
        settings = value
    elif isinstance(value, str | os.PathLike):
        settings = _from_file(Path(value), behavior)
    elif isinstance(value, Mapping):
        settings = _structure(value)
    else:
        raise ConfigError(
            f"self_play must be a mapping of self_play keys, a SelfPlaySettings or a YAML path; "
            f"got {type(value).__name__}"
        )
    _reject_unsupported(settings)
    return settings


def _structure(section: Any) -> SelfPlaySettings:
    try:
        return converter.structure({} if section is None else section, SelfPlaySettings)
    except ConfigProblem as problem:
        raise problem.to_error((SECTION,)) from None


def _from_file(path: Path, behavior: str | None) -> SelfPlaySettings:
    raw = read_yaml(path)
    try:
        if isinstance(raw, Mapping) and "behaviors" in raw:
            return _from_trainer_config(raw, behavior)
        if isinstance(raw, Mapping) and set(raw) == {SECTION}:
            return _structure(raw[SECTION])
        return _structure(raw)
    except ConfigError as error:
        raise type(error)(f"{path}: {error}") from None


def _from_trainer_config(raw: Mapping[str, Any], behavior: str | None) -> SelfPlaySettings:
    behaviors = options_from_dict(raw).behaviors
    if behavior is None:
        if len(behaviors) != 1:
            raise ConfigError(
                f"the configuration has behaviors {sorted(behaviors)}; pass behavior= to pick one"
            )
        (behavior,) = behaviors
    if behavior not in behaviors:
        raise ConfigError(f"behaviors.{behavior}: not in the configuration ({sorted(behaviors)})")
    found = behaviors[behavior].self_play
    return found if found is not None else SelfPlaySettings()


def _reject_unsupported(settings: SelfPlaySettings) -> None:
    refusals = {
        "self_play.evaluation": (
            settings.evaluation is not None,
            "evaluation games need ghost-learn's environment stepping; evaluate the trained "
            "module with ghost.evaluation.seated_runs (see docs/rllib.md) and remove the section",
        ),
        "self_play.average_policy.enabled": (
            settings.average_policy.enabled,
            "the average policy is distilled into ghost-learn's networks; set enabled: false",
        ),
        "self_play.fixed_opponents": (
            bool(settings.fixed_opponents),
            "fixed opponents are scripted levels and policy files of ghost-learn, which RLlib "
            "modules cannot play; remove them",
        ),
        "self_play.exploitability_every": (
            settings.exploitability_every is not None,
            "RLlib runs compute no exploitability while training; score a trained module with "
            "envs.exploitability (scripts/rllib_self_play.py does) and remove the key",
        ),
        "self_play.learn_from_latest": (
            settings.learn_from_latest,
            "the ghosted team's experience would have to reach RLlib's learner, which trains "
            "only the learning team's module; remove the key",
        ),
        "self_play.seats": (
            settings.seats != "fixed",
            "shuffled seats are dealt by ghost-learn's environments; remove the key",
        ),
        "self_play.preset": (
            settings.preset not in (None, "auto", "none"),
            "presets set ghost-learn PPO hyperparameters (the magnet) that RLlib's PPO lacks; "
            "remove the key",
        ),
    }
    for where, (refused, reason) in refusals.items():
        if refused:
            raise ConfigError(f"{where}: not supported with RLlib: {reason}")
