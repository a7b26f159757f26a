"""``LessonSchedule``: a run's environment parameters, sent to the environments and advanced as
the curriculum's lessons complete (``ghost.config.curriculum`` holds the rules).

It listens to each behavior's statistics (episode returns, results against fixed opponents),
reads ratings from the ghosts, and after every environment step tells the session which lessons
changed. The session then sends the new values to every environment (and resets them when a
finished lesson says ``require_reset``). TensorBoard gets ``Environment/Lesson Number/<parameter>``
for every behavior, as in ML-Agents.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from envs.environment_parameters import ParameterValue
from ghost.config.curriculum import (
    BehaviorMeasures,
    Curriculum,
    LessonChange,
    MeasureBuffers,
    ParameterSettings,
    with_seeds,
)
from ghost.core.win_rates import WIN_RATE_STAT
from ghost.exceptions import ConfigError
from ghost.running.ghost_trainer import GhostTrainer
from trainers.base import Trainer
from trainers.stats import CUMULATIVE_REWARD

logger = logging.getLogger(__name__)

_WIN_RATE_VS = f"{WIN_RATE_STAT} vs fixed:"


class LessonSchedule:
    """The current value of every environment parameter, and the curriculum moving them on."""

    def __init__(self, settings: ParameterSettings | None, *, seed: int) -> None:
        self.curriculum = Curriculum(with_seeds(settings or {}, seed))
        capacity = max(
            (c.min_lesson_length for _, _, c in self.curriculum.all_criteria()), default=1
        )
        self.buffers = MeasureBuffers(capacity)
        self._watched: set[str] = set()
        self._has_curricula = any(len(s.curriculum) > 1 for s in self.curriculum.settings.values())

    def values(self) -> dict[str, ParameterValue]:
        """What the environments should use now."""
        return self.curriculum.values()

    def log_lessons(self) -> None:
        for name in self.curriculum.settings:
            logger.info("%s.", self.curriculum.describe(name))

    def watch(self, trainer: Trainer, ghost: GhostTrainer | None) -> None:
        """Start measuring ``trainer``'s behavior; check the criteria that name it."""
        name = trainer.behavior_name
        if name in self._watched:
            return
        self._watched.add(name)
        self._check_criteria(name, ghost)
        self.publish_lessons({name: trainer})
        trainer.stats.watch(CUMULATIVE_REWARD, lambda v: self.buffers.add_returns(name, v))
        if ghost is None:
            return
        for opponent in ghost.fixed_opponents:
            trainer.stats.watch(
                f"{_WIN_RATE_VS}{opponent.name}",
                lambda score, o=opponent.name: self.buffers.add_score(name, o, float(score)),
            )

    def _check_criteria(self, behavior: str, ghost: GhostTrainer | None) -> None:
        names = None if ghost is None else [opponent.name for opponent in ghost.fixed_opponents]
        problem = self.curriculum.self_play_problem(behavior, names)
        if problem is not None:
            raise ConfigError(problem)

    def warn_unknown_behaviors(self, behaviors: Mapping[str, Any]) -> None:
        """Lessons measured on a behavior the environment does not have never complete."""
        for parameter, index, criteria in self.curriculum.all_criteria():
            if criteria.behavior not in behaviors:
                logger.warning(
                    "environment_parameters.%s.curriculum[%d] is measured on behavior %r, which "
                    "the environment does not have (it has %s): that lesson never completes",
                    parameter, index, criteria.behavior, sorted(behaviors),
                )  # fmt: skip

    def update(
        self, trainers: Mapping[str, Trainer], ghosts: Mapping[str, GhostTrainer]
    ) -> list[LessonChange]:
        """Advance the lessons that are complete; the changes (and log lines) made."""
        pending = self.curriculum.pending_criteria()
        if not pending:
            return []
        measures = {
            c.behavior: self._measures(trainers[c.behavior], ghosts.get(c.behavior))
            for c in pending.values()
            if c.behavior in trainers
        }
        changes = self.curriculum.update(measures)
        if changes:
            self.buffers.clear()
            self.publish_lessons(trainers)
            for change in changes:
                logger.info("Lesson complete. %s.", self.curriculum.describe(change.parameter))
        return changes

    def publish_lessons(self, trainers: Mapping[str, Trainer]) -> None:
        """Every behavior's summaries show each curriculum's current lesson from now on."""
        if not self._has_curricula:
            return
        for parameter, lesson in self.curriculum.lessons.items():
            for trainer in trainers.values():
                trainer.stats.set_gauge(f"Environment/Lesson Number/{parameter}", lesson)

    def _measures(self, trainer: Trainer, ghost: GhostTrainer | None) -> BehaviorMeasures:
        name = trainer.behavior_name
        max_steps = max(trainer.settings.max_steps, 1)
        return BehaviorMeasures(
            progress=trainer.step / max_steps,
            episode_returns=list(self.buffers.returns.get(name, ())),
            rating=ghost.rating if ghost is not None else None,
            scores={o: list(s) for o, s in self.buffers.scores.get(name, {}).items()},
        )

    def state_dict(self) -> dict[str, Any]:
        return self.curriculum.state_dict()

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.curriculum.load_state_dict(state)
