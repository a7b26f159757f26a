"""Writing files atomically: a temporary file beside the target, flushed, then renamed over it.

A kill at any moment leaves either the old file or the new one, never half of one. Every file a run
writes that a later session reads (checkpoints, policy files, the checkpoint index, payoff tables,
``configuration.yaml``) goes through here.
"""

from __future__ import annotations

import io
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any


def atomic_write(path: str | Path, write: Callable[[IO[bytes]], None]) -> None:
    """Create ``path`` (and its folders) from what ``write`` puts into a binary handle."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException as error:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(error, OSError) and error.filename is None:
            error.filename = str(path)  # a failed write names no file
        raise


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    atomic_write(path, lambda handle: handle.write(text.encode("utf-8")))


def atomic_save(obj: Any, path: str | Path) -> None:
    """``torch.save(obj)`` to ``path`` atomically."""
    import torch  # on use: text files need no torch

    # Serialized in memory first: torch's zip writer reports a full disk as a RuntimeError about
    # file positions, a plain write as the OSError (ENOSPC) it is.
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    atomic_write(path, lambda handle: handle.write(buffer.getbuffer()))
