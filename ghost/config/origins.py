"""Where a value a behavior trains with came from, said in refusals: the configuration wrote it,
a preset set it (which one), another behavior's ``self_play`` section lent it, or it is the
default.

It reads ``RunOptions.origins`` (the keys the file and the flags wrote) and the presets; nothing
is tracked while settings are built.
"""

from __future__ import annotations

import attrs

from ghost.config.auto_preset import all_written
from ghost.config.presets import AUTO, auto_choice, preset_values
from ghost.config.settings import BehaviorSettings, RunOptions

#: what ``value_origin`` says of a value it cannot trace (settings built in code)
GIVEN = "as given"


def value_origin(options: RunOptions, name: str, key: str, settings: BehaviorSettings) -> str:
    """Where behavior ``name``'s value at ``key`` (``hyperparameters.magnet_strength``) came
    from: ``written``, ``written in default_settings``, ``written in behaviors.A.self_play,
    which B takes: it has no self_play section``, ``preset robust``, ``preset auto (robust for
    this game)``, ``ML-Agents' default`` or ``as given`` (settings built in code)."""
    written = all_written(options.origins)
    own = f"behaviors.{name}" if name in options.behaviors else "default_settings"
    if written is not None:
        if f"{own}.{key}" in written:
            return "written" if own != "default_settings" else "written in default_settings"
        if f"default_settings.{key}" in written:
            return "written in default_settings"
        lender = _self_play_lender(options, name, key, written)
        if lender is not None:
            return (
                f"written in behaviors.{lender}.self_play, which {name} takes: it has no "
                "self_play section"
            )
    preset = _setting_preset(options, key, settings)
    if preset is not None:
        return preset
    if written is not None and _is_default(key, settings):
        return "ML-Agents' default"
    return GIVEN


def _self_play_lender(
    options: RunOptions, name: str, key: str, written: frozenset[str]
) -> str | None:
    """The behavior whose written ``self_play`` section ``name`` takes for ``key``, if any."""
    if not key.startswith("self_play.") or f"behaviors.{name}.self_play" in written:
        return None
    for other in options.behaviors:
        if other != name and f"behaviors.{other}.{key}" in written:
            return other
    return None


def _setting_preset(options: RunOptions, key: str, settings: BehaviorSettings) -> str | None:
    """``preset NAME`` (``preset auto (NAME for this game)``) when the behavior's preset sets
    ``key``."""
    self_play = settings.self_play
    if self_play is None or self_play.preset is None:
        return None
    game = options.env_settings
    if key not in preset_values(self_play.preset, settings.trainer_type, game):
        return None
    if self_play.preset == AUTO:
        return f"preset auto ({auto_choice(game).preset} for this game)"
    return f"preset {self_play.preset}"


def _is_default(key: str, settings: BehaviorSettings) -> bool:
    """Whether ``key`` holds the default of its settings class."""
    holder: object = settings
    *path, last = key.split(".")
    for part in path:
        holder = getattr(holder, part, None)
        if holder is None:
            return False
    if not attrs.has(type(holder)):
        return False
    field = attrs.fields_dict(type(holder)).get(last)
    if field is None:
        return False
    default = field.default
    if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
        default = default.factory()
    return getattr(holder, last) == default
