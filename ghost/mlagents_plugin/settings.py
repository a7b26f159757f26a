"""The plugin's settings classes and the strict ``self_play`` section in ML-Agents' YAML.

ML-Agents structures a behavior's ``self_play:`` into its own ``SelfPlaySettings`` and silently
drops keys it does not know, and a behavior whose ``self_play`` is set gets wrapped in ML-Agents'
own GhostTrainer. For the ``ghost_*`` trainer types the section is therefore taken out before
ML-Agents sees it and handed to the trainer type's hyperparameter class (the plugin's settings),
whose ``self_play`` field is structured with this project's strict rules: an unknown key, a wrong
type or a value out of range is a ``TrainerConfigError`` naming ``behaviors.<name>.self_play.<key>``
and the valid keys. Other trainer types are left exactly as ML-Agents handles them.

The hooks wrap ML-Agents' own ``TrainerSettings`` hooks on its global cattrs converter (an
internal of ML-Agents 1.x; ``registration`` checks the version before installing them).

No ``from __future__ import annotations`` here: ML-Agents structures each hyperparameter by its
field's annotation, which must be a real type.
"""

import copy
from collections.abc import Mapping
from typing import Any

import attr
import cattr
from mlagents.trainers.exception import TrainerConfigError
from mlagents.trainers.poca.optimizer_torch import POCASettings
from mlagents.trainers.ppo.optimizer_torch import PPOSettings
from mlagents.trainers.sac.optimizer_torch import SACSettings
from mlagents.trainers.settings import TrainerSettings

from ghost.config.structuring import ConfigProblem, converter
from ghost.core.settings import SelfPlaySettings

SELF_PLAY = "self_play"


@attr.s(auto_attribs=True)
class GhostPPOSettings(PPOSettings):
    """``ghost_ppo``: ML-Agents' PPO hyperparameters plus the behavior's ``self_play`` section."""

    self_play: SelfPlaySettings | None = None


@attr.s(auto_attribs=True)
class GhostSACSettings(SACSettings):
    """``ghost_sac``: ML-Agents' SAC hyperparameters plus the behavior's ``self_play`` section."""

    self_play: SelfPlaySettings | None = None


@attr.s(auto_attribs=True)
class GhostPOCASettings(POCASettings):
    """``ghost_poca``: ML-Agents' POCA hyperparameters plus the behavior's ``self_play`` section."""

    self_play: SelfPlaySettings | None = None


#: trainer type name -> (ML-Agents' trainer type it wraps, the plugin's settings class)
GHOST_TRAINER_TYPES: dict[str, tuple[str, type]] = {
    "ghost_ppo": ("ppo", GhostPPOSettings),
    "ghost_sac": ("sac", GhostSACSettings),
    "ghost_poca": ("poca", GhostPOCASettings),
}


class SelfPlaySectionError(TrainerConfigError):
    """A mistake in a ``ghost_*`` behavior's ``self_play`` section; ``where`` is its key path."""

    def __init__(self, where: str, reason: str) -> None:
        super().__init__(f"{where}: {reason}")
        self.where = where
        self.reason = reason


def self_play_of(trainer_settings: TrainerSettings) -> SelfPlaySettings:
    """The strict ``self_play`` settings of a ``ghost_*`` behavior (defaults if it had none)."""
    found = getattr(trainer_settings.hyperparameters, SELF_PLAY, None)
    return found if found is not None else SelfPlaySettings()


def structure_self_play(value: Any, _: type) -> SelfPlaySettings:
    """``self_play`` by this project's rules (an empty section means every default)."""
    if value is None:
        return SelfPlaySettings()
    try:
        settings = converter.structure(value, SelfPlaySettings)
    except ConfigProblem as problem:
        error = problem.to_error((SELF_PLAY,))
        where, _, reason = str(error).partition(": ")
        raise SelfPlaySectionError(where, reason) from None
    _reject_unsupported(settings)
    return settings


def _reject_unsupported(settings: SelfPlaySettings) -> None:
    if settings.evaluation is not None:
        raise SelfPlaySectionError(
            "self_play.evaluation",
            "evaluation games need ghost-learn's environment stepping and are not available "
            "inside mlagents-learn; evaluate the exported policies with ghost-eval instead",
        )
    if settings.league.exploiters:
        raise SelfPlaySectionError(
            "self_play.league",
            "league exploiters train with their own copies of the trainer, which ghost-learn "
            "builds and mlagents-learn's trainer factory cannot; train a league with ghost-learn, "
            "or remove self_play.league (main_exploiters and league_exploiters 0)",
        )
    if settings.average_policy.enabled:
        raise SelfPlaySectionError(
            "self_play.average_policy.enabled",
            "the average policy is distilled into ghost-learn's own networks, while "
            "mlagents-learn exports its own model files; train with ghost-learn for an averaged "
            "policy, or set enabled: false",
        )
    if settings.learn_from_latest:
        raise SelfPlaySectionError(
            "self_play.learn_from_latest",
            "the ghosted team's experience would have to reach ML-Agents' trainer, which takes "
            "the learning team's trajectories only; remove the key or train with ghost-learn",
        )
    if settings.seats != "fixed":
        raise SelfPlaySectionError(
            "self_play.seats",
            "shuffled seats are dealt by ghost-learn's turn-based environments; a Unity build "
            "seats its agents itself: remove the key",
        )
    for position, fixed in enumerate(settings.fixed_opponents):
        if fixed.scripted is not None:
            raise SelfPlaySectionError(
                f"self_play.fixed_opponents[{position}].scripted",
                "scripted opponents belong to ghost-trainer's built-in games; inside "
                "mlagents-learn a fixed opponent is a `policy:` file (a .pt checkpoint written by "
                "mlagents-learn, such as results/<run>/<Behavior>/checkpoint.pt)",
            )


def _trainer_type(section: Mapping[str, Any]) -> str:
    default = TrainerSettings.default_override
    return str(section.get("trainer_type", default.trainer_type if default else "ppo"))


def _inherited_self_play() -> dict[str, Any]:
    """The ``self_play`` of ``default_settings`` as a mapping (ML-Agents re-merges by dicts)."""
    default = TrainerSettings.default_override
    settings = getattr(getattr(default, "hyperparameters", None), SELF_PLAY, None)
    return converter.unstructure(settings) if settings is not None else {}


def _deep_update(target: dict[str, Any], update: Mapping[str, Any]) -> None:
    for key, value in update.items():
        if isinstance(value, Mapping) and isinstance(target.get(key), dict):
            _deep_update(target[key], value)
        else:
            target[key] = copy.deepcopy(value)


def wrap_trainer_settings_hook(original: Any) -> Any:
    """ML-Agents' ``TrainerSettings`` hook, with ``self_play`` moved for ``ghost_*`` types."""

    def structure(section: Any, cls: type) -> Any:
        if not isinstance(section, Mapping) or _trainer_type(section) not in GHOST_TRAINER_TYPES:
            return original(section, cls)
        section = dict(section)
        raw = section.pop(SELF_PLAY, None)
        merged = _inherited_self_play()
        if isinstance(raw, Mapping):
            _deep_update(merged, raw)
        elif raw is not None:
            merged = raw  # not a mapping: let the strict hook say so
        hyperparameters = section.get("hyperparameters")
        section["hyperparameters"] = {
            **(hyperparameters if isinstance(hyperparameters, Mapping) else {}),
            SELF_PLAY: merged,
        }
        return original(section, cls)

    return structure


def wrap_behaviors_hook(original: Any) -> Any:
    """ML-Agents' ``behaviors:`` hook; a ``self_play`` mistake names its behavior."""

    def structure(behaviors: Any, cls: type) -> Any:
        if isinstance(behaviors, Mapping):
            for name, section in behaviors.items():
                try:
                    cattr.structure(section, TrainerSettings)
                except SelfPlaySectionError as error:
                    raise TrainerConfigError(
                        f"behaviors.{name}.{error.where}: {error.reason}"
                    ) from None
        return original(behaviors, cls)

    return structure


def install_config_hooks() -> None:
    """Route ``ghost_*`` behaviors' ``self_play`` through the strict hook (idempotent)."""
    if getattr(install_config_hooks, "installed", False):
        return
    cattr.register_structure_hook(SelfPlaySettings, structure_self_play)
    cattr.register_structure_hook(
        TrainerSettings, wrap_trainer_settings_hook(TrainerSettings.structure)
    )
    cattr.register_structure_hook(
        TrainerSettings.DefaultTrainerDict,
        wrap_behaviors_hook(TrainerSettings.dict_to_trainerdict),
    )
    install_config_hooks.installed = True  # type: ignore[attr-defined]
