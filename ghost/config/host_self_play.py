"""The ``self_play=`` argument of a host that is not ghost-learn (Stable-Baselines3, RLlib).

It takes None (every default), a ``SelfPlaySettings``, a mapping of ``self_play:`` keys, or the
path of a YAML file holding the section (``self_play:`` at the top, or the keys alone) or a whole
trainer configuration (``behaviors: {Name: {self_play: ...}}``, with ``default_settings``). Every
form goes through the structuring ``ghost-learn`` uses, so a misspelt key is a ``ConfigError``
naming its ``self_play.`` path and the valid keys. Each host names the keys it cannot run
(``Refusals``): they are refused with the reason, never ignored.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ghost.config.loader import options_from_dict, read_yaml
from ghost.config.structuring import ConfigProblem, converter
from ghost.core.settings import SelfPlaySettings
from ghost.exceptions import ConfigError

SECTION = "self_play"

SelfPlayArgument = SelfPlaySettings | Mapping[str, Any] | str | os.PathLike[str] | None

#: ``self_play.<key>`` -> (whether the settings use it, why the host cannot run it and the fix)
Refusals = Mapping[str, tuple[Callable[[SelfPlaySettings], bool], str]]

#: what no host but ghost-learn runs: its own trainer or environment stepping does the work
GHOST_LEARN_ONLY: Refusals = {
    "self_play.average_policy.enabled": (
        lambda s: s.average_policy.enabled,
        "the average policy is distilled into ghost-learn's networks; set enabled: false",
    ),
    "self_play.evaluation": (
        lambda s: s.evaluation is not None,
        "evaluation games need ghost-learn's environment stepping; evaluate the saved model with "
        "ghost.evaluation and remove the section",
    ),
    "self_play.exploitability_every": (
        lambda s: s.exploitability_every is not None,
        "exploitability is scored by ghost-learn's runs; score a trained model with "
        "envs.exploitability and remove the key",
    ),
    "self_play.preset": (
        lambda s: s.preset not in (None, "auto", "none"),
        "presets set hyperparameters of ghost-learn's own PPO (the magnet); remove the key",
    ),
    "self_play.seats": (
        lambda s: s.seats != "fixed",
        "shuffled seats are dealt by ghost-learn's environments; remove the key",
    ),
}


def host_self_play_settings(
    value: SelfPlayArgument, *, host: str, refusals: Refusals, behavior: str | None = None
) -> SelfPlaySettings:
    """Strict ``SelfPlaySettings`` from ``value`` (see the module docstring), checked against
    what ``host`` cannot run. ``behavior`` picks the behavior of a trainer configuration with
    several (with one, it may be left out).

    Raises:
        ConfigError: an unknown key, a wrong type or value (named by its ``self_play.`` path), a
            configuration without that behavior, or a key in ``refusals``.
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
    for where, (used, reason) in refusals.items():
        if used(settings):
            raise ConfigError(f"{where}: not supported with {host}: {reason}")
    return settings


def _structure(section: Any) -> SelfPlaySettings:
    try:
        return converter.structure({} if section is None else dict(section), SelfPlaySettings)
    except ConfigProblem as problem:
        raise problem.to_error((SECTION,)) from None


def _from_file(path: Path, behavior: str | None) -> SelfPlaySettings:
    raw = read_yaml(path)
    try:
        if isinstance(raw, Mapping) and ("behaviors" in raw or "default_settings" in raw):
            return _from_trainer_config(raw, behavior)
        if isinstance(raw, Mapping) and set(raw) == {SECTION}:
            return _structure(raw[SECTION])
        return _structure(raw)
    except ConfigError as error:
        raise type(error)(f"{path}: {error}") from None


def _from_trainer_config(raw: Mapping[str, Any], behavior: str | None) -> SelfPlaySettings:
    options = options_from_dict(raw)
    names = sorted(options.behaviors)
    if behavior is None:
        if len(names) != 1:
            raise ConfigError(
                f"the configuration has behaviors {names}; pass behavior= to pick one"
            )
        (behavior,) = names
    if names and behavior not in names and options.default_settings is None:
        raise ConfigError(f"behaviors.{behavior}: not in the configuration ({names})")
    found = options.settings_for(behavior).self_play
    return found if found is not None else SelfPlaySettings()
