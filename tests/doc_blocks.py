"""The runnable blocks of the README and docs/, their small-step form, and the links between pages.

``tests/test_docs.py`` runs what this module finds. A block is a fenced ``bash`` or ``python``
block; one preceded by ``<!-- not run: REASON -->`` is kept out, with its reason. Step counts
are shrunk by rules a reader can check here (:func:`small_steps`), so every command runs as
written, only shorter.
"""

from __future__ import annotations

import re
from pathlib import Path

import attrs

RUNNABLE_LANGUAGES = ("bash", "python")
NOT_RUN = re.compile(r"<!--\s*not run:\s*(?P<reason>.*?)\s*-->")
FENCE = re.compile(r"^\s*```(?P<language>[\w-]*)\s*$")

#: ghost-learn's training budget in a docs run when a command sets none
DEFAULT_DOCS_STEPS = 4000
#: ghost-eval exploit's budget (a fresh learner) and the games of a match, in a docs run
EXPLOIT_STEPS = 4000
EPISODES = 20
GAMES_PER_PAIR = 4


@attrs.frozen
class Block:
    """One fenced block of a page."""

    page: Path
    line: int  # of the opening fence, 1-based
    language: str
    source: str
    not_run_reason: str | None

    @property
    def where(self) -> str:
        return f"{self.page.name}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """Every fenced block of a page with a language, in page order."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        end = index + 1
        while end < len(lines) and not lines[end].strip().startswith("```"):
            end += 1
        previous = lines[index - 1] if index else ""
        marker = NOT_RUN.search(previous)
        found.append(
            Block(
                page=page,
                line=index + 1,
                language=opening.group("language"),
                source="\n".join(lines[index + 1 : end]) + "\n",
                not_run_reason=marker.group("reason") if marker else None,
            )
        )
        index = end + 1
    return found


def runnable(page: Path) -> list[Block]:
    """The page's bash and python blocks that are not marked ``not run``."""
    return [
        block
        for block in blocks(page)
        if block.language in RUNNABLE_LANGUAGES and block.not_run_reason is None
    ]


def _halve(match: re.Match[str]) -> str:
    return f"{match.group(1)}{max(int(match.group(2)) // 2, 1000)}"


def _at_most(limit: int):
    def shrink(match: re.Match[str]) -> str:
        return f"{match.group(1)}{min(int(match.group(2)), limit)}"

    return shrink


def _budget_each_learn(line: str) -> str:
    command, hash_mark, comment = line.partition(" #")
    if "ghost-learn " not in command or "--max-steps" in command or command.rstrip().endswith("\\"):
        return line
    if "--check" in command:
        return line
    return f"{command.rstrip()} --max-steps {DEFAULT_DOCS_STEPS}" + (
        f"  {hash_mark.strip()}{comment}" if hash_mark else ""
    )


def small_steps(source: str) -> str:
    """The block with its budgets shrunk: training halved, evaluations capped.

    Halving keeps the order of budgets within a page (a ``--resume`` with a larger
    ``--max-steps`` still trains further); a ``ghost-learn`` without ``--max-steps`` gets
    :data:`DEFAULT_DOCS_STEPS`.
    """
    source = re.sub(r"(--max-steps )(\d+)", _halve, source)
    source = re.sub(r"(max_steps=)(\d+)", _halve, source)
    source = re.sub(r"(--steps )(\d+)", _at_most(EXPLOIT_STEPS), source)
    source = re.sub(r"(--episodes )(\d+)", _at_most(EPISODES), source)
    source = re.sub(r"(episodes=)(\d+)", _at_most(EPISODES), source)
    source = re.sub(r"(--games-per-pair )(\d+)", _at_most(GAMES_PER_PAIR), source)
    source = re.sub(r"(games_per_pair=)(\d+)", _at_most(GAMES_PER_PAIR), source)
    return "\n".join(_budget_each_learn(line) for line in source.split("\n"))


LINK = re.compile(r"(?<!!)\[[^\]]*\]\((?P<target>[^)\s]+)\)")


def anchor(heading: str) -> str:
    """The anchor a Markdown renderer (GitHub, mkdocs) gives a heading."""
    text = re.sub(r"[`*]", "", heading.strip().lower())  # GitHub keeps underscores
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    inside_fence = False
    found = set()
    for line in page.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line) or line.strip().startswith("```"):
            inside_fence = not inside_fence
            continue
        if not inside_fence and line.startswith("#"):
            found.add(anchor(line.lstrip("#")))
    return found


def broken_links(page: Path) -> list[str]:
    """Each relative link of a page whose file or heading does not exist, as ``target: why``."""
    broken = []
    for match in LINK.finditer(page.read_text(encoding="utf-8")):
        target = match.group("target")
        if re.match(r"^[a-z]+:", target):  # http:, https:, mailto:
            continue
        path_part, _, fragment = target.partition("#")
        destination = (page.parent / path_part).resolve() if path_part else page
        if not destination.exists():
            broken.append(f"{target}: no file {destination}")
        elif fragment and destination.suffix == ".md" and fragment not in anchors(destination):
            broken.append(f"{target}: no heading #{fragment} in {destination.name}")
    return broken
