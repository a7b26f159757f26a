"""Structuring a behavior's section (``behaviors.<name>`` and ``default_settings``).

``trainer_type`` is read first: it picks the ``hyperparameters`` class (``trainers.registry``),
plug-ins included. Valid ML-Agents settings this project does not implement yet (``shared_critic``,
some encoders, learned reward signals and ``behavioral_cloning`` with a trainer type that does not
learn them, keys a network with memory cannot honour) raise ``UnsupportedFeatureError`` with what
to do instead. A ``demo_path`` is read when training starts (``trainers.demonstrations``), not
here: a run's saved configuration still reads where its demonstrations are gone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ghost.config.config_problem import ConfigProblem, unknown_key
from ghost.config.memory_support import memory_conflict, memory_refusal
from ghost.config.settings import BehaviorSettings
from ghost.config.structure_values import (
    as_mapping,
    construct,
    converter,
    fields_of,
    reject_unknown,
    structure_attrs,
    structure_field,
    structure_fields_of,
)
from ghost.exceptions import TrainerTypeError, UnsupportedFeatureError
from trainers import registry
from trainers.hyperparameters import SHARED_CRITIC_UNSUPPORTED
from trainers.settings import (
    INTRINSIC_REWARD_TRAINERS,
    REWARD_SIGNAL_TYPES,
    SUPPORTED_ENCODERS,
    NetworkSettings,
)


def _structure_network(value: Any, cl: type) -> NetworkSettings:
    """``network_settings``: an even ``memory_size``, an encoder this project has."""
    network = structure_attrs(value, cl)
    if network.memory is not None and network.memory.memory_size % 2:
        raise (
            ConfigProblem(
                "memory_size must be even: the LSTM's hidden and cell states take half each",
                value=network.memory.memory_size,
            )
            .below("memory_size")
            .below("memory")
        )
    if network.vis_encode_type not in SUPPORTED_ENCODERS:
        supported = ", ".join(encoder.value for encoder in SUPPORTED_ENCODERS)
        raise ConfigProblem(
            f"this encoder is not supported yet; use one of {supported}",
            value=network.vis_encode_type.value,
            kind=UnsupportedFeatureError,
        ).below("vis_encode_type")
    return network


def _check_memory_support(settings: BehaviorSettings) -> None:
    """A network with memory refuses some keys (``ghost.config.memory_support``); in a file they
    are written there, or in ``default_settings``."""
    conflict = memory_conflict(settings)
    if conflict is not None:
        raise (
            ConfigProblem(memory_refusal(conflict, "written"), kind=UnsupportedFeatureError)
            .below("memory")
            .below("network_settings")
        )


def _structure_reward_signals(signals: Any, trainer_type: str) -> dict[str, Any]:
    """``reward_signals``, each key structured with its own settings class; the learned signals
    refused with trainer types that do not learn them (plug-ins)."""
    if not isinstance(signals, Mapping):
        raise ConfigProblem("expected a mapping (key: value lines)", value=signals)
    result = {}
    for name, item in signals.items():
        if name not in REWARD_SIGNAL_TYPES:
            raise unknown_key(name, item, REWARD_SIGNAL_TYPES)
        if name != "extrinsic" and trainer_type not in INTRINSIC_REWARD_TRAINERS:
            raise ConfigProblem(
                f"the {name} reward signal is not supported with trainer_type {trainer_type} "
                f"yet, only with {', '.join(INTRINSIC_REWARD_TRAINERS)}; remove it or train with "
                "one of those",
                kind=UnsupportedFeatureError,
            ).below(name)
        try:
            result[name] = structure_attrs(item, REWARD_SIGNAL_TYPES[name])
        except ConfigProblem as problem:
            raise problem.below(name) from None
    return result


def _trainer_type_of(value: Mapping[str, Any]) -> tuple[str, type]:
    """The section's ``trainer_type`` (default ``ppo``) and its hyperparameters class."""
    trainer_type = "ppo"
    if "trainer_type" in value:
        field = fields_of(BehaviorSettings)["trainer_type"]
        try:
            trainer_type = structure_field(value["trainer_type"], field)
        except ConfigProblem as problem:
            raise problem.below("trainer_type") from None
    try:
        return trainer_type, registry.hyperparameter_class(trainer_type)
    except TrainerTypeError as error:
        raise ConfigProblem(str(error), value=trainer_type, kind=TrainerTypeError).below(
            "trainer_type"
        ) from None


def _structure_behavior_settings(value: Any, _: type) -> BehaviorSettings:
    value = as_mapping(value, BehaviorSettings)
    reject_unknown(value, BehaviorSettings)
    trainer_type, hyperparameters = _trainer_type_of(value)
    signals = value.get("reward_signals")
    if signals is not None:
        try:
            signals = _structure_reward_signals(signals, trainer_type)
        except ConfigProblem as problem:
            raise problem.below("reward_signals") from None
        value = {key: item for key, item in value.items() if key != "reward_signals"}
    kwargs = structure_fields_of(value, BehaviorSettings, {"hyperparameters": hyperparameters})
    if signals is not None:
        kwargs["reward_signals"] = signals
    kwargs.setdefault("hyperparameters", hyperparameters())
    if (
        kwargs.get("behavioral_cloning") is not None
        and trainer_type not in INTRINSIC_REWARD_TRAINERS
    ):
        raise ConfigProblem(
            f"behavioral cloning is not supported with trainer_type {trainer_type} yet, only "
            f"with {', '.join(INTRINSIC_REWARD_TRAINERS)}; remove the section or train with one "
            "of those",
            kind=UnsupportedFeatureError,
        ).below("behavioral_cloning")
    settings = construct(BehaviorSettings, kwargs)
    _check_supported(settings, value)
    return settings


def _check_supported(settings: BehaviorSettings, value: Mapping[str, Any]) -> None:
    """Refuse what a built behavior asks that this project cannot do (or must have)."""
    if getattr(settings.hyperparameters, "shared_critic", False):
        raise (
            ConfigProblem(SHARED_CRITIC_UNSUPPORTED, value=True, kind=UnsupportedFeatureError)
            .below("shared_critic")
            .below("hyperparameters")
        )
    _check_memory_support(settings)
    # no extrinsic signal is ML-Agents' pure imitation (GAIL, cloning); with nothing at all to
    # learn from, a run would train on zeros
    if not settings.reward_signals and settings.behavioral_cloning is None:
        raise ConfigProblem(
            "no reward signal and no behavioral_cloning: nothing to learn from; add "
            "`extrinsic: {}` (the environment's reward)",
            value={},
        ).below("reward_signals")


converter.register_structure_hook(NetworkSettings, _structure_network)
converter.register_structure_hook(BehaviorSettings, _structure_behavior_settings)
