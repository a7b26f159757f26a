"""The environment a run trained on, opened again to play matches in.

A run on a Unity build or a ``module:callable`` environment records how it was made in its
``configuration.yaml``: ``env_settings`` (``env_path``, ``env_args``, ``num_areas``,
``base_port``, ``timeout_wait``) and ``engine_settings`` (``no_graphics``, time scale...).
``RunEnvironment.of_run`` reads them back through ``RunRecord.options`` and builds the same
factory ``ghost-learn`` used (``envs.sources.resolve_env``); ``EnvOverrides`` replaces what
changed since (the build moved, the ports are taken, no display).

Evaluation opens one copy in this process (no worker process restarts a crashed build). A Unity
build listens on its own port: the one the user gives, or the first free one from
``EVAL_PORT_OFFSET`` above the training run's ``base_port``, so an evaluation beside a running
training does not take its ports.
"""

from __future__ import annotations

import logging
import socket
from pathlib import Path
from typing import Any

import attrs
from mlagents_envs.base_env import BaseEnv

from envs.settings import EngineSettings, EnvironmentSettings
from envs.sources import resolve_env
from envs.unity_build import UnityBuild
from ghost.exceptions import ConfigError, EnvironmentSourceError
from ghost.play.run_record import RunRecord

logger = logging.getLogger(__name__)

#: an evaluation's Unity build listens from this far above the training run's base_port
EVAL_PORT_OFFSET = 100
#: ports tried, one after the other, for a free one
_PORT_TRIES = 50


@attrs.frozen(kw_only=True)
class EnvOverrides:
    """What replaces the recorded settings (``None``/``False``: keep the recorded one).

    Attributes:
        env_path: the environment to play in (``--env``): a Unity build path or
            ``module:callable``.
        base_port: the port a Unity build listens on (``--base-port``).
        no_graphics: start a Unity build without graphics (``--no-graphics``).
    """

    env_path: str | None = None
    base_port: int | None = None
    no_graphics: bool = False


def _port_free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("localhost", port))
        except OSError:
            return False
    return True


def free_port_from(first: int) -> int:
    """The first port from ``first`` nobody listens on (``first`` itself if none is found)."""
    for port in range(first, min(first + _PORT_TRIES, 65536)):
        if _port_free(port):
            return port
    return first


@attrs.frozen(kw_only=True)
class RunEnvironment:
    """How to open the environment of a run again.

    Attributes:
        factory: the environment factory (``envs.sources.resolve_env``'s).
        label: a short name of the environment for tables (``FakePong``, ``my_envs:make``).
        base_port: the port a Unity build listens on; ``None`` picks a free one when opened.
    """

    factory: Any
    label: str
    base_port: int | None = None

    @property
    def is_unity_build(self) -> bool:
        """Whether the environment is a Unity build (started as its own process)."""
        return isinstance(self.factory, UnityBuild)

    @classmethod
    def of_run(cls, run: RunRecord | None, overrides: EnvOverrides) -> RunEnvironment:
        """The environment ``run`` trained on, with ``overrides``; ``run`` may be ``None`` when
        ``overrides.env_path`` names the environment.

        Raises:
            ConfigError: no environment is known, or a flag does not apply to it.
            EnvironmentSourceError: the environment cannot be found (moved, not importable).
        """
        env_settings, engine = _recorded_settings(run)
        env_path = overrides.env_path or env_settings.env_path
        if env_path is None:
            where = f"{run.root}'s configuration.yaml names" if run is not None else "there is"
            raise ConfigError(
                f"{where} no environment (env_settings.env_path); pass --env with a Unity build "
                "path or module:callable"
            )
        env_settings = attrs.evolve(env_settings, env_path=env_path)
        if overrides.no_graphics:
            engine = attrs.evolve(engine, no_graphics=True)
        factory = _resolve(env_path, env_settings, engine, given=overrides.env_path is not None)
        if not isinstance(factory, UnityBuild):
            if overrides.base_port is not None or overrides.no_graphics:
                raise ConfigError(
                    f"--base-port and --no-graphics are for Unity builds; {env_path} is not one"
                )
            return cls(factory=factory, label=env_path)
        return cls(factory=factory, label=Path(env_path).name, base_port=overrides.base_port)

    def open(self, *, seed: int) -> BaseEnv:
        """One copy of the environment, in this process (a Unity build: started on its port)."""
        if not isinstance(self.factory, UnityBuild):
            return self.factory(worker_id=0, seed=max(seed, 0))
        port = self.base_port
        if port is None:
            recorded = self.factory.base_port
            port = free_port_from(recorded + EVAL_PORT_OFFSET)
        logger.info("starting %s on port %d", self.factory.file_name, port)
        return attrs.evolve(self.factory, base_port=port)(worker_id=0, seed=max(seed, 0))


def _recorded_settings(run: RunRecord | None) -> tuple[EnvironmentSettings, EngineSettings]:
    """``env_settings`` and ``engine_settings`` of ``run``'s configuration (defaults without)."""
    if run is None:
        return EnvironmentSettings(), EngineSettings()
    options = run.options()
    return options.env_settings, options.engine_settings


def _resolve(
    env_path: str, env_settings: EnvironmentSettings, engine: EngineSettings, *, given: bool
) -> Any:
    """``resolve_env``, its error naming ``--env`` when the recorded environment is gone."""
    try:
        return resolve_env(env_path, env_settings=env_settings, engine_settings=engine)
    except EnvironmentSourceError as error:
        if given:
            raise
        raise EnvironmentSourceError(
            f"the environment the run trained on cannot be opened again: {error}. If it moved "
            "(or the run was trained in another folder), pass --env with its path or "
            "module:callable"
        ) from None
