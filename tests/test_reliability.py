"""What a new user hit: each of these failed once, as an error without a message, a silently
accepted mistake or a run folder in a state the next command could not use."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

import ghost
from ghost.command_line import EXIT_BROKEN_PIPE
from ghost.exceptions import EnvironmentWorkerError
from ghost.running import cli

pytestmark = pytest.mark.usefixtures("one_torch_thread")

ROOT = Path(__file__).resolve().parents[1]

TENNIS = {
    "default_settings": {
        "hyperparameters": {"batch_size": 64, "buffer_size": 256},
        "network_settings": {"hidden_units": 8},
        "max_steps": 2000,
        "summary_freq": 250,
        "checkpoint_interval": 500,
        "self_play": {"save_steps": 250, "team_change": 500, "swap_steps": 100},
    },
    "env_settings": {"env_path": "tennis", "seed": 2},
}


def learn(capsys, *argv: str) -> tuple[int, str]:
    code = cli.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out + captured.err


# -- an environment that fails -----------------------------------------------------------------
def test_env_constructor_raising_with_one_env_is_one_line_and_leaves_no_run(capsys, tmp_path):
    code, text = learn(capsys, "--env", "tests.worker_envs:raise_on_create",
                       "--results-dir", str(tmp_path), "--run-id", "r")  # fmt: skip
    assert code == 2
    assert "Traceback" not in text
    assert "the environment could not be created: RuntimeError" in text
    assert "worker_envs.py" in text  # says where
    assert not (tmp_path / "r").exists()  # so the retry needs no --force


def test_env_raising_during_a_step_ends_with_its_message_and_a_checkpoint(tmp_path):
    config = {**TENNIS, "env_settings": {"env_path": "tests.worker_envs:make_crash_after_60"}}
    with pytest.raises(EnvironmentWorkerError, match="raised during step: InjectedCrash"):
        ghost.train(config, run_id="r", results_dir=tmp_path)
    index = json.loads((tmp_path / "r" / "checkpoint.json").read_text())
    assert index["behaviors"]["Echo"]["step"] > 0
    assert (tmp_path / "r" / "Echo.pt").is_file()


def test_check_with_a_failing_constructor(capsys):
    code, text = learn(capsys, "--env", "tests.worker_envs:raise_on_create", "--check")
    assert code == 2 and "could not be created" in text and "Traceback" not in text


# -- settings that cannot work -----------------------------------------------------------------
def test_cuda_on_a_cpu_only_torch_fails_in_check(capsys, monkeypatch):
    monkeypatch.setattr(torch.version, "cuda", None)
    code, text = learn(capsys, "--env", "tennis", "--check", "--torch-device", "cuda")
    assert code == 2
    assert "CPU-only build" in text and "--torch-device cpu" in text


def test_a_device_name_torch_does_not_know(capsys):
    code, text = learn(capsys, "--env", "tennis", "--check", "--torch-device", "gpu")
    assert code == 2 and "'gpu' is not a torch device" in text


@pytest.mark.parametrize(
    ("hyperparameters", "message"),
    [
        ("{batch_size: 2048, buffer_size: 1024}", r"batch_size \(2048\) is larger than buffer_size \(1024\)"),
        ("{buffer_size: 100}", r"batch_size \(1024\) is larger than buffer_size \(100\)"),
    ],
    ids=["batch-above-buffer", "buffer-below-default-batch"],
)  # fmt: skip
def test_ppo_buffer_smaller_than_a_batch(capsys, write_yaml, hyperparameters, message):
    config = write_yaml(f"behaviors:\n  Tennis:\n    hyperparameters: {hyperparameters}\n")
    code, text = learn(capsys, str(config), "--env", "tennis", "--check")
    assert code == 2
    assert "behaviors.Tennis.hyperparameters" in text
    assert re.search(message, text), text


def test_sac_buffer_smaller_than_a_batch(capsys, write_yaml):
    config = write_yaml(
        "behaviors:\n  Tennis:\n    trainer_type: sac\n    hyperparameters: {buffer_size: 100}\n"
    )
    code, text = learn(capsys, str(config), "--env", "tennis", "--check")
    assert code == 2 and "batch_size (128) is larger than buffer_size (100)" in text


def test_duplicate_behavior_key_is_named_with_both_lines(capsys, write_yaml):
    config = write_yaml(
        textwrap.dedent("""\
        behaviors:
          Tennis:
            max_steps: 1000
            self_play: {save_steps: 100}
          Tennis:
            max_steps: 2000
        """)
    )
    code, text = learn(capsys, str(config), "--env", "tennis", "--check")
    assert code == 2
    assert "line 5" in text and "duplicate key 'Tennis' (first written at line 2)" in text


# -- resuming after a hard kill ----------------------------------------------------------------
KILL_AFTER_A_CHECKPOINT = """
import os, sys, ghost
config = {config!r}

class HardKill(ghost.SelfPlayCallback):
    checkpoints = 0
    def on_checkpoint(self, checkpoint):
        self.checkpoints += 1
    def on_summary(self, summary):
        if self.checkpoints >= 2 and summary.step % 500 >= 250:
            os._exit(9)  # no finally, no last checkpoint: as kill -9

ghost.train(config, run_id="r", results_dir=sys.argv[1], callbacks=[HardKill()])
"""


def _scalar_steps(log_dir: Path, tag: str) -> list[int]:
    events = EventAccumulator(str(log_dir))
    events.Reload()
    return [event.step for event in events.Scalars(tag)]


def test_resume_after_a_hard_kill_drops_the_orphaned_tensorboard_points(tmp_path):
    script = tmp_path / "kill.py"
    script.write_text(KILL_AFTER_A_CHECKPOINT.format(config=TENNIS))
    killed = subprocess.run([sys.executable, str(script), str(tmp_path)], cwd=ROOT,
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert killed.returncode == 9, killed.stderr
    run = tmp_path / "r"
    saved = json.loads((run / "checkpoint.json").read_text())["behaviors"]["Tennis"]["step"]
    before = _scalar_steps(run / "Tennis", "Environment/Steps Per Second")
    assert max(before) > saved  # points past the checkpoint exist: they are the orphans

    # TensorBoard reads event files in name order, and names start with the creation second: a
    # resume within the killed session's first second would sort before it (never so by hand)
    created = max(int(path.name.split(".")[3]) for path in (run / "Tennis").glob("events.*"))
    while time.time() < created + 1:
        time.sleep(0.05)
    result = ghost.train(TENNIS, run_id="r", results_dir=tmp_path, resume=True)
    assert result.steps["Tennis"] >= 2000
    steps = _scalar_steps(run / "Tennis", "Environment/Steps Per Second")
    assert steps == sorted(set(steps)), steps  # one point per step, in order
    assert max(steps) >= 2000


# -- inference ---------------------------------------------------------------------------------
def test_inference_is_not_training_and_changes_no_rating(tmp_path, caplog):
    trained = ghost.train(TENNIS, run_id="r", results_dir=tmp_path)
    caplog.clear()
    with caplog.at_level("INFO", logger="trainers.stats"):
        watched = ghost.train(
            TENNIS, run_id="r", results_dir=tmp_path, resume=True, inference=True,
            overrides={"default_settings.max_steps": 4000},
        )  # fmt: skip
    summaries = [r.getMessage() for r in caplog.records if "Step:" in r.getMessage()]
    assert summaries and all(line.endswith("Not Training.") for line in summaries)
    assert watched.ratings == trained.ratings
    assert watched.policies == {}


# -- the run folder ----------------------------------------------------------------------------
def test_run_logs_hold_status_and_timers(tmp_path):
    ghost.train(TENNIS, run_id="r", results_dir=tmp_path)
    logs = tmp_path / "r" / "run_logs"
    status = json.loads((logs / "training_status.json").read_text())
    assert status["metadata"]["torch_version"] == torch.__version__
    tennis = status["Tennis"]
    assert tennis["steps"] >= 2000
    assert tennis["final_checkpoint"]["file_path"].endswith("Tennis.pt")
    saved = [c["steps"] for c in tennis["checkpoints"]]
    assert len(saved) >= 4 and saved == sorted(saved)
    assert "elo" in tennis
    timers = json.loads((logs / "timers.json").read_text())
    assert {"act", "env_step", "trainer_advance", "checkpoint"} <= set(timers["children"])
    assert timers["children"]["env_step"]["count"] > 0


def test_check_does_not_claim_to_record_the_seed(capsys, caplog):
    with caplog.at_level("INFO", logger="ghost.config.loader"):
        code, _ = learn(capsys, str(ROOT / "config" / "tennis.yaml"), "--check", "--seed", "-1")
    assert code == 0
    messages = " ".join(r.getMessage() for r in caplog.records)
    assert "for this check only" in messages and "configuration.yaml" not in messages


# -- ghost-eval | head -------------------------------------------------------------------------
def test_ghost_eval_into_a_closed_pipe_ends_quietly(tmp_path):
    run = ghost.train(TENNIS, run_id="r", results_dir=tmp_path).run_dir
    command = [sys.executable, "-m", "ghost.evaluation.cli", str(run), "--game", "tennis",
               "--against", "snapshots", "--episodes", "2"]  # fmt: skip
    reader, writer = os.pipe()
    os.close(reader)  # the reader is gone before ghost-eval writes: every write is a broken pipe
    done = subprocess.run(command, cwd=ROOT, stdout=writer, stderr=subprocess.PIPE, text=True,
                          timeout=120)  # fmt: skip
    os.close(writer)
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr, done.stderr
    assert done.returncode == EXIT_BROKEN_PIPE, done.stderr
