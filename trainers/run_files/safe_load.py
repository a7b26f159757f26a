"""Reading ``.pt`` files without running code: policies, snapshots, checkpoints, self-play state.

``torch.load`` with ``weights_only=False`` unpickles anything, so a policy file someone hands over
could run commands as it loads. Every file of ours is read by torch's weights-only unpickler,
which builds tensors, containers and plain values, plus the few other types our formats hold
(``SAFE_GLOBALS``). A file that needs anything else is refused before any of it runs.
"""

from __future__ import annotations

import pickle
import re
import warnings
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import torch

from trainers.exceptions import CheckpointError, UnreadableFileError
from trainers.group_rollout import GroupTransitions
from trainers.rollout import Transitions
from trainers.settings import ConditioningType, EncoderType

#: what our files hold beyond tensors and plain values: numpy arrays (RNG states, pending
#: transitions), the network settings' enums and the rollouts' pending transitions
SAFE_GLOBALS: list[Any] = [
    np.ndarray,
    np.dtype,
    np.zeros(0).__reduce__()[0],  # numpy's array rebuilder (numpy._core or numpy.core)
    *{type(np.dtype(code)) for code in "?bBhHiIlLqQefdgFDG"},
    bytes,
    EncoderType,
    ConditioningType,
    Transitions,
    GroupTransitions,
]

_ZIP_MAGIC = b"PK\x03\x04"
_PICKLE_PROTOCOL = b"\x80"


def load_pt(path: str | Path) -> Any:
    """The contents of a ``.pt`` file of ours, read without running code (onto the CPU).

    Raises:
        CheckpointError: the file holds something our formats never do (it is not loaded).
        UnreadableFileError: the file is missing, empty, truncated, damaged or not a torch file
            (a ``CheckpointError`` whose ``reason`` says which).
    """
    with torch.serialization.safe_globals(SAFE_GLOBALS), warnings.catch_warnings():
        # torch warns about the pickle protocol of whatever garbage it was handed
        warnings.filterwarnings("ignore", message="Detected pickle protocol")
        try:
            return torch.load(path, map_location="cpu", weights_only=True)
        except pickle.UnpicklingError as error:
            if not _refused_as_unsafe(error):
                raise UnreadableFileError(path, _reason(Path(path), error)) from error
            raise CheckpointError(
                f"{path} was not loaded: it holds objects that ghost-trainer files never contain, "
                f"and loading them could run code ({_what_it_holds(error)}). Only load files from "
                "sources you trust, and only ghost-trainer or mlagents-learn files"
            ) from None
        except Exception as error:  # torch's readers raise a dozen types on damaged input
            raise UnreadableFileError(path, _reason(Path(path), error)) from error


def _refused_as_unsafe(error: pickle.UnpicklingError) -> bool:
    """Whether the weights-only unpickler met a type or function it does not allow (rather than
    bytes that are no pickle at all): only a global names one."""
    return re.search(r"GLOBAL |reduce for unrecognized function", str(error)) is not None


def _what_it_holds(error: Exception) -> str:
    found = re.search(r"(?:Unsupported global: |unsupported )GLOBAL (\S+)", str(error))
    return f"it needs {found.group(1)}" if found else "it is not a weights-only file"


def _reason(path: Path, error: Exception) -> str:
    """A few words on why ``path`` did not load, for a message that names the file."""
    if isinstance(error, FileNotFoundError):
        return "no such file"
    if isinstance(error, IsADirectoryError):
        return "a folder, not a file"
    if isinstance(error, PermissionError):
        return "permission denied"
    try:
        size = path.stat().st_size
        with path.open("rb") as file:
            head = file.read(len(_ZIP_MAGIC))
    except OSError as unreadable:
        return unreadable.strerror or type(unreadable).__name__
    if size == 0:
        return "empty file"
    # torch writes a zip archive whose directory is at its end: cut short, the directory is gone
    zipped = head == _ZIP_MAGIC or (size < len(_ZIP_MAGIC) and _ZIP_MAGIC.startswith(head))
    if zipped and not zipfile.is_zipfile(path):
        return "truncated file"
    if not zipped and not head.startswith(_PICKLE_PROTOCOL):  # torch's older format is a pickle
        return "not a torch file"
    return f"damaged file: {_first_line(error)}"


def _first_line(error: Exception) -> str:
    found = re.search(r"WeightsUnpickler error:\s*(.+)", str(error))
    text = found.group(1) if found else str(error).strip().split("\n", 1)[0]
    text = text or type(error).__name__
    return text if len(text) <= 100 else text[:97] + "..."
