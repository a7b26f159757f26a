"""What ``ghost-learn`` and ``ghost-eval`` share: logging set-up and how a command ends.

A user mistake (``GhostError``) ends as one line on stderr and exit code 2; Ctrl-C as exit code
130; a reader that stopped listening (``ghost-eval ... | head``) as exit code 141, the shell's
code for SIGPIPE, without a traceback. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import traceback
from collections.abc import Callable

from envs.unity_build import quiet_grpc_logs
from ghost.exceptions import GhostError
from trainers.exceptions import is_disk_write_error

EXIT_USER_ERROR = 2
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141


def setup_logging(debug: bool, *, level: int = logging.INFO) -> None:
    """Our packages log at ``level`` (DEBUG with ``debug``), everything else at WARNING."""
    quiet_grpc_logs()  # before anything (Ray, a Unity build) imports grpc
    logging.basicConfig(format="[%(levelname)s] %(name)s: %(message)s", level=logging.WARNING)
    for package in ("ghost", "trainers", "envs"):
        logging.getLogger(package).setLevel(logging.DEBUG if debug else level)


def run_command(prog: str, body: Callable[[], int], *, debug: Callable[[], bool]) -> int:
    """``body()``'s exit code, or the code of the way it ended (see the module docstring).

    ``debug()`` is asked only after a failure (the options that set it may be read in ``body``).
    """
    previous_hook = threading.excepthook
    threading.excepthook = _quiet_disk_errors_in_threads
    try:
        return body()
    except GhostError as error:
        if debug():
            traceback.print_exc()
        print(f"{prog}: error: {error}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    finally:
        threading.excepthook = previous_hook


def _quiet_disk_errors_in_threads(args: threading.ExceptHookArgs) -> None:
    """TensorBoard writes event files from a thread of its own; when the disk fills up, that
    thread dies and the next summary in the main thread raises the same error, which the run
    turns into its one-line message. The thread's own traceback would only bury that line."""
    if is_disk_write_error(args.exc_value):
        return
    threading.__excepthook__(args)


def _silence_stdout() -> None:
    """Point stdout at /dev/null so that the interpreter's last flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
