"""``ghost-learn`` for real: Ctrl-C checkpoints and --resume continues, --initialize-from, images."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from mlagents_envs.base_env import (
    ActionSpec,
    BehaviorSpec,
    DimensionProperty,
    ObservationSpec,
    ObservationType,
)

from envs.behavior_id import BehaviorId
from ghost.running import cli
from trainers.policy import TorchPolicy, load_policy
from trainers.policy_file import read_policy_weights
from trainers.settings import EncoderType, NetworkSettings

ROOT = Path(__file__).resolve().parents[1]

CONFIG = """
behaviors:
  Target:
    hyperparameters: {{batch_size: 64, buffer_size: 256}}
    network_settings: {{hidden_units: 16, normalize: true}}
    max_steps: {max_steps}
    summary_freq: 512
    checkpoint_interval: 100000000
env_settings:
  env_path: tests.toy_envs:make_target_env
"""


def _config(tmp_path: Path, max_steps: int) -> Path:
    path = tmp_path / f"target-{max_steps}.yaml"
    path.write_text(CONFIG.format(max_steps=max_steps))
    return path


def test_ctrl_c_writes_a_checkpoint_and_resume_continues(tmp_path):
    results = tmp_path / "results"
    command = [sys.executable, "-m", "ghost.running.cli", str(_config(tmp_path, 10**9)),
               "--run-id", "long", "--results-dir", str(results)]  # fmt: skip
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})  # fmt: skip
    output = []
    deadline = time.time() + 60
    for line in process.stdout:  # wait for training to be under way (two summaries)
        output.append(line)
        if sum("Target. Step:" in seen for seen in output) >= 2 or time.time() > deadline:
            break
    process.send_signal(signal.SIGINT)
    rest, _ = process.communicate(timeout=60)
    text = "".join(output) + rest
    assert process.returncode == 130, text  # a shell's code for Ctrl-C, after the checkpoint
    assert "Traceback" not in text
    assert "--resume" in text  # tells the user how to continue
    run = results / "long"
    index = json.loads((run / "checkpoint.json").read_text())
    saved_step = index["behaviors"]["Target"]["step"]
    assert saved_step >= 1024
    assert load_policy(run / "Target.pt").act([np.eye(3, dtype=np.float32)]).discrete.shape == (
        3,
        1,
    )

    # resume with a budget just above the saved step: it continues from there, not from zero
    config = _config(tmp_path, saved_step + 300)
    code = cli.main([str(config), "--run-id", "long", "--results-dir", str(results), "--resume"])
    assert code == 0
    index = json.loads((run / "checkpoint.json").read_text())
    assert saved_step + 300 <= index["behaviors"]["Target"]["step"] < saved_step + 300 + 64


def test_initialize_from_starts_with_the_other_runs_weights(tmp_path, monkeypatch):
    torch.set_num_threads(1)
    results = tmp_path / "results"
    assert cli.main([str(_config(tmp_path, 600)), "--run-id", "first",
                     "--results-dir", str(results)]) == 0  # fmt: skip
    first = read_policy_weights(results / "first" / "Target.pt")
    started_with = {}
    from ghost.running import session as session_module

    original = session_module.SelfPlaySession.initialize_from

    def spy(self, policy_files):
        original(self, policy_files)
        started_with.update(self.trainers["Target"].get_policy(BehaviorId("Target")).get_weights())

    monkeypatch.setattr(session_module.SelfPlaySession, "initialize_from", spy)
    assert cli.main([str(_config(tmp_path, 300)), "--run-id", "second", "--results-dir",
                     str(results), "--initialize-from", "first"]) == 0  # fmt: skip
    for key, value in first.items():
        torch.testing.assert_close(started_with[key], value)


@pytest.mark.parametrize("encoder", [EncoderType.SIMPLE, EncoderType.NATURE_CNN])
def test_visual_and_vector_observations_act_and_round_trip(tmp_path, encoder):
    torch.set_num_threads(1)
    image = ObservationSpec(shape=(40, 40, 3), dimension_property=(DimensionProperty.NONE,) * 3,
                            observation_type=ObservationType.DEFAULT, name="camera")  # fmt: skip
    vector = ObservationSpec(shape=(4,), dimension_property=(DimensionProperty.NONE,),
                             observation_type=ObservationType.DEFAULT, name="vector")  # fmt: skip
    spec = BehaviorSpec([image, vector], ActionSpec(2, (3, 2)))
    policy = TorchPolicy(behavior_spec=spec, network_settings=NetworkSettings(
        hidden_units=16, vis_encode_type=encoder, normalize=True))  # fmt: skip
    obs = [np.random.default_rng(0).random((5, 40, 40, 3), np.float32), np.ones((5, 4), np.float32)]
    mask = [np.array([[False, True, False]] * 5), np.array([[True, False]] * 5)]
    out = policy.sample(obs, mask)
    assert out.actions.continuous.shape == (5, 2) and np.abs(out.actions.continuous).max() <= 1
    assert (out.actions.discrete[:, 0] != 1).all() and (out.actions.discrete[:, 1] == 1).all()
    policy.save(tmp_path / "visual.pt")
    loaded = load_policy(tmp_path / "visual.pt")
    a = loaded.act(obs, mask, deterministic=True)
    b = policy.act(obs, mask, deterministic=True)
    np.testing.assert_array_equal(a.discrete, b.discrete)
    np.testing.assert_allclose(a.continuous, b.continuous)
