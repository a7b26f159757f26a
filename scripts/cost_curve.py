"""The cost curve (issue 36): agent steps per second and peak memory as one dimension grows.

Each point is a fresh ``ghost.train`` process on built-in tennis (self-play PPO, one torch thread)
that trains ``--steps`` agent steps; it reports its own steps/s (over the training, start-up
excluded) and its peak resident memory. Dimensions, each from the base point (32 arenas, 128x2
MLP, window 10, one opponent per swap)::

    python scripts/cost_curve.py --dimension arenas --values 1 4 16 64 256 1024
    python scripts/cost_curve.py --dimension window --values 5 10 25 50 100
    python scripts/cost_curve.py --dimension opponents_per_swap --values 1 2 4 8 16
    python scripts/cost_curve.py --dimension width --values 64 128 256 512
    python scripts/cost_curve.py --dimension teams --values 2 3 4

``--steps`` defaults to 60,000; the window points snapshot every 500 steps so that even a
100-snapshot window fills. Steps per second count the learning team's steps (the trainer's); the
teams points also give every team's agent steps. Tennis has two teams, so the teams points train
``TeamArenaEnv`` (``scripts/team_arena.py``) instead: one agent per team in each arena, every agent
deciding every step, the arena's top scorer winning each 16-step match.
"""

from __future__ import annotations

import argparse
import json

from fresh_process import run_point

POINT = r"""
import json, resource, sys, tempfile, time
import torch
torch.set_num_threads(1)
import ghost
from envs.games import make_game

point = json.loads(sys.argv[1])
arenas, teams = point["arenas"], point["teams"]

def tennis(worker_id=0, seed=0):
    return make_game("tennis", num_arenas=arenas, worker_id=worker_id, seed=seed)

def team_arena(worker_id=0, seed=0):
    sys.path.insert(0, "scripts")  # run_point runs in the repository root
    from team_arena import TeamArenaEnv
    names = [f"Tennis?team={team}" for team in range(teams)]
    return TeamArenaEnv(behaviors=names, num_arenas=arenas, episode_length=16, seed=seed)

config = {"behaviors": {"Tennis": {
    "trainer_type": "ppo",
    "hyperparameters": {"batch_size": 1024, "buffer_size": 8192},
    "network_settings": {"hidden_units": point["width"], "num_layers": 2},
    "max_steps": point["steps"],
    "summary_freq": point["steps"],
    "checkpoint_interval": point["steps"],
    "self_play": {"save_steps": point["save_steps"], "swap_steps": 1000,
                  "team_change": 10 * point["save_steps"], "window": point["window"],
                  "opponents_per_swap": point["opponents_per_swap"]},
}}}
with tempfile.TemporaryDirectory() as results:
    result = ghost.train(config, env=team_arena if teams else tennis, run_id="point",
                         results_dir=results, seed=0, verbose=0)
steps = sum(result.steps.values())
peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print("POINT " + json.dumps({"steps_per_s": steps / result.wall_time_s, "peak_mib": peak_mib,
                             "agent_steps_per_s": steps * (teams or 2) / result.wall_time_s}))
"""

BASE = {
    "arenas": 32, "width": 128, "window": 10, "opponents_per_swap": 1, "save_steps": 5000,
    "teams": None,
}  # fmt: skip


def measure(point: dict) -> dict:
    return run_point(POINT, [json.dumps(point)], str(point))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--dimension",
        required=True,
        choices=["arenas", "window", "opponents_per_swap", "width", "teams"],
    )
    parser.add_argument("--values", type=int, nargs="+", required=True)
    parser.add_argument("--steps", type=int, default=60_000)
    args = parser.parse_args()
    print(f"| {args.dimension} | trainer steps/s | all agents' steps/s | peak memory (MiB) |")
    print("|---|---|---|---|")
    for value in args.values:
        point = {**BASE, "steps": args.steps, args.dimension: value}
        if args.dimension == "window":
            point["save_steps"] = 500
        figures = measure(point)
        print(
            f"| {value} | {figures['steps_per_s']:,.0f} | {figures['agent_steps_per_s']:,.0f} "
            f"| {figures['peak_mib']:.0f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
