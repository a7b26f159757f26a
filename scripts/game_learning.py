"""Self-play learning on each built-in game with its shipped config: steps, wall time, results.

For each game: ``ghost-learn config/<game>.yaml`` (a subprocess, as a user runs it), then the final
policy and an untrained network of the same architecture play each scripted level; prints the win rate
with its 95% interval and the first and last Elo of the console log.

    python scripts/game_learning.py --games tennis soccer --episodes 200
    python scripts/game_learning.py --games strikers_vs_goalie_poca --seeds 0 1 2 3
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from envs.games import scripted_levels  # noqa: E402
from ghost.play.head_to_head import evaluate  # noqa: E402
from trainers.policy import load_policy  # noqa: E402

SIDES = {"strikers_vs_goalie": ["Striker", "Goalie"]}
CONFIGS = {
    "tennis_sac": "tennis",
    "soccer_poca": "soccer",
    "strikers_vs_goalie_poca": "strikers_vs_goalie",
}


def learn(
    config: str, out: Path, run_id: str, seed: int | None = None
) -> tuple[float, list[float], str]:
    started = time.perf_counter()
    seed_flag = [] if seed is None else ["--seed", str(seed)]
    result = subprocess.run(
        [sys.executable, "-m", "ghost.running.cli", f"config/{config}.yaml", "--run-id", run_id,
         "--results-dir", str(out), "--force", *seed_flag],
        cwd=ROOT, capture_output=True, text=True, check=True,
    )  # fmt: skip
    wall = time.perf_counter() - started
    log = result.stdout + result.stderr
    elo = [float(x) for x in re.findall(r"ELO: ([0-9]+\.[0-9])", log)]
    return wall, elo, log


def learn_and_evaluate(config: str, seed: int | None, run: Path, episodes: int) -> dict:
    """Train ``config`` into ``run``; the final policy's win rates against each scripted level."""
    game = CONFIGS.get(config, config)
    wall, elo, _ = learn(config, run.parent, run.name, seed)
    entry = {"wall_s": round(wall, 1), "elo_first": elo[:1], "elo_last": elo[-1:], "vs": {}}
    for side in SIDES.get(game, [None]):
        behavior = side or next(p.stem for p in run.glob("*.pt"))
        final = run / f"{behavior}.pt"
        torch.manual_seed(0)  # an untrained network of the same architecture
        untrained = load_policy(final).clone_architecture()
        for level in scripted_levels(game):
            row = {}
            for label, policy in (("final", str(final)), ("untrained", untrained)):
                result = evaluate(game=game, policy=policy, opponent=level,
                                  episodes=episodes, seed=1, deterministic=True,
                                  side=side)  # fmt: skip
                row[label] = {"win_rate": result.win_rate, "ci": result.win_ci,
                              "interrupted": result.interrupted,
                              "exploitability": result.exploitability}  # fmt: skip
            entry["vs"][f"{behavior} vs {level}"] = row
            final_rate, base_rate = row["final"]["win_rate"], row["untrained"]["win_rate"]
            print(f"{run.name:20s} {behavior:18s} vs {level:11s} final "
                  f"{final_rate if final_rate is None else round(final_rate, 3)!s:>6} "
                  f"(untrained {base_rate if base_rate is None else round(base_rate, 3)})",
                  flush=True)  # fmt: skip
    print(f"{run.name}: {wall:.1f} s, Elo {elo[:1]} -> {elo[-1:]}", flush=True)
    return entry


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", nargs="+", default=[
        "tennis", "soccer", "strikers_vs_goalie", "rock_paper_scissors", "biased_rps"])  # fmt: skip
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument(
        "--seeds", type=int, nargs="+", default=[None],
        help="training seeds, one run each (default: the config's own seed)",
    )  # fmt: skip
    args = parser.parse_args()
    report = {}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        for config in args.games:
            for seed in args.seeds:
                label = config if seed is None else f"{config}-seed{seed}"
                report[label] = learn_and_evaluate(config, seed, out / label, args.episodes)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
