"""The training loop of one run: collect → route → update → snapshot/swap → log → checkpoint.

``TrainingSession`` owns the environment stepper, one trainer per behavior name (wrapped in a
``GhostTrainer`` when the behavior has ``self_play``), one ``AgentProcessor`` per behavior id and
the ``GhostController``. Behaviors are connected as the environment reports them.
"""

from __future__ import annotations

import logging
from pathlib import Path

from mlagents_envs.base_env import BehaviorSpec

from envs.stepping import EnvStepper, StepResult
from ghost import registry
from ghost.behavior_id import BehaviorId
from ghost.behavior_matching import match_behaviors
from ghost.checkpointing import RunCheckpointer
from ghost.controller import GhostController
from ghost.fixed_opponents import build_fixed_opponents
from ghost.ghost_trainer import GhostTrainer
from ghost.run_dir import safe_name
from ghost.scheduled_evaluation import ScheduledEvaluation
from ghost.settings import RunOptions, TrainerSettings
from trainers.agent_processor import AgentProcessor
from trainers.base import ExperienceQueue, Policy, PolicyQueue, Trainer
from trainers.policy_file import read_policy_weights

logger = logging.getLogger("ghost.session")


class TrainingSession:
    """Trains every behavior of one environment stepper until all reach ``max_steps``."""

    def __init__(
        self,
        *,
        options: RunOptions,
        stepper: EnvStepper,
        run_path: Path,
        seed: int = 0,
        device: str = "cpu",
        training: bool = True,
        initialize_from: dict[str, Path] | None = None,
    ) -> None:
        self.options = options
        self.initialize_from_files = initialize_from or {}
        self.stepper = stepper
        self.run_path = Path(run_path)
        self.seed = seed
        self.device = device
        self.training = training
        self.controller = GhostController()
        self.trainers: dict[str, Trainer] = {}
        self.processors: dict[BehaviorId, AgentProcessor] = {}
        self.policy_queues: dict[BehaviorId, PolicyQueue] = {}
        self.checkpointer = RunCheckpointer(self.run_path)
        self._next_checkpoint: dict[str, int] = {}
        self._saved_at: dict[str, int] | None = None
        self._settings: dict[str, TrainerSettings] = {}
        self.evaluations: dict[str, ScheduledEvaluation] = {}
        self.interrupted = False

    # -- wiring ----------------------------------------------------------------------------
    def _builtin_game(self) -> str | None:
        from envs.games import BUILTIN_GAMES

        env_path = self.options.env_settings.env_path
        return env_path if env_path in BUILTIN_GAMES else None

    def _trainer_for(self, name: str, spec: BehaviorSpec) -> Trainer:
        if name not in self.trainers:
            settings = self._settings[name]
            trainer_class = registry.trainer_class(settings.trainer_type)
            trainer: Trainer = trainer_class(
                behavior_name=name,
                settings=settings,
                artifact_dir=self.run_path / safe_name(name),
                seed=self.seed,
                device=self.device,
                training=self.training,
            )
            if settings.self_play is not None:
                fixed = build_fixed_opponents(
                    settings.self_play, behavior_name=name, behavior_spec=spec,
                    builtin_game=self._builtin_game(),
                )  # fmt: skip
                trainer = GhostTrainer(
                    trainer=trainer, controller=self.controller,
                    self_play=settings.self_play, seed=self.seed, fixed_opponents=fixed,
                )  # fmt: skip
            self.trainers[name] = trainer
            interval = settings.checkpoint_interval
            self._next_checkpoint[name] = interval
        return self.trainers[name]

    @staticmethod
    def acting_policy(trainer: Trainer, behavior_id: BehaviorId) -> Policy:
        if isinstance(trainer, GhostTrainer):
            return trainer.acting_policy(behavior_id)
        return trainer.get_policy(behavior_id)

    def connect_behaviors(self) -> None:
        """Create trainers, policies and queues for behavior ids not seen before."""
        specs = self.stepper.behavior_specs
        new = [bid for bid in sorted(specs) if bid not in self.processors]
        if not new:
            return
        self._settings = match_behaviors(self.options, specs)
        for behavior_id in new:
            trainer = self._trainer_for(behavior_id.name, specs[behavior_id])
            policy = trainer.create_policy(behavior_id, specs[behavior_id])
            trainer.add_policy(behavior_id, policy)
            queue = ExperienceQueue(behavior_id)
            trainer.subscribe_trajectory_queue(queue)
            policy_queue = PolicyQueue(behavior_id)
            trainer.publish_policy_queue(policy_queue)
            self.policy_queues[behavior_id] = policy_queue
            self.processors[behavior_id] = AgentProcessor(
                policy=self.acting_policy(trainer, behavior_id), queue=queue
            )
            self._schedule_evaluation(trainer, behavior_id)
            logger.info("Connected behavior %s (trainer %s)", behavior_id, type(trainer).__name__)

    def _schedule_evaluation(self, trainer: Trainer, behavior_id: BehaviorId) -> None:
        if not isinstance(trainer, GhostTrainer) or behavior_id.name in self.evaluations:
            return
        settings = trainer.self_play.evaluation
        if settings is not None and self.training:
            self.evaluations[behavior_id.name] = ScheduledEvaluation(
                trainer=trainer, settings=settings, game=self._builtin_game(),
                behavior_id=behavior_id, seed=self.seed,
            )  # fmt: skip

    def initialize_from(self, policy_files: dict[str, Path]) -> None:
        """Start behaviors from the weights of earlier runs' policy files."""
        for name, path in policy_files.items():
            trainer = self.trainers.get(name)
            if trainer is None:
                continue
            weights = read_policy_weights(path)
            for behavior_id in self.processors:
                if behavior_id.name == name:
                    trainer.get_policy(behavior_id).load_weights(weights)
                    break
            logger.info("Initialized %s from %s", name, path)

    # -- the loop --------------------------------------------------------------------------
    @property
    def still_training(self) -> bool:
        return any(t.should_still_train for t in self.trainers.values())

    def start(self, *, resume: bool) -> StepResult:
        """Reset the environments, connect behaviors, and restore a checkpoint on ``resume``."""
        steps = self.stepper.reset()
        self.connect_behaviors()
        if resume and self.checkpointer.exists():
            self.checkpointer.load(self.trainers, self.controller)
            for trainer in self.trainers.values():
                trainer.end_episode()  # the environments restarted: nothing pending carries over
            for name, trainer in self.trainers.items():
                interval = trainer.settings.checkpoint_interval
                self._next_checkpoint[name] = (trainer.step // interval + 1) * interval
            for evaluation in self.evaluations.values():
                evaluation.next_step = evaluation.after(evaluation.trainer.step)
            self._apply_published_policies(force=True)
        else:
            self.initialize_from(self.initialize_from_files)
        return steps

    def run(self, *, resume: bool = False, max_env_steps: int | None = None) -> None:
        """Train until every behavior reached ``max_steps`` (or Ctrl-C: checkpoint and stop)."""
        steps = self.start(resume=resume)
        env_steps = 0
        try:
            while self.still_training and (max_env_steps is None or env_steps < max_env_steps):
                steps = self.step_once(steps)
                env_steps += 1
        except KeyboardInterrupt:
            self.interrupted = True
            logger.info("Interrupted: writing a checkpoint and the current policies")
        finally:
            self.finish()

    def step_once(self, steps: StepResult) -> StepResult:
        actions = {}
        for behavior_id, behavior_steps in steps.items():
            answer = self.processors[behavior_id].process(behavior_steps)
            if answer is not None:
                actions[behavior_id] = answer
        steps = self.stepper.step(actions)
        if any(bid not in self.processors for bid in steps):
            self.connect_behaviors()
        for trainer in self.trainers.values():
            trainer.advance()
        if self.controller.should_reset():
            for trainer in self.trainers.values():
                trainer.end_episode()
            steps = self.stepper.reset()
        self._apply_published_policies()
        for evaluation in self.evaluations.values():
            evaluation.maybe_run()
        self._maybe_checkpoint()
        return steps

    def _apply_published_policies(self, force: bool = False) -> None:
        for behavior_id, queue in self.policy_queues.items():
            policy = queue.take()
            if force:
                policy = self.acting_policy(self.trainers[behavior_id.name], behavior_id)
            if policy is not None:
                self.processors[behavior_id].policy = policy

    def _maybe_checkpoint(self) -> None:
        due = [
            name for name, trainer in self.trainers.items()
            if trainer.step >= self._next_checkpoint[name]
        ]  # fmt: skip
        if not due or not self.training:
            return
        self._checkpoint()
        for name, trainer in self.trainers.items():
            interval = trainer.settings.checkpoint_interval
            self._next_checkpoint[name] = (trainer.step // interval + 1) * interval

    def _checkpoint(self) -> None:
        steps = {name: trainer.step for name, trainer in self.trainers.items()}
        if steps != self._saved_at:
            self.checkpointer.save(self.trainers, self.controller)
            self._saved_at = steps

    def finish(self) -> None:
        """Write a last checkpoint and each behavior's final policy ``<run>/<Behavior>.pt``."""
        try:
            if self.training and self.trainers:
                self._checkpoint()
                for name, trainer in self.trainers.items():
                    behavior_id = next(b for b in self.processors if b.name == name)
                    path = self.run_path / f"{safe_name(name)}.pt"
                    trainer.get_policy(behavior_id).save(path)
                    logger.info("Exported %s", path)
        finally:
            for trainer in self.trainers.values():
                trainer.close()
            self.stepper.close()
