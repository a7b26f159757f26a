"""Exploration bonuses on a sparse-reward task: extrinsic only, curiosity, RND (issue 35).

Trains ``--trainer`` (ppo or sac) on ``envs.hallway`` (a corridor with a small near exit and a far
goal) with each reward-signal set and seed at equal steps, then plays each final policy for
``--episodes`` episodes (sampling, as it trained) and prints the share that reached the goal::

    python scripts/exploration_bonus.py --steps 150000 --seeds 0 1 2
    python scripts/exploration_bonus.py --trainer sac --steps 30000 --methods "extrinsic only" curiosity

Every run is a ``ghost.train`` call with ``verbose=0`` in a temporary results folder.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import ghost  # noqa: E402
import trainers  # noqa: E402
from envs.hallway import NEAR_REWARD, Hallway  # noqa: E402

EXTRINSIC = {"gamma": 0.99, "strength": 1.0}
METHODS = {
    "extrinsic only": {"extrinsic": EXTRINSIC},
    "curiosity": {"extrinsic": EXTRINSIC, "curiosity": {"gamma": 0.99, "strength": 0.1}},
    "rnd": {"extrinsic": EXTRINSIC, "rnd": {"gamma": 0.99, "strength": 0.1}},
}


#: each trainer's hyperparameters on the hallway
HYPERPARAMETERS = {
    "ppo": {"batch_size": 256, "buffer_size": 2048, "beta": 5.0e-3},
    "sac": {
        "batch_size": 128, "buffer_size": 50_000, "buffer_init_steps": 1000,
        "steps_per_update": 4.0,
    },
}  # fmt: skip


def config(signals: dict, steps: int, trainer: str = "ppo") -> dict:
    return {
        "behaviors": {
            "Hallway": {
                "trainer_type": trainer,
                "hyperparameters": HYPERPARAMETERS[trainer],
                "network_settings": {"hidden_units": 64, "num_layers": 2},
                "reward_signals": signals,
                "max_steps": steps,
                "time_horizon": 64,
                "summary_freq": max(steps // 4, 1000),
            }
        }
    }


def success_rate(policy_path: Path, episodes: int, seed: int) -> float:
    """The share of ``episodes`` in which the policy reaches the corridor's far end."""
    policy = trainers.load_policy(str(policy_path))
    env = Hallway(num_arenas=32, seed=seed + 1000)
    behavior = "Hallway?team=0"
    finished, reached = 0, 0
    torch.manual_seed(seed)
    while finished < episodes:
        decisions, terminals = env.get_steps(behavior)
        for reward, interrupted in zip(terminals.reward, terminals.interrupted, strict=True):
            finished += 1
            reached += int(reward > NEAR_REWARD and not interrupted)
        env.set_actions(behavior, policy.act(decisions.obs, action_mask=decisions.action_mask))
        env.step()
    return reached / finished


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trainer", default="ppo", choices=list(HYPERPARAMETERS))
    parser.add_argument("--steps", type=int, default=150_000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    args = parser.parse_args()
    torch.set_num_threads(1)
    rows = []
    with tempfile.TemporaryDirectory() as results:
        for method in args.methods:
            rates = []
            for seed in args.seeds:
                started = time.perf_counter()
                run_id = f"{method.replace(' ', '-')}-{seed}"
                ghost.train(
                    config(METHODS[method], args.steps, args.trainer),
                    env="envs.hallway:make_env",
                    run_id=run_id,
                    results_dir=results,
                    seed=seed,
                    verbose=0,
                )
                rate = success_rate(Path(results) / run_id / "Hallway.pt", args.episodes, seed)
                rates.append(rate)
                print(f"{method:15s} seed {seed}: {rate:.3f} ({time.perf_counter() - started:.0f} s)",
                      flush=True)  # fmt: skip
            rows.append((method, rates))
    print(
        f"\nhallway, {args.trainer}, {args.steps} steps, {args.episodes} episodes per policy: "
        "share reaching the far goal"
    )
    print(f"{'method':15s} {'median':>7s}  per seed")
    for method, rates in rows:
        per_seed = " ".join(f"{r:.3f}" for r in rates)
        print(f"{method:15s} {statistics.median(rates):7.3f}  {per_seed}")


if __name__ == "__main__":
    main()
