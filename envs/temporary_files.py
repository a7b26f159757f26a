"""A temporary file beside its target, the first half of every atomic write in the project.

It is made with mode ``0o666``, so the umask alone decides its permissions (as ``open()`` would,
not ``mkstemp``'s private ``0o600``), under a hidden random name in the target's folder, so that
the final rename stays on one file system. ``trainers.run_files.atomic`` writes a run's files
through it and ``envs.demo_writer`` its ``.demo`` files.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

#: tries at a free temporary name before giving up (each name has 64 random bits)
_NAME_ATTEMPTS = 100


def create_temporary(folder: Path, name: str) -> tuple[int, Path]:
    """A new, empty file beside ``name`` in ``folder``, opened for writing: its descriptor and
    path.

    Raises:
        FileExistsError: no free name was found.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    for _ in range(_NAME_ATTEMPTS):
        tmp = folder / f".{name}.{secrets.token_hex(8)}.tmp"
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary file name for {name} in {folder}")
