"""Checkpoints are policy files too: ``load_policy`` and ``ghost-eval`` read them, for PPO, SAC and
both sides of an asymmetric game, with and without self-play."""

from __future__ import annotations

import json

import numpy as np
import pytest

import ghost
from ghost.evaluation.cli import main as ghost_eval
from trainers.policy import load_policy
from trainers.run_layout import RunLayout

pytestmark = pytest.mark.usefixtures("one_torch_thread")

SMALL = {
    "hyperparameters": {"batch_size": 64, "buffer_size": 256},
    "network_settings": {"hidden_units": 16},
    "max_steps": 600,
    "summary_freq": 300,
    "checkpoint_interval": 300,
}
SELF_PLAY = {"save_steps": 200, "team_change": 400, "swap_steps": 100}


def _train(tmp_path, game: str, behaviors: dict) -> RunLayout:
    config = {"behaviors": behaviors, "env_settings": {"env_path": game, "seed": 1}}
    result = ghost.train(config, run_id="run", results_dir=tmp_path)
    return RunLayout(result.run_dir)


def _assert_checkpoints_act(layout: RunLayout, name: str, spec_source) -> None:
    files = layout.checkpoint_files(name)
    assert len(files) >= 2, files
    final = load_policy(layout.final_policy_path(name))
    for path in files:
        policy = load_policy(path)
        assert policy.behavior_spec == final.behavior_spec
        observations = [np.zeros((3, *o.shape), np.float32) for o in spec_source.observation_specs]
        action = policy.act(observations, deterministic=True)
        parts = [part for part in (action.continuous, action.discrete) if part.shape[1] > 0]
        assert parts and all(part.shape[0] == 3 for part in parts)
    # the last checkpoint holds the final weights
    last = load_policy(files[-1]).get_weights()
    for key, value in final.get_weights().items():
        assert np.array_equal(last[key].numpy(), value.numpy()), key


@pytest.mark.parametrize(
    "trainer", [{"trainer_type": "ppo"}, {"trainer_type": "sac", "hyperparameters":
                {"batch_size": 64, "buffer_size": 1000, "buffer_init_steps": 100}}],
    ids=["ppo", "sac"],
)  # fmt: skip
def test_self_play_checkpoints_load_and_evaluate(tmp_path, capsys, trainer):
    behavior = {**SMALL, **trainer, "self_play": SELF_PLAY}
    layout = _train(tmp_path, "tennis", {"Tennis": behavior})
    spec = load_policy(layout.final_policy_path("Tennis")).behavior_spec
    _assert_checkpoints_act(layout, "Tennis", spec)

    checkpoint = layout.checkpoint_files("Tennis")[0]
    code = ghost_eval([str(checkpoint), "--game", "tennis", "--against", "random",
                       "--episodes", "4", "--json"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0, out
    assert json.loads(out)["episodes"] == 4


def test_asymmetric_checkpoints_load_from_both_sides(tmp_path, capsys):
    behaviors = {
        "Striker": {**SMALL, "self_play": SELF_PLAY},
        "Goalie": {**SMALL, "self_play": SELF_PLAY},
    }
    layout = _train(tmp_path, "strikers_vs_goalie", behaviors)
    for name in ("Striker", "Goalie"):
        spec = load_policy(layout.final_policy_path(name)).behavior_spec
        _assert_checkpoints_act(layout, name, spec)
    goalie = layout.checkpoint_files("Goalie")[-1]
    code = ghost_eval([str(goalie), "--game", "strikers_vs_goalie", "--side", "Goalie",
                       "--against", "random", "--episodes", "2", "--json"])  # fmt: skip
    assert code == 0, capsys.readouterr()


def test_plain_trainer_checkpoints_load(tmp_path):
    layout = _train(tmp_path, "tests.toy_envs:make_target_env", {"Target": dict(SMALL)})
    spec = load_policy(layout.final_policy_path("Target")).behavior_spec
    _assert_checkpoints_act(layout, "Target", spec)
