"""Environment parameters: the values a run sends its environments, and the stats they send back.

An ``environment_parameters`` entry of a run config is, at any moment, one ``ParameterValue``: a
constant or a sampler (uniform, gaussian, multirange uniform), as in ML-Agents. Unity builds get
them through the environment-parameters side channel and sample on their side; a Python
``BaseEnv`` opts in by implementing the ``ParameterizedEnv`` methods (``ParameterValue.sample``
draws a value the way a build would).

An environment may also report statistics (Unity's stats side channel): ``environment_stats()``
returns what arrived since the last call as ``{key: [(value, StatsAggregationMethod), ...]}``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol

import attrs
import numpy as np
from mlagents_envs.side_channel.environment_parameters_channel import (
    EnvironmentParametersChannel,
)
from mlagents_envs.side_channel.stats_side_channel import StatsAggregationMethod

#: ``{key: [(value, aggregation), ...]}``: stats an environment reported since it was last asked
EnvironmentStats = dict[str, list[tuple[float, StatsAggregationMethod]]]

#: a sampler without its own ``seed`` gets the run's seed plus an offset (ML-Agents' rule)
UNSEEDED = -1


def _is_interval(_: object, attribute: attrs.Attribute, value: tuple[float, float]) -> None:
    low, high = value
    if low > high:
        raise ValueError(f"{attribute.name}: minimum {low} is greater than maximum {high}")


@attrs.frozen(kw_only=True)
class ConstantValue:
    """A plain number (``gravity: 9.81``, or ``sampler_type: constant``)."""

    value: float = 0.0
    seed: int = UNSEEDED

    def send(self, channel: EnvironmentParametersChannel, key: str) -> None:
        channel.set_float_parameter(key, self.value)

    def sample(self, rng: np.random.Generator) -> float:
        return self.value

    def describe(self) -> str:
        return f"{self.value:g}"


@attrs.frozen(kw_only=True)
class UniformSampler:
    """A value drawn uniformly from ``[min_value, max_value]`` each time the environment reads it."""

    min_value: float = 0.0
    max_value: float = 1.0
    seed: int = UNSEEDED

    def __attrs_post_init__(self) -> None:
        if self.min_value > self.max_value:
            raise ValueError(
                f"min_value {self.min_value} is greater than max_value {self.max_value}"
            )

    def send(self, channel: EnvironmentParametersChannel, key: str) -> None:
        channel.set_uniform_sampler_parameters(key, self.min_value, self.max_value, self.seed)

    def sample(self, rng: np.random.Generator) -> float:
        return float(rng.uniform(self.min_value, self.max_value))

    def describe(self) -> str:
        return f"uniform in [{self.min_value:g}, {self.max_value:g}]"


@attrs.frozen(kw_only=True)
class GaussianSampler:
    """A value drawn from a normal distribution each time the environment reads it."""

    mean: float = 1.0
    st_dev: float = attrs.field(default=1.0, validator=attrs.validators.ge(0.0))
    seed: int = UNSEEDED

    def send(self, channel: EnvironmentParametersChannel, key: str) -> None:
        channel.set_gaussian_sampler_parameters(key, self.mean, self.st_dev, self.seed)

    def sample(self, rng: np.random.Generator) -> float:
        return float(rng.normal(self.mean, self.st_dev))

    def describe(self) -> str:
        return f"gaussian (mean {self.mean:g}, st_dev {self.st_dev:g})"


@attrs.frozen(kw_only=True)
class MultiRangeUniformSampler:
    """A value drawn uniformly from the union of ``intervals`` (each interval weighted by width,
    as Unity's sampler does)."""

    intervals: tuple[tuple[float, float], ...] = attrs.field(
        default=((0.0, 1.0),),
        converter=lambda v: tuple((float(a), float(b)) for a, b in v),
        validator=[
            attrs.validators.min_len(1),
            attrs.validators.deep_iterable(member_validator=_is_interval),
        ],
    )
    seed: int = UNSEEDED

    def send(self, channel: EnvironmentParametersChannel, key: str) -> None:
        channel.set_multirangeuniform_sampler_parameters(
            key, [list(interval) for interval in self.intervals], self.seed
        )

    def sample(self, rng: np.random.Generator) -> float:
        widths = np.array([high - low for low, high in self.intervals])
        total = widths.sum()
        pick = rng.choice(len(widths), p=widths / total) if total > 0 else 0
        low, high = self.intervals[pick]
        return float(rng.uniform(low, high))

    def describe(self) -> str:
        return "uniform in " + " ∪ ".join(f"[{a:g}, {b:g}]" for a, b in self.intervals)


ParameterValue = ConstantValue | UniformSampler | GaussianSampler | MultiRangeUniformSampler


class ParameterizedEnv(Protocol):
    """A ``BaseEnv`` that takes environment parameters (they apply from its next reset on)."""

    def set_environment_parameters(self, values: Mapping[str, ParameterValue]) -> None: ...


class StatsReportingEnv(Protocol):
    """A ``BaseEnv`` that reports statistics of its own (Unity's stats side channel)."""

    def environment_stats(self) -> EnvironmentStats: ...


def apply_parameters(env: object, values: Mapping[str, ParameterValue]) -> None:
    """Hand ``values`` to ``env`` if it takes environment parameters (``ParameterizedEnv``)."""
    setter = getattr(env, "set_environment_parameters", None)
    if values and setter is not None:
        setter(values)


def stats_source(env: object) -> Callable[[], EnvironmentStats] | None:
    """``env.environment_stats`` if the environment reports statistics (``StatsReportingEnv``),
    else None (looked up once: steppers call it after every step)."""
    return getattr(env, "environment_stats", None)
