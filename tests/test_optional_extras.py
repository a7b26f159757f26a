"""Without the OpenSpiel and PettingZoo extras everything else still imports, and asking for
their games says which extra to install."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import sys
    for blocked in ("pyspiel", "open_spiel", "pettingzoo", "rlcard"):
        sys.modules[blocked] = None  # as if not installed
    import envs.openspiel, envs.pettingzoo, envs.sources
    import ghost.evaluation.cli, ghost.evaluation.exploiter, ghost.evaluation.seated_runs
    import ghost.running.api, ghost.running.session
    from envs.sources import resolve_env
    for spec in ("openspiel:leduc_poker", "pettingzoo:pettingzoo.classic.tictactoe_v3"):
        try:
            resolve_env(spec)
        except Exception as error:
            print(type(error).__name__, error)
    """
)


def test_the_rest_works_without_the_game_library_extras():
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("EnvironmentSourceError") and "ghost-trainer[openspiel]" in lines[0]
    assert lines[1].startswith("EnvironmentSourceError") and "ghost-trainer[pettingzoo]" in lines[1]
