"""Slips of the keyboard on the command line: a misspelt command or preset gets "did you mean",
and an output argument naming a folder writes into it (no traceback)."""

from __future__ import annotations

import pytest

from envs.exceptions import did_you_mean
from ghost.command_line import output_file
from ghost.config.presets import UnknownPresetError, expand_preset
from ghost.evaluation.cli import main as ghost_eval
from ghost.exceptions import ResultsWriteError


def test_did_you_mean_names_the_closest_choice_or_nothing():
    assert did_you_mean("robus", ["robust", "none", "auto"]) == "did you mean 'robust'?"
    assert did_you_mean("zzz", ["robust", "none", "auto"]) == ""


@pytest.mark.parametrize("typed, meant", [("matc", "match"), ("reprot", "report")])
def test_a_misspelt_ghost_eval_command_gets_did_you_mean(capsys, typed, meant):
    with pytest.raises(SystemExit) as stop:
        ghost_eval([typed, "results/x"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert f"unknown command {typed!r}; did you mean {meant!r}?" in err
    assert "Traceback" not in err


def test_a_run_folder_first_is_still_the_old_flag_form(tmp_path, capsys):
    run = tmp_path / "matc"  # a run folder whose name looks like a command is not a slip
    run.mkdir()
    assert ghost_eval([str(run), "--against", "strong"]) == 2
    assert "did you mean" not in capsys.readouterr().err


def test_a_misspelt_preset_gets_did_you_mean():
    with pytest.raises(UnknownPresetError, match="did you mean 'robust'"):
        expand_preset("Duel", {"self_play": {"preset": "robus"}})


def test_an_output_folder_takes_the_default_name(tmp_path):
    assert output_file(tmp_path, "Tennis.onnx") == tmp_path / "Tennis.onnx"
    assert output_file(f"{tmp_path}/new/", "x.png") == tmp_path / "new" / "x.png"
    assert (tmp_path / "new").is_dir()  # made on the way, as the report always did
    (tmp_path / "file").write_text("")
    with pytest.raises(ResultsWriteError, match="cannot be made"):
        output_file(tmp_path / "file" / "x.png", "y.png")
    assert output_file(tmp_path / "chosen.png", "x.png") == tmp_path / "chosen.png"


def test_ghost_tune_refuses_a_misspelt_game_before_any_trial(tmp_path, capsys):
    pytest.importorskip("optuna")
    from ghost.tuning.cli import main as ghost_tune

    assert ghost_tune(["--env", "tenis", "--results-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "'tennis'?" in err and "trial" not in err
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("flag", ["--episodes", "--num-arenas"])
def test_a_count_of_zero_is_the_flags_own_error(capsys, flag):
    with pytest.raises(SystemExit):
        ghost_eval(["match", "results/x", "--against", "medium", flag, "0"])
    assert f"argument {flag}: must be a whole number > 0, got 0" in capsys.readouterr().err
