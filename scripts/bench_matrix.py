"""Speed against ML-Agents on every built-in game, before and after a change, in one sitting.

    git worktree add /tmp/bench-before <older commit>
    python scripts/bench_matrix.py --before /tmp/bench-before --repeats 3
    python scripts/bench_matrix.py --before /tmp/bench-before --summary

Each repeat runs every game of ``GAMES`` (or ``--games``) through ``bench_vs_mlagents``: our
trainer on the ``--before`` tree, on the ``--after`` tree (default: this one) and ML-Agents 1.1
(``PEER_PYTHON``), one after the other. Each run appends one JSON row to ``--out`` (game, side,
repeat, commit of its tree, steps, agent steps per second, load average) as soon as it ends; rows
already there (same game, steps, side, repeat and commit) are skipped, so an interrupted matrix
goes on where it stopped. A run ends with the Markdown table of its rows (medians and ratios of
the medians); ``--summary`` prints that table for the latest commit of each side in ``--out``
without running anything.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import sys
import time
from pathlib import Path

import attrs

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_vs_mlagents as bench  # noqa: E402

ROOT = bench.ROOT
SIDES = ("before", "after", "ml-agents")


@attrs.frozen
class Game:
    """One row of the matrix: an environment, a config and the trainer steps of a run."""

    env: str
    config: str
    steps: int
    label: str


#: the matrix, as docs/benchmarks.md "Speed against ML-Agents" measures it
GAMES = {
    "tennis": Game("envs.tennis:make_env", "scripts/bench_tennis.yaml", 100_000, "PPO, 128×2"),
    "soccer": Game("envs.soccer:make_env", "config/soccer.yaml", 100_000, "PPO"),
    "soccer_poca": Game(
        "envs.soccer:make_env", "config/soccer_poca.yaml", 30_000, "POCA, 128 units"
    ),
    "strikers_vs_goalie": Game(
        "envs.strikers_vs_goalie:make_env", "config/strikers_vs_goalie.yaml", 100_000, "PPO"
    ),
    "soccer_twos_poca": Game(
        "envs.soccer:make_env",
        "tests/fixtures/mlagents_configs/SoccerTwos-poca.yaml",
        30_000,
        "ML-Agents' POCA, 512 units",
    ),
    "volley": Game("envs.volley:make_env", "config/volley.yaml", 100_000, "PPO"),
    "tennis_memory": Game(
        "envs.tennis:make_env", "scripts/bench_tennis_memory.yaml", 50_000, "PPO, LSTM 128/64"
    ),
}


def row_key(row: dict) -> tuple:
    """What makes a run the same run: game, steps, side, repeat and commit."""
    return row["game"], row["steps"], row["side"], row["repeat"], row["commit"]


def read_rows(path: Path) -> list[dict]:
    """The rows of ``path`` (none when it does not exist yet)."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def measure(game: Game, side: str, tree: Path, steps: int) -> dict:
    """One run of ``side`` on ``tree``; the runner's JSON line."""
    if side == "ml-agents":
        return bench.run_peer(game.config, game.env, steps, tree=tree)
    return bench.run_ours(game.config, game.env, steps, tree=tree)


def run_once(name: str, side: str, tree: Path, repeat: int, steps: int, commit: str) -> dict:
    """Run one cell of the matrix and describe it as a row.

    Args:
        name: key of ``GAMES``.
        side: ``before``, ``after`` or ``ml-agents``.
        tree: checkout whose code trains (ML-Agents: whose environments it steps).
        repeat: 1-based repeat number.
        steps: trainer steps of every behavior.
        commit: ``tree``'s commit, as ``bench_vs_mlagents.tree_commit`` gives it.

    Returns:
        The row to append: the game, the side, its tree and commit, and the measured rates.
    """
    game = GAMES[name]
    load = os.getloadavg()[0]
    started = time.perf_counter()
    result = measure(game, side, tree, steps)
    return {
        "game": name,
        "env": game.env,
        "config": game.config,
        "steps": steps,
        "side": side,
        "repeat": repeat,
        "commit": commit,
        "tree": str(tree),
        "agent_steps_per_s": result["agent_steps_per_s"],
        "trainer_steps_per_s": result.get("trainer_steps_per_s"),
        "wall_s": result["wall_s"],
        "process_wall_s": round(time.perf_counter() - started, 1),
        "load_before": round(load, 2),
        "finished": datetime.datetime.now().isoformat(timespec="seconds"),
        "peer_python": bench.PEER_PYTHON if side == "ml-agents" else sys.executable,
    }


def run_matrix(args: argparse.Namespace, trees: dict[str, Path], commits: dict[str, str]) -> None:
    """Every repeat, every game, every side in turn; append each new row to ``args.out``."""
    done = {row_key(row) for row in read_rows(args.out)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    for repeat in range(1, args.repeats + 1):
        for name in args.games:
            steps = args.steps or GAMES[name].steps
            for side, tree in trees.items():
                key = (name, steps, side, repeat, commits[side])
                if key in done:
                    continue
                row = run_once(name, side, tree, repeat, steps, commits[side])
                with args.out.open("a") as out:
                    out.write(json.dumps(row) + "\n")
                print(
                    f"[{repeat}/{args.repeats}] {name:19s} {side:9s} {commits[side]:14s} "
                    f"{row['agent_steps_per_s']:>9.0f} agent-steps/s  "
                    f"(process {row['process_wall_s']:.1f} s, load {row['load_before']})",
                    flush=True,
                )


def chosen_commits(rows: list[dict], wanted: dict[str, str]) -> dict[str, str]:
    """The commit to show for each side: ``wanted``'s, else that of the side's last row."""
    chosen = {}
    for side in SIDES:
        seen = [row["commit"] for row in rows if row["side"] == side]
        if side in wanted:
            chosen[side] = wanted[side]
        elif seen:
            chosen[side] = seen[-1]
    return chosen


def _median(rows: list[dict], side: str, commit: str | None) -> float | None:
    rates = [r["agent_steps_per_s"] for r in rows if r["side"] == side and r["commit"] == commit]
    return statistics.median(rates) if rates else None


def _cell(value: float | None, digits: int = 0) -> str:
    return "–" if value is None else f"{value:,.{digits}f}"


def _ratio(top: float | None, bottom: float | None) -> float | None:
    return None if top is None or bottom is None else top / bottom


def summary_table(rows: list[dict], wanted: dict[str, str]) -> str:
    """The Markdown table of ``rows``: per game and steps, each side's median and the ratios.

    Args:
        rows: rows as ``run_once`` writes them.
        wanted: commit per side to show (``before``, ``after``, ``ml-agents``); a side left out
            shows the commit of its last row.

    Returns:
        A header naming the commits, then one table line per game and step count.
    """
    commits = chosen_commits(rows, wanted)
    lines = [
        "commits: " + ", ".join(f"{side} {commit}" for side, commit in commits.items()),
        "",
        "| game | config | steps | repeats | ours before | ours after | ML-Agents 1.1 "
        "| ratio before | ratio after | after / before |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    cells = sorted(
        {(r["game"], r["steps"]) for r in rows}, key=lambda c: (list(GAMES).index(c[0]), c[1])
    )
    for name, steps in cells:
        mine = [r for r in rows if r["game"] == name and r["steps"] == steps]
        before, after, peer = (_median(mine, side, commits.get(side)) for side in SIDES)
        repeats = max(
            sum(r["side"] == side and r["commit"] == commits.get(side) for r in mine)
            for side in SIDES
        )
        game = GAMES[name]
        lines.append(
            f"| `{name}` | `{game.config}` ({game.label}) | {steps:,} | {repeats} "
            f"| {_cell(before)} | {_cell(after)} | {_cell(peer)} "
            f"| {_cell(_ratio(before, peer), 2)} | {_cell(_ratio(after, peer), 2)} "
            f"| {_cell(_ratio(after, before), 2)} |"
        )
    return "\n".join(lines)


def parse_args() -> argparse.Namespace:
    """The command line (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", nargs="+", choices=list(GAMES), default=list(GAMES))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--before", type=Path, default=None, help="older checkout (git worktree)")
    parser.add_argument(
        "--after", type=Path, default=ROOT, help="newer checkout (default: this one)"
    )
    parser.add_argument(
        "--steps", type=int, default=None, help="trainer steps of every game (default: GAMES')"
    )
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "bench_matrix.jsonl")
    parser.add_argument(
        "--summary", action="store_true", help="print the table of --out and run nothing"
    )
    args = parser.parse_args()
    for option in ("before", "after"):
        tree = getattr(args, option)
        if tree is not None and not (tree / "envs").is_dir():
            parser.error(f"--{option} {tree}: not a checkout of this project (no envs/ there)")
    return args


def main() -> None:
    """Run the matrix (unless ``--summary``), then print its table."""
    args = parse_args()
    trees = {"after": args.after.resolve(), "ml-agents": args.after.resolve()}
    if args.before is not None:
        trees = {"before": args.before.resolve(), **trees}
    commits = {side: bench.tree_commit(tree) for side, tree in trees.items()}
    if args.summary:
        # the latest rows of each side: the trees may have moved on since they ran
        print(summary_table(read_rows(args.out), {}))
        return
    run_matrix(args, trees, commits)
    print(summary_table(read_rows(args.out), commits))


if __name__ == "__main__":
    main()
