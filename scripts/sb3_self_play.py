"""Self-play inside Stable-Baselines3: our ghost against naive self-play, and its overhead.

Prints one table (and writes it as JSON with ``--json``):

- MaskablePPO on PettingZoo tic-tac-toe and connect four, trained with ``GhostCallback``
  (``opponent="ghost"``: opponents from the snapshot window) and with naive self-play
  (``opponent="latest"``: the opponent is always the learner's current policy), same steps and
  seeds; then the final policy plays ``--games`` games in each seat against the ``random`` and
  ``one_ply`` scripted players (win/loss rates per seat);
- PPO with ``GhostCallback`` on the built-in ``tennis`` against the ``medium`` scripted level;
- steps per second of each training run, and the ghost's overhead on tic-tac-toe: ghost and
  naive runs of equal steps alternated in one process (same SB3, same env), medians compared,
  with one opponent per swap (as naive self-play) and with four.

    python scripts/sb3_self_play.py --steps 100000 --seeds 3
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import attrs
import numpy as np
import torch

from envs.board_players import scripted_levels
from envs.sources import resolve_env
from ghost.evaluation import evaluate
from ghost.play.seated_matches import evaluate_both_seats

BOARD_GAMES = {
    "tictactoe": "pettingzoo:pettingzoo.classic.tictactoe_v3",
    "connect_four": "pettingzoo:pettingzoo.classic.connect_four_v3",
}
LEVELS = ("random", "one_ply")


def self_play_for(steps: int) -> dict[str, Any]:
    """``config/tictactoe.yaml``'s self-play cadence scaled to a run of ``steps``."""
    return {
        "save_steps": max(steps // 20, 500),
        "swap_steps": max(steps // 40, 250),
        "team_change": max(steps // 5, 1000),
        "window": 10,
        "opponents_per_swap": 4,
        "play_against_latest_model_ratio": 0.5,
    }


def train_board(
    game: str, *, mode: str, seed: int, steps: int, tables: int, hidden: int,
    opponents: int = 4,
) -> tuple[Any, Any, float]:  # fmt: skip
    from sb3_contrib import MaskablePPO

    from ghost.integrations.sb3 import GhostCallback, GhostVecEnv

    settings = {**self_play_for(steps), "opponents_per_swap": opponents}
    env = GhostVecEnv(BOARD_GAMES[game], num_arenas=tables, seed=seed, opponent=mode,
                      self_play=settings)  # fmt: skip
    model = MaskablePPO(
        "MlpPolicy", env, seed=seed, n_steps=max(8192 // tables, 8), batch_size=512, n_epochs=3,
        learning_rate=3e-4, ent_coef=0.01, gae_lambda=0.95, gamma=0.99,
        policy_kwargs={"net_arch": [hidden, hidden]},
    )  # fmt: skip
    start = time.perf_counter()
    model.learn(steps, callback=GhostCallback())
    return model, env, time.perf_counter() - start


def judge_board(game: str, model: Any, env: Any, *, games: int, seed: int) -> dict[str, float]:
    """Win and loss rate of ``model`` in each seat against each scripted level."""
    from ghost.integrations.sb3 import SB3Player

    source = resolve_env(BOARD_GAMES[game])
    spec = env.behavior_spec.action_spec
    player = SB3Player(model, spec)
    row: dict[str, float] = {}
    for level in LEVELS:
        make = scripted_levels(game)[level]
        both = evaluate_both_seats(
            lambda seed: attrs.evolve(source, copies=min(games, 64))(worker_id=0, seed=seed),
            policy={0: player, 1: player},
            opponent={s: make(action_spec=spec, seed=seed + s) for s in (0, 1)},
            games=games, seed=seed + 1000,
        )  # fmt: skip
        for result in both.seats:
            row[f"{level} seat{result.seat} win"] = result.win_rate
            row[f"{level} seat{result.seat} loss"] = result.loss_rate
    return row


def train_tennis(*, mode: str, seed: int, steps: int, opponents: int = 4) -> tuple[Any, Any, float]:
    from stable_baselines3 import PPO

    from ghost.integrations.sb3 import GhostCallback, GhostVecEnv

    self_play = {**self_play_for(steps), "opponents_per_swap": opponents}
    env = GhostVecEnv("tennis", num_arenas=32, seed=seed, opponent=mode, self_play=self_play)
    model = PPO("MlpPolicy", env, seed=seed, n_steps=64, batch_size=512, n_epochs=3,
                learning_rate=3e-4, policy_kwargs={"net_arch": [128, 128]})  # fmt: skip
    start = time.perf_counter()
    model.learn(steps, callback=GhostCallback())
    return model, env, time.perf_counter() - start


def judge_tennis(model: Any, env: Any, *, games: int, seed: int) -> dict[str, float]:
    from ghost.integrations.sb3 import SB3Player

    result = evaluate(game="tennis", policy=SB3Player(model, env.behavior_spec.action_spec),
                      opponent="medium", episodes=games, seed=seed + 1000)  # fmt: skip
    played = max(result.wins + result.draws + result.losses, 1)
    return {"medium win": result.wins / played, "medium loss": result.losses / played}


def measure_overhead(
    game: str, *, steps: int, repeats: int, tables: int, opponents: int
) -> dict[str, Any]:
    """Median steps per wall second and per CPU second of ghost and naive runs of ``steps``,
    alternated ``repeats`` times (CPU seconds of this process, which other load on the machine
    blurs less)."""
    rates: dict[str, dict[str, list[float]]] = {
        mode: {"wall": [], "cpu": []} for mode in ("ghost", "latest")
    }
    for repeat in range(repeats):
        for mode in ("ghost", "latest"):
            cpu = time.process_time()
            if game == "tennis":
                model, _, seconds = train_tennis(
                    mode=mode, seed=repeat, steps=steps, opponents=opponents
                )
            else:
                model, _, seconds = train_board(
                    game, mode=mode, seed=repeat, steps=steps, tables=tables, hidden=128,
                    opponents=opponents,
                )  # fmt: skip
            rates[mode]["cpu"].append(model.num_timesteps / (time.process_time() - cpu))
            rates[mode]["wall"].append(model.num_timesteps / seconds)
    row: dict[str, Any] = {"game": game, "opponents_per_swap": opponents, "steps": steps,
                           "repeats": repeats}  # fmt: skip
    for clock in ("wall", "cpu"):
        ghost = float(np.median(rates["ghost"][clock]))
        naive = float(np.median(rates["latest"][clock]))
        row[f"ghost steps/{clock} s"], row[f"naive steps/{clock} s"] = ghost, naive
        row[f"ghost slower ({clock})"] = 1 - ghost / naive
    return row


def build_parser() -> argparse.ArgumentParser:
    """The script's flags: steps and seeds of each part, games judged, which parts to run."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=100_000, help="steps per board-game run")
    parser.add_argument("--connect-four-steps", type=int, default=None)
    parser.add_argument("--tennis-steps", type=int, default=100_000)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--games", type=int, default=200, help="games per seat and level")
    parser.add_argument("--tables", type=int, default=64)
    parser.add_argument("--only", choices=[*BOARD_GAMES, "tennis", "overhead"], action="append")
    parser.add_argument("--overhead-steps", type=int, default=16384)
    parser.add_argument("--overhead-repeats", type=int, default=3)
    parser.add_argument("--overhead-games", nargs="+", default=["tictactoe", "tennis"],
                        choices=["tictactoe", "tennis"])  # fmt: skip
    parser.add_argument("--json", default=None, help="also write the rows here")
    return parser


def board_rows(args: argparse.Namespace, games: list[str]) -> list[dict[str, Any]]:
    """MaskablePPO on each board game in ``games``, ghost and naive, every seed; judged against
    the scripted levels."""
    rows = []
    for game in games:
        steps = args.connect_four_steps if game == "connect_four" else None
        steps = steps or args.steps
        hidden = 256 if game == "connect_four" else 128
        for seed in range(args.seeds):
            for mode in ("ghost", "latest"):
                model, env, seconds = train_board(
                    game, mode=mode, seed=seed, steps=steps, tables=args.tables, hidden=hidden
                )
                row = {"game": game, "algo": "MaskablePPO", "mode": mode, "seed": seed,
                       "steps": model.num_timesteps, "steps/s": model.num_timesteps / seconds,
                       "elo": env.state.rating}  # fmt: skip
                row.update(judge_board(game, model, env, games=args.games, seed=seed))
                rows.append(row)
                print(json.dumps(row), flush=True)
    return rows


def tennis_rows(args: argparse.Namespace) -> list[dict[str, Any]]:
    """PPO on tennis, ghost and naive, every seed; judged against the medium scripted level."""
    rows = []
    for seed in range(args.seeds):
        for mode in ("ghost", "latest"):
            model, env, seconds = train_tennis(mode=mode, seed=seed, steps=args.tennis_steps)
            row = {"game": "tennis", "algo": "PPO", "mode": mode, "seed": seed,
                   "steps": model.num_timesteps, "steps/s": model.num_timesteps / seconds,
                   "elo": env.state.rating}  # fmt: skip
            row.update(judge_tennis(model, env, games=args.games, seed=seed))
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def overhead_rows(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The ghost's overhead on each of ``--overhead-games``, with one opponent per swap and
    with four."""
    overhead = []
    cases = [(game, n) for game in args.overhead_games for n in (1, 4)]
    for game, opponents in cases:
        overhead.append(measure_overhead(
            game, steps=args.overhead_steps, repeats=args.overhead_repeats,
            tables=args.tables, opponents=opponents,
        ))  # fmt: skip
        print(json.dumps(overhead[-1]), flush=True)
    return overhead


def print_overhead(row: dict[str, Any]) -> None:
    """One line of ``measure_overhead``'s row: CPU and wall rates of ghost and naive."""
    print(f"overhead, {row['game']}, opponents_per_swap {row['opponents_per_swap']} (medians "
          f"of {row['repeats']} x {row['steps']} steps): ghost "
          f"{row['ghost steps/cpu s']:.0f} vs naive {row['naive steps/cpu s']:.0f} steps per "
          f"CPU s ({100 * row['ghost slower (cpu)']:+.1f}% slower), "
          f"{row['ghost steps/wall s']:.0f} vs {row['naive steps/wall s']:.0f} per wall s "
          f"({100 * row['ghost slower (wall)']:+.1f}%)")  # fmt: skip


def main() -> None:
    args = build_parser().parse_args()
    torch.set_num_threads(1)
    chosen = args.only or [*BOARD_GAMES, "tennis", "overhead"]
    rows = board_rows(args, [g for g in BOARD_GAMES if g in chosen])
    if "tennis" in chosen:
        rows += tennis_rows(args)
    overhead = overhead_rows(args) if "overhead" in chosen else []
    print_table(rows)
    for row in overhead:
        print_overhead(row)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"runs": rows, "overhead": overhead}, handle, indent=1)


def print_table(rows: list[dict[str, Any]]) -> None:
    """Means over seeds per game and mode, then the ghost's overhead per game."""
    if not rows:
        return
    keys = sorted({(r["game"], r["mode"]) for r in rows}, key=lambda k: (k[0], k[1] != "ghost"))
    skip = ("game", "algo", "mode", "seed")
    columns = list(dict.fromkeys(c for r in rows for c in r if c not in skip))
    print("\n| game | mode | seeds | " + " | ".join(columns) + " |")
    print("|" + "---|" * (len(columns) + 3))
    for game, mode in keys:
        group = [r for r in rows if r["game"] == game and r["mode"] == mode]
        cells = []
        for column in columns:
            values = [r[column] for r in group if column in r]
            cells.append(_cell(column, values))
        print(f"| {game} | {mode} | {len(group)} | " + " | ".join(cells) + " |")
    for game in sorted({r["game"] for r in rows}):
        rate = {m: np.mean([r["steps/s"] for r in rows if r["game"] == game and r["mode"] == m])
                for m in ("ghost", "latest")}  # fmt: skip
        if not np.isnan(rate["ghost"]) and not np.isnan(rate["latest"]):
            slower = 1 - rate["ghost"] / rate["latest"]
            print(f"{game}: ghost {rate['ghost']:.0f} steps/s, naive {rate['latest']:.0f} "
                  f"steps/s: ghost {100 * slower:+.1f}% slower")  # fmt: skip


def _cell(column: str, values: list[float]) -> str:
    if not values:
        return ""
    if column in ("steps", "steps/s", "elo"):
        return f"{np.mean(values):.0f}"
    return f"{np.mean(values):.2f}"


if __name__ == "__main__":
    main()
