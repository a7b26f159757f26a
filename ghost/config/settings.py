"""A whole run configuration: ML-Agents' trainer YAML schema as frozen attrs classes.

Every class mirrors a section of an ML-Agents trainer config, with the same key names and defaults,
so an existing ``config/ppo/Tennis.yaml`` loads unchanged. The sections come from the layer that
uses them: ``envs.settings`` (environment, engine), ``trainers.settings`` (one behavior's trainer
settings), ``ghost.core.settings`` (``self_play``). Reading YAML into these classes (strict keys,
helpful errors, CLI overrides) is ``ghost.config.loader``'s job.
"""

from __future__ import annotations

import re
from typing import Any

import attrs

from envs.settings import EngineSettings, EnvironmentSettings
from ghost.config.curriculum import EnvironmentParameterSettings
from ghost.core.settings import SelfPlaySettings
from trainers.registry import hyperparameter_class
from trainers.settings import TrainerSettings


@attrs.frozen(kw_only=True)
class BehaviorSettings(TrainerSettings):
    """One behavior's section under ``behaviors:`` (or ``default_settings:``): the trainer's
    settings plus ``self_play`` (``None``: self-play off)."""

    self_play: SelfPlaySettings | None = None


_RUN_ID = re.compile(r"[\w.-]+")


def is_valid_run_id(run_id: str) -> bool:
    """Whether ``run_id`` names one results folder: letters, digits, ``-``, ``_`` and ``.``."""
    return _RUN_ID.fullmatch(run_id) is not None and run_id not in (".", "..")


def _run_id(instance: Any, attribute: attrs.Attribute, value: str | None) -> None:
    if value is not None and not is_valid_run_id(value):
        raise ValueError(
            f"{attribute.name} must name one folder: letters, digits, '-', '_' and '.' only "
            "(for example tennis-01)"
        )


@attrs.frozen(kw_only=True)
class CheckpointSettings:
    """``checkpoint_settings``: where the run lives and how it starts."""

    run_id: str = attrs.field(default="ppo", validator=_run_id)
    initialize_from: str | None = attrs.field(default=None, validator=_run_id)
    load_model: bool = False
    resume: bool = False
    force: bool = False
    train_model: bool = False
    inference: bool = False
    results_dir: str = "results"


@attrs.frozen(kw_only=True)
class TorchSettings:
    """``torch_settings``: where networks train and where policies act.

    ``device``: ``auto`` (also when unset) trains wide networks (>= 256 hidden units) on a GPU
    when one is present and the rest on the CPU; or ``cpu``, ``cuda``, ``cuda:1``, ``mps``.
    ``acting_device``: where policies decide during rollouts (unset: the CPU).
    """

    device: str | None = None
    acting_device: str | None = None


#: ``attrs`` metadata of a ``RunOptions`` field that is no configuration key: never read from or
#: written to YAML, never overridden, never compared
NOT_A_KEY = "not_a_configuration_key"


@attrs.frozen(kw_only=True)
class KeyOrigins:
    """Which keys a run's configuration wrote, as dotted paths from its top
    (``behaviors.B.hyperparameters.beta``), so that a value written on purpose is told apart from
    a default even where the two are equal.

    Attributes:
        config: the keys the YAML file (or dict) wrote; None when it came as ``RunOptions``.
        overrides: the keys flags or keyword arguments set (``max_steps`` for ``--max-steps``).
    """

    config: frozenset[str] | None = None
    overrides: frozenset[str] = frozenset()

    def wrote(self, path: str) -> bool:
        """Whether the file or an override wrote ``path`` (a key inside it counts too)."""
        start = f"{path}."
        keys = (self.config or frozenset()) | self.overrides
        return any(key == path or key.startswith(start) for key in keys)

    def below(self, prefix: str) -> frozenset[str] | None:
        """The written paths under ``prefix``, relative to it; None when the file's keys are
        unknown."""
        if self.config is None:
            return None
        start = f"{prefix}."
        keys = self.config | self.overrides
        return frozenset(key[len(start) :] for key in keys if key.startswith(start))


@attrs.frozen(kw_only=True)
class RunOptions:
    """The whole resolved configuration of one run.

    ``origins`` is no key of the file: which keys it wrote (``resolve_options`` fills it in).
    """

    behaviors: dict[str, BehaviorSettings] = attrs.Factory(dict)
    default_settings: BehaviorSettings | None = None
    env_settings: EnvironmentSettings = attrs.Factory(EnvironmentSettings)
    engine_settings: EngineSettings = attrs.Factory(EngineSettings)
    checkpoint_settings: CheckpointSettings = attrs.Factory(CheckpointSettings)
    torch_settings: TorchSettings = attrs.Factory(TorchSettings)
    environment_parameters: dict[str, EnvironmentParameterSettings] | None = None
    debug: bool = False
    origins: KeyOrigins = attrs.field(
        factory=KeyOrigins, eq=False, repr=False, metadata={NOT_A_KEY: True}
    )

    def settings_for(self, behavior_name: str) -> BehaviorSettings:
        """The settings of a behavior, falling back to ``default_settings`` then the defaults."""
        if behavior_name in self.behaviors:
            return self.behaviors[behavior_name]
        if self.default_settings is not None:
            return self.default_settings
        return default_behavior_settings()


def default_behavior_settings() -> BehaviorSettings:
    """The settings of an empty behavior section: ``ppo`` with its own hyperparameter defaults.

    Prefer this to ``BehaviorSettings()``, whose ``hyperparameters`` is the bare base class.
    """
    return BehaviorSettings(hyperparameters=hyperparameter_class("ppo")())
