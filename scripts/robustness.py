"""Self-play methods × robustness yardsticks: each method trained with several seeds, then scored
against opponents it never met.

Yardsticks:

- ``tennis``, ``soccer``, ``strikers_vs_goalie``: the final policy's win rate against the scripted
  ``strong`` level (and ``medium``), greedy, 200 games at evaluation seed 1. No scripted level is
  in training.
- ``leduc``, ``goofspiel`` (OpenSpiel): the exact exploitability of the final policy (the last row of
  ``run_logs/exploitability.csv``, scored when the run ends).
- With ``--exploiter-steps N`` each control-game run (tennis, soccer, strikers) is also scored by an
  exploiter (``ghost-eval exploit``): a fresh learner trained ``N`` steps against the frozen final
  policy, then 200 games per side. ``exploiter wins`` is its wins over *all* games (a rally timeout
  is not a win), averaged over sides: lower is more robust, and it does not saturate the way a
  scripted level does. The scripted levels are reported over all games too (``... of all``),
  beside the share of games that ended in a timeout.

A method is the shipped config of the game with its ``self_play:`` section replaced: ``default`` keeps
only ML-Agents' own keys (latest-ratio sampling, one opponent per swap); the others add our keys on
top. Each (method, yardstick, seed) run appends one JSON line to ``--out``; ``--summary`` prints the
median and range per cell from that file.

    python scripts/robustness.py --methods default robust --yardsticks tennis leduc --seeds 0 1 2
    python scripts/robustness.py --summary --out results/robustness.jsonl
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

#: yardstick → (shipped config, trainer steps per behavior, sides scored)
YARDSTICKS: dict[str, tuple[str, int, tuple[str | None, ...]]] = {
    "tennis": ("tennis", 1_000_000, (None,)),
    "soccer": ("soccer", 4_000_000, (None,)),
    "strikers_vs_goalie": ("strikers_vs_goalie", 2_500_000, ("Striker", "Goalie")),
    "leduc": ("leduc_poker", 500_000, ()),
    "goofspiel": ("goofspiel", 500_000, ()),
}
MLAGENTS_KEYS = (
    "save_steps",
    "team_change",
    "swap_steps",
    "window",
    "play_against_latest_model_ratio",
    "initial_elo",
)
#: method → keys merged into the ML-Agents-style ``self_play:`` section and ``hyperparameters``
METHODS: dict[str, dict[str, dict[str, Any]]] = {
    "default": {},
    "opponents_per_swap": {"self_play": {"opponents_per_swap": 8}},
    "league": {"self_play": {"league": {"main_exploiters": 1, "league_exploiters": 1}}},
    "magnet": {"hyperparameters": {"magnet_strength": 0.1}},
    "magnet_0.03": {"hyperparameters": {"magnet_strength": 0.03}},
    "magnet_0.3": {"hyperparameters": {"magnet_strength": 0.3}},
    "magnet_1": {"hyperparameters": {"magnet_strength": 1.0}},
    "magnet_0.3_beta_0.03": {"hyperparameters": {"magnet_strength": 0.3, "beta": 0.03}},
    "magnet_0.5_rate_0.02": {"hyperparameters": {"magnet_strength": 0.5, "magnet_rate": 0.02}},
    "magnet_0.3_rate_0.01": {"hyperparameters": {"magnet_strength": 0.3, "magnet_rate": 0.01}},
    "magnet_0.3_rate_0.2": {"hyperparameters": {"magnet_strength": 0.3, "magnet_rate": 0.2}},
    "magnet_0.3_rate_0.01_beta_0.03": {
        "hyperparameters": {"magnet_strength": 0.3, "magnet_rate": 0.01, "beta": 0.03}
    },
    "magnet_0.3_rate_0.003": {"hyperparameters": {"magnet_strength": 0.3, "magnet_rate": 0.003}},
    "magnet_0.5_rate_0.01": {"hyperparameters": {"magnet_strength": 0.5, "magnet_rate": 0.01}},
    "magnet_0.2_rate_0.01": {"hyperparameters": {"magnet_strength": 0.2, "magnet_rate": 0.01}},
    "magnet_0.2_rate_0.003": {"hyperparameters": {"magnet_strength": 0.2, "magnet_rate": 0.003}},
    "magnet_0.1_rate_0.003": {"hyperparameters": {"magnet_strength": 0.1, "magnet_rate": 0.003}},
    "magnet_0.2_rate_0.001": {"hyperparameters": {"magnet_strength": 0.2, "magnet_rate": 0.001}},
    "magnet_0.15_rate_0.01": {"hyperparameters": {"magnet_strength": 0.15, "magnet_rate": 0.01}},
    "uniform_8": {"self_play": {"opponents_per_swap": 8, "sampling": {"strategy": "uniform"}}},
    "average_policy": {"self_play": {"average_policy": {"enabled": True}}},
    "robust": {"self_play": {"preset": "robust"}},
    "window_30": {"self_play": {"window": 30}},
    "opponents_8_window_30": {"self_play": {"opponents_per_swap": 8, "window": 30}},
}
LEVELS = ("medium", "strong")


def method_config(yardstick: str, method: str, steps: int | None = None) -> dict[str, Any]:
    """The shipped config of ``yardstick``'s game with ``method``'s self-play section
    (``steps``: trainer steps per behavior instead of the yardstick's own)."""
    name, default_steps, _ = YARDSTICKS[yardstick]
    steps = steps or default_steps
    config = yaml.safe_load((ROOT / "config" / f"{name}.yaml").read_text())
    for behavior in config["behaviors"].values():
        shipped = behavior.get("self_play", {})
        self_play = {key: shipped[key] for key in MLAGENTS_KEYS if key in shipped}
        self_play["preset"] = "none"  # ML-Agents' settings unless the method names a preset
        if "exploitability_every" in shipped:
            self_play["exploitability_every"] = 100_000
        self_play.update(METHODS[method].get("self_play", {}))
        behavior["self_play"] = self_play
        behavior["hyperparameters"].update(METHODS[method].get("hyperparameters", {}))
        behavior["max_steps"] = steps
    return config


def train(config: dict[str, Any], run: Path, seed: int) -> float:
    path = run.parent / f"{run.name}.yaml"
    path.write_text(yaml.safe_dump(config))
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "ghost.running.cli", str(path), "--run-id", run.name,
         "--results-dir", str(run.parent), "--force", "--seed", str(seed)],
        cwd=ROOT, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    return time.perf_counter() - started


def exports_average(run: Path) -> bool:
    config = yaml.safe_load((run / "configuration.yaml").read_text())
    return any(
        (b.get("self_play") or {}).get("average_policy", {}).get("enabled")
        for b in config["behaviors"].values()
    )


def score_scripted(game: str, run: Path, sides: tuple[str | None, ...]) -> dict[str, Any]:
    """Win rates of the exported policy (and, where that is the average policy, of the last
    learner too, as ``learner: ...``) against the scripted levels."""
    from ghost.play.head_to_head import evaluate

    scores: dict[str, Any] = {}
    for side in sides:
        behavior = side or next(p.stem for p in run.glob("*.pt"))
        policies = {"": run / f"{behavior}.pt"}
        if exports_average(run):
            checkpoints = sorted((run / behavior / "checkpoints").glob("*.pt"),
                                 key=lambda p: int(p.stem.rsplit("-", 1)[1]))  # fmt: skip
            policies["learner: "] = checkpoints[-1]
        for label, policy in policies.items():
            for level in LEVELS:
                result = evaluate(game=game, policy=str(policy), opponent=level,
                                  episodes=200, seed=1, deterministic=True, side=side)  # fmt: skip
                scores[f"{label}{behavior} vs {level}"] = result.win_rate
                scores[f"{label}{behavior} vs {level} decided"] = result.wins + result.losses
                scores[f"{label}{behavior} vs {level} of all"] = result.wins / result.episodes
                scores[f"{label}{behavior} vs {level} timeouts"] = (
                    result.interrupted / result.episodes
                )
    return scores


def score_exploiter(run: Path, steps: int, seed: int) -> dict[str, Any]:
    """An exploiter of ``run`` trained ``steps`` steps: its wins over all games, per side and
    averaged over sides (lower: ``run`` is more robust)."""
    from ghost.evaluation.builtin_exploiter import exploit_run

    exploits = exploit_run(run, steps, episodes=200, seed=seed)
    scores: dict[str, Any] = {}
    for exploit in exploits:
        result = exploit.result
        scores[f"exploiter wins as {exploit.side}"] = result.wins / result.episodes
        scores[f"exploiter timeouts as {exploit.side}"] = result.interrupted / result.episodes
    scores["exploiter wins"] = statistics.mean(
        exploit.result.wins / exploit.result.episodes for exploit in exploits
    )
    return scores


def score_exploitability(run: Path) -> dict[str, Any]:
    lines = (run / "run_logs" / "exploitability.csv").read_text().split()
    rows = [line.split(",") for line in lines if line[:1].isdigit()]
    # the last row scores the exported policy; with an average policy the one before is the
    # last learner's, at the same step
    scores = {"exploitability": float(rows[-1][1]), "step": int(rows[-1][0])}
    if exports_average(run) and len(rows) > 1 and rows[-2][0] == rows[-1][0]:
        scores["learner: exploitability"] = float(rows[-2][1])
    return scores


def run_one(
    method: str,
    yardstick: str,
    seed: int,
    workdir: Path,
    *,
    steps: int | None = None,
    exploiter_steps: int | None = None,
) -> dict[str, Any]:
    run = workdir / f"{yardstick}-{method}-seed{seed}"
    wall = train(method_config(yardstick, method, steps), run, seed)
    game, default_steps, sides = YARDSTICKS[yardstick]
    scores = score_scripted(game, run, sides) if sides else score_exploitability(run)
    if sides and exploiter_steps:
        scores.update(score_exploiter(run, exploiter_steps, seed))
    return {"method": method, "yardstick": yardstick, "seed": seed, "wall_s": round(wall, 1),
            "steps": steps or default_steps, **scores}  # fmt: skip


def append_row(path: Path, row: dict[str, Any]) -> None:
    """Print ``row`` and append it to the JSON-lines file ``path``."""
    print(json.dumps(row), flush=True)
    with path.open("a") as out:
        out.write(json.dumps(row) + "\n")


def summarize(path: Path) -> str:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    cells: dict[tuple[str, str, str], list[float]] = {}
    for row in rows:
        for key, value in row.items():
            if key in ("method", "yardstick", "seed", "wall_s", "step", "steps") or value is None:
                continue
            if value != value:  # NaN: no game was decided (tennis rally timeouts)
                continue
            cells.setdefault((row["yardstick"], key, row["method"]), []).append(value)
    lines = []
    for (yardstick, metric, method), values in sorted(cells.items()):
        lines.append(
            f"{yardstick:20s} {metric:22s} {method:20s} median {statistics.median(values):.3f} "
            f"range {min(values):.3f}-{max(values):.3f} (n={len(values)})"
        )
    return "\n".join(lines)


#: the columns of ``--table``: (header, row key or key ending, format)
TABLE_COLUMNS = (
    ("exploiter wins", "exploiter wins"),
    ("vs medium (all games)", "vs medium of all"),
    ("vs medium timeouts", "vs medium timeouts"),
    ("vs strong (all games)", "vs strong of all"),
    ("vs strong timeouts", "vs strong timeouts"),
)


def markdown_table(path: Path) -> str:
    """One Markdown row per (yardstick, method, side): each column's value per seed, then the
    median (the control-game yardsticks of ``--exploiter-steps`` runs)."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    cells: dict[tuple[str, str, str], dict[str, dict[int, float]]] = {}
    for row in rows:
        for header, ending in TABLE_COLUMNS:
            for key, value in row.items():
                if not isinstance(value, float) or not key.endswith(ending):
                    continue
                side = key[: -len(ending)].strip() if key != ending else ""
                if key.startswith("learner: ") or "exploiter" in side:
                    continue
                if YARDSTICKS[row["yardstick"]][2] == (None,):
                    side = ""  # one behavior plays every side
                cell = cells.setdefault((row["yardstick"], row["method"], side), {})
                cell.setdefault(header, {})[row["seed"]] = value
    headers = [header for header, _ in TABLE_COLUMNS]
    lines = [
        "| game | method | side | " + " | ".join(headers) + " |",
        "|---" * (3 + len(headers)) + "|",
    ]
    for (yardstick, method, side), cell in sorted(cells.items()):
        parts = []
        for header in headers:
            values = cell.get(header, {})
            if not values:
                parts.append("")
                continue
            seeds = " / ".join(f"{values[seed]:.2f}" for seed in sorted(values))
            parts.append(f"{seeds} (median {statistics.median(values.values()):.2f})")
        lines.append(f"| {yardstick} | {method} | {side} | " + " | ".join(parts) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--methods", nargs="+", default=["default", "robust"], choices=METHODS)
    parser.add_argument("--yardsticks", nargs="+", default=list(YARDSTICKS), choices=YARDSTICKS)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument(
        "--steps", type=int, help="trainer steps per behavior instead of each yardstick's own"
    )
    parser.add_argument(
        "--exploiter-steps", type=int,
        help="also train an exploiter of each control-game run for this many steps and score it",
    )  # fmt: skip
    parser.add_argument("--out", type=Path, default=Path("results/robustness.jsonl"))
    parser.add_argument("--keep", type=Path, help="keep the runs in this folder")
    parser.add_argument("--summary", action="store_true", help="only summarize --out")
    parser.add_argument(
        "--table", action="store_true", help="only print --out as a Markdown table, seed by seed"
    )
    args = parser.parse_args()
    if args.table:
        print(markdown_table(args.out))
        return
    if not args.summary:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory() as tmp:
            workdir = args.keep or Path(tmp)
            workdir.mkdir(parents=True, exist_ok=True)
            for yardstick in args.yardsticks:
                for method in args.methods:
                    for seed in args.seeds:
                        row = run_one(
                            method, yardstick, seed, workdir,
                            steps=args.steps, exploiter_steps=args.exploiter_steps,
                        )  # fmt: skip
                        append_row(args.out, row)
    print(summarize(args.out))


if __name__ == "__main__":
    main()
