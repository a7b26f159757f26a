"""``self_play.preset: auto``, filled in once a run's game is known.

Every self-play behavior of a ghost-learn run whose ``self_play`` has no preset, or ``auto``,
takes ``auto``: on a written ``self_play:`` section (``with_auto_presets``, from
``ghost.config.loader.resolve_options``), and on self-play turned on by default because the
environment has opposing teams, with or without a config (``with_auto_preset``, from
``ghost.config.behavior_matching``). It sets the keys of the preset picked for the game's kind
(``ghost.config.presets.auto_choice``) that the configuration did not write
(``RunOptions.origins``): a written key keeps its value, also where it equals ML-Agents' default
(``magnet_strength: 0``); ``preset: none`` keeps ML-Agents' settings whatever the game. Hosts that bring
their own trainer (Stable-Baselines3, RLlib, mlagents-learn) never call this: the preset's keys
are ghost-learn's own trainer settings.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from envs.settings import EnvironmentSettings
from ghost.config.presets import AUTO, auto_choice, preset_values
from ghost.config.settings import BehaviorSettings, KeyOrigins, RunOptions

#: which keys a configuration wrote, as dotted paths from its top (``behaviors.B.self_play``);
#: None when only the structured settings are known
Written = frozenset[str] | None


def written_paths(raw: Any) -> frozenset[str]:
    """Every key path a parsed YAML document writes (``behaviors.B.hyperparameters.beta``)."""
    if not isinstance(raw, Mapping):
        return frozenset()
    paths: set[str] = set()
    for key, value in raw.items():
        paths.add(str(key))
        paths.update(f"{key}.{inner}" for inner in written_paths(value))
    return frozenset(paths)


def with_auto_presets(options: RunOptions, written: Written = None) -> RunOptions:
    """``options`` with every self-play behavior's absent or ``auto`` preset filled in
    (``default_settings`` too). ``written``: the keys the configuration wrote, which keep their
    values even where they equal a default (default: ``options.origins``); where they are not
    known, a key keeps a value that is not its default."""
    if written is None:
        written = all_written(options.origins)
    game = options.env_settings
    behaviors = {
        name: with_auto_preset(settings, game, behavior_written(written, name))
        for name, settings in options.behaviors.items()
    }
    default = options.default_settings
    if default is not None:
        default = with_auto_preset(default, game, behavior_written(written, None))
    return attrs.evolve(options, behaviors=behaviors, default_settings=default)


def all_written(origins: KeyOrigins) -> Written:
    """Every key path the file and the overrides wrote; None when the file's are unknown."""
    if origins.config is None:
        return None
    return origins.config | origins.overrides


def behavior_written(written: Written, name: str | None) -> Written:
    """The keys written for behavior ``name`` (None: ``default_settings``), relative to its
    section: its own, and those of ``default_settings``, which it inherits."""
    inherited = _below(written, "default_settings")
    if name is None or inherited is None:
        return inherited
    own = _below(written, f"behaviors.{name}")
    assert own is not None
    return own | inherited


def with_auto_preset(
    settings: BehaviorSettings, game: EnvironmentSettings, written: Written = None
) -> BehaviorSettings:
    """``settings`` with its absent or ``auto`` preset filled in for ``game`` (unchanged without
    ``self_play`` or with another preset). ``written``: the keys of this behavior's section the
    configuration wrote (``hyperparameters.beta``)."""
    self_play = getattr(settings, "self_play", None)
    if self_play is None or self_play.preset not in (None, AUTO):
        return settings
    settings = attrs.evolve(settings, self_play=attrs.evolve(self_play, preset=AUTO))
    if auto_choice(game).preset is None:
        return settings
    memory = settings.network_settings.memory is not None
    for dotted, value in preset_values(AUTO, settings.trainer_type, game, memory=memory).items():
        if written is not None and dotted in written:
            continue
        settings = _set_unwritten(settings, dotted.split("."), value, check_default=written is None)
    return settings


def _below(written: Written, prefix: str) -> Written:
    if written is None:
        return None
    start = f"{prefix}."
    return frozenset(path[len(start) :] for path in written if path.startswith(start))


def _set_unwritten(holder: Any, path: list[str], value: Any, *, check_default: bool) -> Any:
    """``holder`` with the value at ``path`` set to ``value`` (with ``check_default``: only where
    it holds its default). An entry a mapping lacks, such as a reward signal the behavior does
    not have, stays absent."""
    name, rest = path[0], path[1:]
    if isinstance(holder, Mapping):
        if name not in holder:
            return holder
        inner = _set_unwritten(holder[name], rest, value, check_default=check_default)
        return {**holder, name: inner}
    current = getattr(holder, name)
    if rest:
        inner = _set_unwritten(current, rest, value, check_default=check_default)
        return attrs.evolve(holder, **{name: inner})
    if check_default:
        default = attrs.fields_dict(type(holder))[name].default
        if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
            default = default.factory()
        if current != default:
            return holder
    return attrs.evolve(holder, **{name: value})
