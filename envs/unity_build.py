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

A path that cannot start as a player (a folder that is not a build, a file that is not a program
or lacks the execute permission) is refused by ``check_executable`` before anything starts. A
build that fails to start (an early exit, no connection in time, a port in use, an incompatible
handshake) raises an ``EnvironmentSourceError``: one summary line saying what happened and what
to do, then the last lines of the player's log, indented, when it wrote one. The log the message
names is a copy outside the run folder, because a run that fails before its first checkpoint has
its folder, ``run_logs/`` included, deleted on the way out. A program that exits or stays silent
without writing a player log at all is said not to look like a Unity player.
"""

from __future__ import annotations

import logging
import os
import re
import shlex
import shutil
import tempfile
from pathlib import Path
from typing import Any

import attrs

from envs import protobuf_hook
from envs.exceptions import EnvironmentSourceError
from envs.settings import EngineSettings

UNITY_SUFFIXES = (".x86_64", ".x86", ".app", ".exe")
#: ML-Agents' ``BASE_ENVIRONMENT_PORT``: worker ``i`` of a build listens on ``base_port + i``
DEFAULT_BASE_PORT = 5005
#: how executables begin: ELF, a script's ``#!``, Mach-O (both byte orders, fat), Windows PE
_PROGRAM_MAGIC = (
    b"\x7fELF",
    b"#!",
    b"\xfe\xed\xfa\xce",
    b"\xfe\xed\xfa\xcf",
    b"\xce\xfa\xed\xfe",
    b"\xcf\xfa\xed\xfe",
    b"\xca\xfe\xba\xbe",
    b"MZ",
)
_EXITED = re.compile(
    r"Environment shut down with return code (?P<code>-?\d+)(?: \((?P<signal>\w+)\))?"
)
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


def quiet_player_console() -> None:
    """Keep a started player's own stdout and stderr off the console, as ``mlagents-learn`` does
    (``mlagents_envs`` sends them to /dev/null unless its launcher logs at DEBUG): the player's
    log file has them, and a program that is no Unity player would bury the one-line error."""
    launcher = logging.getLogger("mlagents_envs.env_utils")
    if launcher.level == logging.NOTSET:
        launcher.setLevel(logging.INFO)


def check_executable(file_name: str) -> None:
    """Refuse, before anything starts, a ``--env`` path that cannot start as a Unity player.

    Looks where ``mlagents_envs`` will look (``<path>``, ``<path>.x86_64``...).

    Raises:
        EnvironmentSourceError: a folder that is not a build, a file that is not a program (a
            text or data file), or a program without the execute permission.
    """
    from mlagents_envs.env_utils import validate_environment_path

    target = validate_environment_path(file_name)
    if target is None:
        raise EnvironmentSourceError(_no_executable(file_name))
    try:
        with open(target, "rb") as file:
            head = file.read(4)
    except OSError:
        head = None  # unreadable: launching it says why
    if head is not None and not head.startswith(_PROGRAM_MAGIC):
        raise EnvironmentSourceError(
            f"--env {target!r} is not a program (a text or data file, not an executable): point "
            "--env at the build's executable (<Name>.x86_64 on Linux, the folder <Name>.app on "
            "macOS, <Name>.exe on Windows)"
        )
    if os.name == "posix" and not os.access(target, os.X_OK):
        raise EnvironmentSourceError(
            f"--env {target!r} is not executable (a build copied or unzipped can lose the "
            f"permission): run chmod +x {shlex.quote(target)}"
        )


def _no_executable(file_name: str) -> str:
    path = Path(file_name)
    if not path.is_dir():
        return (
            f"--env {file_name!r} names no Unity build's executable; point --env at the build's "
            "executable (<Name>.x86_64 on Linux)"
        )
    inside = sorted(
        str(child)
        for child in path.iterdir()
        if child.suffix in UNITY_SUFFIXES and child.name != "UnityCrashHandler64.exe"
    )
    if inside:
        return (
            f"--env {file_name!r} is a folder, not a Unity build's executable: point --env at "
            f"the executable inside it ({' or '.join(repr(x) for x in inside[:3])})"
        )
    return (
        f"--env {file_name!r} is a folder that holds no Unity build (no {'/'.join(UNITY_SUFFIXES)} "
        "in it): build the scene for this system in Unity's Build Settings and point --env at the "
        "executable it writes"
    )


@attrs.frozen(kw_only=True)
class UnityBuild:
    """A Unity executable, one process per worker on port ``base_port + worker_id``."""

    file_name: str
    base_port: int = DEFAULT_BASE_PORT
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
        environment_class = _environment_class()
        quiet_player_console()
        try:
            return environment_class(
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
            raise EnvironmentSourceError(self._timed_out(worker_id, port)) from None
        except UnityWorkerInUseException:
            raise EnvironmentSourceError(port_in_use(port, self.base_port, worker_id)) from None
        except UnityEnvironmentException as error:
            raise EnvironmentSourceError(self._failed(worker_id, port, error)) from None
        except UnityException as error:
            raise EnvironmentSourceError(
                f"Unity build {self.file_name!r} (port {port}) did not start: "
                f"{_one_line(error)}{self._player_log(worker_id)[0]}"
            ) from error
        except OSError as error:  # the system refused to run it (not a program for this system)
            raise EnvironmentSourceError(
                f"Unity build {self.file_name!r} could not be run ({error.strerror or error}): "
                "it is not a program this system runs; point --env at the build's executable "
                "made for this system (<Name>.x86_64 on Linux)"
            ) from None

    def _timed_out(self, worker_id: int, port: int) -> str:
        log, wrote = self._player_log(worker_id)
        if wrote is False:
            return (
                f"Unity build {self.file_name!r} never connected: it did not connect to port "
                f"{port} within {self.timeout_wait} s (env_settings.timeout_wait, "
                f"--timeout-wait) and wrote no player log, so it {_NOT_A_PLAYER}"
            )
        return (
            f"Unity build {self.file_name!r} did not connect to port {port} within "
            f"{self.timeout_wait} s (env_settings.timeout_wait, --timeout-wait). Check that it "
            "was built with the ML-Agents package, starts without user input, and that its "
            "agents' Behavior Type is Default; on a machine without a display pass --no-graphics."
            f"{log}"
        )

    def _failed(self, worker_id: int, port: int, error: Exception) -> str:
        text = _one_line(error)
        log, wrote = self._player_log(worker_id)
        exited = _EXITED.match(text)
        if exited is None:  # refused at launch, or an incompatible handshake
            return f"Unity build {self.file_name!r} did not start: {text}{log}"
        how = f"return code {exited['code']}" + (
            f", {exited['signal']}" if exited["signal"] else ""
        )
        summary = (
            f"Unity build {self.file_name!r} exited ({how}) and never connected to port {port}"
        )
        if wrote is False:
            return f"{summary}; it wrote no player log either, so it {_NOT_A_PLAYER}"
        return f"{summary}.{log}"

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

    def _player_log(self, worker_id: int) -> tuple[str, bool | None]:
        """The end of the error message of a build that failed to start, and whether the player
        wrote a log (None: unknown, it was told to write none where we can read it).

        A log that exists is named (a copy that outlives the run folder) and its last lines
        follow, indented; a log that was never written is left to the caller to explain.
        """
        path, in_run_folder = self._log_path(worker_id)
        if path is None:
            return "", None
        if not path.is_file():
            return "", False
        if in_run_folder:
            path = _keep(path)
        lines = _tail(path, LOG_TAIL_LINES)
        if not lines:
            return f" The player's log, {path}, is empty.", True
        return f" The player's log, {path}, ends with:" + "".join(f"\n    {x}" for x in lines), True

    def describe(self) -> str:
        return f"Unity build {self.file_name}"


#: the end of the message about a program that exits or stays silent without a player log
_NOT_A_PLAYER = (
    "does not look like a Unity player: point --env at the executable of a build made with the "
    "ML-Agents package (<Name>.x86_64 on Linux)"
)


def port_in_use(port: int, base_port: int, worker_id: int) -> str:
    """The message for a port taken by another process (another training run, most often)."""
    which = f"port {port}" + (f" (base_port {base_port} + worker {worker_id})" if worker_id else "")
    return (
        f"{which} is in use, maybe by another training run: stop that run, or listen on other "
        "ports with --base-port (env_settings.base_port)"
    )


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
