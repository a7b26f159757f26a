"""ghost-learn and Stable-Baselines3: the same seed is the same run whatever ``PYTHONHASHSEED``
a process has (RLlib's own check is ``test_rllib_hash_seed.py``).

Each test trains the same seed in two processes side by side, under hash seeds that iterate sets
of this project's agent ids in different orders, and compares the learnt weights and the Elo.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from trainers.run_files.safe_load import load_pt

ROOT = Path(__file__).resolve().parents[1]
HASH_SEEDS = ("1", "4")


def side_by_side(commands: list[list[str]]) -> list[str]:
    """Run one command per hash seed at once; their outputs."""
    runs = [
        subprocess.Popen(
            command,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        )  # fmt: skip
        for command, seed in zip(commands, HASH_SEEDS, strict=True)
    ]
    outputs = []
    for run in runs:
        out, _ = run.communicate(timeout=600)
        assert run.returncode == 0, out[-3000:]
        outputs.append(out)
    return outputs


def digest(found: object) -> str:
    """A hash of every tensor in ``found`` (nested mappings and sequences), keys sorted."""
    import torch

    parts: list[bytes] = []

    def walk(value: object) -> None:
        if isinstance(value, torch.Tensor):
            parts.append(value.detach().cpu().numpy().tobytes())
        elif isinstance(value, dict):
            for key in sorted(value, key=str):
                walk(value[key])
        elif isinstance(value, list | tuple):
            for item in value:
                walk(item)

    walk(found)
    assert parts, "no tensors found"
    return hashlib.sha256(b"".join(parts)).hexdigest()


@pytest.mark.slow
def test_ghost_learn_same_seed_same_policy_under_other_hash_seeds(tmp_path):
    # 50k steps: PPO updates, snapshots, swaps and a team change (config/tennis.yaml)
    commands = [
        [sys.executable, "-m", "ghost.running.cli", "config/tennis.yaml", "--max-steps", "50000",
         "--seed", "0", "--run-id", f"h{seed}", "--results-dir", str(tmp_path)]
        for seed in HASH_SEEDS
    ]  # fmt: skip
    logs = side_by_side(commands)
    first, second = (digest(load_pt(tmp_path / f"h{seed}" / "Tennis.pt")) for seed in HASH_SEEDS)
    assert first == second
    elo = [re.findall(r"ELO: ([0-9.]+[0-9])", log) for log in logs]
    assert elo[0] and elo[0] == elo[1]


SB3_RUN = textwrap.dedent(
    """
    import json, torch
    from stable_baselines3 import PPO
    from ghost.integrations.sb3 import GhostCallback, GhostVecEnv

    torch.set_num_threads(1)
    self_play = {"save_steps": 256, "swap_steps": 128, "team_change": 1024, "window": 3}
    env = GhostVecEnv("soccer", num_arenas=2, seed=0, self_play=self_play)
    model = PPO("MlpPolicy", env, seed=0, n_steps=64, batch_size=128, n_epochs=2)
    model.learn(4096, callback=GhostCallback())
    torch.save(model.policy.state_dict(), __import__("sys").argv[1])
    print(json.dumps([env.state.rating, [s.snapshot_id for s in env.state.window],
                      env.state.swaps, env.controller.team_changes]))
    """
)


@pytest.mark.slow
def test_sb3_same_seed_same_run_under_other_hash_seeds(tmp_path):
    pytest.importorskip("stable_baselines3")
    paths = [tmp_path / f"h{seed}.pt" for seed in HASH_SEEDS]
    outputs = side_by_side([[sys.executable, "-c", SB3_RUN, str(path)] for path in paths])
    first, second = (json.loads(out.strip().splitlines()[-1]) for out in outputs)
    assert first == second and first[3] >= 1  # a team change happened
    assert digest(load_pt(paths[0])) == digest(load_pt(paths[1]))
