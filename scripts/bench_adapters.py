"""Throughput of board and card games: the raw library loop against the ``SeatedGame`` adapter.

For each game, the same number of moves is played twice with uniformly random legal actions:

- **raw**: one environment in a plain loop (``env.step`` with a random legal action, ``reset``
  when the game is over): what the game costs by itself;
- **adapter**: ``--copies`` tables in one ``SeatedGame`` stepped through ``get_steps`` /
  ``set_actions`` / ``step``, the actions drawn by ``envs.board_players.RandomLegalPolicy`` for
  each behavior's whole batch.

A move is one action of one player. Building the environments is not timed; each side runs
``--repeats`` times and its best run counts.

usage: python scripts/bench_adapters.py [--moves 20000] [--copies 32] [--repeats 3]
       [--games connect_four ...] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from envs.board_players import RandomLegalPolicy  # noqa: E402
from envs.pettingzoo import ModuleEnvFn, from_module  # noqa: E402


class BenchGame(NamedTuple):
    """One game to compare: ``raw(moves, seed)`` returns its timed seconds; ``adapter(copies,
    seed)`` builds the adapted ``BaseEnv``. An OpenSpiel game adds an entry with its own pair."""

    label: str
    raw: Callable[[int, int], float]
    adapter: Callable[[int, int], Any]


def raw_pettingzoo(module: str) -> Callable[[int, int], float]:
    """The plain AEC loop over ``module``'s ``env``: random legal moves, reset at the end."""

    def play(moves: int, seed: int) -> float:
        env = ModuleEnvFn(module=module, attribute="env")()
        rng = np.random.default_rng(seed)
        env.reset(seed=seed)
        played = 0
        start = time.perf_counter()
        while played < moves:
            observation, _, terminated, truncated, info = env.last()
            if terminated or truncated:
                env.step(None)
            else:
                legal = np.flatnonzero(observation["action_mask"])
                env.step(int(legal[rng.integers(len(legal))]))
                played += 1
            if not env.agents:
                env.reset()
        elapsed = time.perf_counter() - start
        env.close()
        return elapsed

    return play


def pettingzoo_adapter(module: str) -> Callable[[int, int], Any]:
    return lambda copies, seed: from_module(module, copies=copies)(seed=seed)


def pettingzoo_game(label: str, module: str) -> BenchGame:
    return BenchGame(label, raw_pettingzoo(module), pettingzoo_adapter(module))


def raw_openspiel(game_string: str) -> Callable[[int, int], float]:
    """The plain pyspiel loop: random legal moves (every player at a simultaneous node), chance
    outcomes sampled, a new state at the end."""

    def play(moves: int, seed: int) -> float:
        import pyspiel

        game = pyspiel.load_game(game_string)
        rng = np.random.default_rng(seed)
        state = game.new_initial_state()
        played = 0
        start = time.perf_counter()
        while played < moves:
            if state.is_terminal():
                state = game.new_initial_state()
            elif state.is_chance_node():
                outcomes, probabilities = zip(*state.chance_outcomes(), strict=True)
                state.apply_action(outcomes[rng.choice(len(outcomes), p=probabilities)])
            elif state.is_simultaneous_node():
                joint = []
                for player in range(game.num_players()):
                    state.information_state_tensor(player)  # what a learner would observe
                    joint.append(int(rng.choice(state.legal_actions(player))))
                state.apply_actions(joint)
                played += game.num_players()
            else:
                state.information_state_tensor(state.current_player())
                state.apply_action(int(rng.choice(state.legal_actions())))
                played += 1
        return time.perf_counter() - start

    return play


def openspiel_game(label: str, game_string: str) -> BenchGame:
    from envs.openspiel import OpenSpielSource

    return BenchGame(
        label,
        raw_openspiel(game_string),
        lambda copies, seed: OpenSpielSource(game=game_string, copies=copies)(seed=seed),
    )


GAMES = [
    pettingzoo_game("connect_four", "pettingzoo.classic.connect_four_v3"),
    pettingzoo_game("tictactoe", "pettingzoo.classic.tictactoe_v3"),
    pettingzoo_game("leduc_holdem", "pettingzoo.classic.leduc_holdem_v4"),
    openspiel_game("openspiel:leduc_poker", "leduc_poker"),
    openspiel_game("openspiel:goofspiel(num_cards=4)", "goofspiel(num_cards=4)"),
]


def run_adapter(env: Any, moves: int, seed: int) -> float:
    """Seconds for ``moves`` random legal moves through the BaseEnv API of ``env``."""
    policies = {
        name: RandomLegalPolicy(action_spec=spec.action_spec, seed=seed + i)
        for i, (name, spec) in enumerate(env.behavior_specs.items())
    }
    env.reset()
    played = 0
    start = time.perf_counter()
    while played < moves:
        for name, policy in policies.items():
            decision, _ = env.get_steps(name)
            if len(decision):
                env.set_actions(name, policy.act(decision.obs, decision.action_mask))
                played += len(decision)
        env.step()
    elapsed = time.perf_counter() - start
    env.close()
    return elapsed


def bench(game: BenchGame, *, moves: int, copies: int, repeats: int = 3, seed: int = 0) -> dict:
    """Best of ``repeats`` runs of each side, alternated so that both see the same machine load."""
    raw_s = adapter_s = float("inf")
    for _ in range(repeats):
        raw_s = min(raw_s, game.raw(moves, seed))
        adapter_s = min(adapter_s, run_adapter(game.adapter(copies, seed), moves, seed))
    raw_rate, adapter_rate = moves / raw_s, moves / adapter_s
    return {
        "game": game.label,
        "moves": moves,
        "copies": copies,
        "raw_moves_per_s": round(raw_rate, 1),
        "adapter_moves_per_s": round(adapter_rate, 1),
        "ratio": round(adapter_rate / raw_rate, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--moves", type=int, default=20_000, help="moves per game and side")
    parser.add_argument("--copies", type=int, default=32, help="tables in the adapted env")
    labels = [game.label for game in GAMES]
    parser.add_argument("--games", nargs="*", default=labels, choices=labels, help="games to run")
    parser.add_argument("--repeats", type=int, default=3, help="runs per side; the best counts")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print one JSON line instead")
    args = parser.parse_args()
    # the versioned PettingZoo modules warn when imported by path, which is how they are named
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    rows = [
        bench(game, moves=args.moves, copies=args.copies, repeats=args.repeats, seed=args.seed)
        for game in GAMES
        if game.label in args.games
    ]
    if args.json:
        print(json.dumps(rows))
        return
    print(
        f"{'game':<16}{'moves':>8}{'copies':>8}{'raw moves/s':>14}{'adapter moves/s':>18}"
        f"{'adapter/raw':>13}"
    )
    for r in rows:
        print(
            f"{r['game']:<16}{r['moves']:>8}{r['copies']:>8}{r['raw_moves_per_s']:>14,.0f}"
            f"{r['adapter_moves_per_s']:>18,.0f}{r['ratio']:>13.2f}"
        )


if __name__ == "__main__":
    main()
