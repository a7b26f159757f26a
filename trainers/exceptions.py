"""The errors of the trainer stack (all ``GhostError``s: a problem the user can fix)."""

import contextlib
import errno
import os
from collections.abc import Callable, Iterator

from envs.exceptions import GhostError


class ConfigError(GhostError):
    """The run configuration (YAML or flags) is invalid; the message names the key and the fix."""


class TrainerTypeError(ConfigError):
    """A behavior asks for a trainer type that is not registered."""


class UnsupportedFeatureError(ConfigError):
    """A valid ML-Agents setting that this project does not implement yet."""


class MemoryUseError(GhostError):
    """A policy with memory was asked to act without the agent ids it keeps memories by, or by a
    caller that cannot carry memory yet."""


class CheckpointError(GhostError):
    """A checkpoint or policy file cannot be read or does not fit the run."""


class ResultsWriteError(GhostError):
    """The results folder cannot be written: the disk is full, read-only or not ours."""


class RunLockedError(GhostError):
    """Another live process trains into the run folder (it holds ``run.lock``); the message names
    that process and what to do."""


#: what a full, read-only or foreign disk answers a write with
DISK_WRITE_ERRNOS = frozenset(
    {errno.ENOSPC, errno.EROFS, errno.EACCES, errno.EPERM, errno.EDQUOT, errno.EFBIG}
)


def is_disk_write_error(error: BaseException) -> bool:
    return isinstance(error, OSError) and error.errno in DISK_WRITE_ERRNOS


@contextlib.contextmanager
def results_write_errors(advice: Callable[[], str] = lambda: "") -> Iterator[None]:
    """Turn a full, read-only or foreign disk under the block into a ``ResultsWriteError`` naming
    the file, followed by ``advice()`` (asked only then); other errors pass unchanged."""
    try:
        yield
    except OSError as error:
        if not is_disk_write_error(error):
            raise
        target = os.fsdecode(error.filename) if error.filename else "to the run folder"
        raise ResultsWriteError(f"cannot write {target}: {error.strerror}{advice()}") from error


class UnreadableFileError(CheckpointError):
    """A ``.pt`` file is empty, truncated, damaged or not a torch file (nothing of it was run).

    ``path`` is the file and ``reason`` a few words on what is wrong with it ("truncated file").
    """

    def __init__(self, path: str | os.PathLike[str], reason: str) -> None:
        self.path = os.fspath(path)
        self.reason = reason
        super().__init__(f"{self.path} cannot be read ({reason})")

    def __reduce__(self) -> tuple[type, tuple[str, str]]:
        return type(self), (self.path, self.reason)


class NetworkMismatchError(CheckpointError):
    """Saved weights do not fit the network this configuration builds: ``network_settings`` or the
    environment's observations and actions changed since the file was written."""
