"""The search space of a study: which keys of the trainer config vary, and over what.

A *key path* names one key of a behavior's section, as written in a trainer YAML:
``hyperparameters.learning_rate``, ``self_play.window``, ``reward_signals.extrinsic.gamma``. It is
set in every behavior of the config (and in ``default_settings`` where the config has one, or has
no behavior at all). A key path that starts with a top-level section of the config
(``behaviors.Striker.hyperparameters.beta``, ``env_settings.num_areas``) names that one key.

A *parameter* is what one key path ranges over; in a ``--space`` file::

    hyperparameters.learning_rate: {low: 1.0e-5, high: 1.0e-3, log: true}  # floats, log-uniform
    self_play.window: {low: 3, high: 30}               # whole numbers: both bounds are whole
    hyperparameters.num_epoch: {low: 1, high: 9, step: 2}
    network_settings.hidden_units: {choices: [32, 64, 128]}
    hyperparameters.magnet_strength: null              # drops a key of the built-in space

Every key path and bound is checked by building the config with it through the config loader,
so a typo is the loader's own error (naming the key path and the closest valid key).
"""

from __future__ import annotations

import contextlib
import copy
import math
import os
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from ghost.config.loader import options_from_dict, options_to_dict, read_yaml
from ghost.config.settings import RunOptions, default_behavior_settings
from ghost.config.structuring import converter
from ghost.core.settings import SelfPlaySettings
from ghost.exceptions import ConfigError

#: the top-level sections of a config: a key path starting with one is set as it is
TOP_LEVEL_KEYS = tuple(field.name for field in attrs.fields(RunOptions))

Scalar = bool | int | float | str | None


@attrs.frozen(kw_only=True)
class Range:
    """Numbers from ``low`` to ``high`` (both included); whole numbers when ``integer``.

    Args:
        log: draw uniformly on a log scale (``low`` must be > 0).
        step: only ``low``, ``low + step``, ... (not with ``log``).
    """

    low: float
    high: float
    log: bool = False
    step: float | None = None
    integer: bool = False

    def suggest(self, trial: Any, name: str) -> int | float:
        """Draw a value for the key path ``name`` from an Optuna trial."""
        if self.integer:
            step = int(self.step) if self.step is not None else 1
            return int(
                trial.suggest_int(name, int(self.low), int(self.high), step=step, log=self.log)
            )
        return float(trial.suggest_float(name, self.low, self.high, step=self.step, log=self.log))

    def extremes(self) -> tuple[int | float, ...]:
        """The values the config is checked with: both bounds."""
        if self.integer:
            return (int(self.low), int(self.high))
        return (float(self.low), float(self.high))

    def to_dict(self) -> dict[str, Any]:
        """The ``--space`` file form (``integer`` shows in the type of the bounds)."""
        cast = int if self.integer else float
        data: dict[str, Any] = {"low": cast(self.low), "high": cast(self.high)}
        if self.log:
            data["log"] = True
        if self.step is not None:
            data["step"] = cast(self.step)
        return data


@attrs.frozen(kw_only=True)
class Choice:
    """One value of ``choices``."""

    choices: tuple[Scalar, ...]

    def suggest(self, trial: Any, name: str) -> Scalar:
        """Draw a value for the key path ``name`` from an Optuna trial."""
        return trial.suggest_categorical(name, list(self.choices))

    def extremes(self) -> tuple[Scalar, ...]:
        """The values the config is checked with: every choice."""
        return self.choices

    def to_dict(self) -> dict[str, Any]:
        """The ``--space`` file form."""
        return {"choices": list(self.choices)}


Parameter = Range | Choice


@attrs.frozen
class SearchSpace:
    """Key path → parameter, in the order the trials draw them."""

    parameters: dict[str, Parameter] = attrs.Factory(dict)

    def suggest(self, trial: Any) -> dict[str, Any]:
        """One value per key path, drawn from an Optuna trial (the trial's params are named by
        key path)."""
        return {key: parameter.suggest(trial, key) for key, parameter in self.parameters.items()}

    def to_dict(self) -> dict[str, dict[str, Any]]:
        """The ``--space`` file form of every key path."""
        return {key: parameter.to_dict() for key, parameter in self.parameters.items()}

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any], *, source: str) -> SearchSpace:
        """Parse ``{key path: {low, high, log, step} | {choices}}`` (``None`` values are kept out:
        see ``laid_over``); ``source`` names where it came from in errors."""
        return cls({key: parse_parameter(key, spec, source=source) for key, spec in raw.items()
                    if spec is not None})  # fmt: skip

    def laid_over(self, base: SearchSpace, dropped: Iterable[str] = ()) -> SearchSpace:
        """``base`` with this space's key paths replacing or joining its own, less ``dropped``."""
        merged = {k: v for k, v in base.parameters.items() if k not in set(dropped)}
        merged.update(self.parameters)
        return SearchSpace(merged)


def load_space_file(path: str | os.PathLike[str]) -> tuple[SearchSpace, list[str]]:
    """A ``--space`` file: its parameters, and the key paths it drops (written as ``null``)."""
    raw = read_yaml(path)
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise ConfigError(
            f"search space file {os.fspath(path)!r} must map key paths to "
            f"{{low: ..., high: ...}} or {{choices: [...]}}, not hold a {type(raw).__name__}"
        )
    dropped = [str(key) for key, spec in raw.items() if spec is None]
    return SearchSpace.from_dict(raw, source=os.fspath(path)), dropped


_RANGE_KEYS = {"low", "high", "log", "step"}


def parse_parameter(key: str, spec: Any, *, source: str) -> Parameter:
    """One parameter of a space file (see the module docstring for the forms)."""
    where = f"search space {source}: {key}"
    if not isinstance(spec, Mapping):
        raise ConfigError(
            f"{where} = {spec!r}: write {{low: ..., high: ...}} (add log: true for a log scale) "
            "or {choices: [...]}"
        )
    if "choices" in spec:
        extra = sorted(set(spec) - {"choices"})
        choices = spec["choices"]
        if extra or not isinstance(choices, list) or not choices:
            raise ConfigError(
                f"{where} = {dict(spec)!r}: choices must be a non-empty list and stand alone "
                f"(remove {', '.join(extra) or 'nothing else'}), e.g. {{choices: [32, 64]}}"
            )
        if any(isinstance(c, Mapping | list) for c in choices):
            raise ConfigError(f"{where}: choices must be numbers, strings or booleans")
        return Choice(choices=tuple(choices))
    unknown = sorted(set(spec) - _RANGE_KEYS)
    if unknown or "low" not in spec or "high" not in spec:
        raise ConfigError(
            f"{where} = {dict(spec)!r}: a range has low and high (and optionally log, step); "
            f"{'unknown: ' + ', '.join(unknown) if unknown else 'low or high is missing'}"
        )
    low, high = _number(spec["low"], f"{where}.low"), _number(spec["high"], f"{where}.high")
    step = None if spec.get("step") is None else _number(spec["step"], f"{where}.step")
    log = spec.get("log", False)
    if not isinstance(log, bool):
        raise ConfigError(f"{where}.log = {log!r}: must be true or false")
    if not low < high:
        raise ConfigError(f"{where}: low ({low}) must be below high ({high})")
    if log and low <= 0:
        raise ConfigError(f"{where}: a log scale needs low > 0 (got {low}); drop log: true")
    if log and step is not None:
        raise ConfigError(f"{where}: step and log: true do not go together; drop one")
    if step is not None and step <= 0:
        raise ConfigError(f"{where}.step = {step}: must be > 0")
    integer = all(isinstance(v, int) for v in (low, high)) and (
        step is None or isinstance(step, int)
    )
    return Range(low=low, high=high, log=log, step=step, integer=integer)


def _number(value: Any, where: str) -> int | float:
    # YAML 1.1 reads 1e-5 (no dot) as a string; the config loader accepts it, so do we
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            value = float(value)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigError(f"{where} = {value!r}: must be a number")
    return value


# -- setting values in a config ------------------------------------------------------------------
def behavior_sections(config: dict[str, Any]) -> list[dict[str, Any]]:
    """The sections of ``config`` a relative key path is set in: every behavior, and
    ``default_settings`` where there is one or where no behavior is named (created empty)."""
    sections: list[dict[str, Any]] = []
    behaviors = config.get("behaviors")
    if isinstance(behaviors, dict):
        for name in behaviors:
            if behaviors[name] is None:
                behaviors[name] = {}
            sections.append(behaviors[name])
    if isinstance(config.get("default_settings"), dict) or not sections:
        config["default_settings"] = config.get("default_settings") or {}
        sections.append(config["default_settings"])
    return sections


def with_values(config: Mapping[str, Any] | None, values: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of the raw config ``config`` with each key path of ``values`` set (see the module
    docstring for relative and top-level key paths)."""
    result = copy.deepcopy(dict(config or {}))
    for key, value in values.items():
        parts = key.split(".")
        if parts[0] in TOP_LEVEL_KEYS:
            _set(result, parts, value)
        else:
            for section in behavior_sections(result):
                _set(section, parts, value)
    return result


def _set(holder: dict[str, Any], parts: list[str], value: Any) -> None:
    for part in parts[:-1]:
        if not isinstance(holder.get(part), dict):
            holder[part] = {}  # an absent section (self_play: null) starts empty
        holder = holder[part]
    holder[parts[-1]] = value


def key_paths(config: Mapping[str, Any] | None, key: str) -> list[str]:
    """The full key paths (``behaviors.K.hyperparameters.beta``) ``key`` sets in ``config``."""
    if key.split(".")[0] in TOP_LEVEL_KEYS:
        return [key]
    probe = copy.deepcopy(dict(config or {}))
    sections = behavior_sections(probe)
    names = list(probe.get("behaviors") or {}) if isinstance(probe.get("behaviors"), dict) else []
    paths = [f"behaviors.{name}.{key}" for name in names]
    if any(section is probe.get("default_settings") for section in sections):
        paths.append(f"default_settings.{key}")
    return paths


# -- checking a space against a config -----------------------------------------------------------
def searchable_keys(options: RunOptions) -> list[str]:
    """Every relative key path a behavior of ``options`` has (self-play keys included)."""
    name = next(iter(options.behaviors), None)
    settings = (
        options.behaviors[name]
        if name is not None
        else options.default_settings or default_behavior_settings()
    )
    raw = options_to_dict(attrs.evolve(options, behaviors={"_": settings}))["behaviors"]["_"]
    if raw.get("self_play") is None:
        raw["self_play"] = converter.unstructure(SelfPlaySettings())
    return sorted(_leaves(raw))


def _leaves(raw: Mapping[str, Any], prefix: str = "") -> Iterable[str]:
    for key, value in raw.items():
        if isinstance(value, Mapping) and value:
            yield from _leaves(value, f"{prefix}{key}.")
        elif not isinstance(value, list | Mapping):
            yield f"{prefix}{key}"


def check_space(space: SearchSpace, config: Mapping[str, Any], *, source: str) -> None:
    """Build ``config`` with each bound of each key path through the config loader.

    Raises:
        ConfigError: a key path the config does not have, or a bound the loader refuses (the
            message names the key path, the value and the keys that can be searched). A bound
            refused only together with another key's value (``batch_size`` above
            ``buffer_size``) is not an error here: such trials are pruned as invalid.
    """
    options = options_from_dict(config)
    for key, parameter in space.parameters.items():
        if not key or any(not part for part in key.split(".")):
            raise ConfigError(f"search space {source}: {key!r} is not a key path like "
                              "hyperparameters.learning_rate")  # fmt: skip
        for value in parameter.extremes():
            try:
                options_from_dict(with_values(config, {key: value}))
            except ConfigError as error:
                if _names_key(str(error), key_paths(config, key)):
                    raise ConfigError(
                        f"search space {source}: {key} = {value!r}: {error}\n"
                        + _keys_hint(key, searchable_keys(options))
                    ) from None


def _keys_hint(key: str, keys: list[str]) -> str:
    """The searchable key paths of the section ``key`` starts in (all of them if none)."""
    section = key.split(".")[0]
    inside = [k for k in keys if k.startswith(f"{section}.")]
    if inside:
        return f"Key paths under {section} (set in every behavior): {', '.join(inside)}"
    return (
        f"Key paths a behavior has (set in every behavior): {', '.join(keys)}; or a full path "
        "such as behaviors.<name>.<key> or env_settings.<key>"
    )


def _names_key(message: str, paths: list[str]) -> bool:
    """Whether a loader error is about the key path itself (``<path or a part of it> = value:``)
    rather than about two keys together (``<section>: batch_size ... buffer_size``)."""
    for path in paths:
        parts = path.split(".")
        # the shortest prefix that names a key inside the section the path starts in
        start = 3 if parts[0] == "behaviors" else 2
        for end in range(min(start, len(parts)), len(parts) + 1):
            if message.startswith(".".join(parts[:end]) + " = "):
                return True
    return False
