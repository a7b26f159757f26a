"""Training throughput with several snapshot opponents per swap: batched vs one call each.

With ``opponents_per_swap: K`` the ghosted team plays K snapshots at once, one per arena. Since
``trainers.policy_stack`` they act in one batched forward pass; before, each snapshot's network
was called on its own rows. This script trains a game's shipped config for a short budget with
K = 1 and the given larger Ks, each both ways (``loop`` switches the batching off), interleaving
the runs so machine noise hits all setups alike, and reports trained agent-steps per second
(both behaviors' trainer steps over wall time) and each setup's ratio to K = 1.

usage: python scripts/bench_opponents.py [--game strikers_vs_goalie] [--steps 150000]
                                         [--opponents 8 32] [--repeats 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import attrs
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import ghost.core.opponents  # noqa: E402
from envs.games import make_game  # noqa: E402
from envs.stepping import InProcessStepper  # noqa: E402
from ghost.config.loader import load_options  # noqa: E402
from ghost.running.session import SelfPlaySession  # noqa: E402
from trainers.run_files.layout import RunLayout

BATCHED_STACKABLE = ghost.opponents.stackable


def train_rate(game: str, steps: int, opponents: int, batched: bool, seed: int) -> float:
    """Trained agent-steps per second of ``config/<game>.yaml`` cut to ``steps`` per behavior."""
    options = load_options(f"config/{game}.yaml")
    behaviors = {}
    for name, settings in options.behaviors.items():
        self_play = attrs.evolve(settings.self_play, opponents_per_swap=opponents)
        behaviors[name] = attrs.evolve(settings, max_steps=steps, summary_freq=10**9,
                                       checkpoint_interval=10**9, self_play=self_play)  # fmt: skip
    options = attrs.evolve(options, behaviors=behaviors)
    ghost.opponents.stackable = BATCHED_STACKABLE if batched else (lambda policies: False)
    try:
        with tempfile.TemporaryDirectory() as out:
            session = SelfPlaySession(options=options, stepper=InProcessStepper(make_game(game, seed=seed)),
                                      layout=RunLayout(out), seed=seed)  # fmt: skip
            start = time.perf_counter()
            result = session.start(resume=False)
            try:
                while session.still_training:
                    result = session.step_once(result)
            finally:
                session.finish()
            elapsed = time.perf_counter() - start
            trained = sum(trainer.step for trainer in session.trainers.values())
    finally:
        ghost.opponents.stackable = BATCHED_STACKABLE
    return trained / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--game", default="strikers_vs_goalie")
    parser.add_argument("--steps", type=int, default=150_000, help="trainer steps per behavior")
    parser.add_argument("--opponents", type=int, nargs="+", default=[8, 32])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="print one JSON object at the end")
    args = parser.parse_args()
    torch.set_num_threads(1)
    setups = [("K=1", 1, True)]
    for k in args.opponents:
        setups += [(f"K={k} batched", k, True), (f"K={k} loop", k, False)]
    rates: dict[str, list[float]] = {name: [] for name, _, _ in setups}
    for repeat in range(args.repeats):
        for name, k, batched in setups:
            rate = train_rate(args.game, args.steps, k, batched, seed=repeat)
            rates[name].append(rate)
            print(f"repeat {repeat}  {name:14s} {rate:9.0f} agent-steps/s", flush=True)
    baseline = statistics.median(rates["K=1"])
    summary = {}
    print(f"\n{args.game}, {args.steps} trainer steps per behavior, median of {args.repeats}:")
    for name, _, _ in setups:
        median = statistics.median(rates[name])
        summary[name] = {"agent_steps_per_s": round(median), "vs_K1": round(median / baseline, 3)}
        print(f"  {name:14s} {median:9.0f} agent-steps/s  {median / baseline:5.2f}x of K=1")
    if args.json:
        print(json.dumps({"game": args.game, "steps": args.steps, **summary}))


if __name__ == "__main__":
    main()
