"""An environment's own statistics (Unity's stats side channel) in each behavior's summaries.

``StatsEnv`` reports one value per aggregation method every step, in process or from worker
processes; the summaries must aggregate them as ML-Agents does.
"""

from __future__ import annotations

import pytest
from mlagents_envs.side_channel.stats_side_channel import StatsAggregationMethod

import ghost
from tests.worker_envs import EchoEnv

pytestmark = pytest.mark.usefixtures("one_torch_thread")


class StatsEnv(EchoEnv):
    """``EchoEnv`` reporting, after each step, its worker id (most recent) and the step count."""

    def __init__(self, worker_id: int = 0, seed: int = 0) -> None:
        super().__init__(worker_id=worker_id, seed=seed)
        self.worker_id = worker_id
        self.steps = 0
        self.pending: dict = {}

    def step(self) -> None:
        super().step()
        self.steps += 1
        self.pending = {
            "Custom/Average": [(float(self.steps), StatsAggregationMethod.AVERAGE)],
            "Custom/Sum": [(1.0, StatsAggregationMethod.SUM)],
            "Custom/Worker": [(float(self.worker_id), StatsAggregationMethod.MOST_RECENT)],
            "Custom/Spread": [(0.0, StatsAggregationMethod.HISTOGRAM),
                              (2.0, StatsAggregationMethod.HISTOGRAM)],
        }  # fmt: skip

    def environment_stats(self):
        stats, self.pending = self.pending, {}
        return stats


def make_stats_env(worker_id: int = 0, seed: int = 0) -> StatsEnv:
    return StatsEnv(worker_id=worker_id, seed=seed)


CONFIG = {
    "behaviors": {
        "Echo": {
            "hyperparameters": {"batch_size": 16, "buffer_size": 32, "num_epoch": 1},
            "network_settings": {"hidden_units": 8, "num_layers": 1},
            "max_steps": 200,
            "summary_freq": 50,
            "self_play": {},
        }
    }
}


class Summaries:
    def __init__(self) -> None:
        self.values: list[dict[str, float]] = []

    def on_summary(self, summary) -> None:
        self.values.append(summary.values)


@pytest.mark.parametrize("num_envs", [1, 2])
def test_environment_stats_are_aggregated_like_ml_agents(tmp_path, num_envs):
    summaries = Summaries()
    ghost.train(CONFIG, env="tests.test_environment_stats:make_stats_env", num_envs=num_envs,
                run_id="r", results_dir=tmp_path, callbacks=[summaries])  # fmt: skip
    first = summaries.values[0]
    env_steps = first["Custom/Sum"] / num_envs  # one 1.0 per environment and step
    assert env_steps == int(env_steps) and env_steps > 1
    assert first["Custom/Average"] == pytest.approx((env_steps + 1) / 2)  # mean of 1..n
    assert first["Custom/Worker"] == 0.0  # most recent: worker 0 only, as in ML-Agents
    assert first["Custom/Spread"] == pytest.approx(1.0)
