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

A build that fails to start (no connection in time, an early exit, an incompatible handshake)
raises an ``EnvironmentSourceError``: one summary line, then the last lines of the player's log,
indented. The log the message names is a copy outside the run folder, because a run that fails
before its first checkpoint has its folder, ``run_logs/`` included, deleted on the way out.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import attrs

from envs import protobuf_hook
from envs.exceptions import EnvironmentSourceError
from envs.settings import EngineSettings

UNITY_SUFFIXES = (".x86_64", ".x86", ".app", ".exe")
#: lines of a player's log shown when its build fails to start
LOG_TAIL_LINES = 10
#: bytes read from the end of a player's log for them (Unity's logs can run to megabytes)
_TAIL_BYTES = 64 * 1024
_MAX_LINE_CHARS = 300


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
                f"exited: {_one_line(error)}{self._player_log(worker_id)}"
            ) from None
        except UnityException as error:
            raise EnvironmentSourceError(
                f"Unity build {self.file_name!r} (worker {worker_id}, port {port}) did not start: "
                f"{_one_line(error)}{self._player_log(worker_id)}"
            ) from error

    def _log_path(self, worker_id: int) -> tuple[Path | None, bool]:
        """Where worker ``worker_id``'s player writes its log, and whether that is in
        ``log_folder`` (the run's, deleted with it) rather than a ``-logFile`` of ``env_args``."""
        args = list(self.env_args)
        for flag, value in zip(args, args[1:], strict=False):
            if flag.lower() == "-logfile":
                return (None if value == "-" else Path(value)), False
        if self.log_folder is None:
            return None, False
        return Path(self.log_folder) / f"Player-{worker_id}.log", True

    def _player_log(self, worker_id: int) -> str:
        """The end of the error message of a build that failed to start: the log's path (a copy
        that outlives the run folder) and, indented on the next lines, its last lines."""
        path, in_run_folder = self._log_path(worker_id)
        if path is None:
            return ""
        if not path.is_file():
            return f" The player wrote no log (expected at {path})."
        if in_run_folder:
            path = _keep(path)
        lines = _tail(path, LOG_TAIL_LINES)
        if not lines:
            return f" The player's log, {path}, is empty."
        return f" The player's log, {path}, ends with:" + "".join(f"\n    {x}" for x in lines)

    def describe(self) -> str:
        return f"Unity build {self.file_name}"


def _one_line(error: Exception) -> str:
    """``error``'s text on one line (mlagents_envs' version error spans three)."""
    return " ".join(str(error).split())


def _keep(log: Path) -> Path:
    """A copy of ``log`` in a new temporary folder (``log`` itself if copying fails)."""
    try:
        folder = Path(tempfile.mkdtemp(prefix="ghost-unity-start-"))
        return Path(shutil.copy2(log, folder / log.name))
    except OSError:
        return log


def _tail(path: Path, count: int) -> list[str]:
    """The last ``count`` non-blank lines of text file ``path``, each cut to a readable length."""
    try:
        with path.open("rb") as file:
            size = file.seek(0, os.SEEK_END)
            file.seek(max(0, size - _TAIL_BYTES))
            text = file.read().decode("utf-8", errors="replace")
    except OSError:
        return []
    lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    if size > _TAIL_BYTES:
        lines = lines[1:]  # the first one read may be the end of a longer line
    return [
        line if len(line) <= _MAX_LINE_CHARS else line[: _MAX_LINE_CHARS - 3] + "..."
        for line in lines[-count:]
    ]


def _environment_class() -> type:
    # mlagents_envs.environment loads grpc: only when a build is really started.
    quiet_grpc_logs()
    # a no-op where the package is installed (its .pth file ran at start-up)
    protobuf_hook.install()
    from envs.unity_environment import UnityBuildEnvironment

    return UnityBuildEnvironment
