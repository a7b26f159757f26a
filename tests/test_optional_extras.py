"""Without the OpenSpiel, PettingZoo and Ray extras everything else still imports, and asking for
their games (or the Ray backend) says which extra to install."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import sys
    for blocked in ("pyspiel", "open_spiel", "pettingzoo", "rlcard", "ray"):
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
    from envs.settings import EnvironmentSettings
    from ghost.running.api import make_stepper
    try:
        make_stepper(EnvironmentSettings(backend="ray"), resolve_env("tennis"), seed=0)
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
    assert len(lines) == 3
    assert lines[0].startswith("EnvironmentSourceError") and "ghost-trainer[openspiel]" in lines[0]
    assert lines[1].startswith("EnvironmentSourceError") and "ghost-trainer[pettingzoo]" in lines[1]
    assert lines[2].startswith("EnvironmentSourceError") and "ghost-trainer[ray]" in lines[2]
