"""``environment_parameters``: constants, samplers and curricula, in ML-Agents' schema.

Vocabulary. Each environment parameter has a **curriculum**: an ordered list of **lessons**; a
lesson has a ``value`` (a number or a sampler, ``envs.environment_parameters``) and, unless it is
the last, ``completion_criteria`` saying when the next lesson starts. A parameter written as a
plain number or sampler is a curriculum of one lesson.

Completion is measured on one behavior (``completion_criteria.behavior``):

- ``progress``: its trainer step / ``max_steps`` (ML-Agents);
- ``reward``: the mean return of its last ``min_lesson_length`` episodes (ML-Agents);
- ``Elo``: its self-play rating (ours: self-play rewards average ~0 by construction, so a
  reward threshold never tells a stronger player from a weaker one);
- ``win_rate``: its mean score (win 1, draw 0.5, loss 0) in the last ``min_lesson_length`` games
  against the fixed opponent named by ``opponent`` (ours).

A lesson only completes after ``min_lesson_length`` episodes (for ``win_rate``: games against the
opponent) since it began. ``signal_smoothing`` blends a reward or win-rate measure with the
previous one (0.25 old + 0.75 new), as ML-Agents does for reward. Every measure buffer is emptied
when any lesson changes, as ML-Agents empties its reward buffers.
"""

from __future__ import annotations

import enum
import logging
from collections import deque
from collections.abc import Mapping
from typing import Any

import attrs

from envs.environment_parameters import UNSEEDED, ParameterValue
from envs.validators import unit_interval

logger = logging.getLogger(__name__)


class Measure(str, enum.Enum):
    """What a lesson's completion is measured on (``completion_criteria.measure``)."""

    PROGRESS = "progress"
    REWARD = "reward"
    ELO = "elo"
    WIN_RATE = "win_rate"


@attrs.frozen(kw_only=True)
class CompletionCriteria:
    """When a lesson is complete: ML-Agents' keys plus ``opponent`` for ``measure: win_rate``."""

    behavior: str
    measure: Measure = Measure.REWARD
    min_lesson_length: int = attrs.field(default=0, validator=attrs.validators.ge(0))
    signal_smoothing: bool = True
    threshold: float = 0.0
    require_reset: bool = False
    #: the fixed opponent (``self_play.fixed_opponents[].name``) a ``win_rate`` is measured against
    opponent: str | None = None

    def __attrs_post_init__(self) -> None:
        if self.measure in (Measure.PROGRESS, Measure.WIN_RATE):
            unit_interval(self, attrs.fields(CompletionCriteria).threshold, self.threshold)
        if self.measure is Measure.WIN_RATE and not self.opponent:
            raise ValueError(
                "measure win_rate needs `opponent`: the name of one of the behavior's "
                "self_play.fixed_opponents"
            )
        if self.measure is not Measure.WIN_RATE and self.opponent:
            raise ValueError("`opponent` is only used with measure: win_rate")


@attrs.frozen(kw_only=True)
class Lesson:
    """One lesson of a curriculum: its ``value`` and when it is complete (None: the last one)."""

    name: str
    value: ParameterValue
    completion_criteria: CompletionCriteria | None = None


@attrs.frozen(kw_only=True)
class EnvironmentParameterSettings:
    """One entry of ``environment_parameters``: its lessons, in order."""

    curriculum: tuple[Lesson, ...] = attrs.field(converter=tuple)

    def __attrs_post_init__(self) -> None:
        if not self.curriculum:
            raise ValueError("a curriculum needs at least one lesson")
        for index, lesson in enumerate(self.curriculum[:-1]):
            if lesson.completion_criteria is None:
                raise ValueError(
                    f"lesson {index} ({lesson.name!r}) is not the last one, so it needs "
                    "completion_criteria"
                )


ParameterSettings = Mapping[str, EnvironmentParameterSettings]


def with_seeds(
    settings: ParameterSettings, run_seed: int
) -> dict[str, EnvironmentParameterSettings]:
    """``settings`` with every unseeded sampler seeded ``run_seed + k`` (k counts them in order),
    so that a run's samples repeat with its seed, as in ML-Agents."""
    seeded: dict[str, EnvironmentParameterSettings] = {}
    offset = 0
    for name, parameter in settings.items():
        lessons = []
        for lesson in parameter.curriculum:
            if lesson.value.seed == UNSEEDED:
                lesson = attrs.evolve(
                    lesson, value=attrs.evolve(lesson.value, seed=run_seed + offset)
                )
                offset += 1
            lessons.append(lesson)
        seeded[name] = EnvironmentParameterSettings(curriculum=tuple(lessons))
    return seeded


@attrs.frozen(kw_only=True)
class BehaviorMeasures:
    """What the curriculum knows of one behavior when it checks its lessons."""

    progress: float
    episode_returns: list[float]
    rating: float | None = None
    #: per fixed opponent name, the scores of games since the lesson began
    scores: Mapping[str, list[float]] = attrs.Factory(dict)


@attrs.frozen
class LessonChange:
    """A parameter moved to its next lesson."""

    parameter: str
    lesson: int
    lesson_name: str
    value: ParameterValue
    require_reset: bool


class Curriculum:
    """Current lesson of every environment parameter, advanced from behavior measures."""

    def __init__(self, settings: ParameterSettings) -> None:
        self.settings = dict(settings)
        self.lessons = dict.fromkeys(self.settings, 0)
        self._smoothed = dict.fromkeys(self.settings, 0.0)

    def values(self) -> dict[str, ParameterValue]:
        """The value (number or sampler) each parameter has in its current lesson."""
        return {name: s.curriculum[self.lessons[name]].value for name, s in self.settings.items()}

    def pending_criteria(self) -> dict[str, CompletionCriteria]:
        """The completion criteria of each parameter's current lesson, unless it is the last."""
        pending = {}
        for name, settings in self.settings.items():
            lesson = self.lessons[name]
            criteria = settings.curriculum[lesson].completion_criteria
            if criteria is not None and lesson + 1 < len(settings.curriculum):
                pending[name] = criteria
        return pending

    def all_criteria(self) -> list[tuple[str, int, CompletionCriteria]]:
        """(parameter, lesson index, criteria) of every lesson that has criteria."""
        return [
            (name, index, lesson.completion_criteria)
            for name, settings in self.settings.items()
            for index, lesson in enumerate(settings.curriculum)
            if lesson.completion_criteria is not None
        ]

    def self_play_problem(self, behavior: str, fixed_opponents: list[str] | None) -> str | None:
        """Why a lesson measured on ``behavior`` could never complete, or None.

        ``fixed_opponents``: the names of the behavior's fixed opponents, None when it does not
        self-play (an Elo or win-rate lesson needs a ghost, a win rate one of these names).
        """
        for parameter, index, criteria in self.all_criteria():
            if criteria.behavior != behavior or criteria.measure not in (
                Measure.ELO,
                Measure.WIN_RATE,
            ):
                continue
            where = f"environment_parameters.{parameter}.curriculum[{index}].completion_criteria"
            if fixed_opponents is None:
                return (
                    f"{where}: measure {criteria.measure.value} needs self-play, and behavior "
                    f"{behavior!r} has no self_play section"
                )
            if criteria.measure is Measure.WIN_RATE and criteria.opponent not in fixed_opponents:
                return (
                    f"{where}.opponent = {criteria.opponent!r}: {behavior!r} has no fixed opponent "
                    f"of that name; its self_play.fixed_opponents are {fixed_opponents or 'none'}"
                )
        return None

    def update(self, measures: Mapping[str, BehaviorMeasures]) -> list[LessonChange]:
        """Advance every parameter whose current lesson is complete; the changes made."""
        changes = []
        for name, criteria in self.pending_criteria().items():
            measured = measures.get(criteria.behavior)
            if measured is None:
                continue
            value = self._measure(name, criteria, measured)
            if value is None or value <= criteria.threshold:
                continue
            self.lessons[name] += 1
            lesson = self.settings[name].curriculum[self.lessons[name]]
            changes.append(
                LessonChange(
                    parameter=name, lesson=self.lessons[name], lesson_name=lesson.name,
                    value=lesson.value, require_reset=criteria.require_reset,
                )
            )  # fmt: skip
        return changes

    def _measure(
        self, name: str, criteria: CompletionCriteria, measured: BehaviorMeasures
    ) -> float | None:
        """The measured value, or None while the lesson is too young to judge."""
        if criteria.measure is Measure.PROGRESS:
            return measured.progress
        samples = (
            measured.scores.get(criteria.opponent or "", [])
            if criteria.measure is Measure.WIN_RATE
            else measured.episode_returns
        )
        if len(samples) < max(criteria.min_lesson_length, 1):
            return None
        if criteria.measure is Measure.ELO:
            return measured.rating
        recent = samples[-criteria.min_lesson_length :] if criteria.min_lesson_length else samples
        value = sum(recent) / len(recent)
        if criteria.signal_smoothing:
            value = 0.25 * self._smoothed[name] + 0.75 * value
            self._smoothed[name] = value
        return value

    def describe(self, name: str) -> str:
        lesson = self.settings[name].curriculum[self.lessons[name]]
        return (
            f"Parameter {name!r} is in lesson {lesson.name!r} with value {lesson.value.describe()}"
        )

    def state_dict(self) -> dict[str, Any]:
        return {"lessons": dict(self.lessons), "smoothed": dict(self._smoothed)}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        for name, lesson in state.get("lessons", {}).items():
            if name in self.lessons:
                self.lessons[name] = min(int(lesson), len(self.settings[name].curriculum) - 1)
        for name, value in state.get("smoothed", {}).items():
            if name in self._smoothed:
                self._smoothed[name] = float(value)


class MeasureBuffers:
    """Per behavior, episode returns and scores against fixed opponents since the lesson began."""

    def __init__(self, capacity: int) -> None:
        self.capacity = max(capacity, 1)
        self.returns: dict[str, deque[float]] = {}
        self.scores: dict[str, dict[str, deque[float]]] = {}

    def add_returns(self, behavior: str, returns: Any) -> None:
        buffer = self.returns.setdefault(behavior, deque(maxlen=self.capacity))
        buffer.extend([returns] if isinstance(returns, float | int) else list(returns))

    def add_score(self, behavior: str, opponent: str, score: float) -> None:
        per_opponent = self.scores.setdefault(behavior, {})
        per_opponent.setdefault(opponent, deque(maxlen=self.capacity)).append(float(score))

    def clear(self) -> None:
        self.returns.clear()
        self.scores.clear()
