"""Named combinations of self-play and trainer options: ``self_play.preset: robust``.

A preset fills in keys of a behavior's raw configuration (``self_play``, for on-policy trainers
``hyperparameters``, and the reward signals it has) before it is structured. Keys the user wrote
keep their values; each one that differs from the preset's choice is logged, so a run never
changes a written setting behind the user's back. The resolved ``configuration.yaml`` holds the
expanded keys, so a resumed run reads back exactly what it trained with. Keys a network with
memory refuses are left out for it.

- ``sample_efficient``: ML-Agents' settings plus ``learn_from_latest``;
- ``robust``: a magnet pull toward a slowly moving copy of the policy (PPO and POCA), plus
  ``learn_from_latest``;
- ``imperfect_information``: found by a ``ghost-tune`` study on Kuhn poker and checked on games
  left out of it (docs/benchmarks.md, "Presets from studies").

``auto`` (what a ghost-learn run takes when no preset is written, also when self-play is turned
on without a ``self_play:`` section) picks one of those by the kind of game
(``ghost.config.game_kinds``): the measured best for that kind, ML-Agents' own settings for board
and matrix games. ``ghost.config.auto_preset`` fills it in once the game is known; ``none`` keeps
ML-Agents' settings whatever the game.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping
from typing import Any

import attrs

from envs.exceptions import did_you_mean
from envs.settings import EnvironmentSettings
from ghost.config import game_kinds

logger = logging.getLogger(__name__)

#: trainers whose hyperparameters have the magnet keys
_MAGNET_TRAINERS = ("ppo", "poca")


@attrs.frozen
class Preset:
    """What a preset writes: keys of ``self_play``, of an on-policy trainer's
    ``hyperparameters`` and of the reward signals a behavior has (nested sections as nested
    mappings; a reward signal the behavior does not have is not added)."""

    self_play: Mapping[str, Any]
    hyperparameters: Mapping[str, Any] = attrs.Factory(dict)
    reward_signals: Mapping[str, Mapping[str, Any]] = attrs.Factory(dict)


PRESETS: dict[str, Preset] = {
    # ML-Agents' settings, and the ghosted team's experience against the latest copy of the
    # learner trains it too: tennis against its medium player at 300k steps won 0.90 / 0.95 /
    # 0.70 of its games (seeds 0-2) against 0.22 / 0.15 / 0.54 without
    "sample_efficient": Preset(self_play={"learn_from_latest": True}),
    # the magnet measured best over card and control games together, and learning from the
    # latest copy, which helped both kinds (Kuhn poker 0.099 -> 0.042 exploitability at 300k
    # steps; tennis above)
    "robust": Preset(
        self_play={"learn_from_latest": True},
        hyperparameters={"magnet_strength": 0.3, "magnet_rate": 0.05},
    ),
    # From the Kuhn poker study (docs/benchmarks.md, "Presets from studies"): short turns against
    # the latest copy nearly always, whose experience trains the learner too, and a fast learning
    # rate. The study's magnet (0.35, rate 0.02) gave Leduc 0.88 at 1M steps; the earlier
    # nearly fixed one (0.2, rate 0.003) with the same turns gave 0.53, and 0.035-0.08 on Kuhn
    # against the study's 0.04: the smaller worst case. A hand pays only at its end: no discount.
    "imperfect_information": Preset(
        self_play={
            "team_change": 20000,
            "save_steps": 5000,
            "play_against_latest_model_ratio": 0.95,
            "learn_from_latest": True,
        },
        hyperparameters={
            "learning_rate": 0.002,
            "num_epoch": 2,
            "lambd": 0.85,
            "magnet_strength": 0.2,
            "magnet_rate": 0.003,
        },
        reward_signals={"extrinsic": {"gamma": 1.0}},
    ),
}


#: the preset picked by the kind of game (``auto_choice``)
AUTO = "auto"
#: ML-Agents' own settings, whatever the game
NO_PRESET = "none"

#: game kind → (preset or None for ML-Agents' settings, the measurement behind the choice)
AUTO_CHOICES: dict[str, tuple[str | None, str]] = {
    game_kinds.IMPERFECT_INFORMATION: (
        "imperfect_information",
        "tuned on Kuhn poker with ghost-tune: exploitability at 300k steps 0.035-0.066 against "
        "0.145 with ML-Agents' settings; Leduc 0.39-0.53 at 1M against 0.755",
    ),
    game_kinds.BOARD: (
        None,
        "no preset measured better than ML-Agents' settings on tic-tac-toe and connect four",
    ),
    game_kinds.MATRIX: (
        None,
        "no preset was measured on one-shot matrix games; ML-Agents' settings",
    ),
    game_kinds.CONTROL: (
        "sample_efficient",
        "learning from the latest copy's experience too won 0.70-0.95 of tennis games against "
        "its medium player at 300k steps where ML-Agents' settings won 0.15-0.54; the magnet "
        "presets lost to ML-Agents' settings against scripted tennis and soccer players",
    ),
    # the least regret across kinds: the magnet cut the card games' exploitability by 20-27%
    # and lost at most 0.12 against scripted control-game players, where ML-Agents' settings
    # lose 0.2-0.45 in exploitability on card games; learning from the latest copy helped both
    game_kinds.UNKNOWN: (
        "robust",
        "the smallest worst-case loss across the kinds measured: it beats ML-Agents' settings "
        "on card games and loses least to them on control games",
    ),
}


@attrs.frozen
class AutoChoice:
    """What ``preset: auto`` picked for a game, and why."""

    kind: game_kinds.GameKind
    preset: str | None
    reason: str

    def describe(self) -> str:
        """``a board game (OpenSpiel says ...): ML-Agents' settings (the reason)``"""
        picked = f"preset {self.preset!r}" if self.preset else "ML-Agents' settings"
        kind = self.kind.kind.replace("_", " ")
        article = "an" if kind[0] in "aeiou" else "a"
        return f"{article} {kind} game ({self.kind.why}): {picked} ({self.reason})"


#: what names a game: the run's ``env_settings``, or an ``env_path`` alone
Game = EnvironmentSettings | str | None


def auto_choice(game: Game) -> AutoChoice:
    """The preset ``auto`` picks for ``game`` (its ``env_settings``, or its ``env_path``)."""
    kind = game_kinds.kind_of(game)
    preset, reason = AUTO_CHOICES[kind.kind]
    return AutoChoice(kind=kind, preset=preset, reason=reason)


def preset_names() -> list[str]:
    """Every value ``self_play.preset`` takes."""
    return sorted([*PRESETS, AUTO, NO_PRESET])


class UnknownPresetError(ValueError):
    """``self_play.preset`` names no preset."""


#: preset keys a network with memory cannot take (``network_settings.memory``): they are left out
#: for such a behavior instead of failing its run
NOT_WITH_MEMORY = (
    "hyperparameters.magnet_strength",
    "hyperparameters.magnet_rate",
    "self_play.learn_from_latest",
)


def preset_values(
    name: str, trainer_type: str, game: Game = None, *, memory: bool = False
) -> dict[str, Any]:
    """The keys preset ``name`` sets for a behavior of ``trainer_type``, dotted
    (``hyperparameters.magnet_strength``), with the preset's values; ``{}`` for an unknown
    preset. ``auto`` sets those of the preset it picks for ``game``. ``memory``: the behavior's
    network has memory, so ``NOT_WITH_MEMORY`` keys are left out. What the run says at start
    (``ghost.config.effects``)."""
    if name == AUTO:
        name = auto_choice(game).preset or NO_PRESET
    preset = PRESETS.get(name)
    if preset is None:
        return {}
    values = _dotted(preset.self_play, "self_play")
    if trainer_type in _MAGNET_TRAINERS:
        values.update(_dotted(preset.hyperparameters, "hyperparameters"))
    values.update(_dotted(preset.reward_signals, "reward_signals"))
    if memory:
        values = {key: value for key, value in values.items() if key not in NOT_WITH_MEMORY}
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


def _filled(section: Any, preset: Mapping[str, Any] | None, path: str, notes: list[str]) -> Any:
    """``section`` with ``preset``'s missing keys added (as is when it is no mapping)."""
    if preset is None or not isinstance(section, Mapping):
        return section
    section = dict(section)
    _fill(section, preset, path, notes)
    return section


def _without_memory_keys(preset: Preset) -> Preset:
    """``preset`` without the keys of ``NOT_WITH_MEMORY``."""

    def kept(section: Mapping[str, Any], path: str) -> dict[str, Any]:
        return {k: v for k, v in section.items() if f"{path}.{k}" not in NOT_WITH_MEMORY}

    return attrs.evolve(
        preset,
        self_play=kept(preset.self_play, "self_play"),
        hyperparameters=kept(preset.hyperparameters, "hyperparameters"),
    )


def expand_preset(name: str, behavior: Mapping[str, Any]) -> dict[str, Any]:
    """``behavior``'s raw section with its ``self_play.preset`` filled in (unchanged without one).

    Raises:
        UnknownPresetError: the preset does not exist (the message lists those that do).
    """
    self_play = behavior.get("self_play")
    if not isinstance(self_play, Mapping) or self_play.get("preset") is None:
        return dict(behavior)
    chosen = self_play["preset"]
    if chosen in (AUTO, NO_PRESET):
        return dict(behavior)  # auto is filled in once the game is known (ghost.config.auto_preset)
    if chosen not in PRESETS:
        hint = did_you_mean(chosen, preset_names())
        raise UnknownPresetError(
            f"unknown preset; {hint + ' ' if hint else ''}valid presets: {', '.join(preset_names())}"
        )
    preset = PRESETS[chosen]
    network = behavior.get("network_settings")
    if isinstance(network, Mapping) and network.get("memory") is not None:
        preset = _without_memory_keys(preset)
        logger.info(
            "behaviors.%s: preset %r leaves out %s: the network has memory",
            name, chosen, ", ".join(NOT_WITH_MEMORY),
        )  # fmt: skip
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
    signals = expanded.get("reward_signals")
    if preset.reward_signals and isinstance(signals, Mapping):
        expanded["reward_signals"] = {
            signal: _filled(
                section, preset.reward_signals.get(signal), f"reward_signals.{signal}", notes
            )
            for signal, section in signals.items()
        }
    for note in notes:
        logger.info("behaviors.%s: preset %r, but you wrote %s", name, chosen, note)
    return expanded
