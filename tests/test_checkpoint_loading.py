"""Checkpoints are policy files too: ``load_policy`` and ``ghost-eval`` read them, for PPO, SAC and
both sides of an asymmetric game, with and without self-play. A damaged checkpoint resumes from
an older one; a changed network is one error naming the keys."""

from __future__ import annotations

import copy
import json
import random
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch

import ghost
from ghost.evaluation.cli import main as ghost_eval
from ghost.running.cli import main as learn
from trainers.exceptions import CheckpointError, NetworkMismatchError, UnreadableFileError
from trainers.policy import load_policy
from trainers.run_files.layout import RunLayout
from trainers.run_files.safe_load import load_pt
from trainers.state_mismatch import describe_mismatch

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


# -- damaged checkpoints and changed networks --------------------------------------------------
RESUMABLE = {
    "behaviors": {
        "Tennis": {
            **SMALL,
            "checkpoint_interval": 200,
            "keep_checkpoints": 3,
            "self_play": SELF_PLAY,
        }
    },
    "env_settings": {"env_path": "tennis", "seed": 1},
}


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory) -> Path:
    """A self-play run checkpointed three times (trained once for the module; copy it)."""
    results = tmp_path_factory.mktemp("trained")
    ghost.train(RESUMABLE, run_id="run", results_dir=results)
    return results / "run"


@pytest.fixture
def run(trained_run, tmp_path) -> RunLayout:
    """A copy of ``trained_run`` at ``tmp_path / "run"``: break it as the test likes."""
    shutil.copytree(trained_run, tmp_path / "run")
    return RunLayout(tmp_path / "run")


def _checkpoints(run: RunLayout) -> list[Path]:
    """The run's checkpoint files, oldest first; the last is the one the index names."""
    files = sorted(run.checkpoint_files("Tennis"), key=lambda path: int(path.stem.split("-")[1]))
    index = json.loads(run.checkpoint_index_path.read_text())
    assert len(files) == 3 and index["behaviors"]["Tennis"]["file"].endswith(files[-1].name)
    return files


def _step(path: Path) -> int:
    return int(path.stem.split("-")[1])


def _truncate(fraction: float) -> Callable[[bytes], bytes]:
    return lambda data: data[: int(len(data) * fraction)]


DAMAGE = {
    "truncated to 10 bytes": (lambda data: data[:10], "truncated file"),
    "truncated to half": (_truncate(0.5), "truncated file"),
    "truncated by 16 bytes": (lambda data: data[:-16], "truncated file"),
    "emptied": (lambda data: b"", "empty file"),
    "garbage": (lambda data: bytes(random.Random(0).randrange(256) for _ in data), "not a torch"),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_newest_checkpoint_resumes_from_the_older_one(run, caplog, damage):
    change, reason = DAMAGE[damage]
    *_, older, newest = _checkpoints(run)
    newest.write_bytes(change(newest.read_bytes()))
    with caplog.at_level("INFO", logger="trainers"):
        result = ghost.train(RESUMABLE, run_id="run", results_dir=run.root.parent, resume=True)
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert f"checkpoint {newest} cannot be read ({reason}" in "\n".join(warnings)
    assert any(
        message.endswith(f"; resuming Tennis from {older.name}, the newest that loads")
        for message in warnings
    ), warnings
    assert f"Resumed from Tennis step {_step(older)}" in caplog.text
    assert result.steps["Tennis"] >= 600
    load_policy(newest)  # the run wrote it again


def test_every_checkpoint_damaged_is_one_error_naming_them(run):
    files = _checkpoints(run)
    for path in files:
        path.write_bytes(path.read_bytes()[:100])
    with pytest.raises(CheckpointError) as raised:
        ghost.train(RESUMABLE, run_id="run", results_dir=run.root.parent, resume=True)
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(f"cannot resume Tennis: checkpoint {files[-1]} cannot be read")
    assert all(f"{path.name} (truncated file)" in message for path in files[:-1])
    assert "--force" in message


@pytest.mark.parametrize("index", ["garbage", "missing"])
def test_without_a_readable_index_the_newest_checkpoint_file_resumes(run, caplog, index):
    newest = _checkpoints(run)[-1]
    if index == "missing":
        run.checkpoint_index_path.unlink()
    else:
        run.checkpoint_index_path.write_text('{"behaviors": {"Tennis": ')
    with caplog.at_level("INFO", logger="trainers"):
        ghost.train(RESUMABLE, run_id="run", results_dir=run.root.parent, resume=True)
    warning = next(r.getMessage() for r in caplog.records if r.levelname == "WARNING"
                   and "checkpoint.json" in r.getMessage())  # fmt: skip
    assert "newest checkpoint file that loads" in warning and "start over" in warning
    assert f"Resumed from Tennis step {_step(newest)}" in caplog.text


def test_without_an_index_or_checkpoint_files_the_error_names_the_folder(run):
    for path in _checkpoints(run):
        path.unlink()
    run.checkpoint_index_path.write_text("not json")
    with pytest.raises(CheckpointError, match=f"nothing to resume in {run.root}: "):
        ghost.train(RESUMABLE, run_id="run", results_dir=run.root.parent, resume=True)


def _with_hidden_units(units: int) -> dict:
    config = copy.deepcopy(RESUMABLE)
    config["behaviors"]["Tennis"]["network_settings"]["hidden_units"] = units
    return config


def test_resume_with_a_changed_network_names_the_keys_and_the_setting(run):
    newest = _checkpoints(run)[-1]
    with pytest.raises(NetworkMismatchError) as raised:
        ghost.train(_with_hidden_units(8), run_id="run", results_dir=run.root.parent, resume=True)
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(f"{newest} was trained with a different network: ")
    assert "actor.body.0.weight is [16, " in message and "in the file and [8, " in message
    assert re.search(r"\(and \d+ more keys\)", message)
    assert message.endswith(
        "resume with the network_settings it was trained with (hidden_units: 16) or start a new run"
    )


def test_initialize_from_a_changed_network_names_the_keys(run):
    with pytest.raises(NetworkMismatchError) as raised:
        ghost.train(_with_hidden_units(8), run_id="new", results_dir=run.root.parent,
                    initialize_from="run")  # fmt: skip
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(f"{run.final_policy_path('Tennis')} was trained with a different")
    assert "actor.body.0.weight is [16, " in message and "in the file and [8, " in message
    assert "(hidden_units: 16), or start without --initialize-from" in message


def test_ghost_learn_ends_a_changed_network_in_one_line(run, capsys, write_yaml):
    config = write_yaml(_with_hidden_units(8))
    code = learn([str(config), "--resume", "--run-id", "run", "--results-dir",
                  str(run.root.parent)])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if line.startswith("ghost-learn: error:")]
    assert len(errors) == 1 and "was trained with a different network" in errors[0]
    assert "actor.body.0.weight" in errors[0]


@pytest.mark.parametrize("size", [0, 1, 10, 100, 1000, 0.5, 0.9, -100, -22, -1])
def test_a_cut_checkpoint_is_a_checkpoint_error_naming_it(trained_run, tmp_path, size):
    source = RunLayout(trained_run).checkpoint_files("Tennis")[-1].read_bytes()
    cut = int(len(source) * size) if isinstance(size, float) else size
    path = tmp_path / "Tennis-1.pt"
    path.write_bytes(source[:cut])
    with pytest.raises(UnreadableFileError) as raised:
        load_pt(path)
    assert str(raised.value) == f"{path} cannot be read ({raised.value.reason})"
    assert raised.value.reason == ("empty file" if cut == 0 else "truncated file")
    with pytest.raises(CheckpointError, match=re.escape(f"{path} cannot be read")):
        load_policy(path)


def test_describe_mismatch_names_shapes_missing_and_extra_keys():
    expected = {"body": {"0.weight": torch.zeros(8, 3), "0.bias": torch.zeros(8)},
                "head.weight": torch.zeros(2, 8), "norm.mean": torch.zeros(3)}  # fmt: skip
    found = {"body": {"0.weight": torch.zeros(16, 3), "0.bias": torch.zeros(16)},
             "head.weight": torch.zeros(2, 8), "extra": torch.zeros(1, 2), "step": 5}  # fmt: skip
    assert describe_mismatch(found, found) is None
    assert describe_mismatch(found, expected, shown=10) == (
        "body.0.weight is [16, 3] in the file and [8, 3] in this config, "
        "body.0.bias is [16] in the file and [8] in this config, "
        "norm.mean [3] is in this config but not in the file, "
        "extra [1, 2] is in the file but not in this config"
    )
    assert describe_mismatch(found, expected).endswith(
        "norm.mean [3] is in this config but not in the file (and 1 more key)"
    )
