"""Where a training run's time goes: one run under cProfile, summed into the parts of a step.

    python scripts/profile_run.py --config config/tennis.yaml --env tennis --steps 100000

Trains every behavior of ``--config`` for ``--steps`` trainer steps (self-play as configured, one
torch thread, no checkpoints until the end) and prints a Markdown table: the seconds of each
part of the training loop, its share of the loop and its microseconds per loop step. The last
row, the fixed per-step cost, is the loop's own time: what ``step_once`` spends outside acting,
the environment step, the trainers' advance and checkpoints (environment stats, summaries,
publishing policies, the timers). cProfile inflates the cost of Python calls, so compare shares,
and compare runs only with each other.

``--root TREE`` profiles an older checkout with this script's table: the script runs again in a
fresh process with ``TREE`` first on ``PYTHONPATH``, so the project's modules come from there
(checked), and ``--config`` is read from where it names, as given here:

    git worktree add /tmp/bench-before <commit>
    python scripts/profile_run.py --config config/tennis.yaml --env tennis --root /tmp/bench-before
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import attrs
import torch
from bench_vs_mlagents import tree_commit, tree_environment

import envs
import ghost
import trainers
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
    # any trainer's: a ghost trainer's, or an RL trainer's when a behavior has no self_play
    "trainers' advance": (lambda f: f[2] == "advance", STEP_ONCE),
    "  trajectory assembly": (function("trainers/rollout.py", "add"), RL_ADVANCE),
    "  update": (lambda f: f[2] == "_update", RL_ADVANCE),
    "checkpoints": (function("trainers/training_loop.py", "_maybe_checkpoint"), STEP_ONCE),
}
#: the parts that, taken from the loop, leave its fixed per-step cost
OUTSIDE_FIXED = ("acting, both teams", "environment step", "trainers' advance", "checkpoints")


def profile(config: str, env: str, steps: int) -> tuple[pstats.Stats, float]:
    """Train ``steps`` steps of every behavior under cProfile; the stats and the wall time."""
    torch.set_num_threads(1)
    try:  # as ghost-learn runs it, where the tree's ghost-learn limits numpy's BLAS
        from trainers.fast_acting import limit_blas_threads

        limit_blas_threads()
    except ImportError:
        pass
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


def table(stats: pstats.Stats) -> list[str]:
    """The Markdown table of ``stats``: each part's seconds, share and microseconds a step.

    Args:
        stats: the profile of a training run.

    Returns:
        A line on the loop (seconds and steps), then the table's lines, the fixed per-step cost
        last. A part none of whose functions ran (this tree lacks them, or no update came) reads
        "not called".
    """
    loop, loop_steps = 0.0, 0
    for func, (_, calls, _, cumulative, _) in stats.stats.items():  # type: ignore[attr-defined]
        if STEP_ONCE(func):
            loop, loop_steps = loop + cumulative, loop_steps + calls
    if not loop_steps:
        raise SystemExit("no call of trainers/training_loop.py step_once in the profile")
    lines = [
        f"the training loop: {loop:.1f} s over {loop_steps} steps",
        "| part | seconds | share of the loop | µs a step |",
        "|---|---|---|---|",
    ]
    seconds = {}
    for name, (callee, caller) in PARTS.items():
        found = any(callee(f) for f in stats.stats)  # type: ignore[attr-defined]
        seconds[name] = seconds_called_from(stats, callee, caller) if found else None
    seconds["fixed per-step cost"] = loop - sum(seconds[name] or 0.0 for name in OUTSIDE_FIXED)
    for name, value in seconds.items():
        if value is None:
            lines.append(f"| {name} | not called | | |")
        else:
            lines.append(
                f"| {name} | {value:.2f} | {value / loop:.0%} | {value / loop_steps * 1e6:.0f} |"
            )
    return lines


def code_root() -> Path:
    """The checkout the project's packages were imported from.

    Raises:
        SystemExit: ``envs``, ``ghost`` and ``trainers`` came from different places.
    """
    roots = {Path(package.__file__).resolve().parent.parent for package in (envs, ghost, trainers)}
    if len(roots) != 1:
        raise SystemExit(f"the project's packages came from several trees: {sorted(roots)}")
    return roots.pop()


def rerun_in(root: Path, args: argparse.Namespace) -> int:
    """Run this script again on the code of ``root``; its exit status.

    Args:
        root: checkout to profile; it goes first on ``PYTHONPATH`` and is the working directory.
        args: this run's arguments (``--config`` is passed as an absolute path).
    """
    root = root.resolve()
    command = [
        sys.executable, __file__, "--config", str(Path(args.config).resolve()), "--env",
        args.env, "--steps", str(args.steps), "--expect-root", str(root),
    ]  # fmt: skip
    return subprocess.run(command, cwd=root, env=tree_environment(root), check=False).returncode


def main() -> None:
    """Profile one run (here, or on ``--root``'s code) and print its table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, help="trainer YAML")
    parser.add_argument("--env", required=True, help="built-in game or module:callable")
    parser.add_argument("--steps", type=int, default=100_000, help="steps of every behavior")
    parser.add_argument("--root", type=Path, default=None, help="checkout whose code to profile")
    # set by --root on the fresh process: the tree its modules must come from
    parser.add_argument("--expect-root", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.root is not None:
        raise SystemExit(rerun_in(args.root, args))
    root = code_root()
    if args.expect_root is not None and root != args.expect_root:
        raise SystemExit(
            f"meant to profile {args.expect_root}, but imported the project from {root}"
        )
    stats, wall = profile(args.config, args.env, args.steps)
    print(f"code: {root} ({tree_commit(root)}); wall {wall:.1f} s under cProfile")
    print("\n".join(table(stats)))


if __name__ == "__main__":
    main()
