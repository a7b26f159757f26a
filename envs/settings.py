"""Settings of the environment layer: ``env_settings`` and ``engine_settings`` of a run config.

Both mirror ML-Agents' sections of the same names, keys and defaults.
"""

from __future__ import annotations

import enum

import attrs
from attrs import validators as v

from envs.game_kind import GAME_KINDS
from envs.validators import non_negative, open_unit_interval, positive


def _game_kind(instance: object, attribute: attrs.Attribute, value: str | None) -> None:
    if value is not None and value not in GAME_KINDS:
        raise ValueError(f"{attribute.name} must be one of {', '.join(GAME_KINDS)} (got {value!r})")


class EnvironmentBackend(str, enum.Enum):
    """Where environment workers run."""

    LOCAL = "local"
    RAY = "ray"


@attrs.frozen(kw_only=True)
class EnvironmentSettings:
    """``env_settings``: which environment to run and how many copies."""

    env_path: str | None = None
    env_args: list[str] | None = None
    #: what kind of game it is (``envs.game_kind``), for ``self_play.preset: auto``; None: told
    #: from ``env_path`` or declared by the environment's factory
    game_kind: str | None = attrs.field(default=None, validator=_game_kind)
    base_port: int = attrs.field(default=5005, validator=v.and_(v.ge(1024), v.le(65535)))
    num_envs: int = attrs.field(default=1, validator=positive)
    num_areas: int = attrs.field(default=1, validator=positive)
    seed: int = -1
    max_lifetime_restarts: int = attrs.field(default=10, validator=v.ge(-1))
    restarts_rate_limit_n: int = attrs.field(default=1, validator=v.ge(-1))
    restarts_rate_limit_period_s: int = attrs.field(default=60, validator=positive)
    #: seconds to wait for a Unity build to start before giving up (ignored by in-process games)
    timeout_wait: int = attrs.field(default=60, validator=positive)
    #: where environment workers run: ``local`` (this machine's processes) or ``ray`` (actors)
    backend: EnvironmentBackend = EnvironmentBackend.LOCAL
    #: the Ray cluster to join (``auto``, ``host:6379``, ``ray://host:10001``); implies ``ray``
    ray_address: str | None = None
    #: share of the environments a Ray step waits for; 1.0 = lock-step (reproducible)
    ray_wait_fraction: float = attrs.field(default=1.0, validator=open_unit_interval)
    #: CPUs each Ray actor reserves; None: Ray's default (placed on a CPU, none held)
    ray_cpus_per_env: float | None = attrs.field(default=None, validator=non_negative)

    @property
    def uses_ray(self) -> bool:
        """Environment workers are Ray actors (``backend: ray`` or a ``ray_address``)."""
        return self.backend == EnvironmentBackend.RAY or self.ray_address is not None


@attrs.frozen(kw_only=True)
class EngineSettings:
    """``engine_settings``: forwarded to Unity builds, ignored by in-process games."""

    width: int = attrs.field(default=84, validator=positive)
    height: int = attrs.field(default=84, validator=positive)
    quality_level: int = 5
    time_scale: float = attrs.field(default=20.0, validator=positive)
    target_frame_rate: int = -1
    capture_frame_rate: int = 60
    no_graphics: bool = False
    #: Unity builds: worker 0 renders, every other worker runs without graphics
    no_graphics_monitor: bool = False
