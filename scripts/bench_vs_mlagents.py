"""Training throughput of ghost-trainer against Unity ML-Agents 1.1 on the same env and config.

Both trainers run the same YAML (network, buffer, batch, epochs, self-play) on the same BaseEnv
factory for the same number of trainer steps, alternating ``--repeats`` times so machine noise
hits both alike. ML-Agents runs through ``../shared/peers/mlagents_run.py`` in its own venv
(``bash ../shared/peers/setup-mlagents.sh`` once).

    python scripts/bench_vs_mlagents.py --env envs.tennis:make_env --config config/tennis.yaml \
        --steps 100000

Prints one line per run and the ratio of median agent-steps per second (all teams' agents).
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
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PEER_PYTHON = os.environ.get("PEER_PYTHON", "/tmp/peer-mlagents/bin/python")
PEER_SCRIPT = ROOT.parent / "shared" / "peers" / "mlagents_run.py"

_OURS = """
import json, sys, time, attrs, torch
from pathlib import Path
sys.path.insert(0, "scripts")
from envs.sources import resolve_env
from ghost.config.loader import load_options
from ghost.running.api import make_stepper
from ghost.running.session import SelfPlaySession
from trainers.run_files.layout import RunLayout
torch.set_num_threads(1)
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
                  "trainer_steps_per_s": round(trainer_steps / wall, 1)}))
"""


def run_ours(config: str, env: str, steps: int, self_play: bool = True) -> dict:
    with tempfile.TemporaryDirectory() as out:
        result = subprocess.run(
            [sys.executable, "-c", _OURS, config, env, str(steps), out, "1" if self_play else "0"],
            cwd=ROOT, capture_output=True, text=True, check=False,
        )  # fmt: skip
    return _last_json(result, "ghost-trainer")


def run_peer(config: str, env: str, steps: int) -> dict:
    result = subprocess.run(
        [PEER_PYTHON, str(PEER_SCRIPT), "--env", env, "--config", config, "--steps", str(steps)],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    return _last_json(result, "ml-agents")


def _last_json(result: subprocess.CompletedProcess, who: str) -> dict:
    for line in reversed(result.stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise SystemExit(f"{who} run failed:\n{result.stdout[-2000:]}\n{result.stderr[-4000:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", required=True, help="module:callable returning a BaseEnv")
    parser.add_argument("--config", required=True, help="trainer YAML used by both")
    parser.add_argument("--steps", type=int, default=50000, help="trainer steps per run")
    parser.add_argument("--repeats", type=int, default=2)
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
    if args.self_play_overhead:
        runners = {
            "with self_play": lambda: run_ours(args.config, args.env, args.steps, True),
            "without self_play": lambda: run_ours(
                args.config, args.baseline_env, args.steps, False
            ),
        }
    else:
        runners = {
            "ghost-trainer": lambda: run_ours(args.config, args.env, args.steps),
            "ml-agents 1.1": lambda: run_peer(args.config, args.env, args.steps),
        }
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
                f"[{repeat + 1}/{args.repeats}] {name:18s} {result['agent_steps_per_s']:>10.0f} "
                f"agent-steps/s  (run wall {time.perf_counter() - started:.1f} s)",
                flush=True,
            )
    first, second = list(rates)
    summary = {
        "env": args.env,
        "config": args.config,
        "steps": args.steps,
        "median_agent_steps_per_s": {k: statistics.median(v) for k, v in rates.items()},
        f"ratio {first} / {second}": round(
            statistics.median(rates[first]) / statistics.median(rates[second]), 2
        ),
    }
    if all(trained.values()):
        summary["median_trainer_steps_per_s"] = {
            k: statistics.median(v) for k, v in trained.items()
        }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
