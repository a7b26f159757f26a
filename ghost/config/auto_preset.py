"""``self_play.preset: auto``, filled in once a run's environment path is final.

A ghost-learn run (``ghost.config.loader.resolve_options``) treats a ``self_play`` section without
a preset as ``auto``: it records ``preset: auto`` and sets the keys of the preset picked for the
game's kind (``ghost.config.presets.auto_choice``) that still hold their defaults. A key written
with another value keeps it; ``preset: none`` keeps ML-Agents' settings whatever the game. Hosts
that bring their own trainer (Stable-Baselines3, RLlib, mlagents-learn) never call this: the
preset's keys are ghost-learn's own PPO hyperparameters.
"""

from __future__ import annotations

from typing import Any

import attrs

from ghost.config.presets import AUTO, auto_choice, preset_values
from ghost.config.settings import BehaviorSettings, RunOptions


def with_auto_presets(options: RunOptions) -> RunOptions:
    """``options`` with every self-play behavior's absent or ``auto`` preset filled in."""
    env_path = options.env_settings.env_path
    behaviors = {
        name: _with_auto_preset(settings, env_path) for name, settings in options.behaviors.items()
    }
    return attrs.evolve(options, behaviors=behaviors)


def _with_auto_preset(settings: BehaviorSettings, env_path: str | None) -> BehaviorSettings:
    self_play = getattr(settings, "self_play", None)
    if self_play is None or self_play.preset not in (None, AUTO):
        return settings
    settings = attrs.evolve(settings, self_play=attrs.evolve(self_play, preset=AUTO))
    if auto_choice(env_path).preset is None:
        return settings
    for dotted, value in preset_values(AUTO, settings.trainer_type, env_path).items():
        settings = _set_if_default(settings, dotted.split("."), value)
    return settings


def _set_if_default(holder: Any, path: list[str], value: Any) -> Any:
    """``holder`` with the attribute at ``path`` set to ``value`` where it holds its default."""
    name, rest = path[0], path[1:]
    current = getattr(holder, name)
    if rest:
        return attrs.evolve(holder, **{name: _set_if_default(current, rest, value)})
    default = attrs.fields_dict(type(holder))[name].default
    if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
        default = default.factory()
    return attrs.evolve(holder, **{name: value}) if current == default else holder
