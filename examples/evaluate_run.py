"""Evaluating a trained run from Python: a match, the run's snapshots and a tournament.

The script first trains built-in Tennis briefly (a snapshot every 2000 steps), then judges the run
with ``ghost.evaluation``, the Python side of ``ghost-eval``:

- ``evaluate``: the final policy against a scripted level, with a 95% interval on its win rate;
- ``evaluate_run``: every snapshot against the same level (the run's progress);
- ``play_tournament``: every snapshot, the final policy and the level against each other, rated.

Run: ``python examples/evaluate_run.py`` (seconds); ``--steps 300000 --games 200`` for a run
that learns and figures worth reading (``ghost-eval match results/tennis-eval --against weak``
prints the same match from the command line).
"""

import argparse
from pathlib import Path

import yaml

import ghost
from ghost.evaluation import evaluate, evaluate_run
from ghost.evaluation.tournament import play_tournament

TENNIS = Path(__file__).resolve().parents[1] / "config" / "tennis.yaml"

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=8000, help="training steps")
    parser.add_argument("--games", type=int, default=20, help="games per evaluation")
    parser.add_argument("--level", default="weak", help="scripted level: random, weak, medium...")
    args = parser.parse_args()
    config = yaml.safe_load(TENNIS.read_text())
    config["behaviors"]["Tennis"]["self_play"]["save_steps"] = 2000
    run = ghost.train(config, run_id="tennis-eval", max_steps=args.steps, force=True, verbose=0)
    policy, run_dir = run.policies["Tennis"], run.run_dir

    match = evaluate(game="tennis", policy=policy, opponent=args.level, episodes=args.games)
    low, high = match.win_ci
    counts = f"{match.wins} wins, {match.draws} draws, {match.losses} losses"
    print(f"final policy vs {args.level}: {counts}, win rate {match.win_rate:.2f}")
    print(f"  95% interval of the win rate: {low:.2f} to {high:.2f}")

    progress = evaluate_run(run_dir, "Tennis", opponent=args.level, episodes=args.games)
    for snapshot in progress.snapshots:
        rate = snapshot.result.win_rate
        print(f"snapshot {snapshot.snapshot_id} (step {snapshot.step}): win rate {rate:.2f}")

    table = play_tournament(
        run_dir, games_per_pair=max(args.games // 5, 2), include_levels=[args.level]
    )
    for row in table.rows:  # best first
        print(f"tournament: {row.player.name:>24} Elo {row.elo:6.0f} ± {row.elo_ci95:.0f}")
