"""``GhostTrainer``: self-play around any registered trainer, without changing it.

Per behavior name with ``self_play``. Step batches of the learning team go to the wrapped trainer;
those of ghosted teams only add to the ghost step count. The learner's weights are snapshotted
every ``save_steps`` trainer steps into a window (the untrained policy is the first snapshot).
Ghosted teams act with ``OpponentPolicy``s whose opponents are redrawn on every team change and
every ``swap_steps`` ghost steps by the configured sampling strategy (``ghost.sampling``; by
default ML-Agents' rule: the latest learner with probability ``play_against_latest_model_ratio``,
else a uniform pick from the window), ``opponents_per_swap`` draws spread over environments and
arenas, fixed opponents included in the pool. Finished matches of the learning team update the
ratings through the ``GhostController`` and the learner's win rates against each pool member.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
from mlagents_envs.base_env import BehaviorSpec

from ghost.behavior_id import BehaviorId
from ghost.controller import GhostController
from ghost.opponents import LATEST, FixedOpponent, Opponent, OpponentPolicy
from ghost.ratings import result_from_reward
from ghost.sampling import Pool, make_sampler
from ghost.settings import SelfPlaySettings
from ghost.snapshots import Snapshot, SnapshotWindow
from ghost.win_rates import WinRates
from trainers.base import ExperienceQueue, Policy, StepBatch, Trainer
from trainers.stats import ELO


class GhostTrainer(Trainer):
    """Wraps ``trainer`` so it learns by self-play (see module docstring)."""

    def __init__(
        self,
        *,
        trainer: Trainer,
        controller: GhostController,
        self_play: SelfPlaySettings,
        seed: int = 0,
        fixed_opponents: list[FixedOpponent] | None = None,
    ) -> None:
        super().__init__(
            behavior_name=trainer.behavior_name,
            settings=trainer.settings,
            artifact_dir=trainer.artifact_dir,
            seed=seed,
            device=trainer.device,
            training=trainer.training,
        )
        self.trainer = trainer
        self.controller = controller
        self.self_play = self_play
        self.window = SnapshotWindow(self_play.window)
        self.rating = self_play.initial_elo
        self.rng = np.random.default_rng(seed + 7919)
        self.ghost_step = 0
        self.last_save_step = 0
        self.last_swap_ghost_step = 0
        self.team_start_step = 0
        self.swaps = 0
        self.learner: Policy | None = None
        self.behavior_ids: dict[int, BehaviorId] = {}
        self.opponent_policies: dict[BehaviorId, OpponentPolicy] = {}
        self._learning_queues: dict[BehaviorId, ExperienceQueue] = {}
        self._known_learning_team: int | None = None
        self.snapshot_dir = self.artifact_dir / "snapshots"
        self.fixed_opponents = list(fixed_opponents or [])
        self.sampler = make_sampler(self_play)
        self.win_rates = WinRates(self_play.sampling.win_rate_window)
        #: how often each pool member was drawn as an opponent
        self.draw_counts: Counter[str] = Counter()

    # -- wiring ----------------------------------------------------------------------------
    def create_policy(self, behavior_id: BehaviorId, behavior_spec: BehaviorSpec) -> Policy:
        return self.trainer.create_policy(behavior_id, behavior_spec)

    def add_policy(self, behavior_id: BehaviorId, policy: Policy) -> None:
        if self.learner is None:
            self.learner = policy
        self.trainer.add_policy(behavior_id, self.learner)
        queue = ExperienceQueue(behavior_id)
        self._learning_queues[behavior_id] = queue
        self.trainer.subscribe_trajectory_queue(queue)
        spec = self.learner.behavior_spec
        self.opponent_policies[behavior_id] = OpponentPolicy(
            make_policy=lambda: self.trainer.create_policy(behavior_id, spec)
        )
        self.behavior_ids[behavior_id.team] = behavior_id
        self.controller.subscribe_team_id(behavior_id.team, self)
        self._draw_opponents(behavior_id)

    def get_policy(self, behavior_id: BehaviorId) -> Policy:
        assert self.learner is not None, "add_policy comes first"
        return self.learner

    def acting_policy(self, behavior_id: BehaviorId) -> Policy:
        """The learner for the learning team, frozen opponents for every other team."""
        if behavior_id.team == self.controller.learning_team:
            return self.get_policy(behavior_id)
        return self.opponent_policies[behavior_id]

    def opponent_in(self, team: int, arena: int) -> Opponent | None:
        """The opponent team ``team`` fields in arena key ``arena``."""
        policy = self.opponent_policies.get(self.behavior_ids[team])
        return policy.opponent_in(arena) if policy and policy.opponents else None

    # -- training --------------------------------------------------------------------------
    @property
    def step(self) -> int:
        return self.trainer.step

    @property
    def is_learning(self) -> bool:
        return self.controller.learning_team in self.behavior_ids

    @property
    def should_still_train(self) -> bool:
        return self.trainer.should_still_train

    def advance(self) -> None:
        if self._known_learning_team is None:
            # the first turn starts before any experience; the first snapshot is the policy as
            # training starts (after --initialize-from, if any)
            if len(self.window) == 0:
                self._take_snapshot()
            self.on_team_change()
        learning_team = self.controller.learning_team
        for queue in self.trajectory_queues:
            for batch in queue.drain():
                if batch.behavior_id.team == learning_team:
                    self._learning_queues[batch.behavior_id].put(batch)
                    self._report_results(batch)
                else:
                    self.ghost_step += batch.agent_steps
        stats = getattr(self.trainer, "stats", None)
        if stats is not None:
            stats.training = self.is_learning
        self.trainer.advance()
        if (
            self.is_learning
            and self.trainer.step - self.last_save_step >= self.self_play.save_steps
        ):
            self._take_snapshot()
        turn_over = (
            self.trainer.step - self.team_start_step >= self.self_play.steps_per_team
            or not self.trainer.should_still_train  # a finished learner hands over at once
        )
        if self.is_learning and turn_over:
            self.controller.change_training_team()
        elif self.ghost_step - self.last_swap_ghost_step >= self.self_play.swap_steps:
            self.last_swap_ghost_step = self.ghost_step
            self._swap()
        self.trainer_stats_add(ELO, self.rating)

    def _report_results(self, batch: StepBatch) -> None:
        terminal = batch.steps.terminal
        if len(terminal) == 0:
            return
        finished = ~terminal.interrupted
        if not finished.any():
            return
        # one result per match: teammates (same group) finishing together count once
        keys = np.where(
            terminal.group_id != 0, -terminal.group_id.astype(np.int64), terminal.agent_id
        )
        _, first = np.unique(keys[finished], return_index=True)
        rows = np.flatnonzero(finished)[first]
        scores = terminal.reward[rows] + terminal.group_reward[rows]
        for arena, reward in zip(
            batch.steps.terminal_arenas[rows].tolist(), scores.tolist(), strict=True
        ):
            self.controller.report_match(
                learner=self, arena=arena, score=result_from_reward(reward)
            )

    def on_team_change(self) -> None:
        """The controller handed learning to another team: restart the count and swap."""
        self._known_learning_team = self.controller.learning_team
        if self.is_learning:
            self.team_start_step = self.trainer.step
        self.last_swap_ghost_step = self.ghost_step
        self._swap()

    def _take_snapshot(self) -> Snapshot:
        assert self.learner is not None
        self.last_save_step = self.trainer.step
        snapshot = self.window.add(
            weights=self.learner.get_weights(), rating=self.rating, step=self.trainer.step
        )
        return snapshot

    def pool(self) -> Pool:
        """The latest learner (frozen now), the window and the fixed opponents."""
        assert self.learner is not None
        latest = Snapshot(snapshot_id=LATEST, step=self.trainer.step, rating=self.rating,
                          weights=self.learner.get_weights())  # fmt: skip
        return Pool(
            latest=Opponent(snapshot=latest),
            window=[Opponent(snapshot=snapshot) for snapshot in self.window],
            fixed=[Opponent(fixed=fixed) for fixed in self.fixed_opponents],
        )

    def _draw_opponents(self, behavior_id: BehaviorId) -> None:
        pool = self.pool()
        draws = [
            self.sampler.draw(pool, self.win_rates, self.rng)
            for _ in range(self.self_play.opponents_per_swap)
        ]
        self.draw_counts.update(opponent.key for opponent in draws)
        self.opponent_policies[behavior_id].assign(draws)

    def trainer_stats_add(self, key: str, value: float) -> None:
        """Record a statistic with the wrapped trainer's reporter (if it has one)."""
        stats = getattr(self.trainer, "stats", None)
        if stats is not None:
            stats.add(key, value)

    def record_result(self, opponent: Opponent, score: float) -> None:
        """Book one match of the learner against ``opponent`` (score 1 / 0.5 / 0)."""
        version = max(self.window.next_id - 1, 0)
        self.win_rates.record(opponent.key, version, score)
        self.trainer_stats_add("Self-play/Win Rate", score)
        if opponent.is_fixed or opponent.is_latest:
            self.trainer_stats_add(f"Self-play/Win Rate vs {opponent.key}", score)

    def _swap(self) -> None:
        """Redraw the opponents of every ghosted team of this behavior and publish them."""
        self.swaps += 1
        for team, behavior_id in self.behavior_ids.items():
            if team != self.controller.learning_team:
                self._draw_opponents(behavior_id)
        for queue in self.policy_queues:
            queue.put(self.acting_policy(queue.behavior_id))

    def end_episode(self) -> None:
        self.trainer.end_episode()

    # -- persistence -----------------------------------------------------------------------
    def _snapshot_path(self, snapshot: Snapshot) -> Path:
        return self.snapshot_dir / f"snapshot-{snapshot.snapshot_id}.pt"

    def write_snapshots(self) -> None:
        """Write every snapshot of the window that has no file yet (each a loadable policy)."""
        assert self.learner is not None
        for snapshot in self.window:
            if snapshot.path is None or not snapshot.path.exists():
                snapshot.path = self._snapshot_path(snapshot)
                self.learner.save(snapshot.path, snapshot.weights)

    def after_checkpoint(self) -> None:
        """The new checkpoint set is complete: write the payoff table; evicted snapshots go."""
        self.win_rates.write_payoff_csv(self.artifact_dir / "payoff.csv")
        keep = {s.path for s in self.window}
        for stale in self.snapshot_dir.glob("snapshot-*.pt"):
            if stale not in keep:
                stale.unlink(missing_ok=True)

    def state_dict(self) -> dict[str, Any]:
        self.write_snapshots()
        return {
            "trainer": self.trainer.state_dict(),
            "ghost": {
                "rating": self.rating,
                "ghost_step": self.ghost_step,
                "last_save_step": self.last_save_step,
                "last_swap_ghost_step": self.last_swap_ghost_step,
                "team_start_step": self.team_start_step,
                "swaps": self.swaps,
                "known_learning_team": self._known_learning_team,
                "window": [s.metadata() for s in self.window],
                "next_snapshot_id": self.window.next_id,
                "opponents": {
                    str(bid): [self._opponent_state(o) for o in policy.opponents]
                    for bid, policy in self.opponent_policies.items()
                },
                "rng": self.rng.bit_generator.state,
                "win_rates": self.win_rates.state_dict(),
                "draw_counts": dict(self.draw_counts),
                "fixed_ratings": {f.name: f.rating for f in self.fixed_opponents},
            },
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        from trainers.policy_file import read_policy_weights

        self.trainer.load_state_dict(state["trainer"])
        ghost = state["ghost"]
        self.rating = float(ghost["rating"])
        self.ghost_step = int(ghost["ghost_step"])
        self.last_save_step = int(ghost["last_save_step"])
        self.last_swap_ghost_step = int(ghost["last_swap_ghost_step"])
        self.team_start_step = int(ghost["team_start_step"])
        self.swaps = int(ghost["swaps"])
        self._known_learning_team = ghost["known_learning_team"]
        snapshots = [
            Snapshot(
                snapshot_id=m["snapshot_id"],
                step=m["step"],
                rating=m["rating"],
                weights=read_policy_weights(Path(m["path"])),
                path=Path(m["path"]),
            )  # fmt: skip
            for m in ghost["window"]
        ]
        self.window.restore(snapshots, int(ghost["next_snapshot_id"]))
        for bid, policy in self.opponent_policies.items():
            saved = ghost["opponents"].get(str(bid))
            if saved:
                policy.assign([self._restore_opponent(entry) for entry in saved])
        self.rng.bit_generator.state = ghost["rng"]
        self.win_rates.load_state_dict(ghost["win_rates"])
        self.draw_counts = Counter(ghost["draw_counts"])
        for fixed in self.fixed_opponents:
            fixed.rating = float(ghost["fixed_ratings"].get(fixed.name, fixed.rating))

    def _opponent_state(self, opponent: Opponent) -> dict[str, Any]:
        if opponent.fixed is not None:
            return {"fixed": opponent.fixed.name}
        snapshot = opponent.snapshot
        assert snapshot is not None
        if self.window.by_id(snapshot.snapshot_id) is snapshot:
            return {"snapshot_id": snapshot.snapshot_id}
        # the latest copy, or a snapshot evicted while still in play: keep its weights
        return {"snapshot": snapshot.metadata(), "weights": snapshot.weights}

    def _restore_opponent(self, entry: dict[str, Any]) -> Opponent:
        if "fixed" in entry:
            return Opponent(fixed=next(f for f in self.fixed_opponents if f.name == entry["fixed"]))
        if "weights" in entry:
            meta = entry["snapshot"]
            return Opponent(snapshot=Snapshot(snapshot_id=meta["snapshot_id"], step=meta["step"],
                                     rating=meta["rating"], weights=entry["weights"]))  # fmt: skip
        snapshot = self.window.by_id(entry["snapshot_id"])
        assert snapshot is not None, "a window opponent is saved with the window"
        return Opponent(snapshot=snapshot)

    def close(self) -> None:
        self.trainer.close()
