"""``GhostTrainer``: self-play around any registered trainer, without changing it.

Per behavior name with ``self_play``. The self-play cycle (first turn, routing, results,
snapshots, swaps, team changes, restore) is ``ghost.core.ghost_cycle.GhostCycle``, shared with the
``mlagents-learn`` plugin; this class connects it to a trainer of this project: learning step
batches go to the wrapped trainer, ghosted teams act with ``OpponentPolicy``s holding the
opponents the cycle fields, snapshots and the payoff table go into the run folder. Its
collaborators: ``ExploiterTurns`` for ``self_play.league`` exploiter turns
(``ghost.running.league``), ``AveragePolicy`` for ``self_play.average_policy``
(``ghost.running.average_policy``) and ``LatestCopyLearning`` for ``self_play.learn_from_latest``
(``ghost.running.learn_from_latest``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from mlagents_envs.base_env import BehaviorSpec

from envs.behavior_id import BehaviorId
from ghost.core.controller import TeamChange
from ghost.core.ghost_cycle import MatchResult, Route, finished_matches
from ghost.core.opponents import Opponent
from ghost.core.self_play import SelfPlayState
from ghost.core.self_play_host import SelfPlayHost
from ghost.core.snapshots import Snapshot
from ghost.core.state_folder import SelfPlayFolder
from ghost.running.average_policy import AveragePolicy
from ghost.running.league import ExploiterFactory, ExploiterTurns
from ghost.running.learn_from_latest import LatestCopyLearning, check_learn_from_latest
from ghost.running.opponent_policy import OpponentPolicy
from trainers.base import ExperienceQueue, Policy, StepBatch, Trainer
from trainers.policy_file import read_policy_weights
from trainers.run_files.access import RUN_FILES
from trainers.run_files.layout import RunLayout
from trainers.stats import ELO

SnapshotListener = Callable[["GhostTrainer", Snapshot], None]


class GhostTrainer(Trainer):
    """Wraps ``trainer`` so it learns by self-play (see module docstring).

    Args:
        trainer: the wrapped trainer (PPO, SAC, a plugin).
        kit: the run's host kit (its controller), shared by every ghost trainer.
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
        kit: SelfPlayHost,
        state: SelfPlayState,
        layout: RunLayout,
        on_snapshot: SnapshotListener | None = None,
        make_trainer: ExploiterFactory | None = None,
    ) -> None:
        super().__init__(
            behavior_name=trainer.behavior_name, settings=trainer.settings, seed=trainer.seed,
            artifact_dir=trainer.artifact_dir, device=trainer.device,
            acting_device=trainer.acting_device, training=trainer.training,
        )  # fmt: skip
        self.stats = trainer.stats  # one reporter per behavior: the wrapped trainer's
        check_learn_from_latest(trainer.behavior_name, state.settings, type(trainer))
        self.trainer = trainer
        self.kit = kit
        self.controller = kit.controller
        self.state = state
        self.self_play = state.settings
        self.layout = layout
        #: the snapshots as policy files in ``<Behavior>/snapshots/``; the rest of the self-play
        #: state travels in each checkpoint (a checkpoint set and its state always match)
        self.files = SelfPlayFolder(
            layout.snapshots_dir(self.behavior_name), files=RUN_FILES,
            write_weights=self._write_snapshot, read_weights=read_policy_weights,
            payoff_path=layout.payoff_path(self.behavior_name),
        )  # fmt: skip
        self.learner: Policy | None = None
        self.behavior_ids: dict[int, BehaviorId] = {}
        self.opponent_policies: dict[BehaviorId, OpponentPolicy] = {}
        self._learning_queues: dict[BehaviorId, ExperienceQueue] = {}
        self.latest_copy = LatestCopyLearning(trainer) if self.self_play.learn_from_latest else None
        self.average = AveragePolicy.for_settings(self.self_play, seed=trainer.seed)
        self.league = ExploiterTurns.for_behavior(state, trainer=trainer, make_trainer=make_trainer)
        self.cycle = kit.add_behavior(
            state=state, learner=_Learner(self), training=trainer.training,
            league=self.league, observer=self.average,
            on_snapshot=None if on_snapshot is None else lambda s: on_snapshot(self, s),
            report=self.stats.add, listener=self,
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
        if self.latest_copy is not None:
            self.latest_copy.connect(behavior_id)
        spec = self.learner.behavior_spec
        self.opponent_policies[behavior_id] = OpponentPolicy(
            make_policy=lambda: self.trainer.create_opponent_policy(behavior_id, spec)
        )
        self.behavior_ids[behavior_id.team] = behavior_id
        if self.league is not None:
            self.league.connect(behavior_id, spec)
        self.kit.connect(self.behavior_name, [behavior_id.team])

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
        if self.average is None:
            return learner
        members = [s.weights for s in self.state.window]
        return self.average.export(learner, members, seed=self.seed)

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
    def should_still_train(self) -> bool:
        return self.trainer.should_still_train

    def advance(self) -> None:
        self.cycle.begin()
        for queue in self.trajectory_queues:
            for batch in queue.drain():
                team = batch.behavior_id.team
                route = self.cycle.route(team=team, agent_steps=batch.agent_steps, experience=batch)
                if route is Route.LEARNER:
                    self._learning_queues[batch.behavior_id].put(batch)
                elif self.latest_copy is not None:
                    self.latest_copy.offer(
                        batch, self.opponent_policies[batch.behavior_id].opponents,
                        learner_learns=self._learner_learns,
                    )  # fmt: skip
                if route is not Route.GHOST:
                    self.cycle.book(match_results(batch))
        self.stats.training = self._learner_learns
        self.trainer.advance()
        self.kit.after_update(self.behavior_name)
        self.stats.add(ELO, self.state.rating)

    @property
    def _learner_learns(self) -> bool:
        """The learner (not an exploiter) trains now."""
        return self.training and self.cycle.is_learning and not self.cycle.exploiting

    def on_team_change(self, change: TeamChange) -> None:
        """Learning passed to ``change.learning_team``: end an exploiter's turn, restart the
        turn count and swap."""
        if self.latest_copy is not None:
            self.latest_copy.environments_reset()
        self.cycle.on_team_change(change)

    def _swap(self) -> None:
        self.cycle.swap()

    def end_episode(self) -> None:
        self.trainer.end_episode()
        if self.league is not None:
            self.league.end_episode()

    # -- persistence -------------------------------------------------------------------------
    def _write_snapshot(self, weights: Any, path: Path) -> None:
        assert self.learner is not None
        self.learner.save(path, weights)

    def write_snapshots(self) -> None:
        """Write every snapshot of the window that has no file yet (each a loadable policy)."""
        self.files.write_snapshots(self.state)

    def after_checkpoint(self) -> None:
        """The new checkpoint set is complete: write the payoff table; evicted snapshots go."""
        self.files.finish(self.state)

    def state_dict(self) -> dict[str, Any]:
        self.write_snapshots()
        state = {"trainer": self.trainer.state_dict(), "ghost": self.state.state_dict()}
        if self.league is not None:
            state["league"] = self.league.state_dict()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.trainer.load_state_dict(state["trainer"])
        self.kit.restore(self.behavior_name, self.files, {"self_play": state["ghost"]},
                         step=self.trainer.step)  # fmt: skip
        if self.league is not None and "league" in state:
            self.league.load_state_dict(state["league"])

    def close(self) -> None:
        self.trainer.close()
        if self.league is not None:
            self.league.close()


class _Learner:
    """The ``LearnerHandle`` of a ``GhostTrainer``: its wrapped trainer and acting policies."""

    def __init__(self, ghost: GhostTrainer) -> None:
        self.ghost = ghost

    @property
    def step(self) -> int:
        return self.ghost.trainer.step

    @property
    def still_training(self) -> bool:
        return self.ghost.trainer.should_still_train

    def weights(self) -> Any:
        assert self.ghost.learner is not None
        return self.ghost.learner.get_weights()

    def field(self, team: int, opponents: list[Opponent]) -> None:
        self.ghost.opponent_policies[self.ghost.behavior_ids[team]].assign(opponents)

    def act_as_learner(self, team: int) -> None:
        pass  # ``acting_policy`` hands out the learner (or the active exploiter) by team

    def publish(self) -> None:
        for queue in self.ghost.policy_queues:
            queue.put(self.ghost.acting_policy(queue.behavior_id))


def match_results(batch: StepBatch) -> list[MatchResult]:
    """``(arena, score)`` of every match the batch's agents finished (``finished_matches``)."""
    terminal = batch.steps.terminal
    if len(terminal) == 0:
        return []
    return finished_matches(
        agent_ids=terminal.agent_id, group_ids=terminal.group_id,
        rewards=terminal.reward + terminal.group_reward, interrupted=terminal.interrupted,
        arenas=batch.steps.terminal_arenas,
    )  # fmt: skip
