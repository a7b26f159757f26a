"""Reading and writing a run configuration: YAML files, flag overrides, ``configuration.yaml``.

The strict conversion itself (error paths, ML-Agents' ``default_settings`` semantics) lives in
``ghost.config.structuring``; every function here goes through it.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import yaml

from ghost.config.settings import BehaviorSettings, RunOptions
from ghost.config.structuring import ConfigProblem, converter, fields_of, structure_field
from ghost.exceptions import ConfigError
from trainers.atomic_files import atomic_write_text

logger = logging.getLogger(__name__)


class _StrictLoader(yaml.SafeLoader):
    """PyYAML's safe loader, except that a key repeated in one mapping is an error: plain YAML
    loading keeps the last one silently, so a behavior written twice would lose its first
    settings without a word."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, yaml.Node] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.setdefault(key, key_node)
            except TypeError:
                continue  # an unhashable key: the base class reports it
            if first is not key_node:
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"duplicate key {key!r} (first written at line {first.start_mark.line + 1}); "
                    "YAML would keep only the last one, so merge the two or rename one",
                    key_node.start_mark,
                )
        return super().construct_mapping(node, deep=deep)


# -- public API --------------------------------------------------------------------------------
def options_from_dict(raw: Mapping[str, Any] | None) -> RunOptions:
    """Structure a parsed YAML document (``None`` = empty file) into ``RunOptions``.

    Raises:
        ConfigError: an unknown key, a wrong type or an out-of-range value (the message names
            the key path, the value and the fix); ``UnsupportedFeatureError`` and
            ``TrainerTypeError`` are ConfigErrors too.
    """
    try:
        return converter.structure(raw if raw is not None else {}, RunOptions)
    except ConfigProblem as problem:
        raise problem.to_error() from None


def read_yaml(path: str | Path) -> Any:
    """Parse a YAML file, turning I/O and syntax problems into ``ConfigError``."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(
            f"config file {str(path)!r} not found (looked at {path.absolute()})"
        ) from None
    except IsADirectoryError:
        raise ConfigError(f"config file {str(path)!r} is a folder; give a .yaml file") from None
    except UnicodeDecodeError:
        raise ConfigError(
            f"config file {str(path)!r} is not UTF-8 text; save it as UTF-8"
        ) from None
    try:
        return yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise ConfigError(
            f"config file {str(path)!r} is not valid YAML{where}: {problem}"
        ) from None


def load_options(path: str | Path) -> RunOptions:
    """Read a trainer config YAML file (ML-Agents' schema) into ``RunOptions``."""
    raw = read_yaml(path)
    try:
        return options_from_dict(raw)
    except ConfigError as error:
        raise type(error)(f"{path}: {error}") from None


def apply_overrides(
    options: RunOptions,
    overrides: Mapping[str, Any],
    *,
    labels: Mapping[str, str] | None = None,
) -> RunOptions:
    """``options`` with some keys replaced, checked exactly like YAML values.

    Args:
        options: the configuration to start from.
        overrides: ``{"env_settings.seed": 3, "debug": True}``: a top-level key or
            ``section.key`` of one ``RunOptions`` section.
        labels: how to name a key in errors (``{"env_settings.seed": "--seed"}``).
    """
    labels = labels or {}
    for key, value in overrides.items():
        section, _, name = key.rpartition(".")
        holder: Any = getattr(options, section) if section else options
        field = fields_of(holder.__class__).get(name)
        if field is None:
            raise ConfigError(f"{key}: not a configuration key that can be overridden")
        try:
            new_value = structure_field(value, field)
        except ConfigProblem as problem:
            raise problem.to_error(prefix=(labels.get(key, key),)) from None
        change: dict[str, Any] = {name: new_value}
        if section:
            change = {section: attrs.evolve(holder, **change)}
        options = attrs.evolve(options, **change)
    return options


def with_deterministic_actions(options: RunOptions) -> RunOptions:
    """``options`` with ``network_settings.deterministic`` on for every behavior and the defaults."""

    def deterministic(settings: BehaviorSettings) -> BehaviorSettings:
        network = attrs.evolve(settings.network_settings, deterministic=True)
        return attrs.evolve(settings, network_settings=network)

    return attrs.evolve(
        options,
        behaviors={name: deterministic(s) for name, s in options.behaviors.items()},
        default_settings=(
            deterministic(options.default_settings) if options.default_settings else None
        ),
    )


def options_to_dict(options: RunOptions) -> dict[str, Any]:
    """Plain data (dicts, lists, numbers, strings) that ``options_from_dict`` turns back into it."""
    return converter.unstructure(options)


def dump_options(options: RunOptions) -> str:
    """The resolved configuration as YAML (every key, defaults included)."""
    return yaml.safe_dump(options_to_dict(options), sort_keys=False, default_flow_style=False)


def write_options(options: RunOptions, path: str | Path) -> None:
    """Write ``dump_options(options)`` to ``path`` (the run's ``configuration.yaml``)."""
    header = (
        "# Resolved configuration of this run (flags applied); ghost-learn reads it back as is.\n"
    )
    atomic_write_text(path, header + dump_options(options))


def with_drawn_seed(
    options: RunOptions, previous: RunOptions | None = None, *, recorded: bool = True
) -> RunOptions:
    """Replace seed -1 by a drawn seed (or the seed an earlier session of the run drew).

    ``recorded``: the caller writes the result to ``configuration.yaml`` (the log line says so).
    """
    if options.env_settings.seed != -1:
        return options
    seed = previous.env_settings.seed if previous is not None else -1
    if seed == -1:
        seed = secrets.randbelow(10_000)
        where = "recorded in configuration.yaml" if recorded else "for this check only"
        logger.info("seed -1: drew seed %d (%s)", seed, where)
    return apply_overrides(options, {"env_settings.seed": seed})
