"""The plugin's settings classes and the strict ``self_play`` section in ML-Agents' YAML.

ML-Agents structures a behavior's ``self_play:`` into its own ``SelfPlaySettings`` and silently
drops keys it does not know, and a behavior whose ``self_play`` is set gets wrapped in ML-Agents'
own GhostTrainer. For the ``ghost_*`` trainer types the section is therefore taken out before
ML-Agents sees it and handed to the trainer type's hyperparameter class (the plugin's settings),
whose ``self_play`` field is structured with this project's strict rules: an unknown key, a wrong
type or a value out of range is a ``TrainerConfigError`` naming ``behaviors.<name>.self_play.<key>``
and the valid keys. Other trainer types are left as ML-Agents handles them; under a ``ghost_*``
``default_settings`` they inherit its wrapped type's hyperparameters and the ``self_play`` keys
ML-Agents has. A ``ghost_*`` behavior under a plain default inherits the default's ``self_play``.

The hooks wrap ML-Agents' own ``TrainerSettings`` hooks on its global cattrs converter (an
internal of ML-Agents 1.x; ``registration`` checks the version before installing them). Writing
the settings back out (``configuration.yaml``) is ``unstructure``'s part.

No ``from __future__ import annotations`` here: ML-Agents structures each hyperparameter by its
field's annotation, which must be a real type.
"""

import contextlib
import copy
from collections.abc import Iterator, Mapping
from typing import Any

import attr
import cattr
from mlagents.trainers.exception import TrainerConfigError
from mlagents.trainers.poca.optimizer_torch import POCASettings
from mlagents.trainers.ppo.optimizer_torch import PPOSettings
from mlagents.trainers.sac.optimizer_torch import SACSettings
from mlagents.trainers.settings import SelfPlaySettings as MLAgentsSelfPlaySettings
from mlagents.trainers.settings import TrainerSettings, check_hyperparam_schedules

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
GHOST_SETTINGS_CLASSES = (GhostPPOSettings, GhostSACSettings, GhostPOCASettings)


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
    """The ``self_play`` of ``default_settings`` as a mapping (ML-Agents re-merges by dicts):
    a ``ghost_*`` default's, or the keys of a plain default's ML-Agents section (ours too)."""
    default = TrainerSettings.default_override
    settings = getattr(getattr(default, "hyperparameters", None), SELF_PLAY, None)
    if settings is not None:
        return converter.unstructure(settings)
    plain = getattr(default, SELF_PLAY, None)
    return {f.name: getattr(plain, f.name) for f in attr.fields(type(plain))} if plain else {}


def _default_is_ghost() -> bool:
    default = TrainerSettings.default_override
    return isinstance(getattr(default, "hyperparameters", None), GHOST_SETTINGS_CLASSES)


@contextlib.contextmanager
def _default_as_plain() -> Iterator[None]:
    """A ``ghost_*`` ``default_settings`` as ML-Agents' own trainer types inherit it: its wrapped
    type's hyperparameters, and the keys of its ``self_play`` that ML-Agents' section has.

    ML-Agents lays the default's written form under each section; ours would give a plain type
    ``hyperparameters.self_play`` (an unknown key there) or our ``self_play`` keys."""
    default = TrainerSettings.default_override
    ours = default.hyperparameters
    plain_class = next(base for base in type(ours).__mro__[1:] if attr.has(base))
    hyperparameters = plain_class(
        **{f.name: getattr(ours, f.name) for f in attr.fields(plain_class) if f.init}
    )
    self_play = None
    if ours.self_play is not None:
        known = attr.fields_dict(MLAgentsSelfPlaySettings)
        values = {k: v for k, v in converter.unstructure(ours.self_play).items() if k in known}
        self_play = MLAgentsSelfPlaySettings(**{k: v for k, v in values.items() if v is not None})
    TrainerSettings.default_override = attr.evolve(
        default, hyperparameters=hyperparameters, self_play=self_play
    )
    try:
        yield
    finally:
        TrainerSettings.default_override = default


def _deep_update(target: dict[str, Any], update: Mapping[str, Any]) -> None:
    for key, value in update.items():
        if isinstance(value, Mapping) and isinstance(target.get(key), dict):
            _deep_update(target[key], value)
        else:
            target[key] = copy.deepcopy(value)


def _derive_schedules(hyperparameters: dict[str, Any], wrapped_type: str) -> None:
    """ML-Agents derives PPO's and POCA's beta and epsilon schedules from the learning rate's,
    where neither the behavior nor ``default_settings`` sets them, only for its own type names:
    the same for the type a ``ghost_*`` type wraps, so it trains with the same values."""
    default = TrainerSettings.default_override
    inherited = cattr.unstructure(default.hyperparameters) if default is not None else {}
    derived = check_hyperparam_schedules({**inherited, **hyperparameters}, wrapped_type)
    for key in ("beta_schedule", "epsilon_schedule"):
        if key in derived and key not in inherited:
            hyperparameters.setdefault(key, derived[key])


def wrap_trainer_settings_hook(original: Any) -> Any:
    """ML-Agents' ``TrainerSettings`` hook, with ``self_play`` moved for ``ghost_*`` types."""

    def structure(section: Any, cls: type) -> Any:
        if not isinstance(section, Mapping):
            return original(section, cls)
        if _trainer_type(section) not in GHOST_TRAINER_TYPES:
            if not _default_is_ghost():
                return original(section, cls)
            with _default_as_plain():
                return original(section, cls)
        section = dict(section)
        raw = section.pop(SELF_PLAY, None)
        # ML-Agents lays the default's written form (``unstructure``, with a top-level
        # ``self_play``) under this section: None keeps its own ghost off this behavior
        section[SELF_PLAY] = None
        merged = _inherited_self_play()
        if isinstance(raw, Mapping):
            _deep_update(merged, raw)
        elif raw is not None:
            merged = raw  # not a mapping: let the strict hook say so
        hyperparameters = section.get("hyperparameters")
        hyperparameters = dict(hyperparameters) if isinstance(hyperparameters, Mapping) else {}
        _derive_schedules(hyperparameters, GHOST_TRAINER_TYPES[_trainer_type(section)][0])
        section["hyperparameters"] = {**hyperparameters, SELF_PLAY: merged}
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
