"""Training callbacks: watch a self-play run's summaries, snapshots and team changes, and stop it.

``ghost.train(callbacks=[...])`` tells a ``ghost.SelfPlayCallback`` of every summary (the values
TensorBoard gets), snapshot, team change and checkpoint. An event that returns ``False`` stops
the run: a checkpoint and the final policies are written first, and ``resume=True`` continues it.

Run: ``python examples/callbacks.py`` (built-in Tennis, seconds); ``--steps 300000 --target-elo
1500`` trains until the learner is rated 1500, at most 300k steps.
"""

import argparse
from pathlib import Path

import yaml

import ghost

TENNIS = Path(__file__).resolve().parents[1] / "config" / "tennis.yaml"


class Watch(ghost.SelfPlayCallback):
    def __init__(self, target_elo: float) -> None:
        self.target_elo = target_elo

    def on_summary(self, summary):
        elo = summary.values["Self-play/ELO"]
        reward = summary.values.get("Environment/Cumulative Reward", float("nan"))
        print(f"step {summary.step:6d}: Elo {elo:6.1f}, mean reward {reward:+.3f}")
        return elo < self.target_elo  # False: stop the run here

    def on_snapshot(self, snapshot):
        print(
            f"step {snapshot.step:6d}: snapshot {snapshot.snapshot_id} (Elo {snapshot.rating:.1f})"
        )

    def on_team_change(self, change):
        print(f"team {change.learning_team} learns now (team change {change.count})")

    def on_checkpoint(self, checkpoint):
        print(f"checkpoint at {checkpoint.steps}: {checkpoint.index_path.name}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=12000, help="at most this many steps")
    parser.add_argument("--target-elo", type=float, default=1500.0, help="stop once rated this")
    args = parser.parse_args()
    config = yaml.safe_load(TENNIS.read_text())
    tennis = config["behaviors"]["Tennis"]  # events come more often than in the shipped config
    tennis["summary_freq"] = tennis["self_play"]["save_steps"] = 2000
    tennis["self_play"]["team_change"] = 4000
    result = ghost.train(
        config,
        run_id="tennis-callbacks",
        max_steps=args.steps,
        force=True,
        verbose=0,  # the callback prints instead of the run's log
        callbacks=[Watch(args.target_elo)],
    )
    print(f"stopped early: {result.stopped_early}; Elo {result.ratings['Tennis']:.1f}")
