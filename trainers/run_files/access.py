"""``RUN_FILES``: how every host writes and reads its run's files: atomically, and read back
without running pickled code. Code that takes a file access (``ghost.core.state_folder``) is
handed this one; a test may hand it another."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trainers.run_files.atomic import atomic_save, atomic_write_text
from trainers.run_files.safe_load import load_pt


class RunFiles:
    """Atomic writes and safe reads of a run's files."""

    def save(self, obj: Any, path: Path) -> None:
        """Write ``obj`` (torch's format) to ``path`` atomically."""
        atomic_save(obj, path)

    def load(self, path: Path) -> Any:
        """Read what ``save`` wrote, without running pickled code."""
        return load_pt(path)

    def write_text(self, path: Path, text: str) -> None:
        """Write ``text`` to ``path`` atomically."""
        atomic_write_text(path, text)


RUN_FILES = RunFiles()
