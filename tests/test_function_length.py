"""No function over 60 lines in the packages, the scripts and the examples.

A function's length runs from its ``def`` line to its last line (decorators left out, docstring
counted); a nested function is measured on its own and counts in its parent too. A function past
the limit is split into steps a reader can name, not cut in halves.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CHECKED = ("ghost", "trainers", "envs", "scripts", "examples")
MAX_LINES = 60


def long_functions(path: Path, limit: int = MAX_LINES) -> Iterator[tuple[int, str, int]]:
    """``(line, name, length)`` of each function in ``path`` longer than ``limit`` lines."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            assert node.end_lineno is not None
            length = node.end_lineno - node.lineno + 1
            if length > limit:
                yield node.lineno, node.name, length


def test_no_function_is_over_60_lines():
    found = [
        f"{path.relative_to(REPO)}:{line} {name} {length}"
        for folder in CHECKED
        for path in sorted((REPO / folder).rglob("*.py"))
        for line, name, length in long_functions(path)
    ]
    assert not found, (
        f"functions over {MAX_LINES} lines (path:line name length); split each into named "
        "steps:\n" + "\n".join(found)
    )


def test_the_measure_catches_a_61_line_function_and_passes_60(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(59))
    source = (
        f"import functools\n\n\n@functools.cache\ndef too_long():\n{body}\n    return 0\n\n\n"
        f"def just_right():\n{body}\n"
    )
    path = tmp_path / "sample.py"
    path.write_text(source, encoding="utf-8")
    assert list(long_functions(path)) == [(5, "too_long", 61)]
