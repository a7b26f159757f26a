"""One process at a time per run folder: ``<run folder>/run.lock``, held for the life of a run.

Two processes training into one ``<results_dir>/<run_id>`` overwrite each other's checkpoints, and a
``--force`` deletes the folder under a live run. The second one must stop instead, with one line
naming the first: that is ``RunLock``.

The lock file is created atomically (``O_CREAT | O_EXCL``) and holds JSON naming its holder::

    {"pid": 4242, "host": "box", "since": "2026-11-25T10:02:11+00:00",
     "heartbeat": "2026-11-25T10:32:41+00:00", "command": "ghost-learn tennis.yaml --run-id t1"}

Where ``fcntl`` exists the holder also keeps an ``flock`` on the file, which the OS drops when the
process dies, however it dies. A lock is *stale*, and taken over with a warning naming the old
holder, when

- its holder ran on this host and is gone: its flock is free, or no process has its pid;
- its holder runs on another host and has not refreshed ``heartbeat`` for ``STALE_AFTER_S``
  (a run refreshes it through ``RunLock.heartbeat``, at most every ``HEARTBEAT_INTERVAL_S``);
- the file cannot be parsed (a process died while writing it) and nobody holds its flock.

Locks are counted per process: a second ``acquire`` of a folder this process already holds (the
behaviors of one ML-Agents run each asking) shares the first, and the file goes with the last
``release``, or when the process exits.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import socket
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import attrs

from trainers.exceptions import RunLockedError

try:
    import fcntl
except ImportError:  # Windows: the pid and the heartbeat decide alone
    fcntl = None  # type: ignore[assignment]

logger = logging.getLogger(__name__)

LOCK_FILE_NAME = "run.lock"
#: a holder on another host whose heartbeat is older than this is presumed dead
STALE_AFTER_S = 600.0
#: ``heartbeat()`` writes at most this often, so that calling it every step costs nothing
HEARTBEAT_INTERVAL_S = 30.0
_COMMAND_CHARS = 200
# a contender may take a stale lock over between our steps; then we look again, a few times
_ATTEMPTS = 5


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _command_line() -> str:
    words = [Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "python", *sys.argv[1:]]
    command = " ".join(words)
    return command if len(command) <= _COMMAND_CHARS else command[: _COMMAND_CHARS - 3] + "..."


@attrs.frozen(kw_only=True)
class LockHolder:
    """Who holds a run lock, as its file says.

    Attributes:
        pid: the holding process.
        host: ``socket.gethostname()`` of its machine.
        since: when it took the lock (ISO 8601, UTC).
        heartbeat: when it last said it is alive (ISO 8601, UTC).
        command: its command line, shortened.
    """

    pid: int
    host: str
    since: str
    heartbeat: str
    command: str = ""

    @classmethod
    def of_this_process(cls) -> LockHolder:
        """This process, now."""
        now = _now()
        return cls(
            pid=os.getpid(), host=socket.gethostname(), since=now, heartbeat=now,
            command=_command_line(),
        )  # fmt: skip

    @classmethod
    def parse(cls, data: bytes) -> LockHolder | None:
        """The holder a lock file names, or None when it cannot be read."""
        try:
            record = json.loads(data.decode("utf-8"))
            holder = cls(
                pid=int(record["pid"]), host=str(record["host"]), since=str(record["since"]),
                heartbeat=str(record["heartbeat"]), command=str(record.get("command", "")),
            )  # fmt: skip
            datetime.fromisoformat(holder.since)
            datetime.fromisoformat(holder.heartbeat)
        except (ValueError, TypeError, KeyError, AttributeError):
            return None
        return holder

    def to_json(self) -> bytes:
        """The file's content (ASCII, one line; fixed length for a given holder)."""
        return (json.dumps(attrs.asdict(self)) + "\n").encode("ascii")

    def heartbeat_age_s(self) -> float:
        """Seconds since the last heartbeat (0 for a clock ahead of ours)."""
        beat = datetime.fromisoformat(self.heartbeat)
        return max(0.0, (datetime.now(timezone.utc) - beat).total_seconds())

    def describe(self) -> str:
        """``pid 4242 on host box since 2026-11-25 10:02:11 UTC``."""
        since = datetime.fromisoformat(self.since).astimezone(timezone.utc)
        return f"pid {self.pid} on host {self.host} since {since:%Y-%m-%d %H:%M:%S} UTC"


@attrs.define
class _Held:
    """A lock this process holds: the open, flocked file and how many ``RunLock``s share it."""

    fd: int
    holder: LockHolder
    owner_pid: int
    users: int = 0
    last_beat: float = attrs.field(factory=time.monotonic)
    lost: bool = False


_HELD: dict[Path, _Held] = {}
_GUARD = threading.Lock()


class RunLock:
    """The lock of run folder ``root`` (``root/run.lock``); see the module docstring.

    Use as a context manager, or ``acquire()`` then ``release()`` (twice is harmless).

    Args:
        root: the run folder; it must exist before ``acquire``.
        run_name: how messages name the run (default: the folder's name).
        stale_after_s: a holder on another host silent this long is presumed dead.
        heartbeat_interval_s: ``heartbeat()`` writes at most this often.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        run_name: str | None = None,
        stale_after_s: float = STALE_AFTER_S,
        heartbeat_interval_s: float = HEARTBEAT_INTERVAL_S,
    ) -> None:
        self.path = Path(root) / LOCK_FILE_NAME
        self.run_name = run_name if run_name is not None else Path(root).name
        self.stale_after_s = stale_after_s
        self.heartbeat_interval_s = heartbeat_interval_s
        self._key = self.path.parent.resolve() / LOCK_FILE_NAME
        self._held = False

    @property
    def held(self) -> bool:
        """This object holds the lock (acquired and not yet released)."""
        return self._held

    def acquire(self) -> RunLock:
        """Take the lock, or a share of it when this process already holds it; returns self.

        Raises:
            RunLockedError: a live process holds it (the message names it and what to do).
            OSError: the lock file cannot be created (a missing or read-only folder).
        """
        if self._held:
            return self
        with _GUARD:
            held = _HELD.get(self._key)
            if held is None or held.owner_pid != os.getpid():  # a forked child holds nothing
                held = self._take()
                _HELD[self._key] = held
            held.users += 1
        self._held = True
        return self

    def release(self) -> None:
        """Give back this object's share; the last share deletes the file if it is still ours."""
        if not self._held:
            return
        self._held = False
        with _GUARD:
            held = _HELD.get(self._key)
            if held is None:
                return
            held.users -= 1
            if held.users > 0:
                return
            del _HELD[self._key]
        _let_go(self.path, held)

    def heartbeat(self, *, force: bool = False) -> bool:
        """Refresh the heartbeat in the file (at most every ``heartbeat_interval_s`` unless
        ``force``); returns whether it wrote. Cheap enough to call every step."""
        held = _HELD.get(self._key) if self._held else None
        if held is None or held.owner_pid != os.getpid() or held.lost:
            return False
        now = time.monotonic()
        if not force and now - held.last_beat < self.heartbeat_interval_s:
            return False
        held.last_beat = now
        held.holder = attrs.evolve(held.holder, heartbeat=_now())
        try:
            if not _same_file(held.fd, self.path):
                held.lost = True
                logger.warning(
                    "run %r: %s is no longer this process's (another process took it over); "
                    "two processes may now write this run", self.run_name, self.path,
                )  # fmt: skip
                return False
            _write(held.fd, self.path, held.holder)
        except OSError as error:
            logger.warning("run %r: cannot refresh %s: %s", self.run_name, self.path, error)
            return False
        return True

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *_: Any) -> None:
        self.release()

    # -- taking the file -------------------------------------------------------------------------
    def _take(self) -> _Held:
        for _ in range(_ATTEMPTS):
            try:
                # held read-only: a run must not keep a file open for writing, which would stop its disk
                # from being remounted read-only (what a failing disk does). 0o644 less the umask,
                # not 0o666: anyone may read who holds the run, only the holder rewrites it, and a
                # stale lock is removed through the folder's write permission, not the file's
                fd = os.open(self.path, os.O_RDONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                self._clear_if_stale()
                continue
            # a contender that opened our new, still empty file may have flocked it first and
            # be deleting it as unreadable: then it is not ours, and we look again
            if _try_flock(fd) is False or not _same_file(fd, self.path):
                os.close(fd)
                continue
            holder = LockHolder.of_this_process()
            try:
                _write(fd, self.path, holder)
            except BaseException:
                _let_go(self.path, _Held(fd=fd, holder=holder, owner_pid=os.getpid()))
                raise
            return _Held(fd=fd, holder=holder, owner_pid=os.getpid())
        raise RunLockedError(
            f"run {self.run_name!r}: cannot take {self.path}, other processes keep taking it; "
            "is another run starting with the same --run-id?"
        )

    def _clear_if_stale(self) -> None:
        """Delete the lock file at ``path`` if its holder is gone; raise if it is alive."""
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return  # released meanwhile
        try:
            flock_free = _try_flock(fd)
            holder = LockHolder.parse(_read(fd))
            reason = self._stale_reason(holder, flock_free)
            if reason is None:
                raise RunLockedError(self._in_use_message(holder))
            if not _same_file(fd, self.path):
                return  # someone replaced it while we looked: look again
            whose = "" if holder is None else f" of {holder.describe()}"
            logger.warning(
                "run %r: taking over the stale lock %s%s: %s", self.run_name, self.path, whose,
                reason,
            )  # fmt: skip
            self.path.unlink(missing_ok=True)
        finally:
            os.close(fd)

    def _stale_reason(self, holder: LockHolder | None, flock_free: bool | None) -> str | None:
        """Why the lock is stale, or None when its holder may be alive."""
        if holder is None:
            if flock_free is False:
                return None  # its holder is writing it right now
            return (
                "the file cannot be read (a process died while writing it) and no process holds it"
            )
        if holder.host == socket.gethostname():
            if flock_free:
                return "that process has ended"
            alive = _pid_alive(holder.pid)
            if alive is False:
                return "that process has ended"
            if holder.pid == os.getpid():
                return "it was left by an earlier process with this process's pid"
            if alive:
                return None
        age = holder.heartbeat_age_s()
        if age > self.stale_after_s:
            return (
                f"no heartbeat for {_duration(age)} (stale after {_duration(self.stale_after_s)})"
            )
        return None

    def _in_use_message(self, holder: LockHolder | None) -> str:
        advice = "wait for it to finish or stop it, or choose another --run-id"
        if holder is None:
            return (
                f"run {self.run_name!r} is in use by another process (it is writing its lock "
                f"file {self.path}); {advice}"
            )
        heard = ""
        if holder.host != socket.gethostname():
            heard = f", last heartbeat {_duration(holder.heartbeat_age_s())} ago"
        return (
            f"run {self.run_name!r} is in use by {holder.describe()}{heard} ({self.path}); {advice}"
        )


def _try_flock(fd: int) -> bool | None:
    """Take an exclusive flock on ``fd`` without waiting: True if taken, False if another open
    file holds it, None where flock does not exist."""
    if fcntl is None:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError:  # a file system without flock
        return None
    return True


def _pid_alive(pid: int) -> bool | None:
    """Whether a process ``pid`` exists on this host; None where we cannot ask."""
    if os.name == "nt":
        return None  # os.kill(pid, 0) would send Ctrl-C there
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    except OSError:
        return None
    return True


def _same_file(fd: int, path: Path) -> bool:
    """``path`` still names the file open as ``fd``."""
    try:
        on_disk = os.stat(path)
    except FileNotFoundError:
        return False
    opened = os.fstat(fd)
    return (on_disk.st_dev, on_disk.st_ino) == (opened.st_dev, opened.st_ino)


def _read(fd: int) -> bytes:
    os.lseek(fd, 0, os.SEEK_SET)
    chunks = []
    while chunk := os.read(fd, 4096):
        chunks.append(chunk)
    return b"".join(chunks)


def _write(fd: int, path: Path, holder: LockHolder) -> None:
    # Rewritten in place, not replaced: the flock belongs to this file. A heartbeat changes only
    # fixed-width timestamps, so one write of the same length never shows a reader half a file.
    data = holder.to_json()
    writer = os.open(path, os.O_WRONLY)
    try:
        if os.fstat(writer).st_ino != os.fstat(fd).st_ino:
            raise OSError(f"{path} is no longer the lock file this process holds")
        os.write(writer, data)
        os.ftruncate(writer, len(data))
    finally:
        os.close(writer)


def _let_go(path: Path, held: _Held) -> None:
    """Delete ``path`` if it is still the file we hold, then close it (which drops the flock)."""
    try:
        if held.owner_pid == os.getpid() and _same_file(held.fd, path):
            path.unlink(missing_ok=True)
    except OSError as error:
        logger.warning("cannot delete the run lock %s: %s", path, error)
    finally:
        os.close(held.fd)


def _release_all() -> None:
    """At exit: give back every lock this process still holds."""
    with _GUARD:
        leftovers = list(_HELD.items())
        _HELD.clear()
    for key, held in leftovers:
        _let_go(key, held)


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


atexit.register(_release_all)
