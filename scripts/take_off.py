"""Take-off: how many trainer steps a self-play learner needs to first beat a scripted level.

**The measure.** A behavior's *take-off step* is the first checkpoint step at which its greedy
policy wins at least ``--rate`` of ``--games`` games against the scripted ``--level`` (the other
sides scripted too, evaluation seed 1). Checkpoints come every ``--every`` trainer steps of that
behavior; no scripted player is ever in training. A run that has not taken off by ``--budget``
steps is *censored*: its take-off counts as ``--budget`` in the median and spread, and is marked.
The run stops as soon as it takes off, so a fast run costs little.

**What is reported** per method, over ``--seeds``: the median take-off step and its spread, the
interquartile range (and min-max), in the behavior's own trainer steps.

    python scripts/take_off.py --game strikers_vs_goalie --behavior Striker --level weak \
        --methods default catch_up --seeds 0 1 2 3 4

A method is the shipped config of the game with ML-Agents' ``self_play`` keys only (as
``scripts/robustness.py``) plus the method's keys. Each seed appends one JSON line to ``--out``;
``--summary`` prints the table from that file.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from robustness import METHODS, YARDSTICKS, append_row, method_config  # noqa: E402

#: mechanisms measured for take-off, on top of robustness.py's methods
TAKE_OFF_METHODS: dict[str, dict[str, dict[str, Any]]] = {
    "catch_up": {"self_play": {"catch_up": {"below": 0.2, "max_extra_turns": 3}}},
    "catch_up_half": {"self_play": {"catch_up": {"below": 0.5, "max_extra_turns": 10}}},
    "curiosity": {"reward_signals": {"curiosity": {"gamma": 0.99, "strength": 0.02}}},
}


class TakeOffWatch:
    """A ``ghost.train`` callback: at every checkpoint, score ``behavior`` against ``level``;
    stop the run once it wins at least ``rate``."""

    def __init__(self, *, game: str, behavior: str, level: str, rate: float, games: int) -> None:
        self.game, self.behavior, self.level = game, behavior, level
        self.rate, self.games = rate, games
        self.curve: list[tuple[int, float]] = []
        self.take_off: int | None = None

    def on_checkpoint(self, checkpoint: Any) -> bool | None:
        from ghost.play.head_to_head import evaluate

        step = checkpoint.steps.get(self.behavior)
        if step is None or step == 0:
            return None
        folder = checkpoint.index_path.parent / self.behavior / "checkpoints"
        policy = folder / f"{self.behavior}-{step}.pt"
        result = evaluate(game=self.game, policy=str(policy), opponent=self.level,
                          episodes=self.games, seed=1, deterministic=True,
                          side=self.behavior)  # fmt: skip
        rate = result.wins / result.episodes
        self.curve.append((step, round(rate, 3)))
        print(f"  {self.behavior} step {step}: {rate:.3f} against {self.level}", flush=True)
        if rate >= self.rate:
            self.take_off = step
            return False
        return None


def config_for(game: str, method: str, budget: int, every: int) -> dict[str, Any]:
    """The method's config with ``budget`` steps and a checkpoint every ``every`` steps."""
    base = method if method in METHODS else "default"
    config = method_config(game, base, budget)
    extra = TAKE_OFF_METHODS.get(method, {})
    for behavior in config["behaviors"].values():
        behavior["checkpoint_interval"] = every
        behavior["keep_checkpoints"] = 2
        behavior["self_play"].update(extra.get("self_play", {}))
        behavior["reward_signals"].update(extra.get("reward_signals", {}))
    return config


def run_seed(args: argparse.Namespace, method: str, seed: int) -> dict[str, Any]:
    import ghost

    watch = TakeOffWatch(game=args.game, behavior=args.behavior, level=args.level,
                         rate=args.rate, games=args.games)  # fmt: skip
    config = config_for(args.game, method, args.budget, args.every)
    with tempfile.TemporaryDirectory() as tmp:
        ghost.train(config, run_id=f"{method}-{seed}", results_dir=tmp, seed=seed,
                    callbacks=[watch], verbose=0)  # fmt: skip
    return {
        "game": args.game, "behavior": args.behavior, "level": args.level, "rate": args.rate,
        "method": method, "seed": seed, "budget": args.budget,
        "take_off": watch.take_off, "curve": watch.curve,
    }  # fmt: skip


def summarize(path: Path) -> str:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for row in rows:
        key = (row["game"], row["behavior"], row["level"], row["rate"], row["method"])
        groups.setdefault(key, []).append(row)
    lines = []
    for (game, behavior, level, rate, method), group in sorted(groups.items()):
        steps = [r["take_off"] if r["take_off"] is not None else r["budget"] for r in group]
        censored = sum(r["take_off"] is None for r in group)
        q1, q3 = np.percentile(steps, [25, 75])
        lines.append(
            f"{game} {behavior} >= {rate} vs {level}, {method:10s} n={len(group)}: median "
            f"{statistics.median(steps):,.0f}, IQR {q3 - q1:,.0f} ({q1:,.0f}-{q3:,.0f}), range "
            f"{min(steps):,}-{max(steps):,}, not taken off by the budget: {censored}; per seed "
            + ", ".join(f"{r['seed']}: {r['take_off'] or '>' + str(r['budget'])}" for r in group)
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--game", default="strikers_vs_goalie", choices=YARDSTICKS)
    parser.add_argument("--behavior", default="Striker")
    parser.add_argument("--level", default="weak")
    parser.add_argument("--rate", type=float, default=0.5)
    parser.add_argument("--games", type=int, default=100)
    parser.add_argument("--every", type=int, default=50_000)
    parser.add_argument("--budget", type=int, default=1_500_000)
    parser.add_argument("--methods", nargs="+", default=["default"],
                        choices=[*METHODS, *TAKE_OFF_METHODS])  # fmt: skip
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--out", type=Path, default=Path("results/take_off.jsonl"))
    parser.add_argument("--summary", action="store_true", help="only summarize --out")
    args = parser.parse_args()
    if not args.summary:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        for method in args.methods:
            for seed in args.seeds:
                append_row(args.out, run_seed(args, method, seed))
    print(summarize(args.out))


if __name__ == "__main__":
    main()
