"""``examples/single_file_host.py``, the smallest complete host of the self-play core, run as a
reader runs it (``python examples/single_file_host.py``) in a scratch folder.

A tiny budget (seconds) shows the contract of docs/writing-a-host.md at work: snapshots taken,
opponents swapped, learning handed from team to team, matches rated, and a save that a resumed
run continues (the window, the snapshot ids and the team rotation go on). The learning test
(slow) trains at the default budget and plays the scripted ``medium`` level.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "examples" / "single_file_host.py"
#: a tiny run: turns of 8k steps, so a snapshot every 2k and a team change within seconds
TINY = ("--team-change", "8000")
#: the default run (600k steps, seed 0) against ``medium``: it won 200 of 200 decided games on
#: 2026-11-27, and 197 of 200 with ``--seed 1``
DEFAULT_WIN_RATE_AT_LEAST = 0.9


def run_host(folder: Path, *args: str, timeout: int = 120) -> str:
    """The example's output, run in ``folder`` with ``args``; a failure shows its tail."""
    result = subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        cwd=folder,
        env=dict(os.environ, OMP_NUM_THREADS="1"),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"exited {result.returncode}:\n{output[-4000:]}"
    return result.stdout


def snapshot_ids(output: str) -> list[int]:
    return [int(found) for found in re.findall(r"snapshot (\d+) \(Elo \d+\)", output)]


def team_changes(output: str) -> list[tuple[int, int]]:
    """``(learning team, change count)`` of each team change, in order."""
    found = re.findall(r"team (\d) learns now \(change (\d+)\)", output)
    return [(int(team), int(count)) for team, count in found]


def final_line(output: str) -> re.Match[str]:
    found = re.search(
        r"against medium: win rate ([01]\.\d\d) \((\d+) wins in (\d+) decided games\); "
        r"self-play Elo (\d+)",
        output,
    )
    assert found, f"no final score:\n{output}"
    return found


def test_a_tiny_run_snapshots_swaps_hands_over_and_rates(tmp_path: Path) -> None:
    output = run_host(tmp_path, "--steps", "20000", *TINY)
    # the untrained learner first, then one every save_steps (team_change // 4)
    assert snapshot_ids(output) == list(range(6))
    # learning alternates between the two teams, one change at a time
    assert team_changes(output)[:2] == [(1, 1), (0, 2)]
    swaps = [int(found) for found in re.findall(r"swaps (\d+)", output)]
    assert swaps and swaps[-1] >= 3
    score = final_line(output)
    assert int(score.group(3)) > 0  # matches against medium were decided
    assert int(score.group(4)) != 1200  # rated matches moved the learner's Elo


def test_a_resumed_run_goes_on_with_the_window_and_the_rotation(tmp_path: Path) -> None:
    first = run_host(tmp_path, "--steps", "12000", *TINY, "--save", "tennis.pt")
    assert snapshot_ids(first) == [0, 1, 2, 3]
    last_change = team_changes(first)[-1]

    second = run_host(tmp_path, "--steps", "20000", *TINY, "--resume", "tennis.pt")
    assert re.search(r"resumed at step 12288: Elo \d+, window \[0, 1, 2, 3\]", second)
    assert snapshot_ids(second)[0] == 4  # the ids go on: no snapshot is taken twice
    next_team, next_count = team_changes(second)[0]
    assert (next_team, next_count) == (1 - last_change[0], last_change[1] + 1)
    saved = sorted(path.name for path in (tmp_path / "tennis.self_play").iterdir())
    assert saved == ["payoff.csv", *(f"snapshot-{index}.pt" for index in range(4)), "state.pt"]


@pytest.mark.slow
def test_the_default_budget_beats_the_medium_level(tmp_path: Path) -> None:
    score = final_line(run_host(tmp_path, timeout=900))
    assert float(score.group(1)) >= DEFAULT_WIN_RATE_AT_LEAST, score.group(0)
