"""``GhostTrainer``: self-play around any registered trainer, without changing it.

Per behavior name with ``self_play``. Step batches of the learning team go to the wrapped trainer;
those of ghosted teams only add to the ghost step count. The learner's weights are snapshotted
every ``save_steps`` trainer steps into a window (the untrained policy is the first snapshot).
Ghosted teams act with ``OpponentPolicy``s whose opponents are redrawn on every team change and
every ``swap_steps`` ghost steps by the configured sampling strategy (``ghost.core.sampling``; by
default ML-Agents' rule: the latest learner with probability ``play_against_latest_model_ratio``,
else a uniform pick from the window), ``opponents_per_swap`` draws spread over environments and
arenas, fixed opponents included in the pool. Finished matches of the learning team are rated by
the ``GhostController`` and booked in this behavior's ``SelfPlayState``.

What is due (snapshot, swap, end of a turn) is decided by the ``SelfPlayState``; this class only
connects it to a trainer: it routes experience, reads the learner's weights and loads opponents'.

With ``self_play.league`` exploiters, some turns of the learning team belong to an exploiter
(``ghost.running.league``): it acts with the exploiter's network, its experience goes to the
exploiter's own trainer, and the wrapped trainer neither learns nor counts steps meanwhile.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from mlagents_envs.base_env import BehaviorSpec

from envs.behavior_id import BehaviorId
from ghost.core.controller import GhostController, TeamChange
from ghost.core.ratings import result_from_reward
from ghost.core.self_play import SelfPlayState
from ghost.core.snapshots import Snapshot
from ghost.core.win_rates import result_stat_keys
from ghost.running.average_policy import ObservationSample, distill_average
from ghost.running.league import ExploiterFactory, ExploiterTurns, learning_exploiter
from ghost.running.opponent_policy import OpponentPolicy
from trainers.atomic_files import atomic_write_text
from trainers.base import ExperienceQueue, Policy, StepBatch, Trainer
from trainers.policy import TorchPolicy
from trainers.policy_file import read_policy_weights
from trainers.run_layout import RunLayout
from trainers.stats import ELO

SnapshotListener = Callable[["GhostTrainer", Snapshot], None]


class GhostTrainer(Trainer):
    """Wraps ``trainer`` so it learns by self-play (see module docstring).

    Args:
        trainer: the wrapped trainer (PPO, SAC, a plugin).
        controller: the run's controller, shared by every ghost trainer.
        state: this behavior's self-play bookkeeping.
        layout: the run folder (snapshot files and the payoff table go there).
        on_snapshot: called with each snapshot as it is taken.
        make_trainer: builds the exploiters' trainers (needed with ``self_play.league``
            exploiters; ``ghost.running.league.exploiter_factory``).
    """

    def __init__(
        self,
        *,
        trainer: Trainer,
        controller: GhostController,
        state: SelfPlayState,
        layout: RunLayout,
        on_snapshot: SnapshotListener | None = None,
        make_trainer: ExploiterFactory | None = None,
    ) -> None:
        super().__init__(
            behavior_name=trainer.behavior_name,
            settings=trainer.settings,
            artifact_dir=trainer.artifact_dir,
            seed=trainer.seed,
            device=trainer.device,
            training=trainer.training,
        )
        self.stats = trainer.stats  # one reporter per behavior: the wrapped trainer's
        self.trainer = trainer
        self.controller = controller
        self.state = state
        self.self_play = state.settings
        self.layout = layout
        self.on_snapshot = on_snapshot
        self.learner: Policy | None = None
        self.behavior_ids: dict[int, BehaviorId] = {}
        self.opponent_policies: dict[BehaviorId, OpponentPolicy] = {}
        self._learning_queues: dict[BehaviorId, ExperienceQueue] = {}
        average = self.self_play.average_policy
        self.observations = (
            ObservationSample(
                average.observations,
                keep=average.observations / (self.self_play.save_steps * self.self_play.window),
                seed=trainer.seed,
            )
            if average.enabled
            else None
        )
        self._average: Policy | None = None
        self.league: ExploiterTurns | None = None
        if state.league.enabled and trainer.training:
            if make_trainer is None:
                raise ValueError(
                    f"{trainer.behavior_name}: self_play.league has exploiters, so the ghost "
                    "trainer needs make_trainer to build their trainers"
                )
            self.league = ExploiterTurns(
                league=state.league, make_trainer=make_trainer, seed=trainer.seed,
                steps_per_team=self.self_play.steps_per_team,
            )  # fmt: skip

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
        self.controller.subscribe_team(behavior_id.team, self.state)
        if self.league is not None:
            self.league.connect(behavior_id, spec)
        self._draw_opponents(behavior_id)

    def get_policy(self, behavior_id: BehaviorId) -> Policy:
        assert self.learner is not None, "add_policy comes first"
        return self.learner

    def acting_policy(self, behavior_id: BehaviorId) -> Policy:
        """The learner (or the exploiter whose turn it is) for the learning team, frozen
        opponents for every other team."""
        if behavior_id.team != self.controller.learning_team:
            return self.opponent_policies[behavior_id]
        if self.league is not None and self.league.active is not None:
            return self.league.policy()
        return self.get_policy(behavior_id)

    def export_policy(self, behavior_id: BehaviorId) -> Policy:
        """The learner, or with ``average_policy`` on the window's average distilled into one
        network (computed once, when the run ends)."""
        learner = self.get_policy(behavior_id)
        if self.observations is None or not isinstance(learner, TorchPolicy):
            return learner
        if self._average is None:
            members = [s.weights for s in self.state.window] + [learner.get_weights()]
            self._average = distill_average(
                learner, members, self.observations, self.self_play.average_policy,
                seed=self.seed,
            )  # fmt: skip
        return self._average

    @property
    def fixed_opponents(self) -> list[Any]:
        return self.state.fixed_opponents

    @property
    def rating(self) -> float:
        return self.state.rating

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

    @property
    def exploiting(self) -> bool:
        """Whether an exploiter of this behavior plays the current learning turn."""
        return self.league is not None and self.league.active is not None

    def advance(self) -> None:
        if self.state.known_learning_team is None:
            # the first turn starts before any experience; the first snapshot is the policy as
            # training starts (after --initialize-from, if any)
            if len(self.state.window) == 0:
                self._take_snapshot()
            self._start_turn()
        learning_team = self.controller.learning_team
        exploiting = self.exploiting
        for queue in self.trajectory_queues:
            for batch in queue.drain():
                if batch.behavior_id.team != learning_team:
                    self.state.count_ghost_steps(batch.agent_steps)
                elif exploiting:
                    assert self.league is not None
                    self.league.put(batch, finished_matches(batch), self.controller)
                else:
                    self._learning_queues[batch.behavior_id].put(batch)
                    if self.training:  # watching a trained run (inference) rates nothing
                        self._rate_results(batch)
                        if self.observations is not None:
                            self.observations.add(batch)
        main_learning = self.is_learning and not exploiting
        self.stats.training = self.training and main_learning
        self.trainer.advance()
        if exploiting:
            assert self.league is not None
            self.league.advance()
        step = self.trainer.step
        if self.training and main_learning and self.state.snapshot_due(step):
            self._take_snapshot()
        if self.is_learning and self._turn_over(exploiting):
            self.controller.request_team_change()
        elif self.state.swap_due():
            self._swap()
        self.stats.add(ELO, self.state.rating)

    def _turn_over(self, exploiting: bool) -> bool:
        if exploiting:
            assert self.league is not None
            return self.league.turn_over(still_training=self.should_still_train)
        return self.state.turn_over(self.trainer.step, still_training=self.should_still_train)

    def _rate_results(self, batch: StepBatch) -> None:
        for arena, score in finished_matches(batch):
            rating = self.controller.book_match(learner=self.state, arena=arena, score=score)
            for opponent in rating.opponents if rating is not None else ():
                for key in result_stat_keys(opponent):
                    self.stats.add(key, score)

    def on_team_change(self, change: TeamChange) -> None:
        """Learning passed to ``change.learning_team``: end an exploiter's turn, restart the
        turn count and swap."""
        if self.league is not None:
            self.league.end_turn()
        self._start_turn()

    def _start_turn(self) -> None:
        self.state.start_turn(
            self.controller.learning_team, self.trainer.step, learning=self.is_learning
        )
        if self.league is not None and self.is_learning:
            self.league.begin_turn(self.controller.team_changes)
        self._swap()

    def _take_snapshot(self) -> Snapshot:
        assert self.learner is not None
        snapshot = self.state.take_snapshot(self.learner.get_weights(), self.trainer.step)
        if self.on_snapshot is not None:
            self.on_snapshot(self, snapshot)
        return snapshot

    def _draw_opponents(self, behavior_id: BehaviorId) -> None:
        assert self.learner is not None
        pool = self.state.pool(self.learner.get_weights(), self.trainer.step)
        exploiter = learning_exploiter(self.controller)
        draws = self.state.draw_opponents(behavior_id.team, pool, exploiter=exploiter)
        self.opponent_policies[behavior_id].assign(draws)

    def _swap(self) -> None:
        """Redraw the opponents of every ghosted team of this behavior and publish them."""
        self.state.mark_swap()
        for team, behavior_id in self.behavior_ids.items():
            if team != self.controller.learning_team:
                self._draw_opponents(behavior_id)
        for queue in self.policy_queues:
            queue.put(self.acting_policy(queue.behavior_id))

    def end_episode(self) -> None:
        self.trainer.end_episode()
        if self.league is not None:
            self.league.end_episode()

    # -- persistence -----------------------------------------------------------------------
    def write_snapshots(self) -> None:
        """Write every snapshot of the window that has no file yet (each a loadable policy)."""
        assert self.learner is not None
        for snapshot in self.state.window:
            if snapshot.path is None or not snapshot.path.exists():
                snapshot.path = self.layout.snapshot_path(self.behavior_name, snapshot.snapshot_id)
                self.learner.save(snapshot.path, snapshot.weights)

    def after_checkpoint(self) -> None:
        """The new checkpoint set is complete: write the payoff table; evicted snapshots go."""
        atomic_write_text(
            self.layout.payoff_path(self.behavior_name), self.state.win_rates.payoff_csv()
        )
        keep = {s.path for s in self.state.window}
        for stale in self.layout.snapshot_files(self.behavior_name).values():
            if stale not in keep:
                stale.unlink(missing_ok=True)

    def state_dict(self) -> dict[str, Any]:
        self.write_snapshots()
        state = {"trainer": self.trainer.state_dict(), "ghost": self.state.state_dict()}
        if self.league is not None:
            state["league"] = self.league.state_dict()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.trainer.load_state_dict(state["trainer"])
        self.state.load_state_dict(state["ghost"], read_weights=read_policy_weights)
        if self.league is not None and "league" in state:
            self.league.load_state_dict(state["league"])
        for behavior_id, policy in self.opponent_policies.items():
            opponents = self.state.opponents.get(behavior_id.team)
            if opponents:
                policy.assign(opponents)

    def close(self) -> None:
        self.trainer.close()
        if self.league is not None:
            self.league.close()


def finished_matches(batch: StepBatch) -> list[tuple[int, float]]:
    """``(arena, score)`` of every match the batch's agents finished (not interrupted)."""
    terminal = batch.steps.terminal
    if len(terminal) == 0:
        return []
    finished = ~terminal.interrupted
    if not finished.any():
        return []
    # one result per match: teammates (same group) finishing together count once
    keys = np.where(terminal.group_id != 0, -terminal.group_id.astype(np.int64), terminal.agent_id)
    _, first = np.unique(keys[finished], return_index=True)
    rows = np.flatnonzero(finished)[first]
    rewards = terminal.reward[rows] + terminal.group_reward[rows]
    arenas = batch.steps.terminal_arenas[rows].tolist()
    return [
        (arena, result_from_reward(reward))
        for arena, reward in zip(arenas, rewards.tolist(), strict=True)
    ]
