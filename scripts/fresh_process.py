"""One benchmark point in a fresh Python process, so that no point inherits another's warm state.

The point's code prints ``POINT {json}`` as its last such line; ``run_point`` returns that JSON.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARK = "POINT "


def run_point(code: str, args: list[str], label: str) -> dict:
    """Run ``python -c code *args`` in the repository root; the figures it printed.

    Raises:
        RuntimeError: the process failed or printed no figures (with the end of its stderr).
    """
    result = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=ROOT, check=False
    )
    lines = [line for line in result.stdout.splitlines() if line.startswith(MARK)]
    if result.returncode != 0 or not lines:
        raise RuntimeError(f"point {label} failed:\n{result.stderr[-3000:]}")
    return json.loads(lines[-1][len(MARK) :])
