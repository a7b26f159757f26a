"""The README and docs/ are run: every bash and python block, in page order, at small step counts.

Each page runs in a scratch folder of its own (``config/``, ``scripts/`` and ``tests/`` linked in,
so the commands read as written from a checkout, the stand-in Unity build included), one block
after another, so a later block finds the runs an earlier one made; two pages run at a time. A block that cannot run here carries ``<!-- not run: REASON -->`` on
the line before its fence. Relative links and their headings must exist.
"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.doc_blocks import Block, blocks, broken_links, runnable, small_steps

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PAGES_TO_RUN = [page for page in PAGES if runnable(page)]
BLOCK_TIMEOUT_S = 600
#: pages run at once (CI has two cores; each block's process computes on one thread)
PARALLEL_LANES = 2
#: what in a block starts a Ray cluster
RAY_STARTS = ("ray.init", "--env-backend ray", "--ray-address")


def scratch_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "checkout"
    folder.mkdir()
    for shared in ("config", "scripts", "tests"):
        (folder / shared).symlink_to(ROOT / shared)
    return folder


def run_block(block: Block, folder: Path) -> subprocess.CompletedProcess[str]:
    """Runs one block (shrunk by :func:`small_steps`) in ``folder`` with this interpreter's tools."""
    source = small_steps(block.source)
    environment = dict(os.environ)
    environment["PATH"] = os.path.dirname(sys.executable) + os.pathsep + environment["PATH"]
    environment["MPLBACKEND"] = "Agg"
    environment["OMP_NUM_THREADS"] = "1"  # pages run side by side (PARALLEL_LANES)
    if block.language == "bash":
        command = ["bash", "-e", "-o", "pipefail", "-c", source]
    else:
        script = folder / f"block_{block.line}.py"
        script.write_text(source, encoding="utf-8")
        command = [sys.executable, script.name]
    return subprocess.run(
        command,
        cwd=folder,
        env=environment,
        capture_output=True,
        text=True,
        timeout=BLOCK_TIMEOUT_S,
    )


def failure_report(block: Block, result: subprocess.CompletedProcess[str]) -> str:
    output = (result.stdout + result.stderr)[-4000:]
    return (
        f"{block.where} ({block.language}) exited {result.returncode}\n"
        f"--- block as run ---\n{small_steps(block.source)}--- output (tail) ---\n{output}"
    )


def run_page(page: Path, tmp_path: Path) -> str | None:
    """Runs the page's blocks in order; the report of the first that fails, or None."""
    folder = scratch_folder(tmp_path)
    for block in runnable(page):
        result = run_block(block, folder)
        if result.returncode != 0:
            return failure_report(block, result)
    return None


def lanes(pages: list[Path], count: int) -> list[list[Path]]:
    """``pages`` shared out among ``count`` lanes of about equal work (counted in blocks), the
    pages that start Ray clusters kept in one lane so that no two clusters start at once."""
    uses_ray = [page for page in pages if any(RAY_START in block.source
                for block in runnable(page) for RAY_START in RAY_STARTS)]  # fmt: skip
    shared: list[list[Path]] = [list(uses_ray)] + [[] for _ in range(count - 1)]
    work = [sum(len(runnable(page)) for page in lane) for lane in shared]
    for page in sorted(set(pages) - set(uses_ray), key=lambda p: -len(runnable(p))):
        lightest = work.index(min(work))
        shared[lightest].append(page)
        work[lightest] += len(runnable(page))
    return [lane for lane in shared if lane]


@pytest.fixture(scope="module")
def page_failures(tmp_path_factory: pytest.TempPathFactory) -> dict[Path, str | None]:
    """Every page run once, two lanes at a time (each block's process on one thread), so the
    pages take about half the wall time on two cores."""

    def run_lane(lane: list[Path]) -> dict[Path, str | None]:
        return {page: run_page(page, tmp_path_factory.mktemp(page.stem)) for page in lane}

    with ThreadPoolExecutor(max_workers=PARALLEL_LANES) as pool:
        results = list(pool.map(run_lane, lanes(PAGES_TO_RUN, PARALLEL_LANES)))
    return {page: failure for lane in results for page, failure in lane.items()}


@pytest.mark.parametrize("page", PAGES_TO_RUN, ids=lambda page: page.name)
def test_every_block_of_the_page_runs(page: Path, page_failures: dict[Path, str | None]) -> None:
    failure = page_failures[page]
    assert failure is None, failure


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_links_lead_somewhere(page: Path) -> None:
    assert broken_links(page) == []


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_blocks_kept_out_say_why(page: Path) -> None:
    for block in blocks(page):
        if block.not_run_reason is not None:
            assert block.language in ("bash", "python"), f"{block.where}: only code is run"
            assert len(block.not_run_reason) >= 10, f"{block.where}: say why it is not run"


def test_a_broken_block_fails_the_page(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "Works:\n\n```bash\necho fine > made.txt\n```\n\n"
        "Broken:\n\n```bash\nghost-learn config/no-such-game.yaml --run-id broken\n```\n\n"
        "Kept out:\n\n<!-- not run: needs a cluster of machines -->\n```bash\nexit 1\n```\n",
        encoding="utf-8",
    )
    folder = scratch_folder(tmp_path)
    first, second = runnable(page)
    assert run_block(first, folder).returncode == 0
    assert (folder / "made.txt").exists()
    failed = run_block(second, folder)
    assert failed.returncode != 0
    assert "no-such-game.yaml" in failure_report(second, failed)


def test_a_broken_link_is_found(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# A heading\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text(
        "[fine](other.md#a-heading) [gone](missing.md) [no heading](other.md#nowhere) "
        "[web](https://example.org/x)\n",
        encoding="utf-8",
    )
    assert broken_links(page) == [
        f"missing.md: no file {tmp_path / 'missing.md'}",
        "other.md#nowhere: no heading #nowhere in other.md",
    ]


def test_small_steps_shrinks_budgets_in_order() -> None:
    source = (
        "ghost-learn config/tennis.yaml --run-id a --max-steps 20000\n"
        "ghost-learn config/tennis.yaml --run-id a --resume --max-steps 60000\n"
        "ghost-learn config/leduc_poker.yaml --run-id b   # a comment\n"
        "ghost-eval exploit results/a --steps 50000 --episodes 200\n"
        'ghost.train("config/tennis.yaml", max_steps=30000)\n'
    )
    assert small_steps(source).splitlines() == [
        "ghost-learn config/tennis.yaml --run-id a --max-steps 10000",
        "ghost-learn config/tennis.yaml --run-id a --resume --max-steps 30000",
        "ghost-learn config/leduc_poker.yaml --run-id b --max-steps 4000  # a comment",
        "ghost-eval exploit results/a --steps 4000 --episodes 20",
        'ghost.train("config/tennis.yaml", max_steps=15000)',
    ]
