"""The configuration's ``cattrs.Converter`` and its hooks for plain values and settings classes.

Leaf values (numbers as YAML reads them, whole numbers, booleans, strings, enums), mappings and
lists, and any attrs settings class: its keys checked against its fields, each field converted
and checked by its validator, the class built. The sections that need more (behaviors, sampling,
environment parameters, the whole file) add their own hooks in their modules;
``ghost.config.structuring`` imports them all, so take the converter from there.
"""

from __future__ import annotations

import enum
import functools
import math
import re
import shlex
from collections.abc import Mapping
from typing import Any, get_args, get_origin

import attrs
import cattrs

from ghost.config.config_problem import ConfigProblem, unknown_key, validator_reason
from ghost.config.settings import NOT_A_KEY

# Every attrs class gets the strict hook below; forbid_extra_keys keeps cattrs' own generated
# hooks strict too, should one ever be reached.
converter = cattrs.Converter(forbid_extra_keys=True)


# -- leaf values -------------------------------------------------------------------------------
def as_number(value: Any) -> float | None:
    """``value`` as a finite float (a YAML 1.1 string such as ``"3.0e-4"`` included), or None."""
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
    number = as_number(value)
    if number is None or not number.is_integer():
        raise ConfigProblem("expected a whole number", value=value)
    return int(number)


def _structure_float(value: Any, _: type) -> float:
    number = as_number(value)
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


# -- containers --------------------------------------------------------------------------------
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


def as_mapping(value: Any, cl: type) -> Mapping[str, Any]:
    """The section ``value`` of class ``cl``'s keys (an empty section: no keys)."""
    if value is None:  # an empty section (``network_settings:``) means "all defaults"
        return {}
    if not isinstance(value, Mapping):
        raise ConfigProblem(
            f"expected a section of {cl.__name__} keys ({', '.join(fields_of(cl))})", value=value
        )
    return value


def reject_unknown(value: Mapping[str, Any], cl: type) -> None:
    """Refuse the first key of ``value`` that is not a key of ``cl``."""
    fields = fields_of(cl)
    for key, item in value.items():
        if key not in fields:
            raise unknown_key(key, item, fields)


def structure_field(value: Any, field: attrs.Attribute, field_type: Any = None) -> Any:
    """One field's value, converted and checked by the field's validator (path not included)."""
    target: Any = field.type if field_type is None else field_type
    result = converter.structure(value, target)
    if field.validator is not None:
        try:
            # Our validators look only at the value; a plugin's cross-field checks run in __init__.
            field.validator(None, field, result)
        except (ValueError, TypeError) as error:
            raise ConfigProblem(validator_reason(error, field.name, result), value=value) from None
    return result


def structure_fields_of(
    value: Mapping[str, Any], cl: type, field_types: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The keyword arguments of ``cl`` that ``value`` writes, each converted and checked
    (``field_types`` replaces a field's declared type, such as the trainer's hyperparameters)."""
    reject_unknown(value, cl)
    fields = fields_of(cl)
    field_types = field_types or {}
    kwargs = {}
    for key, item in value.items():
        try:
            kwargs[key] = structure_field(item, fields[key], field_types.get(key))
        except ConfigProblem as problem:
            raise problem.below(key) from None
    return kwargs


def construct(cl: type, kwargs: dict[str, Any]) -> Any:
    """``cl(**kwargs)``; its missing keys and cross-field checks become ``ConfigProblem``."""
    try:
        return cl(**kwargs)
    except (ValueError, TypeError) as error:
        missing = re.search(r"missing \d+ required keyword-only arguments?: (.*)$", str(error))
        if missing:
            names = missing[1].replace("'", "")
            raise ConfigProblem(f"{cl.__name__} needs the key(s) {names}") from None
        raise ConfigProblem(str(error)) from None


def structure_attrs(value: Any, cl: type) -> Any:
    """A settings class from its section."""
    return construct(cl, structure_fields_of(as_mapping(value, cl), cl))


# -- back to plain values ----------------------------------------------------------------------
def unstructure_attrs(obj: Any) -> dict[str, Any]:
    """A settings object as its section: every key, nested sections included."""
    # The runtime class, not the declared one: ``hyperparameters`` holds a subclass.
    return {
        f.name: unstructure_value(getattr(obj, f.name))
        for f in attrs.fields(type(obj))
        if not f.metadata.get(NOT_A_KEY)
    }


def unstructure_value(value: Any) -> Any:
    """``value`` as YAML writes it (an enum as its value)."""
    # cattrs dispatches str-valued enums to its identity hook for str (their first base).
    return value.value if isinstance(value, enum.Enum) else converter.unstructure(value)


def _is_generic(origin: type) -> Any:
    return lambda cl: get_origin(cl) is origin or cl is origin


# cattrs looks these up by class (singledispatch) before any predicate below, and tries the
# predicates last registered first (a section's own predicate, registered later, goes first).
converter.register_structure_hook(int, _structure_int)
converter.register_structure_hook(float, _structure_float)
converter.register_structure_hook(bool, _structure_bool)
converter.register_structure_hook(str, _structure_str)
converter.register_structure_hook(enum.Enum, _structure_enum)
converter.register_structure_hook_func(_is_generic(dict), _structure_dict)
converter.register_structure_hook_func(_is_generic(list), _structure_list)
converter.register_structure_hook_func(attrs.has, structure_attrs)
converter.register_unstructure_hook_func(attrs.has, unstructure_attrs)
