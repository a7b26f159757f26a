"""``--resume``: the run's own configuration, changed hyperparameters, and no checkpoint yet."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

import ghost
from ghost.config.loader import load_options
from ghost.running import cli

pytestmark = pytest.mark.usefixtures("one_torch_thread")

ROOT = Path(__file__).resolve().parents[1]

DUEL = {
    "behaviors": {
        "Duel": {
            "max_steps": 600,
            "summary_freq": 200,
            "checkpoint_interval": 300,
            "hyperparameters": {"learning_rate": 0.0003},
            "self_play": {"save_steps": 100},
        }
    },
    "env_settings": {"env_path": "tests.fake_envs:make_duel", "seed": 4},
}


def learn(capsys, *argv: str) -> tuple[int, str]:
    code = cli.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_resume_without_a_config_continues_with_the_runs_own_configuration(
    tmp_path, capsys, caplog
):
    ghost.train(DUEL, run_id="d", results_dir=tmp_path)
    recorded = load_options(tmp_path / "d" / "configuration.yaml")
    with caplog.at_level("INFO"):
        code, text = learn(capsys, "--resume", "--run-id", "d", "--results-dir", str(tmp_path))
    assert code == 0, text
    assert "Resuming with the run's own configuration" in caplog.text
    assert "Resumed from Duel step 600" in caplog.text
    # nothing changed, so nothing to keep or report
    assert not list((tmp_path / "d").glob("configuration-*.yaml"))
    resumed = load_options(tmp_path / "d" / "configuration.yaml")
    assert resumed.env_settings == recorded.env_settings
    assert resumed.behaviors == recorded.behaviors


def test_resume_with_changed_hyperparameters_logs_them_and_keeps_the_earlier_config(
    tmp_path, caplog
):
    ghost.train(DUEL, run_id="d", results_dir=tmp_path)
    changed = json.loads(json.dumps(DUEL))
    duel = changed["behaviors"]["Duel"]
    duel["hyperparameters"]["learning_rate"] = 0.0001
    duel["max_steps"] = 900
    with caplog.at_level("INFO"):
        result = ghost.train(changed, run_id="d", results_dir=tmp_path, resume=True)
    assert result.steps["Duel"] >= 900
    assert "Configuration changed since the last session" in caplog.text
    assert "behaviors.Duel.hyperparameters.learning_rate: 0.0003 -> 0.0001" in caplog.text
    assert "behaviors.Duel.max_steps: 600 -> 900" in caplog.text
    run = tmp_path / "d"
    earlier = load_options(run / "configuration-1.yaml")
    assert earlier.behaviors["Duel"].hyperparameters.learning_rate == 0.0003
    assert load_options(run / "configuration.yaml").behaviors["Duel"].max_steps == 900
    # a third session keeps the second configuration under the next number
    duel["max_steps"] = 1000
    ghost.train(changed, run_id="d", results_dir=tmp_path, resume=True)
    assert load_options(run / "configuration-2.yaml").behaviors["Duel"].max_steps == 900


KILL_BEFORE_A_CHECKPOINT = """
import os, sys, ghost
config = {config!r}

class HardKill(ghost.SelfPlayCallback):
    def on_summary(self, summary):
        if summary.step >= 400:
            os._exit(9)  # as kill -9, before the first checkpoint

ghost.train(config, run_id="r", results_dir=sys.argv[1], callbacks=[HardKill()])
"""


def _scalar_steps(log_dir: Path, tag: str) -> list[int]:
    events = EventAccumulator(str(log_dir))
    events.Reload()
    return [event.step for event in events.Scalars(tag)]


def test_resume_with_no_checkpoint_yet_says_so_and_leaves_no_doubled_points(tmp_path, caplog):
    config = json.loads(json.dumps(DUEL))
    config["behaviors"]["Duel"]["checkpoint_interval"] = 100_000
    script = tmp_path / "kill.py"
    script.write_text(KILL_BEFORE_A_CHECKPOINT.format(config=config))
    killed = subprocess.run([sys.executable, str(script), str(tmp_path)], cwd=ROOT,
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert killed.returncode == 9, killed.stderr
    run = tmp_path / "r"
    assert not (run / "checkpoint.json").exists()
    before = _scalar_steps(run / "Duel", "Environment/Steps Per Second")
    assert before  # the killed session wrote summaries that no checkpoint backs
    # TensorBoard orders event files by their creation second (see test_reliability)
    created = max(int(path.name.split(".")[3]) for path in (run / "Duel").glob("events.*"))
    while time.time() < created + 1:
        time.sleep(0.05)
    with caplog.at_level("WARNING"):
        result = ghost.train(config, run_id="r", results_dir=tmp_path, resume=True)
    assert "Nothing to resume from yet" in caplog.text and "starting at step 0" in caplog.text
    assert result.steps["Duel"] >= 600
    steps = _scalar_steps(run / "Duel", "Environment/Steps Per Second")
    assert steps == sorted(set(steps)), steps  # one point per step, in order


@pytest.mark.parametrize("run_id", ["../escape", "a/b", "with space", ".."])
def test_check_refuses_the_run_ids_training_refuses(run_id, capsys, tmp_path):
    code, text = learn(capsys, "--env", "tests.fake_envs:make_duel", "--check",
                       "--results-dir", str(tmp_path), "--run-id", run_id)  # fmt: skip
    assert code == 2
    [line] = text.strip().splitlines()
    assert line.startswith("ghost-learn: error: --run-id") and "must name one folder" in line
    code, text = learn(capsys, "--env", "tests.fake_envs:make_duel", "--results-dir",
                       str(tmp_path), "--run-id", run_id)  # fmt: skip
    assert code == 2 and "must name one folder" in text
    assert not any(tmp_path.iterdir())
