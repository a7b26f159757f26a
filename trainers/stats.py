"""Training statistics: TensorBoard scalars under ML-Agents' tag names and a console summary line.

Values are accumulated between summaries and written every ``summary_freq`` trainer steps, like
ML-Agents' ``StatsReporter``: as their mean, or, for a key recorded with another ``Aggregation``
(an environment's own stats), their sum, the most recent value, or a histogram (under the tag
``<key>_hist``, as ML-Agents' ``TensorboardWriter`` names it) plus its mean. A gauge
(``set_gauge``) holds one value that every summary writes until it is set again. Every summary
also writes ``Environment/Steps Per Second``, and gives callbacks ``Is Training`` (1 while the
behavior learns, 0 while it only acts: the console line's ``Training.``), which ML-Agents keeps
out of TensorBoard. The console line reads
``Tennis. Step: 20000. Time Elapsed: 31.2 s. Progress: 40%. Time Left: ~47 s. Mean Reward: 0.120.
Std of Reward: 0.950. ELO: 1213.4. 6410 steps/s. Training.``: ML-Agents' fields keep their
place and wording; ``Progress`` and ``Time Left`` (from the behavior's steps per second since the
session started) come only when the reporter knows ``max_steps``.

In a run the lines of every behavior go through one ``SummaryConsole`` (``StatsReporter.console``):
the training loop lets it log the lines that came due in a round together, in step order, and
``Time Elapsed`` counts from the run's start for all of them. In self-play the behaviors learn in
turns (``team_change``), so one behavior's steps stand still while another's run on: lines follow
the turns, as in ML-Agents, not one step count across behaviors.
"""

from __future__ import annotations

import enum
import logging
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import numpy as np

from trainers.callbacks import Summary

logger = logging.getLogger(__name__)

CUMULATIVE_REWARD = "Environment/Cumulative Reward"
EPISODE_LENGTH = "Environment/Episode Length"
ELO = "Self-play/ELO"
#: NashConv / 2 of the learning policies (OpenSpiel two-player zero-sum games)
EXPLOITABILITY = "Self-play/Exploitability"
GROUP_CUMULATIVE_REWARD = "Environment/Group Cumulative Reward"
#: each finished episode's environment reward times the extrinsic signal's ``strength``
EXTRINSIC_REWARD = "Policy/Extrinsic Reward"
#: 1.0 in a summary written while the behavior learns, 0.0 while it only acts; like ML-Agents,
#: the console line shows it (``Training.``) and callbacks get it, TensorBoard does not
IS_TRAINING = "Is Training"
#: keys kept out of TensorBoard, as ML-Agents' ``TensorboardWriter`` keeps them (``hidden_keys``)
HIDDEN_FROM_TENSORBOARD = frozenset({IS_TRAINING})
STEPS_PER_SECOND = "Environment/Steps Per Second"
#: what ML-Agents appends to a histogram's tag, beside the scalar of its mean under the key itself
HISTOGRAM_SUFFIX = "_hist"


def progress_fields(
    *, step: int, max_steps: int | None, first_step: int, elapsed_s: float
) -> list[str]:
    """The console line's ``Progress: 40%.`` and ``Time Left: ~47 s.`` at ``step`` of
    ``max_steps`` (none without ``max_steps``; no time left before a step was taken).

    The time left assumes the steps to come go as fast as the ``step - first_step`` taken in
    ``elapsed_s`` seconds did: in self-play that speed counts the turns the behavior waited.
    """
    if not max_steps:
        return []
    fields = [f"Progress: {int(100 * min(step / max_steps, 1.0))}%."]
    if step > first_step and elapsed_s > 0:
        left_s = max(max_steps - step, 0) * elapsed_s / (step - first_step)
        fields.append(f"Time Left: ~{readable_duration(left_s)}.")
    return fields


def readable_duration(seconds: float) -> str:
    """``47 s``, ``12 min`` or ``3.4 h``: a duration in the unit that reads best."""
    if round(seconds) < 100:
        return f"{seconds:0.0f} s"
    if round(seconds / 60) < 100:
        return f"{seconds / 60:0.0f} min"
    return f"{seconds / 3600:0.1f} h"


class Aggregation(enum.Enum):
    """How the values of one key between two summaries become one point (ML-Agents' names)."""

    AVERAGE = "average"
    MOST_RECENT = "most_recent"
    SUM = "sum"
    HISTOGRAM = "histogram"


class SummaryConsole:
    """The console summary lines of a run's behaviors, logged in step order when ``flush``-ed,
    ``Time Elapsed`` counted from one start for every behavior."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self._lines: list[tuple[int, str]] = []

    def add(self, step: int, line: str) -> None:
        """Hold ``line``, a summary written at ``step``, until the next ``flush``."""
        self._lines.append((step, line))

    def flush(self) -> None:
        """Log the lines held, lowest step first (lines of one step in the order they came)."""
        lines, self._lines = self._lines, []
        for _, line in sorted(lines, key=lambda entry: entry[0]):
            logger.info(line)


class StatsReporter:
    """Collects one behavior's statistics and writes them every ``summary_freq`` steps.

    Its console line is logged at once, or handed to ``console`` when the run set one.

    Args:
        behavior_name: names the console line.
        log_dir: where TensorBoard events go (None: none are written).
        summary_freq: trainer steps between summaries.
        max_steps: the behavior's trainer steps to train for; the console line then shows the
            share done and the time left (None or 0: it does not).
    """

    def __init__(
        self,
        *,
        behavior_name: str,
        log_dir: Path | None,
        summary_freq: int,
        max_steps: int | None = None,
    ) -> None:
        self.behavior_name = behavior_name
        self.summary_freq = summary_freq
        self.max_steps = max_steps
        self.log_dir = log_dir
        self._writer = None
        self._values: dict[str, list[float]] = defaultdict(list)
        self._aggregation: dict[str, Aggregation] = {}
        self._gauges: dict[str, float] = {}
        self._watchers: dict[str, list[Callable[[float | np.ndarray], None]]] = {}
        self._start = time.perf_counter()
        self._last_time = self._start
        self._last_step = 0
        #: the step this session started from: the time left counts this session's speed only
        self._first_step = 0
        self._last_summary = 0
        self._purge_step: int | None = None
        self.training = True
        self.latest: dict[str, float] = {}
        #: called with each ``trainers.callbacks.Summary`` as it is written
        self.listeners: list[Callable[[Summary], None]] = []
        #: where the console lines go, when the run collects them (see the module docstring)
        self.console: SummaryConsole | None = None

    def add(self, key: str, values: float | np.ndarray) -> None:
        """Record one value or an array of values for ``key``."""
        if isinstance(values, np.ndarray):
            self._values[key].extend(values.astype(float).tolist())
        else:
            self._values[key].append(float(values))
        if key in self._watchers:
            for watcher in self._watchers[key]:
                watcher(values)

    def record(self, key: str, value: float | np.ndarray, aggregation: Aggregation) -> None:
        """Record ``value`` for a key summarised by ``aggregation`` instead of the mean."""
        self._aggregation[key] = aggregation
        self.add(key, value)

    def write_scalar(self, key: str, value: float, step: int) -> None:
        """Write one value at ``step`` at once, outside the summaries: for a result that
        arrives after the summary of its step was written (a game played elsewhere)."""
        self.latest[key] = float(value)
        writer = self._tensorboard()
        if writer is not None:
            writer.add_scalar(key, float(value), step)
            writer.flush()

    def set_gauge(self, key: str, value: float) -> None:
        """``key`` reads ``value`` in every summary from now on (until set again)."""
        self._gauges[key] = float(value)

    def watch(self, key: str, watcher: Callable[[float | np.ndarray], None]) -> None:
        """Call ``watcher`` with every value (or array of values) ``add`` records for ``key``."""
        self._watchers.setdefault(key, []).append(watcher)

    def set_start(self, step: int) -> None:
        """Summaries continue from ``step`` (a resumed run).

        Points an earlier session wrote after ``step`` (between its last checkpoint and a hard
        kill) are orphans: TensorBoard is told to drop them, so the curves have no doubled steps.
        """
        self._last_step = self._first_step = step
        self._last_summary = step // self.summary_freq
        self._purge_step = step + 1

    def maybe_write(self, step: int) -> None:
        """Write a summary when ``step`` crossed a multiple of ``summary_freq``."""
        if step // self.summary_freq > self._last_summary:
            self._last_summary = step // self.summary_freq
            self.write(step)

    def write(self, step: int) -> None:
        """Write a summary of the values recorded since the last one, at ``step``."""
        now = time.perf_counter()
        means = {**self._gauges}
        means.update({key: self._summarise(key, v) for key, v in self._values.items() if v})
        steps_per_second = (step - self._last_step) / max(now - self._last_time, 1e-9)
        means[STEPS_PER_SECOND] = steps_per_second
        means[IS_TRAINING] = float(self.training)
        writer = self._tensorboard()
        if writer is not None:
            for key, value in means.items():
                if key in HIDDEN_FROM_TENSORBOARD:
                    continue
                writer.add_scalar(key, value, step)
                if self._aggregation.get(key) is Aggregation.HISTOGRAM and self._values.get(key):
                    writer.add_histogram(
                        key + HISTOGRAM_SUFFIX, np.asarray(self._values[key]), step
                    )
            writer.flush()
        rewards = self._values.get(CUMULATIVE_REWARD, [])
        started = self._start if self.console is None else self.console.started
        elapsed = now - started
        parts = [f"{self.behavior_name}. Step: {step}. Time Elapsed: {elapsed:0.1f} s."]
        parts += progress_fields(
            step=step, max_steps=self.max_steps, first_step=self._first_step, elapsed_s=elapsed
        )
        if rewards:
            parts.append(
                f"Mean Reward: {np.mean(rewards):0.3f}. Std of Reward: {np.std(rewards):0.3f}."
            )
        else:
            parts.append("No episode was completed since last summary.")
        if GROUP_CUMULATIVE_REWARD in means:
            parts.append(f"Mean Group Reward: {means[GROUP_CUMULATIVE_REWARD]:0.3f}.")
        if ELO in means:
            parts.append(f"ELO: {means[ELO]:0.1f}.")
        parts.append(f"{steps_per_second:0.0f} steps/s.")
        parts.append("Training." if self.training else "Not Training.")
        if self.console is None:
            logger.info(" ".join(parts))
        else:
            self.console.add(step, " ".join(parts))
        self.latest = means
        summary = Summary(behavior_name=self.behavior_name, step=step,
                          elapsed_s=elapsed, values=dict(means))  # fmt: skip
        for listener in self.listeners:
            listener(summary)
        self._values.clear()
        self._last_time, self._last_step = now, step

    def _summarise(self, key: str, values: list[float]) -> float:
        aggregation = self._aggregation.get(key)
        if aggregation is Aggregation.SUM:
            return float(np.sum(values))
        if aggregation is Aggregation.MOST_RECENT:
            return values[-1]
        return float(np.mean(values))

    def _tensorboard(self):  # type: ignore[no-untyped-def]
        if self._writer is None and self.log_dir is not None:
            from torch.utils.tensorboard import SummaryWriter

            self._writer = SummaryWriter(str(self.log_dir), purge_step=self._purge_step)
        return self._writer

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None
