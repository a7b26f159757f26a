"""Training throughput of ghost-trainer against Unity ML-Agents 1.1 on the same env and config.

Both trainers run the same YAML (network, buffer, batch, epochs, self-play) on the same BaseEnv
factory for the same number of trainer steps, alternating ``--repeats`` times so machine noise
hits both alike. ML-Agents runs through ``../shared/peers/mlagents_run.py`` in its own venv
(``bash ../shared/peers/setup-mlagents.sh`` once; ``PEER_PYTHON`` names another one).

    python scripts/bench_vs_mlagents.py --env envs.tennis:make_env --config config/tennis.yaml \
        --steps 100000

Prints one line per run and the ratio of median agent-steps per second (all teams' agents).

``--before TREE`` adds a third side: our trainer from an older checkout (``git worktree add
/tmp/bench-before <commit>``), run from that tree with the tree first on ``PYTHONPATH`` so its
modules win over the editable install; each repeat runs before, after and ML-Agents in turn, and
the summary gives both ratios against ML-Agents and after / before. Every side reads the same
config file (this tree's) and ML-Agents steps this tree's environments. The measuring code
(``_OURS``) is this file's, so it may import only what both trees have.

``--self-play-overhead`` instead compares our run with and without ``self_play``. Without it, a
two-team game is rejected, so that side runs ``--baseline-env`` (default: tennis with its teams
merged into one behavior, ``scripts/merged_teams.py``): one policy for every agent, all experience
trained, which is what ML-Agents does without ``self_play``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PEER_PYTHON = os.environ.get("PEER_PYTHON", "/tmp/peer-mlagents/bin/python")
PEER_SCRIPT = ROOT.parent / "shared" / "peers" / "mlagents_run.py"
AFTER = "ghost-trainer"
BEFORE = "ghost-trainer before"
PEER = "ml-agents 1.1"

_OURS = """
import json, sys, time, attrs, torch
from pathlib import Path
sys.path.insert(0, "scripts")
import envs, ghost, trainers
from envs.sources import resolve_env
from ghost.config.loader import load_options
from ghost.running.api import make_stepper
from ghost.running.session import SelfPlaySession
from trainers.run_files.layout import RunLayout
torch.set_num_threads(1)
try:  # as ghost-learn runs it, where the tree's ghost-learn limits numpy's BLAS
    from trainers.fast_acting import limit_blas_threads
    limit_blas_threads()
except ImportError:
    pass
config, env, steps, out, self_play = sys.argv[1:6]
options = load_options(config)
behaviors = {name: attrs.evolve(s, max_steps=int(steps), summary_freq=10**9,
                                checkpoint_interval=10**9,
                                self_play=s.self_play if self_play == "1" else None)
             for name, s in options.behaviors.items()}
options = attrs.evolve(options, behaviors=behaviors)
factory = resolve_env(env)
session = SelfPlaySession(options=options, stepper=make_stepper(options.env_settings, factory, 0),
                          layout=RunLayout(out))
start = time.perf_counter()
session.run()
wall = time.perf_counter() - start
trainer_steps = sum(t.step for t in session.trainers.values())
agent_steps = trainer_steps + sum(g.state.ghost_step for g in session.ghosts.values())
print(json.dumps({"peer": "ghost-trainer", "wall_s": round(wall, 2),
                  "agent_steps_per_s": round(agent_steps / wall, 1),
                  "trainer_steps_per_s": round(trainer_steps / wall, 1),
                  "code": sorted({str(Path(package.__file__).resolve().parent.parent)
                                  for package in (envs, ghost, trainers)})}))
"""


def run_ours(config: str, env: str, steps: int, self_play: bool = True, tree: Path = ROOT) -> dict:
    """Train with our trainer in a fresh process on the code of ``tree``.

    Args:
        config: trainer YAML; a relative path is read from this tree, whichever ``tree`` runs.
        env: ``module:callable`` or built-in game.
        steps: trainer steps of every behavior.
        self_play: keep the config's ``self_play`` (False: drop it).
        tree: root of the checkout whose modules train (cwd and first on ``PYTHONPATH``).

    Returns:
        The run's JSON line: wall seconds, agent and trainer steps per second, and ``code``, the
        roots the ``envs``, ``ghost`` and ``trainers`` packages were imported from.

    Raises:
        SystemExit: the run failed (its output's tail), or imported another tree than ``tree``.
    """
    tree = Path(tree).resolve()
    with tempfile.TemporaryDirectory() as out:
        result = subprocess.run(
            [sys.executable, "-c", _OURS, str(ROOT / config), env, str(steps), out,
             "1" if self_play else "0"],
            cwd=tree, env=tree_environment(tree), capture_output=True, text=True, check=False,
        )  # fmt: skip
    answer = _last_json(result, f"ghost-trainer ({tree})")
    if answer["code"] != [str(tree)]:
        raise SystemExit(f"the run meant for {tree} imported the project from {answer['code']}")
    return answer


def tree_environment(tree: Path) -> dict[str, str]:
    """This process's environment with ``tree`` first on ``PYTHONPATH``.

    The project is installed editable (and a ``.pth`` file imports ``envs`` at start-up), so
    only ``PYTHONPATH`` puts another checkout's modules ahead of the installed ones.
    """
    environment = dict(os.environ)
    rest = environment.get("PYTHONPATH")
    environment["PYTHONPATH"] = str(tree) + (os.pathsep + rest if rest else "")
    return environment


def run_peer(config: str, env: str, steps: int, tree: Path = ROOT) -> dict:
    """Train with ML-Agents 1.1 (``PEER_PYTHON``) on the environments of ``tree``.

    Args:
        config: trainer YAML; a relative path is read from this tree.
        env: ``module:callable`` returning a BaseEnv.
        steps: trainer steps of every behavior.
        tree: the checkout whose environments ML-Agents steps (its working directory).

    Returns:
        The peer's JSON line (wall seconds, agent steps per second, behaviors).
    """
    result = subprocess.run(
        [PEER_PYTHON, str(PEER_SCRIPT), "--env", env, "--config", str(ROOT / config), "--steps",
         str(steps)],
        cwd=tree, capture_output=True, text=True, check=False,
    )  # fmt: skip
    return _last_json(result, "ml-agents")


def tree_commit(tree: Path = ROOT) -> str:
    """Short commit of the checkout at ``tree``, with ``+dirty`` when tracked files changed."""
    commit = subprocess.run(
        ["git", "-C", str(tree), "rev-parse", "--short", "HEAD"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    changes = subprocess.run(
        ["git", "-C", str(tree), "status", "--porcelain", "--untracked-files=no"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    return commit + ("+dirty" if changes else "")


def _last_json(result: subprocess.CompletedProcess, who: str) -> dict:
    for line in reversed(result.stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise SystemExit(f"{who} run failed:\n{result.stdout[-2000:]}\n{result.stderr[-4000:]}")


def sides(args: argparse.Namespace) -> dict[str, Callable[[], dict]]:
    """The runs to alternate, by name: the compared side first, the reference last."""
    if args.self_play_overhead:
        return {
            "with self_play": lambda: run_ours(args.config, args.env, args.steps, True),
            "without self_play": lambda: run_ours(
                args.config, args.baseline_env, args.steps, False
            ),
        }
    runners = {}
    if args.before:
        runners[BEFORE] = lambda: run_ours(args.config, args.env, args.steps, tree=args.before)
    runners[AFTER] = lambda: run_ours(args.config, args.env, args.steps)
    runners[PEER] = lambda: run_peer(args.config, args.env, args.steps)
    return runners


def ratio(rates: dict[str, list[float]], top: str, bottom: str) -> float:
    """Median of ``top``'s rates over the median of ``bottom``'s, to two places."""
    return round(statistics.median(rates[top]) / statistics.median(rates[bottom]), 2)


def summary(args: argparse.Namespace, rates: dict, trained: dict) -> dict:
    """The JSON summary: medians, each side's ratio to the reference, and after / before."""
    *compared, reference = list(rates)
    result = {
        "env": args.env,
        "config": args.config,
        "steps": args.steps,
        "median_agent_steps_per_s": {k: statistics.median(v) for k, v in rates.items()},
    }
    for name in compared:
        result[f"ratio {name} / {reference}"] = ratio(rates, name, reference)
    if BEFORE in rates:
        result[f"ratio {AFTER} / {BEFORE}"] = ratio(rates, AFTER, BEFORE)
        result["commits"] = {BEFORE: tree_commit(args.before), AFTER: tree_commit()}
    if all(trained.values()):
        result["median_trainer_steps_per_s"] = {k: statistics.median(v) for k, v in trained.items()}
    return result


def parse_args() -> argparse.Namespace:
    """The command line (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", required=True, help="module:callable returning a BaseEnv")
    parser.add_argument("--config", required=True, help="trainer YAML used by both")
    parser.add_argument("--steps", type=int, default=50000, help="trainer steps per run")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument(
        "--before",
        type=Path,
        default=None,
        help="root of an older checkout (git worktree) to run as a third side",
    )
    parser.add_argument(
        "--self-play-overhead",
        action="store_true",
        help="compare our run with and without self_play instead of ML-Agents",
    )
    parser.add_argument(
        "--baseline-env",
        default="merged_teams:make_tennis",
        help="env of the run without self_play (a game's teams merged into one behavior)",
    )
    args = parser.parse_args()
    if args.before and args.self_play_overhead:
        parser.error("--before compares against ML-Agents; drop --self-play-overhead")
    if args.before and not (args.before / "envs").is_dir():
        parser.error(f"--before {args.before}: not a checkout of this project (no envs/ there)")
    return args


def main() -> None:
    """Alternate the sides ``--repeats`` times, print each run and the JSON summary."""
    args = parse_args()
    runners = sides(args)
    rates: dict[str, list[float]] = {name: [] for name in runners}
    trained: dict[str, list[float]] = {name: [] for name in runners}
    for repeat in range(args.repeats):
        for name, runner in runners.items():
            started = time.perf_counter()
            result = runner()
            rates[name].append(result["agent_steps_per_s"])
            if "trainer_steps_per_s" in result:
                trained[name].append(result["trainer_steps_per_s"])
            print(
                f"[{repeat + 1}/{args.repeats}] {name:20s} {result['agent_steps_per_s']:>10.0f} "
                f"agent-steps/s  (run wall {time.perf_counter() - started:.1f} s)",
                flush=True,
            )
    print(json.dumps(summary(args, rates, trained)))


if __name__ == "__main__":
    main()
