"""The ``self_play=`` argument of ``GhostVecEnv``: a dict, a ``SelfPlaySettings`` or a trainer YAML.

Dicts and YAML files go through the same structuring as ``ghost-learn``'s configuration
(``ghost.config``), so a misspelt key is a ``ConfigError`` naming its path and the valid keys.
Keys that only our own trainer can act on (league exploiters, the average policy, scheduled
evaluations, exploitability scores, presets) are refused rather than ignored.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ghost.config.loader import load_options
from ghost.config.structuring import ConfigProblem, converter
from ghost.core.settings import SelfPlaySettings
from ghost.exceptions import ConfigError

SelfPlayArgument = SelfPlaySettings | Mapping[str, Any] | str | os.PathLike[str] | None


def self_play_settings(value: SelfPlayArgument, *, behavior: str) -> SelfPlaySettings:
    """The ``SelfPlaySettings`` that ``value`` describes, checked for what SB3 can run.

    Args:
        value: None (every default), a ``SelfPlaySettings``, a dict of ``self_play:`` keys, or
            the path of a trainer YAML (its ``behaviors.<behavior>.self_play`` section, else
            ``default_settings.self_play``).
        behavior: the behavior name of the game (``tictactoe``), to find its YAML section.

    Raises:
        ConfigError: an unknown key, a bad value, a YAML without that section, or a key the SB3
            integration does not support (the message names the key and the fix).
    """
    if value is None:
        settings = SelfPlaySettings()
    elif isinstance(value, SelfPlaySettings):
        settings = value
    elif isinstance(value, Mapping):
        settings = _from_mapping(value)
    elif isinstance(value, str | os.PathLike):
        settings = _from_yaml(value, behavior)
    else:
        raise ConfigError(
            f"self_play= must be a dict of self_play keys, a SelfPlaySettings or the path of a "
            f"trainer YAML (got a {type(value).__name__})"
        )
    _refuse_unsupported(settings)
    return settings


def _from_mapping(value: Mapping[str, Any]) -> SelfPlaySettings:
    try:
        return converter.structure(dict(value), SelfPlaySettings)
    except ConfigProblem as problem:
        raise problem.to_error(("self_play",)) from None


def _from_yaml(path: str | os.PathLike[str], behavior: str) -> SelfPlaySettings:
    options = load_options(path)
    settings = options.settings_for(behavior).self_play
    if settings is None:
        sections = ", ".join(sorted(options.behaviors)) or "none"
        raise ConfigError(
            f"{path}: no self_play section for behavior {behavior!r} (behaviors in the file: "
            f"{sections}); add `self_play: {{}}` under behaviors.{behavior} or default_settings"
        )
    return settings


def _refuse_unsupported(settings: SelfPlaySettings) -> None:
    unsupported = []
    if settings.league.exploiters:
        unsupported.append("league (exploiters need their own trainers)")
    if settings.average_policy.enabled:
        unsupported.append("average_policy")
    if settings.evaluation is not None:
        unsupported.append("evaluation (evaluate the saved model with ghost.evaluation instead)")
    if settings.exploitability_every:
        unsupported.append("exploitability_every")
    if settings.preset not in (None, "auto", "none"):  # auto picks nothing a host PPO has
        unsupported.append("preset (its keys are hyperparameters of ghost-learn's own PPO)")
    if settings.seats != "fixed":
        unsupported.append("seats (GhostVecEnv seats the learning team itself)")
    if settings.learn_from_latest:
        unsupported.append("learn_from_latest (the VecEnv shows SB3 the learning team only)")
    if unsupported:
        raise ConfigError(
            "self_play keys the Stable-Baselines3 integration does not run: "
            f"{'; '.join(unsupported)}; remove them (ghost-learn runs them)"
        )
