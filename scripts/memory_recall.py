"""Memory on a task that needs it: a trainer with and without ``network_settings.memory`` on recall.

Trains ``--trainer`` (ppo or sac) on ``envs.recall`` (a cue shown at an episode's first step, to
be named at its last) with and without memory, for each seed at equal steps, then plays each final
policy for ``--episodes`` episodes (sampling, as it trained) and prints its mean reward: the share
of cues named (chance: ``1 / CUES``)::

    python scripts/memory_recall.py --steps 20000 --seeds 0 1 2
    python scripts/memory_recall.py --trainer sac --steps 20000 --seeds 0 1 2

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
from envs.recall import CUES, Recall  # noqa: E402
from trainers.memory import act_on_steps  # noqa: E402

MEMORY = {"memory_size": 32, "sequence_length": 8}
HYPERPARAMETERS = {
    "ppo": {"batch_size": 256, "buffer_size": 2048, "beta": 5.0e-3, "learning_rate": 3.0e-3},
    "sac": {"batch_size": 256, "buffer_size": 20000, "buffer_init_steps": 1000,
            "steps_per_update": 2, "learning_rate": 1.0e-3, "init_entcoef": 0.1},
}  # fmt: skip


def config(steps: int, *, memory: bool, trainer: str = "ppo") -> dict:
    network = {"hidden_units": 32, "num_layers": 1, **({"memory": MEMORY} if memory else {})}
    return {
        "behaviors": {
            "Recall": {
                "trainer_type": trainer,
                "hyperparameters": HYPERPARAMETERS[trainer],
                "network_settings": network,
                "max_steps": steps,
                "time_horizon": 64,
                "summary_freq": max(steps // 4, 1000),
            }
        }
    }


def mean_reward(policy_path: Path, episodes: int, seed: int) -> float:
    """The policy's mean reward over ``episodes`` recall episodes."""
    policy = trainers.load_policy(str(policy_path))
    env = Recall(num_arenas=64, seed=seed + 1000)
    behavior = "Recall?team=0"
    finished, total = 0, 0.0
    torch.manual_seed(seed)
    while finished < episodes:
        decisions, terminals = env.get_steps(behavior)
        finished, total = finished + len(terminals), total + float(terminals.reward.sum())
        env.set_actions(behavior, act_on_steps(policy, decisions, terminals))
        env.step()
    return total / finished


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--episodes", type=int, default=640)
    parser.add_argument("--trainer", choices=sorted(HYPERPARAMETERS), default="ppo")
    parser.add_argument("--only", choices=["memory", "no memory"], help="skip the other arm")
    args = parser.parse_args()
    torch.set_num_threads(1)
    rows = []
    with tempfile.TemporaryDirectory() as results:
        for label, memory in (("memory", True), ("no memory", False)):
            if args.only not in (None, label):
                continue
            scores = []
            for seed in args.seeds:
                started = time.perf_counter()
                run_id = f"{label.replace(' ', '-')}-{seed}"
                ghost.train(
                    config(args.steps, memory=memory, trainer=args.trainer),
                    env="envs.recall:make_env",
                    run_id=run_id,
                    results_dir=results,
                    seed=seed,
                    verbose=0,
                )
                score = mean_reward(Path(results) / run_id / "Recall.pt", args.episodes, seed)
                scores.append(score)
                print(f"{label:10s} seed {seed}: {score:.3f} ({time.perf_counter() - started:.0f} s)",
                      flush=True)  # fmt: skip
            rows.append((label, scores))
    print(f"\nrecall, {args.trainer}, {args.steps} steps, {args.episodes} episodes per policy: "
          "share of cues named "
          f"(chance {1 / CUES:.3f})")  # fmt: skip
    print(f"{'policy':10s} {'median':>7s}  per seed")
    for label, scores in rows:
        print(
            f"{label:10s} {statistics.median(scores):7.3f}  {' '.join(f'{s:.3f}' for s in scores)}"
        )


if __name__ == "__main__":
    main()
