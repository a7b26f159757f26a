"""``ghost_ppo`` inside ML-Agents' own ``mlagents-learn``, on the stand-in Unity build of Pong.

These run ML-Agents 1.1 from ``.venv-mlagents`` (built by ``.ci/mlagents-venv``; CI builds it and
sets ``GHOST_REQUIRE_MLAGENTS=1`` so a missing environment fails instead of skipping). The checks
that need ML-Agents objects in-process live in ``mlagents_plugin_checks.py`` and run in that
environment's Python; the rest drive ``mlagents-learn`` the way a user does.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
import yaml

from tests.test_unity_build import free_ports

ROOT = Path(__file__).resolve().parent.parent
FAKE_PONG = ROOT / "tests" / "fake_unity" / "FakePong.x86_64"
RESUMED = re.compile(r"resumed self-play at step (\d+): window \[([\d, ]*)\], Elo ([\d.]+), "
                     r"learning team (\d+)")  # fmt: skip


def pong_config(**self_play: object) -> dict:
    return {
        "behaviors": {
            "Pong": {
                "trainer_type": "ghost_ppo",
                "hyperparameters": {"batch_size": 128, "buffer_size": 1024, "num_epoch": 2},
                "network_settings": {"hidden_units": 32, "num_layers": 1},
                "max_steps": 3000,
                "time_horizon": 64,
                "summary_freq": 1000,
                "checkpoint_interval": 1000,
                "self_play": {
                    "save_steps": 400,
                    "team_change": 1200,
                    "swap_steps": 300,
                    "window": 4,
                    "elo_k": 32,
                    **self_play,
                },  # fmt: skip
            }
        }
    }


def learn_command(bin_dir: Path, tmp_path: Path, config: dict, run_id: str, *flags: str):
    path = tmp_path / f"{run_id}-{len(list(tmp_path.glob('*.yaml')))}.yaml"
    path.write_text(yaml.safe_dump(config))
    return [
        str(bin_dir / "mlagents-learn"), str(path), "--env", str(FAKE_PONG),
        "--run-id", run_id, "--results-dir", str(tmp_path / "results"), "--no-graphics",
        "--num-areas", "4", "--seed", "3", "--base-port", str(free_ports(1)), *flags,
    ]  # fmt: skip


def learn(bin_dir: Path, tmp_path: Path, config: dict, run_id: str, *flags: str):
    return subprocess.run(
        learn_command(bin_dir, tmp_path, config, run_id, *flags),
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip


def self_play_state(tmp_path: Path, run_id: str) -> dict:
    path = tmp_path / "results" / run_id / "Pong" / "self_play" / "state.pt"
    return torch.load(path, weights_only=False)


def test_plugin_checks_inside_ml_agents(mlagents):
    """Config strictness, the factory, per-match Elo with our K, workers, state files."""
    done = subprocess.run(
        [str(mlagents / "python"), str(ROOT / "tests" / "mlagents_plugin_checks.py")],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout.strip().splitlines()[-1])
    failed = {name: text for name, text in results.items() if text != "ok"}
    assert not failed, "\n".join(f"{name}:\n{text}" for name, text in failed.items())
    assert len(results) >= 8


def test_ghost_ppo_self_play_run_in_mlagents_learn(mlagents, tmp_path):
    done = learn(mlagents, tmp_path, pong_config(), "pong")
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    assert "ELO:" in output  # ML-Agents' console line shows our rating
    assert "Self-play: team 1 learns now" in output  # the learning team rotated
    state = self_play_state(tmp_path, "pong")
    # snapshots on disk: exactly the window named in the state
    folder = tmp_path / "results" / "pong" / "Pong" / "self_play"
    window = state["self_play"]["window"]
    assert 1 <= len(window) <= 4
    assert sorted(p.name for p in folder.glob("snapshot-*.pt")) == sorted(
        f"snapshot-{s['snapshot_id']}.pt" for s in window
    )
    assert state["self_play"]["next_snapshot_id"] >= 5  # the window slid
    assert state["controller"]["team_changes"] >= 2
    assert state["self_play"]["rating"] != 1200.0  # per-match K is checked in the plugin checks
    cells = re.findall(r"(\d+)/(\d+)/(\d+)", (folder / "payoff.csv").read_text())
    assert sum(int(n) for cell in cells for n in cell) >= 50  # rated matches, all in the table
    # ML-Agents' own files are there as usual
    assert (tmp_path / "results" / "pong" / "Pong.onnx").exists()


def test_killed_run_resumes_with_the_same_window(mlagents, tmp_path):
    config = pong_config()
    config["behaviors"]["Pong"]["max_steps"] = 100_000
    process = subprocess.Popen(
        learn_command(mlagents, tmp_path, config, "crash"),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tmp_path,
        start_new_session=True,
    )  # fmt: skip
    state_path = tmp_path / "results" / "crash" / "Pong" / "self_play" / "state.pt"
    deadline = time.monotonic() + 240
    try:
        while time.monotonic() < deadline and process.poll() is None:
            if state_path.exists() and self_play_state(tmp_path, "crash")["step"] >= 2000:
                break
            time.sleep(0.5)
    finally:
        os.killpg(process.pid, signal.SIGKILL)  # mlagents-learn, its worker and the player
        output = process.communicate()[0]
    saved = self_play_state(tmp_path, "crash")
    assert saved["step"] >= 2000, output[-4000:]

    config["behaviors"]["Pong"]["max_steps"] = saved["step"] + 1500
    done = learn(mlagents, tmp_path, config, "crash", "--resume")
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    resumed = RESUMED.search(output)
    assert resumed, output[-4000:]
    step, window, elo, team = resumed.groups()
    if "the self-play state on disk is from step" not in output:  # killed between the writes
        assert int(step) == saved["step"]  # the model and the self-play state of one checkpoint
    assert [int(i) for i in window.split(",")] == [
        s["snapshot_id"] for s in saved["self_play"]["window"]
    ]
    assert float(elo) == pytest.approx(saved["self_play"]["rating"], abs=0.05)
    assert int(team) == saved["controller"]["learning_team"]
    after = self_play_state(tmp_path, "crash")
    assert after["step"] > saved["step"]
    assert after["self_play"]["next_snapshot_id"] > saved["self_play"]["next_snapshot_id"]
    assert after["controller"]["team_changes"] >= saved["controller"]["team_changes"]


def test_unknown_self_play_key_stops_mlagents_learn(mlagents, tmp_path):
    done = learn(mlagents, tmp_path, pong_config(swap_step=100), "typo")
    output = done.stdout + done.stderr
    assert done.returncode != 0
    assert "behaviors.Pong.self_play.swap_step" in output and "did you mean 'swap_steps'" in output
    assert not (tmp_path / "results" / "typo" / "Pong").exists()  # stopped before training


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
