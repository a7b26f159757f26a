"""Evaluation: Wilson intervals, ``evaluate`` with every kind of player, runs' snapshots, ghost-eval."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from mlagents_envs.base_env import ActionTuple

from envs.games import make_game
from envs.matrix_games import RockPaperScissors
from ghost.evaluation.cli import main
from ghost.evaluation.snapshots import evaluate_against_snapshots, evaluate_run
from ghost.exceptions import CheckpointError, ConfigError, EnvironmentSourceError
from ghost.play.head_to_head import EvaluationResult, evaluate, wilson_interval
from ghost.running import cli as learn_cli
from trainers.policy import TorchPolicy
from trainers.settings import NetworkSettings

TINY_RPS = """
behaviors:
  RockPaperScissors:
    trainer_type: ppo
    hyperparameters: {batch_size: 128, buffer_size: 512, learning_rate: 0.003, num_epoch: 2}
    network_settings: {hidden_units: 8, num_layers: 1}
    max_steps: 2600
    time_horizon: 16
    summary_freq: 500
    checkpoint_interval: 1000
    self_play: {save_steps: 1000, team_change: 2000, swap_steps: 500, window: 10}
env_settings: {env_path: rock_paper_scissors, seed: 0}
"""


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def save_policy(path: Path, game: str, behavior: str, probs: tuple[float, ...] | None = None):
    """An untrained policy file for ``behavior`` of ``game``; with ``probs``, a discrete policy
    whose action probabilities are exactly ``probs`` whatever it observes."""
    spec = make_game(game, num_arenas=1).behavior_specs[behavior]
    policy = TorchPolicy(
        behavior_spec=spec, network_settings=NetworkSettings(hidden_units=8, num_layers=1)
    )
    if probs is not None:
        with torch.no_grad():
            policy.actor.logits_head.weight.zero_()
            policy.actor.logits_head.bias.copy_(torch.log(torch.tensor(probs)))
    policy.save(path)
    return path


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory) -> Path:
    """A real self-play run of rock-paper-scissors: final policy, snapshots, checkpoint, logs."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    folder = tmp_path_factory.mktemp("runs")
    config = folder / "rps.yaml"
    config.write_text(TINY_RPS)
    code = learn_cli.main([str(config), "--run-id", "rps", "--results-dir", str(folder)])
    torch.set_num_threads(threads)
    assert code == 0
    return folder / "rps"


# -- exact math --------------------------------------------------------------------------------
def test_wilson_interval_matches_hand_computed_values():
    # p = 0.8, n = 10, z = 1.96: centre (0.8 + z²/20) / (1 + z²/10) = 0.71674,
    # half z·sqrt(0.016 + z²/400) / (1 + z²/10) = 0.22657
    low, high = wilson_interval(8, 10)
    assert low == pytest.approx(0.49016, abs=1e-5)
    assert high == pytest.approx(0.94331, abs=1e-5)
    # none of 10: [0, z² / (n + z²)] = [0, 0.27753]
    assert wilson_interval(0, 10) == (0.0, pytest.approx(0.27753, abs=1e-5))
    assert wilson_interval(10, 10) == (pytest.approx(0.72247, abs=1e-5), 1.0)
    # 50 of 100: 0.5 ± 1.96·sqrt(0.0025 + z²/40000) / (1 + z²/100) = [0.40383, 0.59617]
    assert wilson_interval(50, 100) == (
        pytest.approx(0.40383, abs=1e-5),
        pytest.approx(0.59617, abs=1e-5),
    )
    assert wilson_interval(0, 0) == (0.0, 1.0)


def test_rates_leave_interrupted_matches_out_and_the_dict_is_json():
    result = EvaluationResult(
        game="tennis", policy="a", opponent="b", side=("Tennis?team=0",),
        wins=6, draws=2, losses=2, interrupted=5,
    )  # fmt: skip
    assert result.episodes == 15 and result.decided == 10
    assert (result.win_rate, result.draw_rate, result.loss_rate) == (0.6, 0.2, 0.2)
    assert result.score == pytest.approx(0.7)
    assert result.score_ci == wilson_interval(7, 10)
    data = json.loads(json.dumps(result.to_dict()))
    assert data["interrupted"] == 5 and data["win_rate_ci95"] == list(wilson_interval(6, 10))
    nothing = EvaluationResult(
        game="tennis", policy="a", opponent="b", side=(), wins=0, draws=0, losses=0, interrupted=3
    )
    assert math.isnan(nothing.win_rate)
    assert json.loads(json.dumps(nothing.to_dict()))["win_rate"] is None


# -- evaluate ----------------------------------------------------------------------------------
def test_strong_beats_random_at_tennis_and_seeds_repeat():
    result = evaluate(game="tennis", policy="strong", opponent="random", episodes=200, seed=3)
    assert result.episodes == 200
    assert result.win_rate > 0.6
    low, high = result.win_ci
    assert 0.0 <= low <= result.win_rate <= high <= 1.0
    assert result.score_ci[0] <= result.score <= result.score_ci[1]
    assert result.exploitability is None
    again = evaluate(game="tennis", policy="strong", opponent="random", episodes=200, seed=3)
    assert again == result


def test_a_policy_file_and_an_object_with_act_are_players(tmp_path):
    path = save_policy(tmp_path / "Tennis.pt", "tennis", "Tennis?team=0")
    result = evaluate(game="tennis", policy=path, opponent="medium", episodes=16)
    assert result.episodes == 16 and result.policy == str(path)

    class StandStill:
        name = "stand-still"

        def act(self, obs, action_mask=None, deterministic=False):
            return ActionTuple(continuous=np.zeros((len(obs[0]), 2), np.float32))

    result = evaluate(game="tennis", policy=StandStill(), opponent=str(path), episodes=8)
    assert result.policy == "stand-still" and result.opponent == str(path)
    assert result.episodes == 8


def test_rock_paper_scissors_exploitability_is_exact(tmp_path):
    probs = (0.5, 0.3, 0.2)
    path = save_policy(
        tmp_path / "rps.pt", "rock_paper_scissors", "RockPaperScissors?team=0", probs
    )
    result = evaluate(game="rock_paper_scissors", policy=path, opponent="rock", episodes=400)
    # best response: paper earns 0.5·1 + 0.3·0 + 0.2·(-1) = 0.3
    assert result.exploitability == pytest.approx(0.3, abs=1e-6)
    assert result.policy_probabilities == pytest.approx(probs, abs=1e-6)
    assert result.opponent_exploitability == pytest.approx(1.0)  # pure rock loses to paper
    assert abs(result.win_rate - 0.3) < 0.1  # paper beats rock 30% of the time
    pure = evaluate(game="rock_paper_scissors", policy=path, opponent="random", episodes=10,
                    deterministic=True)  # fmt: skip
    assert pure.exploitability == pytest.approx(1.0)  # always rock
    assert pure.policy_probabilities == (1.0, 0.0, 0.0)
    assert RockPaperScissors.exploitability(np.full(3, 1 / 3)) == pytest.approx(0.0)


def test_side_picks_the_behavior_and_results_follow_it():
    strikers = evaluate(game="strikers_vs_goalie", policy="strong", opponent="strong",
                        episodes=40, num_arenas=20)  # fmt: skip
    goalie = evaluate(game="strikers_vs_goalie", policy="strong", opponent="strong",
                      episodes=40, num_arenas=20, side="Goalie")  # fmt: skip
    assert strikers.side == ("Striker?team=0",) and goalie.side == ("Goalie?team=1",)
    # both strong levels are deterministic, so the same matches are seen from both sides
    assert (goalie.wins, goalie.losses) == (strikers.losses, strikers.wins)
    assert strikers.interrupted == goalie.interrupted == 0
    tennis = evaluate(game="tennis", policy="strong", opponent="weak", episodes=8,
                      side="Tennis?team=1")  # fmt: skip
    assert tennis.side == ("Tennis?team=1",)


def test_user_mistakes_are_clear_errors(tmp_path):
    with pytest.raises(EnvironmentSourceError, match="did you mean 'tennis'"):
        evaluate(game="tenis", policy="strong", opponent="random")
    with pytest.raises(ConfigError, match="did you mean 'medium'"):
        evaluate(game="tennis", policy="strong", opponent="medum")
    with pytest.raises(CheckpointError, match="no such policy file"):
        evaluate(game="tennis", policy=tmp_path / "missing.pt", opponent="random")
    rps = save_policy(tmp_path / "rps.pt", "rock_paper_scissors", "RockPaperScissors?team=0")
    with pytest.raises(CheckpointError, match=r"does not fit Tennis\?team=0 of tennis"):
        evaluate(game="tennis", policy=rps, opponent="random")
    with pytest.raises(ConfigError, match="not a behavior of strikers_vs_goalie"):
        evaluate(game="strikers_vs_goalie", policy="strong", opponent="strong", side="Keeper")
    with pytest.raises(ConfigError, match="episodes must be >= 1"):
        evaluate(game="tennis", policy="strong", opponent="random", episodes=0)


# -- runs --------------------------------------------------------------------------------------
def test_every_snapshot_of_a_run_is_evaluated_with_its_step_and_rating(tiny_run):
    snapshot_files = sorted((tiny_run / "RockPaperScissors" / "snapshots").glob("snapshot-*.pt"))
    rows = evaluate_run(tiny_run, "RockPaperScissors", opponent="rock", episodes=20)
    assert len(rows) == len(snapshot_files) >= 2
    assert [row.snapshot_id for row in rows] == sorted(row.snapshot_id for row in rows)
    snapshot_id, step, rating, result = rows[0]
    assert step == 0 and rating is not None and result.episodes == 20
    assert all(row.result.exploitability is not None for row in rows)
    against = evaluate_against_snapshots(
        game="rock_paper_scissors", policy=tiny_run, run_dir=tiny_run, episodes=20
    )
    assert [row.snapshot_id for row in against] == [row.snapshot_id for row in rows]
    assert all(row.result.policy == str(tiny_run) for row in against)


# -- ghost-eval --------------------------------------------------------------------------------
def test_cli_prints_a_table(tmp_path, capsys):
    path = save_policy(tmp_path / "rps.pt", "rock_paper_scissors", "RockPaperScissors?team=0",
                       (0.2, 0.6, 0.2))  # fmt: skip
    code = main(["match", str(path), "--game", "rock_paper_scissors", "--against", "rock",
                 "--episodes", "50"])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0 and err == ""
    for expected in ("wins", "draws", "losses", "interrupted", "mean score", "95% CI",
                     "exploitability of the policy:   0.4000 (0.200, 0.600, 0.200)"):  # fmt: skip
        assert expected in out


def test_cli_json_is_one_object(tmp_path, capsys):
    path = save_policy(tmp_path / "Tennis.pt", "tennis", "Tennis?team=0")
    code = main(["match", str(path), "--game", "tennis", "--against", "strong", "--episodes", "12",
                 "--json"])  # fmt: skip
    data = json.loads(capsys.readouterr().out)
    assert code == 0
    assert data["episodes"] == 12 and data["opponent"] == "strong (scripted)"
    assert data["wins"] + data["draws"] + data["losses"] + data["interrupted"] == 12


@pytest.mark.parametrize(
    "argv, message",
    [
        (["match", "missing/Tennis.pt", "--game", "tennis", "--against", "strong"],
         "no such policy file"),
        (["match", "strong", "--game", "tennis", "--against", "medum"], "did you mean 'medium'"),
        (["match", "strong", "--game", "golf", "--against", "random"], "unknown game 'golf'"),
        (["match", "strong", "--against", "random"], "pass --game"),
        (["snapshots", "strong", "--game", "tennis", "--against", "weak"],
         "not inside a run folder"),
        (["league", "strong"], "ghost-eval tournament needs a run folder"),
        (["report", "strong", "x.png"], "ghost-eval report needs a run folder"),
        (["exploit", "strong", "--steps", "10"], "ghost-eval exploit needs the folder of a run"),
        (["exploitability", "strong"], "ghost-eval exploitability needs the folder of a run"),
        (["match", "strong", "--game", "tennis", "--against", "weak", "--ray-address", "auto"],
         "--ray-address plays many evaluations at once"),
        (["strong", "--game", "tennis"], "nothing to do"),  # the flag form, said as before
    ],
)  # fmt: skip
def test_cli_user_errors_are_one_line_and_exit_2(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.startswith("ghost-eval: error:")
    assert err.count("\n") == 1 and "Traceback" not in err


def test_cli_on_a_run_folder_infers_the_game_and_plays_the_snapshots(tiny_run, capsys):
    assert main(["match", str(tiny_run), "--against", "paper", "--episodes", "20"]) == 0
    assert "rock_paper_scissors: " in capsys.readouterr().out
    argv = ["match", str(tiny_run), "--against", "snapshots", "--episodes", "20", "--json"]
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["game"] == "rock_paper_scissors" and len(data["evaluations"]) >= 2
    assert data["evaluations"][0]["step"] == 0
    assert main(["snapshots", str(tiny_run), "--against", "rock", "--episodes", "20"]) == 0
    out = capsys.readouterr().out
    assert "each snapshot of RockPaperScissors" in out and "exploitability" in out


def test_cli_flag_form_still_works_with_a_note_naming_the_command(tiny_run, capsys):
    argv = [str(tiny_run), "--against", "rock", "--episodes", "20", "--json"]
    assert main(["match", *argv]) == 0
    new = capsys.readouterr()
    assert main(argv) == 0
    old = capsys.readouterr()
    assert old.out == new.out and new.err == ""
    assert old.err == (
        f"ghost-eval: note: the flag form is deprecated; use "
        f"'ghost-eval match {tiny_run} --against rock ...'\n"
    )
    assert main([str(tiny_run), "--against", "rock", "--each-snapshot", "--episodes", "20"]) == 0
    out, err = capsys.readouterr()
    assert "each snapshot of RockPaperScissors" in out
    assert f"use 'ghost-eval snapshots {tiny_run} --against rock ...'" in err


def test_cli_league_of_a_run(tiny_run, capsys):
    argv = ["league", str(tiny_run), "--games-per-pair", "4", "--include-levels", "rock", "--json"]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    players = json.loads(out)["league"]["players"]
    assert "rock" in {player["player"] for player in players} and "tournament: " in err


def test_cli_report_of_a_real_run(tiny_run, tmp_path, capsys):
    from PIL import Image

    out = tmp_path / "report.png"
    assert main(["report", str(tiny_run), str(out)]) == 0
    assert f"report: {out}" in capsys.readouterr().out
    with Image.open(out) as image:
        assert image.format == "PNG" and image.size[0] > 600
    # the flag form may draw the report beside an evaluation, in one JSON object
    assert main([str(tiny_run), "--report", str(out), "--against", "rock", "--episodes", "4",
                 "--json"]) == 0  # fmt: skip
    output = capsys.readouterr()
    data = json.loads(output.out)
    assert data["report"] == str(out) and data["episodes"] == 4
    assert f"'ghost-eval report {tiny_run} {out}' and 'ghost-eval match" in output.err
