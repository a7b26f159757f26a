"""``run_logs/console.log``: what a run printed on the console, kept with its results.

Each session of a run appends to it after a line of its own (when it started, resumed or not, and
its command line), so the file tells the run's whole history, as ML-Agents' ``run_logs/`` keeps a
run's status and timers.
"""

from __future__ import annotations

import logging
import shlex
import sys
import traceback
from datetime import datetime
from pathlib import Path

from envs.exceptions import GhostError

#: the run's console, kept in ``run_logs/``
CONSOLE_LOG_NAME = "console.log"
_CONSOLE_FORMAT = "%(asctime)s [%(levelname)s] %(name)s: %(message)s"


class _LastResort(logging.Handler):
    """Python's last-resort handler while a ``ConsoleLog`` is the root logger's only one: the
    records no other handler takes, on whatever ``sys.stderr`` is when they come."""

    def __init__(self) -> None:
        last_resort = logging.lastResort
        super().__init__(last_resort.level if last_resort is not None else logging.WARNING)

    def filter(self, record: logging.LogRecord) -> bool:
        logger: logging.Logger | None = logging.getLogger(record.name)
        root = logging.getLogger()
        while logger is not None and logger is not root:
            if logger.handlers or not logger.propagate:
                return False
            logger = logger.parent
        return super().filter(record)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(self.format(record) + "\n")
        except Exception:  # logging never raises into the caller
            self.handleError(record)


class ConsoleLog:
    """``run_logs/console.log``: every log record the console shows while the run holds its
    folder, appended after a line naming the session (its start time and command line).

    It listens on the root logger, so it takes exactly the records that reach a console handler
    there or on our packages' loggers (levels are the console's: ``--debug`` adds DEBUG lines). A
    root logger without a handler of its own keeps printing warnings through Python's last
    resort, as it did before the file was attached.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        continued = self.path.is_file() and self.path.stat().st_size > 0
        self.handler = logging.FileHandler(self.path, mode="a", encoding="utf-8")
        self.handler.setFormatter(logging.Formatter(_CONSOLE_FORMAT))
        root = logging.getLogger()
        self._last_resort: logging.Handler | None = None
        if not root.handlers and logging.lastResort is not None:
            self._last_resort = _LastResort()
            root.addHandler(self._last_resort)
        self.write_line(
            f"{'-' * 8} session {'resumed' if continued else 'started'} "
            f"{datetime.now().astimezone().isoformat(timespec='seconds')}: {_command_line()} "
            f"{'-' * 8}"
        )
        root.addHandler(self.handler)

    def write_line(self, text: str) -> None:
        """Append ``text`` as a line of its own (not through logging: the console never sees it)."""
        self.handler.acquire()
        try:
            stream = self.handler.stream
            stream.write(text.rstrip("\n") + "\n")
            stream.flush()
        finally:
            self.handler.release()

    def close(self, error: BaseException | None = None) -> None:
        """Stop listening; ``error``: what ended the run early, recorded as the console showed
        it (a user error's one line, an interruption, or a bug's traceback). Harmless to repeat."""
        root = logging.getLogger()
        if self.handler not in root.handlers:
            return
        root.removeHandler(self.handler)
        if self._last_resort is not None:
            root.removeHandler(self._last_resort)
        if error is not None:
            self.write_line(_ending(error))
        self.handler.close()


def _command_line() -> str:
    program = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "python"
    return shlex.join([program, *sys.argv[1:]])


def _ending(error: BaseException) -> str:
    """How a run that raised ``error`` ended, in the console's words."""
    if isinstance(error, KeyboardInterrupt):
        return "interrupted"
    if isinstance(error, GhostError):
        return f"error: {error}"
    return "".join(traceback.format_exception(type(error), error, error.__traceback__)).rstrip()
