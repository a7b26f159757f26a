"""What the commands share: ``--version``, logging set-up and how a command ends.

A user mistake (``GhostError``) ends as one line on stderr and exit code 2; Ctrl-C as exit code
130; a reader that stopped listening (``ghost-eval ... | head``) as exit code 141, the shell's
code for SIGPIPE, without a traceback. Anything else is a bug and keeps its traceback.

Without ``--debug`` the libraries we run on keep their start-up chatter to themselves: Ray's
token-authentication notice, TensorFlow's and absl's messages when TensorBoard finds TensorFlow,
the Python warnings raised inside torch, TensorBoard, Ray and protobuf. ``console_logging`` is the
same console for ``ghost.train`` called from a script, unless the script set up logging itself.
"""

from __future__ import annotations

import argparse
import logging
import os
import platform
import sys
import threading
import traceback
import warnings
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from envs.unity_build import quiet_grpc_logs
from ghost import __version__
from ghost.exceptions import GhostError, ResultsWriteError
from trainers.exceptions import is_disk_write_error

EXIT_USER_ERROR = 2
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141

#: the loggers of our packages
PACKAGES = ("ghost", "trainers", "envs")
LOG_FORMAT = "[%(levelname)s] %(name)s: %(message)s"
#: third-party loggers held back to ERROR without --debug
_NOISY_LOGGERS = (
    "ray._private.authentication.authentication_token_setup",  # "Token authentication is on"
    "tensorflow",
    "absl",
)
#: modules whose Python warnings are ignored without --debug
_NOISY_WARNINGS = r"(torch|tensorboard|tensorflow|ray|google\.protobuf)(\.|$)"
_TF_LOG_LEVEL = "TF_CPP_MIN_LOG_LEVEL"
#: whether ``quiet_third_party`` set TF_CPP_MIN_LOG_LEVEL (a user's own value is left alone)
_tf_level_set_here = False


def setup_logging(debug: bool, *, level: int = logging.INFO) -> None:
    """Our packages log at ``level`` (DEBUG with ``debug``), everything else at WARNING, and the
    libraries' own noise is held back unless ``debug`` (see the module docstring)."""
    quiet_grpc_logs()  # before anything (Ray, a Unity build) imports grpc
    logging.basicConfig(format=LOG_FORMAT, level=logging.WARNING)
    for package in PACKAGES:
        logging.getLogger(package).setLevel(logging.DEBUG if debug else level)
    quiet_third_party(not debug)


def quiet_third_party(quiet: bool) -> None:
    """Hold back (``quiet``) or let through the start-up chatter of Ray, TensorFlow/TensorBoard
    and the warnings of torch and friends. Called again with another value, it undoes itself:
    ``ghost-learn`` learns of ``debug: true`` in a YAML file only after the first call."""
    global _tf_level_set_here
    for name in _NOISY_LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR if quiet else logging.NOTSET)
    # "default" put in front overrides an earlier "ignore" of the same modules
    warnings.filterwarnings("ignore" if quiet else "default", module=_NOISY_WARNINGS)
    # TensorFlow's C++ start-up log reads this when TensorBoard imports TensorFlow, later on
    if quiet and _TF_LOG_LEVEL not in os.environ:
        os.environ[_TF_LOG_LEVEL] = "2"
        _tf_level_set_here = True
    elif not quiet and _tf_level_set_here:
        os.environ.pop(_TF_LOG_LEVEL, None)
        _tf_level_set_here = False


class _ConsoleHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """The handler ``console_logging`` attaches (told apart from an application's own)."""


def console_logging(verbose: int) -> None:
    """Print our packages' log on stderr, as ``ghost-learn`` does, unless the application set up
    logging itself; ``ghost.train(verbose=...)`` calls it, like Stable-Baselines3's ``verbose``.

    Args:
        verbose: 0 prints nothing (warnings still reach stderr through Python's last resort),
            1 INFO (the summary lines), 2 DEBUG.

    A handler on the root logger or on ``ghost``/``trainers``/``envs`` other than the one this
    function attached, or a level set on one of those three, means the application chose what
    to log and where: nothing changes then.
    """
    loggers = [logging.getLogger(name) for name in PACKAGES]
    handlers = [h for lg in (logging.getLogger(), *loggers) for h in lg.handlers]
    if any(not isinstance(handler, _ConsoleHandler) for handler in handlers):
        return
    if any(lg.level != logging.NOTSET and not lg.handlers for lg in loggers):
        return
    for package_logger in loggers:
        for handler in list(package_logger.handlers):
            package_logger.removeHandler(handler)
        package_logger.setLevel(logging.NOTSET)
    if verbose <= 0:
        return
    handler = _ConsoleHandler()  # stderr, like logging's own default
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    for package_logger in loggers:
        package_logger.addHandler(handler)
        package_logger.setLevel(logging.DEBUG if verbose >= 2 else logging.INFO)


def positive_int(text: str) -> int:
    """An argparse ``type``: a whole number > 0 (``--episodes 0`` is refused as the flag's error)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number > 0, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number > 0, got {value}")
    return value


def output_file(path: Path | str, default_name: str) -> Path:
    """The file a command writes for an output argument the user gave: ``path`` itself, or
    ``path/default_name`` when ``path`` is a folder (or is written with a trailing slash). A
    missing folder on the way is made.

    Raises:
        ResultsWriteError: the folder that would hold the file cannot be made.
    """
    text = str(path)
    path = Path(path)
    if path.is_dir() or text.endswith(("/", os.sep)):
        path = path / default_name
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ResultsWriteError(
            f"cannot write {path}: the folder {path.parent} cannot be made "
            f"({error.strerror or error})"
        ) from None
    return path


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


def version_text() -> str:
    """What ``--version`` prints: ghost-trainer's version, then Python's, torch's and
    mlagents-envs' on lines of their own (read from the installed metadata: nothing is imported)."""
    lines = [f"ghost-trainer {__version__}", f"python {platform.python_version()}"]
    for package in ("torch", "mlagents-envs"):
        try:
            lines.append(f"{package} {metadata.version(package)}")
        except metadata.PackageNotFoundError:
            lines.append(f"{package} not installed")
    return "\n".join(lines)


class VersionAction(argparse.Action):
    """``parser.add_argument("--version", action=VersionAction)``: print :func:`version_text`
    and exit. Unlike argparse's own ``version`` action the text is made only when asked, and
    its lines are kept as they are."""

    def __init__(
        self,
        option_strings: Sequence[str],
        dest: str = argparse.SUPPRESS,
        default: Any = argparse.SUPPRESS,  # given by a parser's argument_default; never stored
        help: str = "print the versions of ghost-trainer, Python, torch and mlagents-envs and exit",
    ) -> None:
        super().__init__(option_strings, dest=dest, default=argparse.SUPPRESS, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        try:
            print(version_text(), flush=True)
        except BrokenPipeError:  # ghost-eval --version | head -1
            _silence_stdout()
            parser.exit(EXIT_BROKEN_PIPE)
        parser.exit()
