"""Figures of the house: how much self-play glue each host writes, how many places write self-play
state or parse ``env_path``, the size of evaluation, the largest module and longest function.

Run it on any checkout to compare two commits side by side::

    git worktree add /tmp/before <rev>
    python scripts/house_figures.py --root /tmp/before --root .

Lines are *code lines*: not blank, not a comment, not a docstring. Each figure names the files it
counted, so a reader can check it by hand.
"""

from __future__ import annotations

import argparse
import ast
import io
import re
import tokenize
from pathlib import Path

#: the modules where each host meets the self-play core (those that exist in a checkout count)
HOST_GLUE = {
    "ghost-learn": ["ghost/running/ghost_trainer.py"],
    "mlagents-learn plugin": [
        "ghost/mlagents_plugin/ghost_trainer.py",
        "ghost/mlagents_plugin/runs.py",
        "ghost/mlagents_plugin/state_files.py",
    ],
    "Stable-Baselines3": [
        "ghost/integrations/sb3/callback.py",
        "ghost/integrations/sb3/state_files.py",
    ],
    "RLlib": ["ghost/integrations/rllib/host.py"],
}
#: what every host shares (the cycle, the kit, the state folder)
SHARED_GLUE = [
    "ghost/core/ghost_cycle.py",
    "ghost/core/self_play_host.py",
    "ghost/core/state_folder.py",
]
PACKAGES = ("ghost", "trainers", "envs")
#: a line that writes self-play state: the payoff table written out
STATE_WRITE = re.compile(r"\.payoff_csv\(\)")
#: a line that reads an ``env_path``'s kind from its text
ENV_PATH_PARSE = re.compile(
    r"""(startswith\(\s*["'](openspiel|pettingzoo|builtin|unity|python)[:"'])"""
    r"""|(env_path[\w.]*\.(partition|split|startswith)\()"""
    r"""|(["'](openspiel|pettingzoo):["']\s*(in|\+))"""
)


def code_lines(path: Path) -> int:
    """Lines of ``path`` that hold code (not blank, comment or docstring)."""
    source = path.read_text(encoding="utf-8")
    docstrings = set()
    for node in ast.walk(ast.parse(source)):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                docstrings.update(range(body[0].lineno, body[0].end_lineno + 1))
    lines = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT,
                          tokenize.DEDENT, tokenize.ENDMARKER):  # fmt: skip
            continue
        lines.update(range(token.start[0], token.end[0] + 1))
    return len(lines - docstrings)


def modules(root: Path) -> list[Path]:
    return sorted(p for package in PACKAGES for p in (root / package).rglob("*.py"))


def matching_lines(root: Path, pattern: re.Pattern[str], skip: tuple[str, ...] = ()) -> list[str]:
    """``path:line`` of every code line of the packages matching ``pattern``."""
    found = []
    for path in modules(root):
        relative = path.relative_to(root).as_posix()
        if relative.startswith(skip):
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if pattern.search(line) and not line.lstrip().startswith("#"):
                found.append(f"{relative}:{number}")
    return found


def longest_function(root: Path) -> tuple[int, str]:
    best = (0, "")
    for path in modules(root):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                where = f"{path.relative_to(root).as_posix()}:{node.lineno} {node.name}"
                best = max(best, (length, where))
    return best


def figures(root: Path) -> list[tuple[str, str]]:
    """``(figure, value)`` rows for the checkout at ``root``."""
    rows = []
    for host, files in HOST_GLUE.items():
        present = [f for f in files if (root / f).is_file()]
        rows.append((f"host glue, {host} (code lines)",
                     str(sum(code_lines(root / f) for f in present))))  # fmt: skip
    shared = [f for f in SHARED_GLUE if (root / f).is_file()]
    rows.append(("shared by every host (code lines)",
                 f"{sum(code_lines(root / f) for f in shared)} in {len(shared)} modules"))  # fmt: skip
    writers = matching_lines(root, STATE_WRITE)
    rows.append(("places that write self-play state", f"{len(writers)}: {', '.join(writers)}"))
    parsers = matching_lines(root, ENV_PATH_PARSE, skip=("envs/env_kinds/",))
    rows.append(("lines that parse env_path outside envs/env_kinds",
                 f"{len(parsers)}: {', '.join(parsers)}"))  # fmt: skip
    for package in ("ghost/evaluation", "ghost/play"):
        files = sorted((root / package).glob("*.py"))
        total = sum(len(f.read_text(encoding="utf-8").splitlines()) for f in files)
        rows.append((f"{package} modules", f"{len(files)} ({total} lines)"))
    largest = max(modules(root), key=lambda p: len(p.read_text(encoding="utf-8").splitlines()))
    size = len(largest.read_text(encoding="utf-8").splitlines())
    rows.append(("largest module", f"{largest.relative_to(root).as_posix()} ({size} lines)"))
    length, where = longest_function(root)
    rows.append(("longest function", f"{where} ({length} lines)"))
    over = sum(1 for _ in _functions_over(root, 60))
    rows.append(("functions over 60 lines", str(over)))
    return rows


def _functions_over(root: Path, limit: int):
    for path in modules(root):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            is_function = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            if is_function and node.end_lineno - node.lineno + 1 > limit:
                yield path, node


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, action="append",
                        help="a checkout to measure (repeat to compare); default this one")  # fmt: skip
    args = parser.parse_args()
    for root in args.root or [Path(__file__).resolve().parent.parent]:
        print(f"## {root}")
        for name, value in figures(root):
            print(f"- {name}: {value}")


if __name__ == "__main__":
    main()
