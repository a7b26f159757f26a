"""TensorBoard as ML-Agents 1.1 writes it (tags, histograms, hidden keys) and the console line's
progress fields: read back from the event files of tiny runs."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import numpy as np
import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

import ghost
from envs.stepping import InProcessStepper
from tests.group_envs import SacrificeEnv
from trainers.hyperparameters import POCASettings
from trainers.run_files.layout import RunLayout
from trainers.settings import NetworkSettings, TrainerSettings
from trainers.stats import (
    CUMULATIVE_REWARD,
    EXTRINSIC_REWARD,
    GROUP_CUMULATIVE_REWARD,
    HISTOGRAM_SUFFIX,
    IS_TRAINING,
    StatsReporter,
    progress_fields,
    readable_duration,
)
from trainers.training_loop import TrainingLoop

pytestmark = pytest.mark.usefixtures("one_torch_thread")

STRENGTH = 0.5
TENNIS = {
    "behaviors": {
        "Tennis": {
            "hyperparameters": {"batch_size": 64, "buffer_size": 256},
            "network_settings": {"hidden_units": 16},
            "reward_signals": {"extrinsic": {"strength": STRENGTH}},
            "max_steps": 900,
            "summary_freq": 300,
            "checkpoint_interval": 900,
            "self_play": {"save_steps": 200, "team_change": 400, "swap_steps": 100},
        }
    },
    "env_settings": {"env_path": "tennis", "seed": 0},
}


def _events(folder: Path) -> EventAccumulator:
    events = EventAccumulator(str(folder), size_guidance={"scalars": 0, "histograms": 0})
    events.Reload()
    return events


def _scalars(events: EventAccumulator, tag: str) -> dict[int, float]:
    return {event.step: event.value for event in events.Scalars(tag)}


class _Summaries:
    def __init__(self) -> None:
        self.values: list[dict[str, float]] = []

    def on_summary(self, summary) -> None:  # type: ignore[no-untyped-def]
        self.values.append(summary.values)


@pytest.fixture(scope="module")
def tennis_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, _Summaries]:
    results = tmp_path_factory.mktemp("tb")
    summaries = _Summaries()
    ghost.train(TENNIS, run_id="tb", results_dir=results, callbacks=[summaries], verbose=0)
    return results / "tb" / "Tennis", summaries


def test_the_cumulative_reward_is_a_scalar_of_its_mean_and_a_histogram_of_every_episode(
    tennis_run,
):
    events = _events(tennis_run[0])
    means = _scalars(events, CUMULATIVE_REWARD)
    assert len(means) >= 2  # a summary with no finished episode has neither
    histograms = events.Histograms(CUMULATIVE_REWARD + HISTOGRAM_SUFFIX)
    assert [h.step for h in histograms] == sorted(means)
    for histogram in histograms:
        value = histogram.histogram_value
        assert value.num >= 1
        assert -1.5 <= value.min <= value.max <= 1.5  # a tennis point pays +-1 (and a touch)
        assert value.sum / value.num == pytest.approx(means[histogram.step], abs=1e-5)


def test_the_extrinsic_reward_is_the_episode_reward_times_the_signal_strength(tennis_run):
    events = _events(tennis_run[0])
    rewards = _scalars(events, CUMULATIVE_REWARD)
    extrinsic = _scalars(events, EXTRINSIC_REWARD)
    assert extrinsic.keys() == rewards.keys()
    for step, reward in rewards.items():
        assert extrinsic[step] == pytest.approx(STRENGTH * reward, abs=1e-6)
    values = _scalars(events, "Policy/Extrinsic Value Estimate")
    assert values and all(np.isfinite(v) and abs(v) < 10 for v in values.values())


def test_is_training_reaches_callbacks_and_the_console_but_not_tensorboard(tennis_run):
    folder, summaries = tennis_run
    assert IS_TRAINING not in _events(folder).Tags()["scalars"]  # ML-Agents' hidden_keys
    assert [values[IS_TRAINING] for values in summaries.values] == [1.0, 1.0, 1.0]


def test_poca_writes_the_extrinsic_reward_with_the_group_reward_in_it(tmp_path):
    settings = TrainerSettings(
        trainer_type="poca", hyperparameters=POCASettings(batch_size=64, buffer_size=256),
        network_settings=NetworkSettings(hidden_units=16), max_steps=600, summary_freq=300,
        checkpoint_interval=600,
    )  # fmt: skip
    loop = TrainingLoop(
        behaviors={"Pair": settings}, stepper=InProcessStepper(SacrificeEnv(seed=0)),
        layout=RunLayout(tmp_path / "poca"), seed=0,
    )  # fmt: skip
    loop.run()
    events = _events(tmp_path / "poca" / "Pair")
    individual = _scalars(events, CUMULATIVE_REWARD)
    group = _scalars(events, GROUP_CUMULATIVE_REWARD)
    extrinsic = _scalars(events, EXTRINSIC_REWARD)
    assert extrinsic.keys() == individual.keys() and extrinsic
    for step in extrinsic:
        assert extrinsic[step] == pytest.approx(individual[step] + group[step], abs=1e-5)
    histograms = set(events.Tags()["histograms"])
    assert {CUMULATIVE_REWARD + HISTOGRAM_SUFFIX, GROUP_CUMULATIVE_REWARD + HISTOGRAM_SUFFIX} <= (
        histograms
    )


# -- the console line ----------------------------------------------------------------------------
SUMMARY = re.compile(
    r"(?P<name>\w+)\. Step: (?P<step>\d+)\. Time Elapsed: (?P<elapsed>[\d.]+) s\. "
    r"Progress: (?P<percent>\d+)%\. Time Left: ~(?P<left>[\d.]+ (?:s|min|h))\. "
    r"Mean Reward: [-\d.]+\. Std of Reward: [\d.]+\."
)


def test_the_summary_line_keeps_ml_agents_fields_and_adds_progress_and_time_left(caplog):
    reporter = StatsReporter(behavior_name="Tennis", log_dir=None, summary_freq=100, max_steps=400)
    with caplog.at_level(logging.INFO, logger="trainers.stats"):
        for step in (100, 200, 300, 400):
            reporter.add(CUMULATIVE_REWARD, np.array([1.0, -1.0]))
            reporter.maybe_write(step)
    lines = [record.getMessage() for record in caplog.records]
    assert len(lines) == 4
    matches = [SUMMARY.match(line) for line in lines]
    assert all(matches), lines
    assert [int(m["percent"]) for m in matches] == [25, 50, 75, 100]
    assert matches[-1]["left"] == "0 s"
    assert all(line.endswith("Training.") for line in lines)


def test_progress_comes_from_the_session_steps_per_second():
    assert progress_fields(step=2000, max_steps=20000, first_step=0, elapsed_s=10.0) == [
        "Progress: 10%.", "Time Left: ~90 s."
    ]  # fmt: skip
    # a resumed session counts its own steps: 2000 in 10 s from step 10000
    assert progress_fields(step=12000, max_steps=20000, first_step=10000, elapsed_s=10.0) == [
        "Progress: 60%.", "Time Left: ~40 s."
    ]  # fmt: skip
    assert progress_fields(step=5000, max_steps=20000, first_step=5000, elapsed_s=3.0) == [
        "Progress: 25%."
    ]  # no step yet this session: no speed to go by
    assert progress_fields(step=100, max_steps=None, first_step=0, elapsed_s=1.0) == []
    assert progress_fields(step=100, max_steps=0, first_step=0, elapsed_s=1.0) == []
    assert progress_fields(step=19999, max_steps=20000, first_step=0, elapsed_s=1.0)[0] == (
        "Progress: 99%."
    )


def test_durations_read_in_seconds_minutes_or_hours():
    assert [readable_duration(s) for s in (0.4, 47.2, 99.4, 99.6, 750, 5969, 5971, 12240)] == [
        "0 s", "47 s", "99 s", "2 min", "12 min", "99 min", "1.7 h", "3.4 h"
    ]  # fmt: skip
