"""``self_play.learn_from_latest``: a ghosted team's experience trains the learner while that team
plays the latest copy of the learner, without counting as trainer steps."""

from __future__ import annotations

from typing import Any

import pytest

from envs.behavior_id import BehaviorId
from ghost.exceptions import ConfigError
from tests.team_envs import GhostRig, RecordingTrainer
from trainers.ppo import PPOTrainer


class _QueueRecorder(RecordingTrainer):
    """Records whether each batch came through a step-counting queue; forgets on request."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.arrivals: list[tuple[int, bool]] = []
        self.forgotten: list[BehaviorId] = []

    def advance(self) -> None:
        for queue in self.trajectory_queues:
            for batch in queue.drain():
                self.arrivals.append((batch.behavior_id.team, queue.counts_steps))
                if queue.counts_steps:
                    self._step += batch.agent_steps

    def forget_partial(self, behavior_id: BehaviorId) -> None:
        self.forgotten.append(behavior_id)


def _rig(tmp_path, monkeypatch, **self_play: Any) -> GhostRig:
    monkeypatch.setattr("tests.team_envs.RecordingTrainer", _QueueRecorder)
    return GhostRig(artifact_dir=tmp_path, learn_from_latest=True, **self_play)


def test_the_ghosted_team_playing_the_latest_copy_trains_the_learner_uncounted(
    tmp_path, monkeypatch
):
    rig = _rig(tmp_path, monkeypatch, play_against_latest_model_ratio=1.0, swap_steps=10**6)
    rig.ghost.advance()  # the first turn begins: the ghosted team fields the latest copy
    assert [o.is_latest for o in rig.opponents(1)] == [True]
    rig.put(0, decisions=4)
    rig.put(1, decisions=4)
    rig.ghost.advance()
    assert sorted(rig.inner.arrivals) == [(0, True), (1, False)]
    assert rig.inner.step == 4  # only the learning team's agent steps count


def test_snapshot_opponents_teach_nothing_and_a_switch_drops_partial_trajectories(
    tmp_path, monkeypatch
):
    rig = _rig(tmp_path, monkeypatch, play_against_latest_model_ratio=1.0, swap_steps=10**6)
    rig.ghost.advance()
    rig.put(1, decisions=4)
    rig.ghost.advance()
    snapshot = rig.ghost.state.window[0]
    rig.ghost.opponent_policies[BehaviorId("Arena", 1)].assign(
        [type(rig.opponents(1)[0])(snapshot=snapshot)]
    )
    rig.put(1, decisions=4)
    rig.ghost.advance()
    assert rig.inner.arrivals == [(1, False)]  # the batch played by a snapshot stayed out
    assert rig.inner.forgotten == [BehaviorId("Arena", 1)]


def test_off_by_default_as_in_mlagents(tmp_path):
    rig = GhostRig(artifact_dir=tmp_path, play_against_latest_model_ratio=1.0)
    rig.ghost.advance()
    rig.put(1, decisions=4)
    rig.ghost.advance()
    assert rig.inner.received == []


def test_memory_is_refused_with_a_clear_error():
    from ghost.config.loader import options_from_dict

    behavior = {"network_settings": {"memory": {}}, "self_play": {"learn_from_latest": True}}
    with pytest.raises(ConfigError, match=r"learn_from_latest = True \(written\) is not supported"):
        options_from_dict({"behaviors": {"B": behavior}})


def test_a_real_run_updates_more_often_in_the_same_trainer_steps(tmp_path, monkeypatch):
    import ghost

    updates: list[bool] = []
    original = PPOTrainer._update

    def counted(self: PPOTrainer) -> None:
        updates.append(True)
        original(self)

    monkeypatch.setattr(PPOTrainer, "_update", counted)
    config = {
        "behaviors": {
            "Tennis": {
                "hyperparameters": {"batch_size": 256, "buffer_size": 2048},
                "network_settings": {"hidden_units": 16, "num_layers": 1},
                "self_play": {"play_against_latest_model_ratio": 1.0, "save_steps": 2000},
            }
        },
        "env_settings": {"env_path": "tennis", "seed": 0},
    }
    counts = {}
    for flag in (False, True):
        config["behaviors"]["Tennis"]["self_play"]["learn_from_latest"] = flag
        updates.clear()
        result = ghost.train(
            config, run_id=f"mirror-{flag}", results_dir=str(tmp_path), max_steps=12000, verbose=0
        )
        assert 12000 <= result.steps["Tennis"] < 12000 + 2048
        counts[flag] = len(updates)
    assert counts[True] >= 1.6 * counts[False]


def test_hosts_with_their_own_trainers_refuse_it_with_the_reason():
    from ghost.core.settings import SelfPlaySettings
    from ghost.integrations.sb3.settings import self_play_settings

    with pytest.raises(
        ConfigError, match="learn_from_latest: not supported with Stable-Baselines3"
    ):
        self_play_settings(SelfPlaySettings(learn_from_latest=True), behavior="Tennis")


def test_a_trainer_that_cannot_drop_partial_trajectories_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="cannot drop a team's partial trajectories"):
        GhostRig(artifact_dir=tmp_path, learn_from_latest=True)  # RecordingTrainer has no hook


@pytest.mark.parametrize(
    ("self_play", "teams", "said"),
    [
        ({}, [0], "plays on one team"),
        ({"opponents_per_swap": 4}, [0, 1], "opponents_per_swap 4"),
        ({"play_against_latest_model_ratio": 0.0}, [0, 1], "play_against_latest_model_ratio 0"),
    ],
)
def test_written_where_it_cannot_apply_it_says_why(self_play, teams, said):
    from ghost.config.effects import ineffective_settings
    from ghost.config.loader import options_from_dict

    written = {**self_play, "learn_from_latest": True, "team_change": 100}
    settings = options_from_dict({"behaviors": {"B": {"self_play": written}}}).behaviors["B"]
    problems = ineffective_settings("B", settings, teams=teams, single_team=len(teams) == 1)
    assert [p for p in problems if "learn_from_latest does nothing" in p and said in p], problems
