"""Reading ``.pt`` files without running code: policies, snapshots, checkpoints, self-play state.

``torch.load`` with ``weights_only=False`` unpickles anything, so a policy file someone hands over
could run commands as it loads. Every file of ours is read by torch's weights-only unpickler,
which builds tensors, containers and plain values, plus the few other types our formats hold
(``SAFE_GLOBALS``). A file that needs anything else is refused before any of it runs.
"""

from __future__ import annotations

import pickle
import re
from pathlib import Path
from typing import Any

import numpy as np
import torch

from trainers.exceptions import CheckpointError
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


def load_pt(path: str | Path) -> Any:
    """The contents of a ``.pt`` file of ours, read without running code (onto the CPU).

    Raises:
        CheckpointError: the file holds something our formats never do (it is not loaded), or it
            is truncated or not a torch file.
    """
    with torch.serialization.safe_globals(SAFE_GLOBALS):
        try:
            return torch.load(path, map_location="cpu", weights_only=True)
        except pickle.UnpicklingError as error:
            raise CheckpointError(
                f"{path} was not loaded: it holds objects that ghost-trainer files never contain, "
                f"and loading them could run code ({_what_it_holds(error)}). Only load files from "
                "sources you trust, and only ghost-trainer or mlagents-learn files"
            ) from None


def _what_it_holds(error: Exception) -> str:
    found = re.search(r"(?:Unsupported global: |unsupported )GLOBAL (\S+)", str(error))
    return f"it needs {found.group(1)}" if found else "it is not a weights-only file"
