"""``SelfPlaySession``: the training loop of ``trainers`` with ghosts around self-play behaviors.

It extends ``trainers.training_loop.TrainingLoop`` through its hooks only:

- behaviors are matched to the run configuration and checked as ``ghost-learn --check`` checks
  them (``ghost.running.start_checks``);
- a behavior with ``self_play`` gets its trainer wrapped in a ``GhostTrainer`` (with its
  ``SelfPlayState``, fixed opponents and scheduled evaluation);
- between steps the ``GhostController``'s team change, if any, is applied: every ghost swaps and
  the environments reset, so no trajectory straddles two learners;
- ``environment_parameters`` go to the environments before the first reset, and again whenever a
  curriculum lesson completes (``ghost.running.lessons``);
- the controller's and the curriculum's state travel in each checkpoint's run state;
- in two-player zero-sum OpenSpiel games the learners' exact exploitability is scored in the
  background (``ghost.running.exploitability_monitor``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs
from mlagents_envs.base_env import BehaviorSpec

from envs.behavior_id import BehaviorId
from envs.openspiel import OpenSpielSource
from envs.stepping import EnvStepper, StepResult
from ghost.config.effects import log_effects, shortened_by_flag
from ghost.config.loader import write_options
from ghost.config.settings import BehaviorSettings, RunOptions
from ghost.core.self_play import SelfPlayState
from ghost.core.self_play_host import SelfPlayHost
from ghost.core.snapshots import Snapshot
from ghost.play.game_runner import GameRunner, RayGames
from ghost.running.callbacks import SnapshotTaken, TeamChanged
from ghost.running.fixed_opponents import build_fixed_opponents
from ghost.running.ghost_trainer import GhostTrainer
from ghost.running.league import exploiter_factory
from ghost.running.lessons import LessonSchedule
from ghost.running.scheduled_evaluation import ScheduledEvaluation
from ghost.running.start_checks import builtin_game, check_start
from trainers.base import Trainer
from trainers.callbacks import TrainingCallback
from trainers.run_files.layout import RunLayout
from trainers.training_loop import TrainingLoop

logger = logging.getLogger(__name__)


class SelfPlaySession(TrainingLoop):
    """Trains every behavior of one environment stepper, self-play behaviors through ghosts."""

    def __init__(
        self,
        *,
        options: RunOptions,
        stepper: EnvStepper,
        layout: RunLayout,
        seed: int = 0,
        device: str = "cpu",
        acting_device: str | None = None,
        training: bool = True,
        initialize_from: Mapping[str, Path] | None = None,
        callbacks: Iterable[TrainingCallback] = (),
        env_source: object | None = None,
    ) -> None:
        """``env_source``: the environment factory, when the session may use it (an OpenSpiel
        game's exploitability is scored from it)."""
        super().__init__(
            stepper=stepper,
            behaviors=options.behaviors,
            layout=layout,
            seed=seed,
            device=device,
            acting_device=acting_device,
            training=training,
            initialize_from=initialize_from,
            callbacks=callbacks,
        )
        self.options = options
        #: the run's host kit; ghost-learn's callbacks report team changes (``TeamChanged``)
        self.kit = SelfPlayHost(team_change_level=logging.DEBUG)
        self.controller = self.kit.controller
        self.ghosts: dict[str, GhostTrainer] = {}
        self.evaluations: dict[str, ScheduledEvaluation] = {}
        self.lessons = LessonSchedule(options.environment_parameters, seed=seed)
        self.env_source = env_source
        self.exploitability: Any = None  # an ExploitabilityMonitor in OpenSpiel games

    @property
    def builtin_game(self) -> str | None:
        """The built-in game this run trains, if it is one."""
        return builtin_game(self.options)

    # -- hooks of the training loop ------------------------------------------------------------
    def settings_for(self, behavior_specs: Mapping[BehaviorId, BehaviorSpec]) -> dict[str, Any]:
        matched = check_start(self.options, behavior_specs)
        self._record_matched(matched)
        return matched

    def _record_matched(self, matched: Mapping[str, BehaviorSettings]) -> None:
        """``configuration.yaml`` records what each behavior trains with: where matching the
        environment changed a behavior's settings (self-play turned on by default, with the
        preset ``auto`` picked for it), the behavior is written out, so a resumed run reads back
        the same."""
        changed = {n: s for n, s in matched.items() if self.options.behaviors.get(n) != s}
        if not changed or not self.training:
            return
        self.options = attrs.evolve(self.options, behaviors={**self.options.behaviors, **changed})
        write_options(self.options, self.layout.configuration_path)

    def make_trainer(self, name: str, settings: BehaviorSettings, spec: BehaviorSpec) -> Trainer:
        trainer = super().make_trainer(name, settings, spec)
        if settings.self_play is None:
            return trainer
        fixed = build_fixed_opponents(
            settings.self_play, behavior_name=name, behavior_spec=spec,
            builtin_game=self.builtin_game,
        )  # fmt: skip
        state = SelfPlayState(
            behavior_name=name, settings=settings.self_play, seed=self.seed, fixed_opponents=fixed
        )
        ghost = GhostTrainer(
            trainer=trainer, kit=self.kit, state=state, layout=self.layout,
            on_snapshot=self._announce_snapshot,
            make_trainer=exploiter_factory(trainer, self.layout.behavior_dir(name) / "league"),
        )  # fmt: skip
        self.ghosts[name] = ghost
        return ghost

    def start(self, *, resume: bool) -> StepResult:
        initial = dict(self.lessons.curriculum.lessons)
        self.stepper.set_environment_parameters(self.lessons.values())
        steps = super().start(resume=resume)
        log_effects(
            {name: trainer.settings for name, trainer in self.trainers.items()},
            self.stepper.behavior_specs, training=self.training,
            game=self.options.env_settings, trial=shortened_by_flag(self.options),
        )  # fmt: skip
        if not self.training and not resume and not self.initialize_from_files:
            logger.warning(
                "--inference on a new run: no checkpoint or policy file to load, so the "
                "policies of %s act with untrained (random) weights; add --resume to watch a "
                "trained run, or --initialize-from RUN_ID",
                ", ".join(sorted(self.trainers)),
            )
        self.lessons.warn_unknown_behaviors(self.trainers)
        if self.lessons.curriculum.lessons != initial:  # a resumed run continues its lessons
            self.stepper.set_environment_parameters(self.lessons.values())
            steps = self.reset_environments()
        self.lessons.publish_lessons(self.trainers)
        self.lessons.log_lessons()
        self._start_exploitability()
        return steps

    def _start_exploitability(self) -> None:
        source = self.env_source
        if not isinstance(source, OpenSpielSource) or not self.training:
            return
        # imported here: OpenSpiel (an optional extra) is only needed by OpenSpiel runs
        from ghost.running.exploitability_monitor import (
            ExploitabilityMonitor,
            exploitability_interval,
        )

        every = exploitability_interval(source, self.options)
        if every:
            self.exploitability = ExploitabilityMonitor(
                source=source, trainers=self.trainers, every_steps=every,
                log_path=self.layout.run_logs_dir / "exploitability.csv",
            )  # fmt: skip

    def on_trainer_connected(self, trainer: Trainer, behavior_id: BehaviorId) -> None:
        self.lessons.watch(trainer, self.ghosts.get(behavior_id.name))
        ghost = self.ghosts.get(behavior_id.name)
        settings = ghost.self_play.evaluation if ghost is not None else None
        if ghost is None or settings is None or not self.training:
            return
        if behavior_id.name not in self.evaluations:
            self.evaluations[behavior_id.name] = ScheduledEvaluation(
                trainer=ghost, settings=settings, game=self.builtin_game,
                behavior_id=behavior_id, seed=self.seed, games=self._evaluation_games(),
            )  # fmt: skip

    def _evaluation_games(self) -> GameRunner | None:
        """Ray tasks with the Ray backend (rating games never slow the learner), else inline.
        One runner per behavior: a runner hands back every result it holds."""
        env_settings = self.options.env_settings
        return RayGames(env_settings.ray_address) if env_settings.uses_ray else None

    def between_steps(self, steps: StepResult) -> StepResult:
        change = self.kit.take_team_change()
        if change is not None:
            steps = self.reset_environments()
            self.callbacks.emit(
                "on_team_change",
                TeamChanged(previous_team=change.previous_team,
                            learning_team=change.learning_team, count=change.count),
            )  # fmt: skip
        for evaluation in self.evaluations.values():
            evaluation.maybe_run()
        if self.exploitability is not None:
            self.exploitability.maybe_run()
        changes = self.lessons.update(self.trainers, self.ghosts)
        if changes:
            self.stepper.set_environment_parameters(self.lessons.values())
            if any(change.require_reset for change in changes):
                steps = self.reset_environments()
        return steps

    def finish(self) -> None:
        for evaluation in self.evaluations.values():
            try:
                evaluation.finish()
            except Exception:  # nor may an evaluation game
                logger.exception("Scheduled evaluation games still being played failed")
        if self.exploitability is not None:
            try:
                self.exploitability.finish()
            except Exception:  # a score must never cost the final checkpoint
                logger.exception("The final exploitability could not be computed")
        super().finish()

    def run_state(self) -> dict[str, Any]:
        return {"controller": self.controller.state_dict(), "curriculum": self.lessons.state_dict()}

    def load_run_state(self, state: dict[str, Any]) -> None:
        if "controller" in state:
            self.controller.load_state_dict(state["controller"])
        self.lessons.load_state_dict(state.get("curriculum", {}))
        for evaluation in self.evaluations.values():
            evaluation.next_step = evaluation.after(evaluation.trainer.step)

    # -- events --------------------------------------------------------------------------------
    def _announce_snapshot(self, ghost: GhostTrainer, snapshot: Snapshot) -> None:
        self.callbacks.emit(
            "on_snapshot",
            SnapshotTaken(behavior_name=ghost.behavior_name, snapshot_id=snapshot.snapshot_id,
                          step=snapshot.step, rating=snapshot.rating),
        )  # fmt: skip
