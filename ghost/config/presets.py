"""Named combinations of self-play options: ``self_play.preset: robust``.

A preset fills in keys of a behavior's raw configuration (``self_play`` and, for on-policy
trainers, ``hyperparameters``) before it is structured. Keys the user wrote keep their values; each
one that differs from the preset's choice is logged, so a run never changes a written setting
behind the user's back. The resolved ``configuration.yaml`` holds the expanded keys, so a resumed
run reads back exactly what it trained with.

``robust`` is the combination measured best against opponents never met in training over all the
yardsticks (README, "Self-play strength"): a magnet pull toward a slowly moving copy of the policy
(PPO and POCA). The exported average policy is left out: it lowered goofspiel's exploitability
but raised Leduc's. ``imperfect_information`` is tuned for turn-based card and board games (Leduc,
goofspiel): a weaker pull toward a magnet that barely moves.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping
from typing import Any

import attrs

logger = logging.getLogger(__name__)

#: trainers whose hyperparameters have the magnet keys
_MAGNET_TRAINERS = ("ppo", "poca")


@attrs.frozen
class Preset:
    """What a preset writes: keys of ``self_play`` and of an on-policy trainer's
    ``hyperparameters`` (nested sections as nested mappings)."""

    self_play: Mapping[str, Any]
    hyperparameters: Mapping[str, Any] = attrs.Factory(dict)


PRESETS: dict[str, Preset] = {
    "robust": Preset(
        self_play={},
        hyperparameters={"magnet_strength": 0.3, "magnet_rate": 0.05},
    ),
    # A nearly fixed magnet (it moves ~17% of the way in 60 updates): best measured on Leduc and
    # as good as `robust` on goofspiel, but it holds control games near their first policy.
    "imperfect_information": Preset(
        self_play={},
        hyperparameters={"magnet_strength": 0.2, "magnet_rate": 0.003},
    ),
}


class UnknownPresetError(ValueError):
    """``self_play.preset`` names no preset."""


def preset_values(name: str, trainer_type: str) -> dict[str, Any]:
    """The keys preset ``name`` sets for a behavior of ``trainer_type``, dotted
    (``hyperparameters.magnet_strength``), with the preset's values; ``{}`` for an unknown
    preset. What the run says at start (``ghost.config.effects``)."""
    preset = PRESETS.get(name)
    if preset is None:
        return {}
    values = _dotted(preset.self_play, "self_play")
    if trainer_type in _MAGNET_TRAINERS:
        values.update(_dotted(preset.hyperparameters, "hyperparameters"))
    return values


def _dotted(section: Mapping[str, Any], path: str) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for key, value in section.items():
        if isinstance(value, Mapping):
            values.update(_dotted(value, f"{path}.{key}"))
        else:
            values[f"{path}.{key}"] = value
    return values


def _fill(target: dict[str, Any], preset: Mapping[str, Any], path: str, notes: list[str]) -> None:
    """Add ``preset``'s keys missing from ``target``; note written keys that differ."""
    for key, value in preset.items():
        if key not in target or target[key] is None:
            target[key] = copy.deepcopy(value)
        elif isinstance(value, Mapping) and isinstance(target[key], Mapping):
            target[key] = dict(target[key])
            _fill(target[key], value, f"{path}.{key}", notes)
        elif target[key] != value:
            notes.append(f"{path}.{key} = {target[key]!r} (the preset's choice: {value!r})")


def expand_preset(name: str, behavior: Mapping[str, Any]) -> dict[str, Any]:
    """``behavior``'s raw section with its ``self_play.preset`` filled in (unchanged without one).

    Raises:
        UnknownPresetError: the preset does not exist (the message lists those that do).
    """
    self_play = behavior.get("self_play")
    if not isinstance(self_play, Mapping) or self_play.get("preset") is None:
        return dict(behavior)
    chosen = self_play["preset"]
    if chosen not in PRESETS:
        raise UnknownPresetError(f"unknown preset; valid presets: {', '.join(sorted(PRESETS))}")
    preset = PRESETS[chosen]
    expanded = dict(behavior)
    expanded["self_play"] = dict(self_play)
    notes: list[str] = []
    _fill(expanded["self_play"], preset.self_play, "self_play", notes)
    trainer_type = expanded.get("trainer_type", "ppo")
    if trainer_type in _MAGNET_TRAINERS:
        hyperparameters = dict(expanded.get("hyperparameters") or {})
        _fill(hyperparameters, preset.hyperparameters, "hyperparameters", notes)
        expanded["hyperparameters"] = hyperparameters
    elif preset.hyperparameters:
        logger.info(
            "behaviors.%s: preset %r has no magnet for trainer_type %s (PPO and POCA only)",
            name, chosen, trainer_type,
        )  # fmt: skip
    for note in notes:
        logger.info("behaviors.%s: preset %r, but you wrote %s", name, chosen, note)
    return expanded
