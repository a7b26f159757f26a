"""The scripts of ``examples/`` run as a reader runs them: ``python examples/NAME.py``, at their
small default budgets, each in a scratch folder of its own (where its ``results/`` lands).

Each must exit 0 and print the line that shows what it is about (a rating, a win rate...). The
Stable-Baselines3 and RLlib examples are skipped where those packages are missing.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
TIMEOUT_S = 300

#: each script, the line its output must hold, and the modules it needs beyond the core install
SCRIPTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "custom_game.py": (r"Elo \d+ after \d+ steps; P\(shoot\) before the light [01]\.\d\d", ()),
    "callbacks.py": (r"step +\d+: snapshot 1 .*team 1 learns now.*stopped early: False", ()),
    "evaluate_run.py": (r"vs weak: .*win rate [01]\.\d\d.*snapshot 1 .*tournament: +final Elo", ()),
    "sb3_self_play.py": (
        r"Elo \d+, swaps [1-9].*against weak: win rate [01]\.\d\d",
        ("stable_baselines3",),
    ),
    "single_file_host.py": (
        r"snapshot 1 .*team 1 learns now.*against medium: win rate [01]\.\d\d.*self-play Elo \d+",
        (),
    ),
    "rllib_self_play.py": (
        r"Elo \d+, team \d learns.*exploitability \d+\.\d+",
        ("ray.rllib", "pyspiel"),
    ),
}


def run_example(name: str, folder: Path) -> str:
    """``python examples/<name>`` in ``folder``; its output, or a failure showing the tail."""
    environment = dict(os.environ, OMP_NUM_THREADS="1", MPLBACKEND="Agg")
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / name)],
        cwd=folder,
        env=environment,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"{name} exited {result.returncode}:\n{output[-4000:]}"
    return result.stdout


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=pytest.mark.slow)
        if name in ("rllib_self_play.py", "single_file_host.py")  # minutes by default
        else name
        for name in SCRIPTS
    ],
)
def test_the_example_runs_and_says_what_it_shows(name: str, tmp_path: Path) -> None:
    pattern, needs = SCRIPTS[name]
    for module in needs:
        pytest.importorskip(module)
    output = run_example(name, tmp_path)
    assert re.search(pattern, output, re.DOTALL), f"{name} printed:\n{output}"


def test_every_example_is_run_here_and_says_how_to_run_it() -> None:
    scripts = sorted(path.name for path in EXAMPLES.glob("*.py"))
    assert scripts == sorted(SCRIPTS)
    for name in scripts:
        source = (EXAMPLES / name).read_text(encoding="utf-8")
        assert source.startswith('"""'), f"{name}: starts with a docstring saying what it shows"
        assert f"python examples/{name}" in source, f"{name}: its docstring says how to run it"
