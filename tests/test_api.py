"""``ghost.train``: the Python API writes what the CLI writes and lets callbacks watch and stop."""

from __future__ import annotations

import json

import pytest
import torch

import ghost
from ghost.config.loader import load_options
from ghost.evaluation.cli import main as ghost_eval
from ghost.exceptions import ConfigError, RunDirectoryError
from ghost.running import api
from tests.fake_envs import make_duel

TENNIS = {
    "behaviors": {
        "Tennis": {
            "hyperparameters": {"batch_size": 256, "buffer_size": 1024},
            "network_settings": {"hidden_units": 32},
            "max_steps": 40_000,
            "summary_freq": 1000,
            "checkpoint_interval": 2000,
            "self_play": {"save_steps": 1000, "team_change": 2000, "swap_steps": 500},
        }
    },
    "env_settings": {"env_path": "tennis", "seed": 3},
}


class Recorder(ghost.SelfPlayCallback):
    """Records every event; stops the run at the third summary."""

    def __init__(self) -> None:
        self.summaries, self.snapshots, self.changes, self.checkpoints = [], [], [], []

    def on_summary(self, summary):
        self.summaries.append(summary)
        return len(self.summaries) < 3

    def on_snapshot(self, snapshot):
        self.snapshots.append(snapshot)

    def on_team_change(self, change):
        self.changes.append(change)

    def on_checkpoint(self, checkpoint):
        self.checkpoints.append(checkpoint)


@pytest.fixture(autouse=True)
def one_thread():
    torch.set_num_threads(1)


def test_train_with_a_callback_that_stops_early_then_evaluate_the_folder(tmp_path, capsys):
    recorder = Recorder()
    result = ghost.train(TENNIS, run_id="api", results_dir=tmp_path, callbacks=[recorder])

    # the callback saw three summaries of the learner and stopped the run long before max_steps
    assert [s.step // 1000 for s in recorder.summaries] == [1, 2, 3]  # steps come in batches
    assert all(s.behavior_name == "Tennis" for s in recorder.summaries)
    assert "Environment/Cumulative Reward" in recorder.summaries[-1].values
    assert "Self-play/ELO" in recorder.summaries[-1].values
    assert result.stopped_early and result.steps["Tennis"] == recorder.summaries[-1].step
    # snapshots every 1000 steps (the untrained policy first), a team change every 2000
    assert [s.step // 1000 for s in recorder.snapshots][:3] == [0, 1, 2]
    assert [c.count for c in recorder.changes] == [1]
    assert recorder.changes[0].learning_team == 1
    # the last checkpoint is written as the run stops; each names its steps
    assert recorder.checkpoints[-1].steps == result.steps
    assert recorder.checkpoints[-1].index_path == result.run_dir / "checkpoint.json"

    # the same results folder as the CLI: configuration.yaml first of all
    run_dir = tmp_path / "api"
    assert result.run_dir == run_dir
    assert result.policies == {"Tennis": run_dir / "Tennis.pt"}
    assert (run_dir / "Tennis.pt").is_file()
    assert load_options(run_dir / "configuration.yaml").env_settings.env_path == "tennis"
    assert result.ratings["Tennis"] != 1200.0
    assert result.wall_time_s > 0

    # ghost-eval reads the game from the folder: no --game needed
    capsys.readouterr()
    code = ghost_eval([str(run_dir), "--against", "random", "--episodes", "6", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    report = json.loads(out)
    assert report["game"] == "tennis" and report["episodes"] == 6


def test_train_resumes_and_refuses_to_overwrite(tmp_path):
    config = {"behaviors": {"Duel": {"max_steps": 600, "summary_freq": 300,
                                     "self_play": {"save_steps": 100}}}}  # fmt: skip
    first = ghost.train(config, env=make_duel, run_id="duel", results_dir=tmp_path, seed=1)
    assert first.steps["Duel"] >= 600 and not first.stopped_early
    # a module-level env function is recorded so the run can be resumed from its config
    saved = load_options(tmp_path / "duel" / "configuration.yaml")
    assert saved.env_settings.env_path == "tests.fake_envs:make_duel"
    with pytest.raises(RunDirectoryError, match="already exists"):
        ghost.train(config, env=make_duel, run_id="duel", results_dir=tmp_path)
    longer = {"behaviors": {"Duel": {**config["behaviors"]["Duel"], "max_steps": 900}}}
    resumed = ghost.train(longer, env=make_duel, run_id="duel", results_dir=tmp_path, resume=True)
    assert resumed.steps["Duel"] >= 900


def test_train_resolves_keywords_seed_and_resume_rules_into_the_recorded_options(
    tmp_path, monkeypatch, caplog
):
    calls = []
    monkeypatch.setattr(
        api, "run_training",
        lambda options, *, env_factory, run_dir, callbacks=(): calls.append((options, run_dir)),
    )  # fmt: skip
    config = {"behaviors": {"Duel": {"self_play": {}}}}
    ghost.train(config, env=make_duel, run_id="s", results_dir=tmp_path, num_envs=2,
                overrides={"debug": True})  # fmt: skip
    [(options, run_dir)] = calls
    assert options.env_settings.num_envs == 2 and options.debug
    assert options.env_settings.env_path == "tests.fake_envs:make_duel"
    assert 0 <= options.env_settings.seed < 10_000  # seed -1 drawn once...
    assert load_options(run_dir.layout.configuration_path) == options  # ...and recorded as is
    # a resumed run keeps the seed it recorded
    ghost.train(config, env=make_duel, run_id="s", results_dir=tmp_path, resume=True)
    assert calls[-1][0].env_settings.seed == options.env_settings.seed
    # initialize_from given beats the config's resume (ML-Agents' rule, as with the flags)
    resuming = {**config, "checkpoint_settings": {"resume": True}}
    with caplog.at_level("WARNING"):
        ghost.train(resuming, env=make_duel, run_id="t", results_dir=tmp_path, initialize_from="s")
    assert "initialize_from given: ignoring resume from the configuration" in caplog.text
    assert calls[-1][0].checkpoint_settings.resume is False
    assert calls[-1][0].checkpoint_settings.initialize_from == "s"
    with pytest.raises(ConfigError, match="config must be a YAML file path, a dict or RunOptions"):
        ghost.train(42, env=make_duel, run_id="u", results_dir=tmp_path)


def test_train_takes_a_baseenv_instance_but_only_one(tmp_path):
    config = {"behaviors": {"Duel": {"max_steps": 200, "self_play": {}}}}
    result = ghost.train(config, env=make_duel(), run_id="one", results_dir=tmp_path)
    assert result.steps["Duel"] >= 200
    with pytest.raises(ConfigError, match="num_envs must be 1"):
        ghost.train(config, env=make_duel(), run_id="two", results_dir=tmp_path, num_envs=2)
