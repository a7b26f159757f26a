"""Unity builds: one player process per environment worker, spoken to over the ML-Agents protocol.

``UnityBuild`` is the environment factory of ``--env path/to/Build``. Each call starts the build
with ``mlagents_envs.environment.UnityEnvironment`` (Python serves gRPC on ``base_port +
worker_id``; the player connects) and attaches three side channels:

- engine configuration: ``engine_settings`` (window size, quality level, time scale, frame rates),
  sent with the first reset;
- environment parameters: constants and samplers, sent whenever the run changes them
  (``set_environment_parameters``, e.g. when a curriculum lesson completes);
- stats: what the game records with ``Academy.Instance.StatsRecorder``, returned by
  ``environment_stats()`` and written to TensorBoard by the training loop.

A build runs in an environment worker process even with one environment, so that a crashed
player is restarted under ``max_lifetime_restarts`` as in ML-Agents.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import attrs

from envs import protobuf_hook
from envs.exceptions import EnvironmentSourceError
from envs.settings import EngineSettings

UNITY_SUFFIXES = (".x86_64", ".x86", ".app", ".exe")


def quiet_grpc_logs() -> None:
    """Keep gRPC's own INFO lines ("Got goaway" when a player closes, "skipping fork() handlers"
    when a process forks) off the console; its errors still show, and a user's own
    ``GRPC_VERBOSITY`` wins. Takes effect only before gRPC is first imported in the process."""
    os.environ.setdefault("GRPC_VERBOSITY", "ERROR")


@attrs.frozen(kw_only=True)
class UnityBuild:
    """A Unity executable, one process per worker on port ``base_port + worker_id``."""

    file_name: str
    base_port: int = 5005
    timeout_wait: int = 60
    num_areas: int = 1
    env_args: tuple[str, ...] = ()
    engine: EngineSettings = attrs.Factory(EngineSettings)
    #: where Unity writes its player log (ML-Agents uses the run's run_logs/)
    log_folder: str | None = None
    #: steppers run it in a worker process, which restarts a crashed player
    runs_in_worker: bool = attrs.field(default=True, init=False)

    def __call__(self, *, worker_id: int = 0, seed: int = 0) -> Any:
        from mlagents_envs.exception import (
            UnityEnvironmentException,
            UnityException,
            UnityTimeOutException,
            UnityWorkerInUseException,
        )

        port = self.base_port + worker_id
        no_graphics = self.engine.no_graphics or (self.engine.no_graphics_monitor and worker_id > 0)
        try:
            return _environment_class()(
                engine=self.engine,
                file_name=self.file_name,
                worker_id=worker_id,
                base_port=self.base_port,
                seed=seed,
                no_graphics=no_graphics,
                timeout_wait=self.timeout_wait,
                additional_args=list(self.env_args),
                log_folder=self.log_folder,
                num_areas=self.num_areas,
            )
        except UnityTimeOutException:
            log = self._player_log(worker_id)
            raise EnvironmentSourceError(
                f"Unity build {self.file_name!r} (worker {worker_id}) did not connect to port "
                f"{port} within {self.timeout_wait} s (env_settings.timeout_wait, "
                "--timeout-wait). Check that it was built with the ML-Agents package, starts "
                "without user input, and that its agents' Behavior Type is Default; on a machine "
                f"without a display pass --no-graphics.{log}"
            ) from None
        except UnityWorkerInUseException:
            raise EnvironmentSourceError(
                f"port {port} (base_port {self.base_port} + worker {worker_id}) is in use, maybe "
                "by another run; pick other ports with --base-port"
            ) from None
        except UnityEnvironmentException as error:
            raise EnvironmentSourceError(
                f"Unity build {self.file_name!r} (worker {worker_id}) could not be started or "
                f"exited: {error}{self._player_log(worker_id)}"
            ) from None
        except UnityException as error:
            raise EnvironmentSourceError(
                f"Unity build {self.file_name!r} (worker {worker_id}, port {port}) did not start: "
                f"{error}"
            ) from error

    def _player_log(self, worker_id: int) -> str:
        if self.log_folder is None:
            return ""
        return f" The player's log: {Path(self.log_folder) / f'Player-{worker_id}.log'}"

    def describe(self) -> str:
        return f"Unity build {self.file_name}"


def _environment_class() -> type:
    # mlagents_envs.environment loads grpc: only when a build is really started.
    quiet_grpc_logs()
    # a no-op where the package is installed (its .pth file ran at start-up)
    protobuf_hook.install()
    from envs.unity_environment import UnityBuildEnvironment

    return UnityBuildEnvironment
