"""Replays (animated GIFs of one arena) and run reports (PNG of the training curves)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from envs.games import make_game
from ghost.evaluation.cli import main
from ghost.evaluation.replay import HEIGHT, WIDTH, record_match
from ghost.evaluation.report import ELO_TAG, REWARD_TAG, read_curves, write_report
from ghost.exceptions import GhostError, RunDirectoryError
from trainers.policy import TorchPolicy
from trainers.settings import NetworkSettings

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def frames_of(path) -> list[np.ndarray]:
    with Image.open(path) as image:
        frames = []
        for index in range(image.n_frames):
            image.seek(index)
            frames.append(np.asarray(image.convert("RGB")))
    return frames


def test_record_writes_a_tennis_gif_with_both_players_and_the_ball(tmp_path, capsys):
    spec = make_game("tennis", num_arenas=1).behavior_specs["Tennis?team=0"]
    policy = TorchPolicy(behavior_spec=spec, network_settings=NetworkSettings(hidden_units=8))
    policy.save(tmp_path / "Tennis.pt")
    gif = tmp_path / "tennis.gif"
    code = main([str(tmp_path / "Tennis.pt"), "--game", "tennis", "--against", "strong",
                 "--episodes", "4", "--record", str(gif)])  # fmt: skip
    assert code == 0
    assert f"replay: {gif}" in capsys.readouterr().out
    with Image.open(gif) as image:
        assert image.format == "GIF" and image.size == (WIDTH, HEIGHT)
        assert image.n_frames > 10
    frames = frames_of(gif)
    assert any(not np.array_equal(frames[0], frame) for frame in frames[1:])
    assert not np.array_equal(frames[1], frames[10])
    colors = {tuple(c) for c in np.unique(frames[5].reshape(-1, 3), axis=0)}
    assert {(40, 90, 230), (220, 50, 50), (250, 220, 40)} <= colors  # blue, red, ball


@pytest.mark.parametrize("game", ["soccer", "strikers_vs_goalie", "rock_paper_scissors"])
def test_other_games_record_too(game, tmp_path):
    replay = record_match(game=game, policy="strong" if "rock" not in game else "random",
                          opponent="weak" if "rock" not in game else "rock",
                          path=tmp_path / f"{game}.gif", episodes=1, max_frames=40)  # fmt: skip
    frames = frames_of(replay.path)
    assert len(frames) == replay.frames >= 1 and frames[0].shape == (HEIGHT, WIDTH, 3)
    if len(frames) > 1:
        assert not np.array_equal(frames[0], frames[-1])


def test_matrix_game_replay_has_a_frame_per_round(tmp_path):
    replay = record_match(game="biased_rps", policy="paper", opponent="rock",
                          path=tmp_path / "rps.gif", episodes=12)  # fmt: skip
    assert replay.frames == 12 and replay.results == (1,) * 12


def write_fake_run(root, steps=(100, 200, 300, 400)) -> None:
    from torch.utils.tensorboard import SummaryWriter

    (root / "configuration.yaml").parent.mkdir(parents=True, exist_ok=True)
    (root / "configuration.yaml").write_text("env_settings: {env_path: tennis}\n")
    for behavior, offset in (("Striker", 0.0), ("Goalie", 50.0)):
        writer = SummaryWriter(str(root / behavior))
        for step in steps:
            writer.add_scalar(ELO_TAG, 1200.0 + offset + step / 10, step)
            writer.add_scalar(REWARD_TAG, -1.0 + step / 400, step)
        writer.close()


def test_report_draws_the_curves_of_every_behavior(tmp_path):
    run = tmp_path / "run"
    write_fake_run(run)
    curves = read_curves(run)
    assert {(c.behavior, c.tag) for c in curves} == {
        (b, t) for b in ("Striker", "Goalie") for t in (ELO_TAG, REWARD_TAG)
    }
    goalie_elo = next(c for c in curves if c.behavior == "Goalie" and c.tag == ELO_TAG)
    assert list(goalie_elo.steps) == [100, 200, 300, 400]
    assert goalie_elo.values[-1] == pytest.approx(1290.0)
    out = write_report(run, tmp_path / "plots" / "run.png")
    with Image.open(out) as image:
        assert image.format == "PNG" and image.size == (1100, 420)
        assert len(np.unique(np.asarray(image.convert("RGB")).reshape(-1, 3), axis=0)) > 10


def test_report_errors(tmp_path, monkeypatch, capsys):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "configuration.yaml").write_text("{}\n")
    with pytest.raises(RunDirectoryError, match="no TensorBoard logs"):
        write_report(tmp_path / "empty", tmp_path / "x.png")
    assert main([str(tmp_path / "empty"), "--report", str(tmp_path / "x.png")]) == 2
    assert "no TensorBoard logs" in capsys.readouterr().err
    write_fake_run(tmp_path / "run")
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(GhostError) as missing:
        write_report(tmp_path / "run", tmp_path / "x.png")
    hint = 'pip install ".[plots]"'
    assert hint in str(missing.value)
    # the README gives the same instruction
    assert hint in (Path(__file__).resolve().parents[1] / "README.md").read_text()
