"""Files people hand over (policies, snapshots, checkpoints) load without running code."""

from __future__ import annotations

import os

import pytest
import torch

from ghost.evaluation import cli
from trainers.exceptions import CheckpointError
from trainers.policy import load_policy
from trainers.run_files.safe_load import load_pt


class RunsCommand:
    """Unpickling this runs ``touch MARKER``: what a malicious policy file would do."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


@pytest.fixture
def malicious_file(tmp_path):
    marker = tmp_path / "code-ran"
    path = tmp_path / "policy.pt"
    torch.save({"format": "ghost-trainer-policy", "payload": RunsCommand(str(marker))}, path)
    return path, marker


def test_a_file_that_would_run_code_is_refused_without_running_it(malicious_file):
    path, marker = malicious_file
    with pytest.raises(CheckpointError, match="was not loaded.*could run code"):
        load_pt(path)
    with pytest.raises(CheckpointError, match="was not loaded"):
        load_policy(path)
    assert not marker.exists()


def test_ghost_eval_refuses_it_in_one_line(malicious_file, capsys):
    path, marker = malicious_file
    code = cli.main(["match", str(path), "--game", "tennis", "--against", "random"])
    err = capsys.readouterr().err
    assert code == 2 and not marker.exists()
    assert "was not loaded" in err and "Traceback" not in err


def test_a_saved_policy_still_loads(tmp_path):
    from mlagents_envs.base_env import (
        ActionSpec,
        BehaviorSpec,
        DimensionProperty,
        ObservationSpec,
        ObservationType,
    )

    from trainers.policy import TorchPolicy
    from trainers.settings import NetworkSettings

    observation = ObservationSpec((3,), (DimensionProperty.NONE,), ObservationType.DEFAULT, "obs")
    spec = BehaviorSpec([observation], ActionSpec.create_discrete((2,)))
    policy = TorchPolicy(behavior_spec=spec, network_settings=NetworkSettings(hidden_units=8))
    path = tmp_path / "policy.pt"
    policy.save(path, policy.get_weights())
    loaded = load_policy(path)
    for key, value in policy.get_weights().items():
        assert torch.equal(loaded.get_weights()[key], value)
