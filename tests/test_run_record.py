"""``RunRecord`` reads a results folder; ``RunEvaluation`` is what evaluating a run gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from ghost.evaluation.cli_format import format_both_seats
from ghost.evaluation.run_evaluation import RunEvaluation, SnapshotEvaluation
from ghost.exceptions import ConfigError, RunDirectoryError
from ghost.play.head_to_head import EvaluationResult
from ghost.play.run_record import RunRecord
from ghost.play.seated_matches import BothSeats, SeatResult


def write_run(root: Path, configuration: str) -> Path:
    root.mkdir(parents=True)
    (root / "configuration.yaml").write_text(configuration, encoding="utf-8")
    return root


def test_a_builtin_game_run(tmp_path):
    run = RunRecord(
        write_run(
            tmp_path / "r",
            "behaviors:\n  Tennis:\n    max_steps: 10\nenv_settings:\n  env_path: tennis\n",
        )
    )
    assert run.env_path == "tennis"
    assert run.builtin_game == "tennis" == run.require_builtin_game()
    assert run.seated_env_path is None
    assert run.behaviors == ["Tennis"]
    assert run.final_policy_path("Tennis") == tmp_path / "r" / "Tennis.pt"
    assert run.checkpoint_steps() == {}
    with pytest.raises(ConfigError, match="no final policy Tennis.pt"):
        run.final_policy("Tennis")
    with pytest.raises(RunDirectoryError, match="no snapshots of Tennis"):
        run.snapshots("Tennis")


def test_a_seated_game_run_and_a_folder_without_configuration(tmp_path):
    run = RunRecord(write_run(tmp_path / "r", "env_settings:\n  env_path: openspiel:kuhn_poker\n"))
    assert run.seated_env_path == "openspiel:kuhn_poker"
    assert run.builtin_game is None
    with pytest.raises(ConfigError, match="not the folder of a run on a built-in game"):
        run.require_builtin_game()
    empty = RunRecord(tmp_path / "missing")
    assert empty.configuration == {} and empty.env_path is None and empty.behaviors == []
    with pytest.raises(RunDirectoryError, match="does not exist"):
        empty.check()
    with pytest.raises(ConfigError, match="names no env_settings.env_path"):
        empty.env_source()


def test_one_result_type_for_both_kinds_of_run(tmp_path):
    result = EvaluationResult(
        game="rock_paper_scissors", policy="s.pt", opponent="rock (scripted)",
        side=("RockPaperScissors?team=0",), wins=3, draws=1, losses=0, interrupted=0,
    )  # fmt: skip
    rows = (SnapshotEvaluation(2, 100, 1210.0, result),)
    snapshots = RunEvaluation(run=tmp_path, policy=str(tmp_path), opponent="rock", snapshots=rows)
    assert list(snapshots) == list(rows) and snapshots[0].result.wins == 3 and len(snapshots) == 1
    assert snapshots.to_dict()["evaluations"] == [rows[0].to_dict()]

    seats = tuple(
        SeatResult(seat=s, games=10, wins=5 + s, draws=0, losses=5 - s, mean_reward=0.1 * s)
        for s in range(2)
    )
    both = BothSeats(policy=str(tmp_path), opponent="random", seats=seats)
    seated = RunEvaluation.of_seats(tmp_path, both)
    assert len(seated) == 0
    assert seated.to_dict() == both.to_dict()
    assert (seated.win_rate, seated.mean_reward) == (both.win_rate, both.mean_reward)
    assert format_both_seats(seated) == format_both_seats(both)
