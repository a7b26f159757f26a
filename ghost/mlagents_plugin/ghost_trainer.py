"""``MLAgentsGhostTrainer``: ML-Agents' PPO, SAC or POCA trainer learning by self-play.

It stands where ML-Agents' own GhostTrainer stands (one per behavior name, every team of that name)
and runs ghost-learn's self-play cycle through the run's host kit
(``ghost.core.self_play_host.SelfPlayHost``), connected here to
ML-Agents' queues and policies: learning-team trajectories go to the wrapped trainer and are rated
one result per match (``groups``), each team acts through a ``TeamPolicy`` (the learner's latest
weights, or the frozen opponents the cycle fields, spread over workers), a team change resets the
environments (``registration``), and the self-play state is written with every checkpoint of the
wrapped trainer for ``--resume`` (``state_files``).
"""

from __future__ import annotations

from typing import Any

from mlagents.trainers.agent_processor import AgentManagerQueue
from mlagents.trainers.behavior_id_utils import BehaviorIdentifiers
from mlagents.trainers.stats import StatsPropertyType
from mlagents.trainers.trainer import Trainer

from ghost.core.controller import TeamChange
from ghost.core.ghost_cycle import Route
from ghost.core.opponents import Opponent
from ghost.core.self_play import SelfPlayState
from ghost.mlagents_plugin import groups, state_files
from ghost.mlagents_plugin.runs import GhostRun
from ghost.mlagents_plugin.team_policy import TeamPolicy

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
        self.files = state_files.self_play_folder(artifact_path)
        self._stats_reporter = trainer.stats_reporter
        self._stats_reporter.add_property(StatsPropertyType.SELF_PLAY, True)
        self.learner: Any = None
        self._team_policies: dict[int, TeamPolicy] = {}
        self._team_queues: dict[int, AgentManagerQueue] = {}
        self._team_of_queue: dict[str, int] = {}
        self._learner_updates: AgentManagerQueue | None = None
        self._experience: AgentManagerQueue | None = None
        self._restored: dict[str, Any] | None = None
        self.cycle = run.kit.add_behavior(
            state=state, learner=_Learner(self), training=training,
            report=self._stats_reporter.add_stat, listener=self,
        )  # fmt: skip

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
        return self.cycle.is_learning

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
        self._team_policies[team] = policy
        self._team_of_queue[parsed_behavior_id.behavior_id] = team
        kit = self.run.kit
        kit.subscribe(self.brain_name, [team])  # before a restored rotation
        if self._restored is not None:
            kit.restore(self.brain_name, self.files, self._restored, step=self.trainer.get_step)
            self._restored = None
        kit.connect(self.brain_name, [team])

    def get_policy(self, name_behavior_id: str) -> Any:
        return self.policies[name_behavior_id]

    def publish_policy_queue(self, policy_queue: AgentManagerQueue) -> None:
        super().publish_policy_queue(policy_queue)
        self._team_queues[self._team_of_queue[policy_queue.behavior_id]] = policy_queue

    # -- training ----------------------------------------------------------------------------
    def advance(self) -> None:
        self.cycle.begin()
        learning = []
        for queue in self.trajectory_queues:
            team = self._team_of_queue[queue.behavior_id]
            for _ in range(queue.qsize()):
                trajectory = queue.get_nowait()
                steps = len(trajectory.steps)
                route = self.cycle.route(team=team, agent_steps=steps, experience=trajectory)
                if route is Route.LEARNER:
                    self._experience.put(trajectory)  # type: ignore[union-attr]
                    learning.append(trajectory)
                elif trajectory.done_reached:
                    groups.take(trajectory.agent_id)
        self._rate_matches(learning)
        self.trainer.advance()
        self._follow_learner()
        self.run.kit.after_update(self.brain_name)

    def _follow_learner(self) -> None:
        """After an update the learning team acts with the learner's new weights."""
        updated = False
        while not self._learner_updates.empty():  # type: ignore[union-attr]
            self._learner_updates.get_nowait()  # type: ignore[union-attr]
            updated = True
        if updated and self.is_learning:
            team = self.controller.learning_team
            assert team is not None
            self.cycle.learner.act_as_learner(team)
            self._publish(team)

    def _rate_matches(self, trajectories: list[Any]) -> None:
        """Book the learning team's finished matches (one per group finishing together)."""
        self.cycle.book(groups.match_results(trajectories))
        if self.is_training:
            self._stats_reporter.add_stat(ELO, self.state.rating)

    def _publish(self, team: int) -> None:
        queue = self._team_queues.get(team)
        if queue is not None:
            queue.put(self._team_policies[team])

    # -- turns, snapshots and opponents ------------------------------------------------------
    def on_team_change(self, change: TeamChange) -> None:
        """Learning passed to ``change.learning_team``: restart the turn count and swap."""
        self.cycle.on_team_change(change)

    def _swap(self) -> None:
        self.cycle.swap()

    def end_episode(self) -> None:
        self.trainer.end_episode()

    # -- persistence -------------------------------------------------------------------------
    def save_self_play(self) -> None:
        """Write the self-play state of the trainer's current step (with its checkpoint)."""
        if self.learner is None:
            return
        self.run.kit.save(self.brain_name, self.files, step=self.trainer.get_step)

    def save_model(self) -> None:
        self.trainer.save_model()  # checkpoints, which saves the self-play state too

    def create_optimizer(self) -> Any:  # ML-Agents' abstract API; the wrapped trainer optimizes
        return None


class _Learner:
    """The ``LearnerHandle`` of an ``MLAgentsGhostTrainer``: ML-Agents' learner, team policies."""

    def __init__(self, ghost: MLAgentsGhostTrainer) -> None:
        self.ghost = ghost

    @property
    def step(self) -> int:
        return self.ghost.trainer.get_step

    @property
    def still_training(self) -> bool:
        return self.ghost.trainer.should_still_train

    def weights(self) -> Any:
        return self.ghost.learner.get_weights()

    def field(self, team: int, opponents: list[Opponent]) -> None:
        self.ghost._team_policies[team].face(opponents)

    def act_as_learner(self, team: int) -> None:
        self.ghost._team_policies[team].play([self.weights()])

    def publish(self) -> None:
        for team in self.ghost._team_policies:
            self.ghost._publish(team)
