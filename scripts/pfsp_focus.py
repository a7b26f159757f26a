"""Where PFSP sends the learner's games: shares of each pool member on a built-in game.

Trains ``config/<game>.yaml`` with scripted fixed opponents in the pool (``random`` and
``strong`` by default) under the given sampling strategy, then prints, per pool member, the share
of opponent draws and the learner's rolling win rate against it. With ``pfsp`` (``hard``) the
share should go to the members the learner loses to.

    python scripts/pfsp_focus.py --game tennis --steps 150000 --strategy pfsp
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import attrs
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from envs.games import make_game  # noqa: E402
from envs.stepping import InProcessStepper  # noqa: E402
from ghost.config.loader import load_options  # noqa: E402
from ghost.core.settings import FixedOpponentSettings, SamplingSettings  # noqa: E402
from ghost.running.session import SelfPlaySession  # noqa: E402
from trainers.run_files.layout import RunLayout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--game", default="tennis")
    parser.add_argument("--steps", type=int, default=150000)
    parser.add_argument("--strategy", default="pfsp")
    parser.add_argument("--levels", nargs="+", default=["random", "strong"])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(1)
    options = load_options(f"config/{args.game}.yaml")
    name, settings = next(iter(options.behaviors.items()))
    fixed = [FixedOpponentSettings(name=level, scripted=level) for level in args.levels]
    self_play = attrs.evolve(settings.self_play, fixed_opponents=fixed,
                             sampling=SamplingSettings(strategy=args.strategy))  # fmt: skip
    settings = attrs.evolve(settings, max_steps=args.steps, self_play=self_play)
    options = attrs.evolve(options, behaviors={name: settings})
    with tempfile.TemporaryDirectory() as out:
        session = SelfPlaySession(
            options=options, stepper=InProcessStepper(make_game(args.game, seed=args.seed)),
            layout=RunLayout(out), seed=args.seed,
        )  # fmt: skip
        session.run()
    ghost = session.trainers[name]
    total = sum(ghost.state.draw_counts.values())
    rows = {}
    for key, count in sorted(ghost.state.draw_counts.items(), key=lambda item: -item[1]):
        rows[key] = {"share": round(count / total, 3),
                     "learner_win_rate": round(ghost.win_rates.rate(key, default=float("nan")), 3),
                     "games": ghost.win_rates.games(key)}  # fmt: skip
        print(f"{key:14s} share {rows[key]['share']:.3f}  learner win rate "
              f"{rows[key]['learner_win_rate']:.3f} over last {rows[key]['games']} games")  # fmt: skip
    fixed_share = {k: v["share"] for k, v in rows.items() if k.startswith("fixed:")}
    print(json.dumps({"game": args.game, "strategy": args.strategy, "steps": args.steps,
                      "draws": total, "fixed_shares": fixed_share, "members": rows}))  # fmt: skip


if __name__ == "__main__":
    main()
