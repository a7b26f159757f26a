"""Structuring ``environment_parameters`` (ML-Agents' schema) and writing them back.

Each parameter is a number, a sampler (``{sampler_type: uniform, sampler_parameters: {...}}``)
or a curriculum of lessons (``{curriculum: [...]}``). A parameter without a curriculum is written
back as the user wrote it: the number or the sampler, not a one-lesson curriculum.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from envs.environment_parameters import (
    UNSEEDED,
    ConstantValue,
    GaussianSampler,
    MultiRangeUniformSampler,
    ParameterValue,
    UniformSampler,
)
from ghost.config.config_problem import ConfigProblem, unknown_key
from ghost.config.curriculum import EnvironmentParameterSettings, Lesson
from ghost.config.structure_values import (
    as_number,
    construct,
    converter,
    fields_of,
    reject_unknown,
    structure_attrs,
    unstructure_attrs,
    unstructure_value,
)

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
        number = as_number(value)
        if number is None:
            raise ConfigProblem(
                "expected a number or a sampler ({sampler_type: uniform, sampler_parameters: "
                "{min_value: ..., max_value: ...}})",
                value=value,
            )
        return ConstantValue(value=number)
    for key, item in value.items():
        if key not in ("sampler_type", "sampler_parameters"):
            raise unknown_key(key, item, ("sampler_type", "sampler_parameters"))
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
        return structure_attrs(value["sampler_parameters"], sampler_class)
    except ConfigProblem as problem:
        raise problem.below("sampler_parameters") from None


def _unstructure_parameter_value(value: ParameterValue) -> Any:
    if isinstance(value, ConstantValue) and value.seed == UNSEEDED:
        return value.value
    kind = next(name for name, cl in _SAMPLERS.items() if isinstance(value, cl))
    return {"sampler_type": kind, "sampler_parameters": unstructure_attrs(value)}


def _unstructure_environment_parameter(value: EnvironmentParameterSettings) -> Any:
    (first, *rest) = value.curriculum
    if not rest and first.completion_criteria is None:
        return unstructure_value(first.value)  # written as the user wrote it: no curriculum
    return {"curriculum": [unstructure_attrs(lesson) for lesson in value.curriculum]}


def _structure_environment_parameter(value: Any, _: type) -> EnvironmentParameterSettings:
    """A curriculum (``{curriculum: [lessons]}``), or one number or sampler for the whole run."""
    if not (isinstance(value, Mapping) and "curriculum" in value):
        only = Lesson(name="value", value=_structure_parameter_value(value, ParameterValue))
        return EnvironmentParameterSettings(curriculum=(only,))
    reject_unknown(value, EnvironmentParameterSettings)
    try:
        lessons = converter.structure(value["curriculum"], list[Lesson])
    except ConfigProblem as problem:
        raise problem.below("curriculum") from None
    return construct(EnvironmentParameterSettings, {"curriculum": lessons})


converter.register_structure_hook(EnvironmentParameterSettings, _structure_environment_parameter)
converter.register_unstructure_hook(
    EnvironmentParameterSettings, _unstructure_environment_parameter
)
# ParameterValue is a union: a predicate, tried before the attrs classes' (registered earlier)
converter.register_structure_hook_func(lambda cl: cl == ParameterValue, _structure_parameter_value)
for _sampler_class in _SAMPLERS.values():
    converter.register_unstructure_hook(_sampler_class, _unstructure_parameter_value)
