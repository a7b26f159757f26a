"""Throughput of each built-in game alone, under random actions.

Counts agent steps per second over all teams' agents (one ``env.step()`` of a game with ``A``
arenas and ``k`` agents per arena is ``A * k`` agent steps), plus episodes per second and the mean
episode length. Random actions are drawn before timing, so only the environment is measured.

usage: python scripts/bench_envs.py [--arenas 32] [--seconds 2] [--games tennis soccer] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np
from mlagents_envs.base_env import ActionTuple

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from envs.games import BUILTIN_GAMES, make_game  # noqa: E402

ACTION_POOL = 64


def random_actions(env, rng: np.random.Generator) -> dict[str, list[ActionTuple]]:
    """``ACTION_POOL`` random action batches per behavior, cycled through while timing."""
    pool = {}
    for name, spec in env.behavior_specs.items():
        n = len(env.get_steps(name)[0])
        action_spec = spec.action_spec
        batches = []
        for _ in range(ACTION_POOL):
            continuous = rng.uniform(-1.0, 1.0, size=(n, action_spec.continuous_size))
            discrete = (
                np.stack(
                    [rng.integers(0, b, size=n) for b in action_spec.discrete_branches], axis=1
                )
                if action_spec.discrete_size
                else np.zeros((n, 0), dtype=np.int32)
            )
            batches.append(ActionTuple(continuous=continuous.astype(np.float32), discrete=discrete))
        pool[name] = batches
    return pool


def bench(game: str, *, arenas: int, seconds: float, seed: int = 0) -> dict:
    """Step ``game`` with random actions for about ``seconds``; returns the measurements."""
    env = make_game(game, seed=seed, num_arenas=arenas)
    pool = random_actions(env, np.random.default_rng(seed))
    names = list(env.behavior_specs)
    steps = episodes = episode_steps = 0
    start = time.perf_counter()
    while True:
        for name in names:
            env.set_actions(name, pool[name][steps % ACTION_POOL])
        lengths = env.episode_steps + 1
        env.step()
        terminal = env.get_steps(names[0])[1]
        ended = np.unique(env.arena_of(names[0], terminal.agent_id))
        episodes += len(ended)
        episode_steps += int(lengths[ended].sum())
        steps += 1
        if steps % 100 == 0 and time.perf_counter() - start >= seconds:
            break
    wall = time.perf_counter() - start
    env.close()
    return {
        "game": game,
        "arenas": arenas,
        "agents_per_arena": env.agents_per_arena,
        "env_steps_per_s": round(steps / wall, 1),
        "agent_steps_per_s": round(steps * arenas * env.agents_per_arena / wall, 1),
        "episodes_per_s": round(episodes / wall, 1),
        "mean_episode_steps": round(episode_steps / max(episodes, 1), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arenas", type=int, default=32, help="arenas per environment")
    parser.add_argument("--seconds", type=float, default=2.0, help="time per game")
    parser.add_argument("--games", nargs="*", default=list(BUILTIN_GAMES), help="games to run")
    parser.add_argument("--json", action="store_true", help="print one JSON line instead")
    args = parser.parse_args()
    rows = [bench(g, arenas=args.arenas, seconds=args.seconds) for g in args.games]
    if args.json:
        print(json.dumps(rows))
        return
    header = f"{'game':<22}{'arenas':>7}{'agents':>7}{'env steps/s':>13}{'agent steps/s':>15}"
    print(header + f"{'episodes/s':>12}{'mean ep len':>13}")
    for r in rows:
        print(
            f"{r['game']:<22}{r['arenas']:>7}{r['agents_per_arena']:>7}"
            f"{r['env_steps_per_s']:>13,.0f}"
            f"{r['agent_steps_per_s']:>15,.0f}{r['episodes_per_s']:>12,.0f}"
            f"{r['mean_episode_steps']:>13.1f}"
        )


if __name__ == "__main__":
    main()
