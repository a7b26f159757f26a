"""``MLAgentsGhostTrainer``: ML-Agents' PPO, SAC or POCA trainer learning by self-play.

It stands where ML-Agents' own GhostTrainer stands (one per behavior name, every team of that name)
but keeps its self-play state in this project's core: a ``SelfPlayState`` decides what is due
(snapshot, swap, end of a turn) and the run's ``GhostController`` picks the learning team and
rates every finished match.

- Trajectories of the learning team go to the wrapped trainer and are rated, one result per match
  (teammates of one group finishing together count once); the ghosted teams' trajectories only
  count ghost steps.
- The wrapped trainer owns the learner. Each team acts through a ``TeamPolicy``: the learner's
  latest weights while it learns, frozen opponents (the latest learner, window snapshots, fixed
  opponents) drawn by the configured sampler while it is ghosted, spread over workers.
- A turn ends after ``team_change`` trainer steps; the controller hands learning to the next team
  and ML-Agents resets the environments (``registration`` connects the two), so no trajectory
  straddles two learners.
- Whenever ML-Agents checkpoints the wrapped trainer, the self-play state is written beside it
  (``state_files``); ``--resume`` restores window, ratings, counters and learning team.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from mlagents.trainers.agent_processor import AgentManagerQueue
from mlagents.trainers.behavior_id_utils import BehaviorIdentifiers
from mlagents.trainers.stats import StatsPropertyType
from mlagents.trainers.trainer import Trainer
from mlagents_envs.logging_util import get_logger

from ghost.core.controller import TeamChange
from ghost.core.opponents import Opponent
from ghost.core.ratings import result_from_reward
from ghost.core.self_play import SelfPlayState
from ghost.core.win_rates import result_stat_keys
from ghost.mlagents_plugin.runs import GhostRun
from ghost.mlagents_plugin.state_files import SelfPlayFiles, read_snapshot
from ghost.mlagents_plugin.team_policy import TeamPolicy, worker_arena, worker_of

logger = get_logger(__name__)

ELO = "Self-play/ELO"  # ML-Agents' console line prints this one


class MLAgentsGhostTrainer(Trainer):
    """Self-play around ML-Agents trainer ``trainer`` (see the module docstring).

    Args:
        trainer: ML-Agents' PPO, SAC or POCA trainer of this behavior name.
        run: the run's self-play coordination (its controller is shared by every ghost trainer).
        state: this behavior's self-play bookkeeping.
        reward_buff_cap, trainer_settings, training, load, artifact_path: as ML-Agents passes them.
    """

    def __init__(
        self,
        *,
        trainer: Trainer,
        run: GhostRun,
        state: SelfPlayState,
        reward_buff_cap: int,
        trainer_settings: Any,
        training: bool,
        load: bool,
        artifact_path: str,
    ) -> None:
        super().__init__(
            trainer.brain_name, trainer_settings, training, load, artifact_path, reward_buff_cap
        )
        self.trainer = trainer
        self.run = run
        self.controller = run.controller
        self.state = state
        self.files = SelfPlayFiles(artifact_path)
        self._stats_reporter = trainer.stats_reporter
        self._stats_reporter.add_property(StatsPropertyType.SELF_PLAY, True)
        self.learner: Any = None
        self._teams: dict[int, BehaviorIdentifiers] = {}
        self._team_policies: dict[int, TeamPolicy] = {}
        self._team_queues: dict[int, AgentManagerQueue] = {}
        self._team_of_queue: dict[str, int] = {}
        self._learner_updates: AgentManagerQueue | None = None
        self._experience: AgentManagerQueue | None = None
        self._restored: dict[str, Any] | None = None

    # -- what ML-Agents reads ----------------------------------------------------------------
    @property
    def get_step(self) -> int:
        return self.trainer.get_step

    @property
    def get_max_steps(self) -> int:
        return self.trainer.get_max_steps

    @property
    def reward_buffer(self) -> Any:
        return self.trainer.reward_buffer

    @property
    def should_still_train(self) -> bool:
        return self.trainer.should_still_train

    @property
    def is_learning(self) -> bool:
        return self.controller.learning_team in self._teams

    # -- wiring (ML-Agents calls these once per behavior id, in this order) -------------------
    def create_policy(self, parsed_behavior_id: BehaviorIdentifiers, behavior_spec: Any) -> Any:
        if self.learner is None:
            self._create_learner(parsed_behavior_id, behavior_spec)
        return TeamPolicy(lambda: self.trainer.create_policy(parsed_behavior_id, behavior_spec))

    def _create_learner(self, parsed_behavior_id: BehaviorIdentifiers, behavior_spec: Any) -> None:
        # the wrapped trainer loads its checkpoint here on --resume
        self.learner = self.trainer.create_policy(parsed_behavior_id, behavior_spec)
        self.trainer.add_policy(parsed_behavior_id, self.learner)
        self._learner_updates = AgentManagerQueue(parsed_behavior_id.brain_name)
        self.trainer.publish_policy_queue(self._learner_updates)
        self._experience = AgentManagerQueue(parsed_behavior_id.brain_name)
        self.trainer.subscribe_trajectory_queue(self._experience)
        if self.load:
            self._restored = self.files.load()

    def add_policy(self, parsed_behavior_id: BehaviorIdentifiers, policy: Any) -> None:
        team = parsed_behavior_id.team_id
        self.policies[parsed_behavior_id.behavior_id] = policy
        self._teams[team] = parsed_behavior_id
        self._team_policies[team] = policy
        self._team_of_queue[parsed_behavior_id.behavior_id] = team
        self.controller.subscribe_team(team, self.state)
        if self._restored is not None:
            self._restore(self._restored)
            self._restored = None
        self._assign(team)

    def get_policy(self, name_behavior_id: str) -> Any:
        return self.policies[name_behavior_id]

    def publish_policy_queue(self, policy_queue: AgentManagerQueue) -> None:
        super().publish_policy_queue(policy_queue)
        self._team_queues[self._team_of_queue[policy_queue.behavior_id]] = policy_queue

    # -- training ----------------------------------------------------------------------------
    def advance(self) -> None:
        if self.state.known_learning_team is None:
            # the first turn starts before any experience; the first snapshot is the policy as
            # training starts
            if len(self.state.window) == 0:
                self._take_snapshot()
            self._start_turn()
        learning_team = self.controller.learning_team
        finished = []
        for queue in self.trajectory_queues:
            team = self._team_of_queue[queue.behavior_id]
            for _ in range(queue.qsize()):
                trajectory = queue.get_nowait()
                if team == learning_team:
                    self._experience.put(trajectory)  # type: ignore[union-attr]
                    finished.append(trajectory)
                else:
                    self.state.count_ghost_steps(len(trajectory.steps))
        if self.is_training:  # watching a trained policy rates nothing
            self._rate_matches(finished)
        self.trainer.advance()
        self._follow_learner()
        step = self.trainer.get_step
        if self.is_training and self.is_learning and self.state.snapshot_due(step):
            self._take_snapshot()
        if self.is_learning and self.state.turn_over(step, still_training=self.should_still_train):
            self.controller.request_team_change()
        elif self.state.swap_due():
            self._swap()

    def _follow_learner(self) -> None:
        """After an update the learning team acts with the learner's new weights."""
        updated = False
        while not self._learner_updates.empty():  # type: ignore[union-attr]
            self._learner_updates.get_nowait()  # type: ignore[union-attr]
            updated = True
        if updated and self.is_learning:
            self._assign(self.controller.learning_team)  # type: ignore[arg-type]

    def _rate_matches(self, trajectories: list[Any]) -> None:
        """One rating per finished match: a group's trajectories end together and count once."""
        results: Counter[tuple[int, float, int]] = Counter()
        for trajectory in trajectories:
            if not (
                trajectory.done_reached
                and trajectory.all_group_dones_reached
                and not trajectory.interrupted
            ):
                continue
            last = trajectory.steps[-1]
            score = result_from_reward(last.reward + last.group_reward)
            group_size = 1 + len(last.group_status)
            results[(worker_of(trajectory.agent_id), score, group_size)] += 1
        for (worker, score, group_size), count in results.items():
            for _ in range(math.ceil(count / group_size)):
                rating = self.controller.book_match(
                    learner=self.state, arena=worker_arena(worker), score=score
                )
                for opponent in rating.opponents if rating is not None else ():
                    for key in result_stat_keys(opponent):
                        self._stats_reporter.add_stat(key, score)
        self._stats_reporter.add_stat(ELO, self.state.rating)

    # -- turns, snapshots and opponents ------------------------------------------------------
    def on_team_change(self, change: TeamChange) -> None:
        """Learning passed to ``change.learning_team``: restart the turn count and swap."""
        self._start_turn()

    def _start_turn(self) -> None:
        self.state.start_turn(
            self.controller.learning_team, self.trainer.get_step, learning=self.is_learning
        )
        self._swap()

    def _take_snapshot(self) -> None:
        self.state.take_snapshot(self.learner.get_weights(), self.trainer.get_step)

    def _swap(self) -> None:
        """Redraw the opponents of every ghosted team of this behavior and publish them."""
        self.state.mark_swap()
        for team in self._teams:
            if team != self.controller.learning_team:
                self._draw(team)
            self._assign(team)

    def _draw(self, team: int) -> None:
        pool = self.state.pool(self.learner.get_weights(), self.trainer.get_step)
        self.state.draw_opponents(team, pool)

    def _assign(self, team: int) -> None:
        """Load what ``team`` acts with now into its policy and hand it to the environments."""
        if team == self.controller.learning_team:
            weights = [self.learner.get_weights()]
        else:
            if not self.state.opponents.get(team):
                self._draw(team)
            weights = [_weights_of(opponent) for opponent in self.state.opponents[team]]
        self._team_policies[team].play(weights)
        queue = self._team_queues.get(team)
        if queue is not None:
            queue.put(self._team_policies[team])

    def end_episode(self) -> None:
        self.trainer.end_episode()

    # -- persistence -------------------------------------------------------------------------
    def save_self_play(self) -> None:
        """Write the self-play state of the trainer's current step (with its checkpoint)."""
        if self.learner is None:
            return
        self.files.save(
            step=self.trainer.get_step, state=self.state, controller=self.controller.state_dict()
        )

    def save_model(self) -> None:
        self.trainer.save_model()  # checkpoints, which saves the self-play state too

    def _restore(self, record: dict[str, Any]) -> None:
        saved_step, step = record["step"], self.trainer.get_step
        if saved_step != step:
            logger.warning(
                "%s: the self-play state on disk is from step %d, the model checkpoint from step "
                "%d (the run stopped between the two writes); continuing with that state",
                self.brain_name, saved_step, step,
            )  # fmt: skip
        self.state.load_state_dict(record["self_play"], read_weights=read_snapshot)
        self.run.restore_controller(record["controller"])
        logger.info(
            "%s: resumed self-play at step %d: window %s, Elo %.1f, learning team %s",
            self.brain_name, step, [s.snapshot_id for s in self.state.window],
            self.state.rating, self.controller.learning_team,
        )  # fmt: skip

    def create_optimizer(self) -> Any:  # ML-Agents' abstract API; the wrapped trainer optimizes
        return None


def _weights_of(opponent: Opponent) -> Any:
    if opponent.fixed is not None:
        return opponent.fixed.policy
    assert opponent.snapshot is not None
    return opponent.snapshot.weights
