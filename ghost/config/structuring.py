"""Structuring ML-Agents trainer YAML into ``ghost.config.settings`` classes: the cattrs hooks.

Strict where ML-Agents is lenient: an unknown key anywhere, a value of the wrong type or outside its
range is a ``ConfigError`` that names the full key path (``behaviors.Tennis.self_play.swap_step``),
the value, the allowed range or the closest valid key, so a typo never trains with a silent default.
Valid ML-Agents settings this project does not implement yet raise ``UnsupportedFeatureError``.

ML-Agents semantics kept on purpose:

- ``default_settings`` fills every behavior: the behavior's keys are laid over a copy of it, section
  by section and key by key (``hyperparameters: {batch_size: 64}`` keeps the other default
  hyperparameters). One deliberate difference: a behavior with another ``trainer_type`` than
  ``default_settings`` does not inherit its ``hyperparameters`` (they belong to the other type).
- ``self_play: {}`` enables self-play with every default; an empty ``self_play:`` (null) counts as
  no section (self-play then goes on with the defaults only where the environment's teams oppose).
- Numbers may be written as YAML reads them (``3.0e-4`` and ``5e6`` arrive as strings in YAML 1.1);
  integers must be whole (``max_steps: 5.0e+7`` is fine, ``2.5`` is not).

All conversion runs through one module-local ``cattrs.Converter``; nothing is registered globally.
"""

from __future__ import annotations

import copy
import difflib
import enum
import functools
import logging
import math
import re
import shlex
from collections.abc import Iterable, Mapping
from typing import Any, get_args, get_origin

import attrs
import cattrs

from envs.environment_parameters import (
    UNSEEDED,
    ConstantValue,
    GaussianSampler,
    MultiRangeUniformSampler,
    ParameterValue,
    UniformSampler,
)
from envs.exceptions import did_you_mean
from ghost.config.curriculum import EnvironmentParameterSettings, Lesson
from ghost.config.memory_support import memory_conflict, memory_refusal
from ghost.config.presets import UnknownPresetError, expand_preset
from ghost.config.settings import NOT_A_KEY, BehaviorSettings, CheckpointSettings, RunOptions
from ghost.core.sampling import (
    COMMON_KEYS,
    DEFAULT_STRATEGY,
    SamplingSettings,
    sampler_class,
    sampler_names,
    samplers,
)
from ghost.exceptions import (
    ConfigError,
    TrainerTypeError,
    UnsupportedFeatureError,
)
from trainers import registry
from trainers.hyperparameters import SHARED_CRITIC_UNSUPPORTED
from trainers.settings import (
    INTRINSIC_REWARD_TRAINERS,
    REWARD_SIGNAL_TYPES,
    SUPPORTED_ENCODERS,
    NetworkSettings,
)

logger = logging.getLogger(__name__)

# Every attrs class gets the strict hook below; forbid_extra_keys keeps cattrs' own generated
# hooks strict too, should one ever be reached.
converter = cattrs.Converter(forbid_extra_keys=True)

_NO_VALUE = object()
_UNSUPPORTED_REWARD_SIGNALS = ("gail",)


class ConfigProblem(Exception):
    """A mistake found while structuring; each enclosing level prepends its key to ``path``."""

    def __init__(
        self,
        reason: str,
        *,
        value: Any = _NO_VALUE,
        kind: type[ConfigError] = ConfigError,
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.value = value
        self.kind = kind
        self.path: tuple[str, ...] = ()

    def below(self, key: Any) -> ConfigProblem:
        self.path = (f"[{key}]" if isinstance(key, int) else str(key), *self.path)
        return self

    def to_error(self, prefix: tuple[str, ...] = ()) -> ConfigError:
        where = ".".join((*prefix, *self.path)).replace(".[", "[") or "configuration"
        shown = "" if self.value is _NO_VALUE else f" = {_short(self.value)}"
        return self.kind(f"{where}{shown}: {self.reason}")


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# -- leaf values -------------------------------------------------------------------------------
def _as_number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) else None


def _structure_int(value: Any, cl: type) -> Any:
    if issubclass(cl, enum.Enum):  # an IntEnum reaches the int hook first
        return _structure_enum(value, cl)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    number = _as_number(value)
    if number is None or not number.is_integer():
        raise ConfigProblem("expected a whole number", value=value)
    return int(number)


def _structure_float(value: Any, _: type) -> float:
    number = _as_number(value)
    if number is None:
        raise ConfigProblem("expected a number", value=value)
    return number


def _structure_bool(value: Any, _: type) -> bool:
    if not isinstance(value, bool):
        raise ConfigProblem("expected true or false", value=value)
    return value


def _structure_str(value: Any, cl: type) -> Any:
    if issubclass(cl, enum.Enum):  # a str-valued enum reaches the str hook first
        return _structure_enum(value, cl)
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    raise ConfigProblem("expected a string", value=value)


def _structure_enum(value: Any, cl: type[enum.Enum]) -> enum.Enum:
    candidates = [value, value.strip().lower()] if isinstance(value, str) else [value]
    for candidate in candidates:
        try:
            return cl(candidate)
        except ValueError:
            pass
    allowed = ", ".join(str(member.value) for member in cl)
    raise ConfigProblem(f"expected one of {allowed}", value=value)


def _structure_dict(value: Any, cl: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise ConfigProblem("expected a mapping (key: value lines)", value=value)
    _, value_type = get_args(cl) or (str, Any)
    result = {}
    for key, item in value.items():
        if not isinstance(key, str):
            raise ConfigProblem("keys here must be names (strings)", value=key)
        try:
            result[key] = converter.structure(item, value_type)
        except ConfigProblem as problem:
            raise problem.below(key) from None
    return result


def _structure_list(value: Any, cl: Any) -> list[Any]:
    (item_type,) = get_args(cl) or (Any,)
    if isinstance(value, str) and item_type is str:
        return shlex.split(value)
    if not isinstance(value, list | tuple):
        raise ConfigProblem("expected a list", value=value)
    result = []
    for index, item in enumerate(value):
        try:
            result.append(converter.structure(item, item_type))
        except ConfigProblem as problem:
            raise problem.below(index) from None
    return result


# -- attrs classes -----------------------------------------------------------------------------
@functools.cache
def fields_of(cl: Any) -> dict[str, attrs.Attribute]:
    """The configuration keys of settings class ``cl`` (fields marked ``NOT_A_KEY`` left out)."""
    attrs.resolve_types(cl)
    return {n: f for n, f in attrs.fields_dict(cl).items() if not f.metadata.get(NOT_A_KEY)}


def _as_mapping(value: Any, cl: type) -> Mapping[str, Any]:
    if value is None:  # an empty section (``network_settings:``) means "all defaults"
        return {}
    if not isinstance(value, Mapping):
        raise ConfigProblem(
            f"expected a section of {cl.__name__} keys ({', '.join(fields_of(cl))})", value=value
        )
    return value


def _unknown_key(key: Any, value: Any, valid: Iterable[str]) -> ConfigProblem:
    valid = list(valid)
    hint = did_you_mean(key, valid, cutoff=0.5)
    hint = f"{hint} " if hint else ""
    return ConfigProblem(
        f"unknown key; {hint}valid keys here: {', '.join(valid)}", value=value
    ).below(key)


def _reject_unknown(value: Mapping[str, Any], cl: type) -> None:
    fields = fields_of(cl)
    for key, item in value.items():
        if key not in fields:
            raise _unknown_key(key, item, fields)


def _reason(error: Exception, name: str, value: Any) -> str:
    """A validator's message without the key name and value the error line shows anyway."""
    text = str(error)
    for prefix in (f"{name} ", f"'{name}' "):
        if text.startswith(prefix):
            text = text[len(prefix) :]
    text = re.sub(r"\s*\(got .*\)$", "", text)
    suffix = f": {value!r}"
    return text[: -len(suffix)] if text.endswith(suffix) else text


def structure_field(value: Any, field: attrs.Attribute, field_type: Any = None) -> Any:
    """One field's value, converted and checked by the field's validator (path not included)."""
    target: Any = field.type if field_type is None else field_type
    result = converter.structure(value, target)
    if field.validator is not None:
        try:
            # Our validators look only at the value; a plugin's cross-field checks run in __init__.
            field.validator(None, field, result)
        except (ValueError, TypeError) as error:
            raise ConfigProblem(_reason(error, field.name, result), value=value) from None
    return result


def _structurefields_of(
    value: Mapping[str, Any], cl: type, field_types: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    _reject_unknown(value, cl)
    fields = fields_of(cl)
    field_types = field_types or {}
    kwargs = {}
    for key, item in value.items():
        try:
            kwargs[key] = structure_field(item, fields[key], field_types.get(key))
        except ConfigProblem as problem:
            raise problem.below(key) from None
    return kwargs


def _construct(cl: type, kwargs: dict[str, Any]) -> Any:
    try:
        return cl(**kwargs)
    except (ValueError, TypeError) as error:
        missing = re.search(r"missing \d+ required keyword-only arguments?: (.*)$", str(error))
        if missing:
            names = missing[1].replace("'", "")
            raise ConfigProblem(f"{cl.__name__} needs the key(s) {names}") from None
        raise ConfigProblem(str(error)) from None


def _structure_attrs(value: Any, cl: type) -> Any:
    value = _as_mapping(value, cl)
    result = _construct(cl, _structurefields_of(value, cl))
    if isinstance(result, NetworkSettings):
        _check_network(result)
    return result


# -- self_play.sampling -------------------------------------------------------------------------
def _structure_sampling(value: Any, _: type) -> SamplingSettings:
    """``self_play.sampling``: ``strategy``, ``win_rate_window`` and the keys of the strategy's
    own options class, all in one flat section (``ghost.core.sampling``)."""
    if value is None:
        value = {}
    if not isinstance(value, Mapping):
        raise ConfigProblem(
            "expected a section of sampling keys (strategy, win_rate_window and the strategy's "
            "own)",
            value=value,
        )
    fields = fields_of(SamplingSettings)
    strategy = DEFAULT_STRATEGY
    if "strategy" in value:
        try:
            strategy = structure_field(value["strategy"], fields["strategy"])
        except ConfigProblem as problem:
            raise problem.below("strategy") from None
    sampler = sampler_class(strategy)
    if sampler is None:
        raise ConfigProblem(
            f"unknown opponent sampling strategy; valid strategies: {', '.join(sampler_names())}",
            value=strategy,
        ).below("strategy")
    own = fields_of(sampler.options_class)
    common: dict[str, Any] = {}
    options: dict[str, Any] = {}
    for key, item in value.items():
        if key in COMMON_KEYS:
            target, field = common, fields[key]
        elif key in own:
            target, field = options, own[key]
        elif _is_unused_default(key, item, strategy):
            continue
        else:
            raise _misplaced_sampling_key(key, item, strategy, own)
        try:
            target[key] = structure_field(item, field)
        except ConfigProblem as problem:
            raise problem.below(key) from None
    made = _construct(sampler.options_class, options)
    return _construct(SamplingSettings, {**common, "options": made})


def _field_default(field: attrs.Attribute) -> Any:
    default: Any = field.default
    if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
        default = default.factory()
    return default


def _is_unused_default(key: str, item: Any, strategy: str) -> bool:
    """Whether ``key`` is another strategy's key holding that strategy's default. A configuration
    written before each strategy declared its own keys (a run's ``configuration.yaml``) records
    every built-in key, whatever the strategy; at its default such a key changes nothing."""
    for name, sampler in samplers().items():
        field = fields_of(sampler.options_class).get(key)
        if name == strategy or field is None:
            continue
        try:
            if structure_field(item, field) == _field_default(field):
                return True
        except ConfigProblem:
            continue
    return False


def _misplaced_sampling_key(
    key: str, item: Any, strategy: str, own: Mapping[str, Any]
) -> ConfigProblem:
    """A key of another strategy (named, with the fix), or an unknown key."""
    keys_of = {name: fields_of(s.options_class) for name, s in samplers().items()}
    owners = sorted(name for name, keys in keys_of.items() if key in keys)
    if owners:
        return ConfigProblem(
            f"a key of strategy {' / '.join(owners)}, while this section's strategy is "
            f"{strategy}; write `strategy: {owners[0]}` to use it, or remove the key",
            value=item,
        ).below(key)
    valid = [COMMON_KEYS[0], *own, *COMMON_KEYS[1:]]
    hint = did_you_mean(key, valid, cutoff=0.5)
    if not hint:  # a misspelt key of another strategy
        elsewhere = {name: strategy for strategy, keys in keys_of.items() for name in keys}
        close = difflib.get_close_matches(key, list(elsewhere), n=1, cutoff=0.5)
        if close:
            hint = f"did you mean {close[0]!r} (a key of strategy {elsewhere[close[0]]})?"
    hint = f"{hint} " if hint else ""
    return ConfigProblem(
        f"unknown key; {hint}valid keys with strategy {strategy}: {', '.join(valid)}", value=item
    ).below(key)


def _unstructure_sampling(sampling: SamplingSettings) -> dict[str, Any]:
    """Flat, as written: ``strategy``, the strategy's own keys, ``win_rate_window``."""
    return {
        "strategy": sampling.strategy,
        **_unstructure_attrs(sampling.options),
        "win_rate_window": sampling.win_rate_window,
    }


def _check_network(network: NetworkSettings) -> None:
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
    """``reward_signals``, each key structured with its own settings class; ``gail`` refused,
    and the learned signals with trainer types that do not learn them (plug-ins)."""
    if not isinstance(signals, Mapping):
        raise ConfigProblem("expected a mapping (key: value lines)", value=signals)
    result = {}
    for name, item in signals.items():
        if name in _UNSUPPORTED_REWARD_SIGNALS:
            raise ConfigProblem(
                f"the {name} reward signal (imitation from demonstrations) is not supported yet; "
                f"remove this signal (supported: {', '.join(REWARD_SIGNAL_TYPES)})",
                kind=UnsupportedFeatureError,
            ).below(name)
        if name not in REWARD_SIGNAL_TYPES:
            raise _unknown_key(name, item, [*REWARD_SIGNAL_TYPES, *_UNSUPPORTED_REWARD_SIGNALS])
        if name != "extrinsic" and trainer_type not in INTRINSIC_REWARD_TRAINERS:
            raise ConfigProblem(
                f"the {name} reward signal is not supported with trainer_type {trainer_type} "
                f"yet, only with {', '.join(INTRINSIC_REWARD_TRAINERS)}; remove it or train with "
                "one of those",
                kind=UnsupportedFeatureError,
            ).below(name)
        try:
            result[name] = _structure_attrs(item, REWARD_SIGNAL_TYPES[name])
        except ConfigProblem as problem:
            raise problem.below(name) from None
    return result


def _structure_trainer_settings(value: Any, _: type) -> BehaviorSettings:
    value = _as_mapping(value, BehaviorSettings)
    _reject_unknown(value, BehaviorSettings)
    fields = fields_of(BehaviorSettings)
    trainer_type = "ppo"
    if "trainer_type" in value:
        try:
            trainer_type = structure_field(value["trainer_type"], fields["trainer_type"])
        except ConfigProblem as problem:
            raise problem.below("trainer_type") from None
    try:
        hyperparameters = registry.hyperparameter_class(trainer_type)
    except TrainerTypeError as error:
        raise ConfigProblem(str(error), value=trainer_type, kind=TrainerTypeError).below(
            "trainer_type"
        ) from None
    signals = value.get("reward_signals")
    if signals is not None:
        try:
            signals = _structure_reward_signals(signals, trainer_type)
        except ConfigProblem as problem:
            raise problem.below("reward_signals") from None
        value = {key: item for key, item in value.items() if key != "reward_signals"}
    kwargs = _structurefields_of(value, BehaviorSettings, {"hyperparameters": hyperparameters})
    if signals is not None:
        kwargs["reward_signals"] = signals
    kwargs.setdefault("hyperparameters", hyperparameters())
    if kwargs.get("behavioral_cloning") is not None:
        raise ConfigProblem(
            "imitation from demonstrations is not supported yet; remove the section",
            kind=UnsupportedFeatureError,
        ).below("behavioral_cloning")
    settings = _construct(BehaviorSettings, kwargs)
    if getattr(settings.hyperparameters, "shared_critic", False):
        raise (
            ConfigProblem(SHARED_CRITIC_UNSUPPORTED, value=True, kind=UnsupportedFeatureError)
            .below("shared_critic")
            .below("hyperparameters")
        )
    _check_memory_support(settings)
    if "extrinsic" not in settings.reward_signals:
        raise ConfigProblem(
            "the extrinsic reward signal is required; add `extrinsic: {}`",
            value=dict(value.get("reward_signals") or {}),
        ).below("reward_signals")
    return settings


# -- the whole file ----------------------------------------------------------------------------
def _deep_update(target: dict[str, Any], update: Mapping[str, Any]) -> None:
    for key, item in update.items():
        if isinstance(target.get(key), Mapping) and isinstance(item, Mapping):
            target[key] = dict(target[key])
            _deep_update(target[key], item)
        else:
            target[key] = copy.deepcopy(item)


def _with_defaults(name: str, behavior: Any, defaults: Any) -> Any:
    """``behavior``'s raw section laid over ``default_settings``' raw section."""
    if behavior is not None and not isinstance(behavior, Mapping):
        return behavior  # structuring reports it
    behavior = behavior or {}
    defaults = defaults if isinstance(defaults, Mapping) else {}
    if "self_play" in behavior and behavior["self_play"] is None and not defaults.get("self_play"):
        logger.warning(
            "behaviors.%s.self_play is empty, which counts as no section: self-play stays off "
            "in a single-team environment and goes on with the defaults where teams oppose; "
            "write `self_play: {}` to turn it on with the defaults",
            name,
        )
    merged = copy.deepcopy(dict(defaults))
    if behavior.get("trainer_type", merged.get("trainer_type", "ppo")) != merged.get(
        "trainer_type", "ppo"
    ):
        merged.pop("hyperparameters", None)
    _keep_shared_sampling_keys(merged, behavior)
    _deep_update(merged, behavior)
    return merged


def _keep_shared_sampling_keys(merged: dict[str, Any], behavior: Mapping[str, Any]) -> None:
    """Where the behavior names another sampling strategy than ``default_settings``, the
    defaults' sampling keeps only the keys every strategy shares (the others are its strategy's)."""
    sections = merged.get("self_play"), behavior.get("self_play")
    if not all(isinstance(section, Mapping) for section in sections):
        return  # no section on one side, or a malformed one that structuring reports
    inherited, written = (section.get("sampling") for section in sections)  # type: ignore[union-attr]
    if not (isinstance(inherited, Mapping) and isinstance(written, Mapping)):
        return
    if written.get("strategy", inherited.get("strategy", DEFAULT_STRATEGY)) == inherited.get(
        "strategy", DEFAULT_STRATEGY
    ):
        return
    shared = {key: item for key, item in inherited.items() if key in COMMON_KEYS}
    merged["self_play"] = {**merged["self_play"], "sampling": shared}


def _with_preset(name: str, behavior: Any) -> Any:
    if not isinstance(behavior, Mapping):
        return behavior  # structuring reports it
    try:
        return expand_preset(name, behavior)
    except UnknownPresetError as error:
        problem = ConfigProblem(str(error), value=behavior["self_play"]["preset"])
        raise problem.below("preset").below("self_play").below(name).below("behaviors") from None


# -- environment_parameters -------------------------------------------------------------------
_SAMPLERS: dict[str, type] = {
    "constant": ConstantValue,
    "uniform": UniformSampler,
    "gaussian": GaussianSampler,
    "multirangeuniform": MultiRangeUniformSampler,
}
_SAMPLER_ALIASES = {"multirange_uniform": "multirangeuniform"}


def _structure_parameter_value(value: Any, _: Any) -> ParameterValue:
    """A number, or ``{sampler_type: ..., sampler_parameters: {...}}`` (ML-Agents' schema)."""
    if not isinstance(value, Mapping):
        number = _as_number(value)
        if number is None:
            raise ConfigProblem(
                "expected a number or a sampler ({sampler_type: uniform, sampler_parameters: "
                "{min_value: ..., max_value: ...}})",
                value=value,
            )
        return ConstantValue(value=number)
    for key, item in value.items():
        if key not in ("sampler_type", "sampler_parameters"):
            raise _unknown_key(key, item, ("sampler_type", "sampler_parameters"))
    if "sampler_type" not in value:
        raise ConfigProblem(f"a sampler needs sampler_type ({', '.join(_SAMPLERS)})", value=value)
    kind = str(value["sampler_type"]).strip().lower()
    sampler_class = _SAMPLERS.get(_SAMPLER_ALIASES.get(kind, kind))
    if sampler_class is None:
        raise ConfigProblem(
            f"unknown sampler; valid sampler types: {', '.join(_SAMPLERS)}", value=kind
        ).below("sampler_type")
    if "sampler_parameters" not in value:
        raise ConfigProblem(
            f"a {kind} sampler needs sampler_parameters ({', '.join(fields_of(sampler_class))})"
        )
    try:
        return _structure_attrs(value["sampler_parameters"], sampler_class)
    except ConfigProblem as problem:
        raise problem.below("sampler_parameters") from None


def _unstructure_parameter_value(value: ParameterValue) -> Any:
    if isinstance(value, ConstantValue) and value.seed == UNSEEDED:
        return value.value
    kind = next(name for name, cl in _SAMPLERS.items() if isinstance(value, cl))
    return {"sampler_type": kind, "sampler_parameters": _unstructure_attrs(value)}


def _unstructure_environment_parameter(value: EnvironmentParameterSettings) -> Any:
    (first, *rest) = value.curriculum
    if not rest and first.completion_criteria is None:
        return _unstructure_value(first.value)  # written as the user wrote it: no curriculum
    return {"curriculum": [_unstructure_attrs(lesson) for lesson in value.curriculum]}


def _structure_environment_parameter(value: Any, _: type) -> EnvironmentParameterSettings:
    """A curriculum (``{curriculum: [lessons]}``), or one number or sampler for the whole run."""
    if not (isinstance(value, Mapping) and "curriculum" in value):
        only = Lesson(name="value", value=_structure_parameter_value(value, ParameterValue))
        return EnvironmentParameterSettings(curriculum=(only,))
    _reject_unknown(value, EnvironmentParameterSettings)
    try:
        lessons = converter.structure(value["curriculum"], list[Lesson])
    except ConfigProblem as problem:
        raise problem.below("curriculum") from None
    return _construct(EnvironmentParameterSettings, {"curriculum": lessons})


def _structure_run_options(value: Any, _: type) -> RunOptions:
    value = dict(_as_mapping(value, RunOptions))
    _reject_unknown(value, RunOptions)
    fields = fields_of(RunOptions)
    raw_defaults = value.pop("default_settings", None)
    try:
        default_settings = structure_field(raw_defaults, fields["default_settings"])
    except ConfigProblem as problem:
        raise problem.below("default_settings") from None
    behaviors = value.get("behaviors")
    if isinstance(behaviors, Mapping):
        value["behaviors"] = {
            name: _with_preset(name, _with_defaults(name, section, raw_defaults))
            for name, section in behaviors.items()
        }
    elif behaviors is None:
        value["behaviors"] = {}
    kwargs = _structurefields_of(value, RunOptions)
    options = _construct(RunOptions, {**kwargs, "default_settings": default_settings})
    _warn_ineffective_keys(options)
    return options


def _warn_ineffective_keys(options: RunOptions) -> None:
    """Warn about ML-Agents keys that are valid but change nothing here when set."""
    sections = {f"behaviors.{name}": section for name, section in options.behaviors.items()}
    if options.default_settings is not None:
        sections["default_settings"] = options.default_settings
    threaded = [f"{where}.threaded" for where, section in sections.items() if section.threaded]
    if threaded:
        logger.warning(
            "%s: true has no effect: trainers here always update in the main loop, between "
            "environment steps (ML-Agents' `threaded` runs each in its own thread); remove it",
            ", ".join(threaded),
        )
    _warn_deprecated_checkpoint_flags(options.checkpoint_settings)


def _warn_deprecated_checkpoint_flags(checkpoint: CheckpointSettings) -> None:
    # ML-Agents keeps these deprecated flags in its schema and only warns about them; so do we.
    if checkpoint.load_model:
        logger.warning(
            "checkpoint_settings.load_model (ML-Agents' deprecated --load) has no effect: the run "
            "does not resume; use `resume: true` (--resume) to continue a run from its checkpoint"
        )
    if checkpoint.train_model:
        logger.warning(
            "checkpoint_settings.train_model (ML-Agents' deprecated --train) has no effect: "
            "training is the default; use `inference: true` (--inference) to only act"
        )


def _is_generic(origin: type) -> Any:
    return lambda cl: get_origin(cl) is origin or cl is origin


def _unstructure_attrs(obj: Any) -> dict[str, Any]:
    # The runtime class, not the declared one: ``hyperparameters`` holds a subclass.
    return {
        f.name: _unstructure_value(getattr(obj, f.name))
        for f in attrs.fields(type(obj))
        if not f.metadata.get(NOT_A_KEY)
    }


def _unstructure_value(value: Any) -> Any:
    # cattrs dispatches str-valued enums to its identity hook for str (their first base).
    return value.value if isinstance(value, enum.Enum) else converter.unstructure(value)


# cattrs looks these up by class (singledispatch) before any predicate below.
converter.register_structure_hook(int, _structure_int)
converter.register_structure_hook(float, _structure_float)
converter.register_structure_hook(bool, _structure_bool)
converter.register_structure_hook(str, _structure_str)
converter.register_structure_hook(enum.Enum, _structure_enum)
converter.register_structure_hook_func(_is_generic(dict), _structure_dict)
converter.register_structure_hook_func(_is_generic(list), _structure_list)
converter.register_structure_hook_func(attrs.has, _structure_attrs)
converter.register_structure_hook(BehaviorSettings, _structure_trainer_settings)
converter.register_structure_hook(RunOptions, _structure_run_options)
converter.register_structure_hook(EnvironmentParameterSettings, _structure_environment_parameter)
converter.register_structure_hook(SamplingSettings, _structure_sampling)
converter.register_unstructure_hook(SamplingSettings, _unstructure_sampling)
converter.register_unstructure_hook(
    EnvironmentParameterSettings, _unstructure_environment_parameter
)
converter.register_structure_hook_func(lambda cl: cl == ParameterValue, _structure_parameter_value)
for _sampler_class in _SAMPLERS.values():
    converter.register_unstructure_hook(_sampler_class, _unstructure_parameter_value)
converter.register_unstructure_hook_func(attrs.has, _unstructure_attrs)
