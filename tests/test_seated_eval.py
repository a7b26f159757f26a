"""``ghost-eval`` on runs of PettingZoo/OpenSpiel games: every seat in turn, and the exploiter."""

from __future__ import annotations

import json

import pytest
import yaml

pytest.importorskip("pettingzoo", reason="PettingZoo is an optional extra")

from ghost.evaluation.cli import main as ghost_eval  # noqa: E402
from ghost.running import cli  # noqa: E402


@pytest.fixture(scope="module")
def tictactoe_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ttt")
    config = {
        "behaviors": {
            "tictactoe": {
                "hyperparameters": {"batch_size": 128, "buffer_size": 1024, "num_epoch": 1},
                "network_settings": {"hidden_units": 32, "num_layers": 1},
                "max_steps": 3000,
                "summary_freq": 1000,
                "self_play": {"save_steps": 1000, "team_change": 2000},
            }
        },
        "env_settings": {
            "env_path": "pettingzoo:pettingzoo.classic.tictactoe_v3",
            "num_areas": 16,
            "seed": 2,
        },
    }
    path = folder / "ttt.yaml"
    path.write_text(yaml.safe_dump(config))
    code = cli.main([str(path), "--run-id", "ttt", "--results-dir", str(folder)])
    assert code == 0
    return folder / "ttt"


def evaluate(capsys, *argv):
    capsys.readouterr()
    assert ghost_eval([str(a) for a in argv] + ["--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_against_a_scripted_level_plays_every_seat(tictactoe_run, capsys):
    result = evaluate(capsys, tictactoe_run, "--against", "one_ply", "--episodes", 40)
    assert [seat["seat"] for seat in result["seats"]] == [0, 1]
    for seat in result["seats"]:
        assert seat["games"] == 40
        assert seat["wins"] + seat["draws"] + seat["losses"] == 40
    assert result["opponent"] == "one_ply"


def test_against_a_policy_file_or_run_folder(tictactoe_run, capsys):
    for opponent in (tictactoe_run, tictactoe_run / "tictactoe.pt"):
        result = evaluate(capsys, tictactoe_run, "--against", opponent, "--episodes", 40)
        assert result["opponent"] == str(opponent)
        assert [seat["games"] for seat in result["seats"]] == [40, 40]


def test_unknown_level_names_the_choices(tictactoe_run, capsys):
    assert ghost_eval([str(tictactoe_run), "--against", "grandmaster"]) == 2
    assert "random, one_ply" in capsys.readouterr().err


def test_exploiter_trains_against_the_frozen_policy_and_scores_every_seat(tictactoe_run, capsys):
    result = evaluate(capsys, tictactoe_run, "--exploiter", 2000, "--episodes", 30)
    exploiter = result["exploiter"]
    assert exploiter["steps"] == 2000
    assert [seat["games"] for seat in exploiter["seats"]] == [30, 30]
    folder = tictactoe_run / "exploiters" / "exploiter-2000-seed0"
    assert (folder / "tictactoe.pt").is_file()
    options = yaml.safe_load((folder / "configuration.yaml").read_text())
    self_play = options["behaviors"]["tictactoe"]["self_play"]
    assert self_play["fixed_opponents"][0]["policy"].endswith("ttt/tictactoe.pt")
    assert self_play["sampling"]["mixture"] == {"latest": 0.0, "window": 0.0, "fixed": 1.0}


def test_exploitability_needs_an_openspiel_run(tictactoe_run, capsys):
    assert ghost_eval([str(tictactoe_run), "--exploitability"]) == 2
    assert "OpenSpiel" in capsys.readouterr().err
