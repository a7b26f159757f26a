"""Where a training run's time goes: one run under cProfile, summed into the parts of a step.

    python scripts/profile_run.py --config config/tennis.yaml --env tennis --steps 100000

Trains every behavior of ``--config`` for ``--steps`` trainer steps (self-play as configured, one
torch thread, no checkpoints until the end) and prints a Markdown table: the seconds of each
part of the training loop and its share of the loop. cProfile inflates the cost of Python calls,
so compare shares, and compare runs only with each other.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import attrs
import torch

from envs.sources import resolve_env
from ghost.config.loader import load_options
from ghost.running.api import make_stepper
from ghost.running.session import SelfPlaySession
from trainers.run_files.layout import RunLayout

#: a function in pstats: (file, line, name)
Function = tuple[str, int, str]
Match = Callable[[Function], bool]


def function(path_end: str, *names: str) -> Match:
    """Matches the functions called one of ``names`` in a file whose path ends with
    ``path_end``."""
    return lambda f: f[0].replace("\\", "/").endswith(path_end) and f[2] in names


def seconds_called_from(stats: pstats.Stats, callee: Match, caller: Match) -> float:
    """Cumulative seconds of ``callee`` over its calls made by ``caller``."""
    total = 0.0
    for func, (_, _, _, _, callers) in stats.stats.items():  # type: ignore[attr-defined]
        if callee(func):
            total += sum(c[3] for f, c in callers.items() if caller(f))
    return total


STEP_ONCE = function("trainers/training_loop.py", "step_once")
RL_ADVANCE = function("trainers/rl_trainer.py", "advance")
PROCESS = function("trainers/agent_processor.py", "process")
#: part name -> (callee, caller)
PARTS: dict[str, tuple[Match, Match]] = {
    "acting, both teams": (PROCESS, STEP_ONCE),
    "  learner sampling": (function("trainers/policy.py", "sample"), PROCESS),
    "  opponents' sampling": (
        function("ghost/running/opponent_policy.py", "sample", "sample_in_arenas"),
        PROCESS,
    ),
    "environment step": (function("envs/stepping.py", "step"), STEP_ONCE),
    "trainers' advance": (function("ghost/running/ghost_trainer.py", "advance"), STEP_ONCE),
    "  trajectory assembly": (function("trainers/rollout.py", "add"), RL_ADVANCE),
    "  update": (lambda f: f[2] == "_update", RL_ADVANCE),
    "checkpoints": (function("trainers/training_loop.py", "_maybe_checkpoint"), STEP_ONCE),
}


def profile(config: str, env: str, steps: int) -> tuple[pstats.Stats, float]:
    """Train ``steps`` steps of every behavior under cProfile; the stats and the wall time."""
    torch.set_num_threads(1)
    options = load_options(config)
    behaviors = {
        name: attrs.evolve(s, max_steps=steps, summary_freq=10**9, checkpoint_interval=10**9)
        for name, s in options.behaviors.items()
    }
    options = attrs.evolve(options, behaviors=behaviors)
    with tempfile.TemporaryDirectory() as results:
        session = SelfPlaySession(
            options=options,
            stepper=make_stepper(options.env_settings, resolve_env(env), 0),
            layout=RunLayout(Path(results)),
        )
        profiler = cProfile.Profile()
        started = time.perf_counter()
        profiler.runcall(session.run)
        wall = time.perf_counter() - started
    return pstats.Stats(profiler), wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, help="trainer YAML")
    parser.add_argument("--env", required=True, help="built-in game or module:callable")
    parser.add_argument("--steps", type=int, default=100_000, help="steps of every behavior")
    args = parser.parse_args()
    stats, wall = profile(args.config, args.env, args.steps)
    loop = sum(
        s[3]
        for f, s in stats.stats.items()  # type: ignore[attr-defined]
        if STEP_ONCE(f)
    )
    print(f"wall {wall:.1f} s under cProfile; the training loop {loop:.1f} s")
    print("| part | seconds | share of the loop |")
    print("|---|---|---|")
    for name, (callee, caller) in PARTS.items():
        seconds = seconds_called_from(stats, callee, caller)
        print(f"| {name} | {seconds:.1f} | {seconds / loop:.0%} |")


if __name__ == "__main__":
    main()
