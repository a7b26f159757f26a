"""Settings of the environment layer: ``env_settings`` and ``engine_settings`` of a run config.

Both mirror ML-Agents' sections of the same names, keys and defaults.
"""

from __future__ import annotations

import attrs
from attrs import validators as v

from envs.validators import positive


@attrs.frozen(kw_only=True)
class EnvironmentSettings:
    """``env_settings``: which environment to run and how many copies."""

    env_path: str | None = None
    env_args: list[str] | None = None
    base_port: int = attrs.field(default=5005, validator=v.and_(v.ge(1024), v.le(65535)))
    num_envs: int = attrs.field(default=1, validator=positive)
    num_areas: int = attrs.field(default=1, validator=positive)
    seed: int = -1
    max_lifetime_restarts: int = attrs.field(default=10, validator=v.ge(-1))
    restarts_rate_limit_n: int = attrs.field(default=1, validator=v.ge(-1))
    restarts_rate_limit_period_s: int = attrs.field(default=60, validator=positive)
    #: seconds to wait for a Unity build to start before giving up (ignored by in-process games)
    timeout_wait: int = attrs.field(default=60, validator=positive)


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
