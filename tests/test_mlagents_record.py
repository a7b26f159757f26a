"""ML-Agents' own record of a run's settings keeps every key written, with ghost-trainer installed.

ghost-trainer requires a cattrs with which ML-Agents 1.1 alone writes only the base class's keys
of each behavior's hyperparameters and reward signals, and no ``self_play`` for ``ghost_*`` types;
the plugin's unstructure hooks (``ghost.mlagents_plugin.unstructure``) put them back. These tests
run ML-Agents from ``.venv-mlagents`` (skipped without it unless ``GHOST_REQUIRE_MLAGENTS=1``).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

from tests.test_mlagents_plugin import learn, pong_config

ROOT = Path(__file__).resolve().parent.parent
CHECK = ROOT / "tests" / "mlagents_record_check.py"
TENNIS = ROOT / "tests" / "fixtures" / "mlagents_configs" / "Tennis-ppo.yaml"
PPO_KEYS = {"beta": 0.01, "epsilon": 0.15, "lambd": 0.9, "num_epoch": 2}


def record_check(bin_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(bin_dir / "python"), str(CHECK), *args],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )  # fmt: skip


def test_reference_configs_keep_every_key(mlagents):
    done = record_check(mlagents)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    for name in ("Tennis-ppo", "Tennis-sac", "SoccerTwos-poca", "3DBall-sac", "Crawler-ppo"):
        for variant in ("as written", "ghost_ types"):
            assert f"ok   tests/fixtures/mlagents_configs/{name}.yaml ({variant})" in done.stdout


def test_without_the_hooks_the_check_names_config_and_lost_keys(mlagents):
    done = record_check(mlagents, "--without-hooks", str(TENNIS))
    assert done.returncode == 1
    assert "FAIL tests/fixtures/mlagents_configs/Tennis-ppo.yaml (as written)" in done.stdout
    for key in PPO_KEYS:
        assert f"behaviors.Tennis.hyperparameters.{key}: lost" in done.stdout
    assert "behaviors.Tennis.self_play: written a section, recorded None" in done.stdout


def test_mlagents_learn_saves_every_key(mlagents, tmp_path):
    """A ``ghost_ppo`` run's ``configuration.yaml``: PPO's keys and the ``self_play`` written.

    (ML-Agents' own types are checked in-process by the record check: run here, their ONNX export
    needs ``onnxscript`` under torch >= 2.9, which the plugin supplies only to its own trainers.)
    """
    config = pong_config(sampling={"strategy": "pfsp"})
    pong = config["behaviors"]["Pong"]
    pong["hyperparameters"].update(PPO_KEYS)
    pong["max_steps"] = 500
    done = learn(mlagents, tmp_path, config, "record")
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    assert (tmp_path / "results" / "record" / "Pong.onnx").exists()  # it trained

    saved = yaml.safe_load((tmp_path / "results" / "record" / "configuration.yaml").read_text())
    behavior = saved["behaviors"]["Pong"]
    assert behavior["trainer_type"] == "ghost_ppo"
    hyperparameters = behavior["hyperparameters"]
    assert {key: hyperparameters.get(key) for key in PPO_KEYS} == PPO_KEYS
    assert (hyperparameters["batch_size"], hyperparameters["buffer_size"]) == (128, 1024)
    assert "self_play" not in hyperparameters
    self_play = behavior["self_play"]
    assert self_play is not None
    written = {key: value for key, value in pong["self_play"].items() if key != "sampling"}
    assert {key: self_play.get(key) for key in written} == written
    assert self_play["sampling"]["strategy"] == "pfsp"
    # ML-Agents' console log of the behavior's settings shows them too
    logged = output.split("Hyperparameters for behavior name Pong", 1)[1]
    assert "beta:\t0.01" in logged and "num_epoch:\t2" in logged
    assert "elo_k:\t32" in logged and "strategy:\tpfsp" in logged
