"""Writing files atomically: a temporary file beside the target, flushed, then renamed over it.

A kill at any moment leaves either the old file or the new one, never half of one. Every file a run
writes that a later session reads (checkpoints, policy files, the checkpoint index, payoff tables,
``configuration.yaml``) goes through here. The files get the permissions of any file the user
creates (``0o666`` less the umask), as ``open()`` would give them, not ``mkstemp``'s private
``0o600``: a run folder is often read by other people and programs (TensorBoard, a team's
evaluation jobs).
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from envs.temporary_files import create_temporary


def atomic_write(path: str | Path, write: Callable[[IO[bytes]], None]) -> None:
    """Create ``path`` (and its folders) from what ``write`` puts into a binary handle."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp: Path | None = None
    try:
        fd, tmp = create_temporary(path.parent, path.name)
        with os.fdopen(fd, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException as error:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
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
