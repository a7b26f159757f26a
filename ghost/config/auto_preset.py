"""``self_play.preset: auto``, filled in once a run's game is known.

Every self-play behavior of a ghost-learn run whose ``self_play`` has no preset, or ``auto``,
takes ``auto``: on a written ``self_play:`` section (``with_auto_presets``, from
``ghost.config.loader.resolve_options``), and on self-play turned on by default because the
environment has opposing teams, with or without a config (``with_auto_preset``, from
``ghost.config.behavior_matching``). It sets the keys of the preset picked for the game's kind
(``ghost.config.presets.auto_choice``) that still hold their defaults. A key written with another
value keeps it; ``preset: none`` keeps ML-Agents' settings whatever the game. Hosts that bring
their own trainer (Stable-Baselines3, RLlib, mlagents-learn) never call this: the preset's keys
are ghost-learn's own trainer settings.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from envs.settings import EnvironmentSettings
from ghost.config.presets import AUTO, auto_choice, preset_values
from ghost.config.settings import BehaviorSettings, RunOptions


def with_auto_presets(options: RunOptions) -> RunOptions:
    """``options`` with every self-play behavior's absent or ``auto`` preset filled in
    (``default_settings`` too)."""
    game = options.env_settings
    behaviors = {
        name: with_auto_preset(settings, game) for name, settings in options.behaviors.items()
    }
    default = options.default_settings
    if default is not None:
        default = with_auto_preset(default, game)
    return attrs.evolve(options, behaviors=behaviors, default_settings=default)


def with_auto_preset(settings: BehaviorSettings, game: EnvironmentSettings) -> BehaviorSettings:
    """``settings`` with its absent or ``auto`` preset filled in for ``game`` (unchanged without
    ``self_play`` or with another preset)."""
    self_play = getattr(settings, "self_play", None)
    if self_play is None or self_play.preset not in (None, AUTO):
        return settings
    settings = attrs.evolve(settings, self_play=attrs.evolve(self_play, preset=AUTO))
    if auto_choice(game).preset is None:
        return settings
    for dotted, value in preset_values(AUTO, settings.trainer_type, game).items():
        settings = _set_if_default(settings, dotted.split("."), value)
    return settings


def _set_if_default(holder: Any, path: list[str], value: Any) -> Any:
    """``holder`` with the value at ``path`` set to ``value`` where it holds its default (an
    entry a mapping lacks, such as a reward signal the behavior does not have, stays absent)."""
    name, rest = path[0], path[1:]
    if isinstance(holder, Mapping):
        if name not in holder:
            return holder
        return {**holder, name: _set_if_default(holder[name], rest, value)}
    current = getattr(holder, name)
    if rest:
        return attrs.evolve(holder, **{name: _set_if_default(current, rest, value)})
    default = attrs.fields_dict(type(holder))[name].default
    if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
        default = default.factory()
    return attrs.evolve(holder, **{name: value}) if current == default else holder
