"""The league: Bradley-Terry Elo fit, OpenSkill ratings, a run's players, ``ghost-eval --league``."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from envs.games import make_game
from ghost.core.ratings import elo_expected
from ghost.evaluation.cli import main
from ghost.evaluation.tournament import play_tournament, tournament_pairs
from ghost.evaluation.tournament_players import FINAL, FIXED, SCRIPTED, SNAPSHOT, tournament_players
from ghost.evaluation.tournament_ratings import (
    ELO_MEAN,
    PairResult,
    fit_bradley_terry,
    fit_elo_intervals,
    openskill_ratings,
)
from ghost.exceptions import ConfigError
from ghost.running import cli as learn_cli
from trainers.policy import TorchPolicy
from trainers.settings import NetworkSettings

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _simulated(strengths: dict[str, float], games: int, seed: int = 0) -> list[PairResult]:
    """Every pair plays ``games`` games drawn from the Elo model of ``strengths``."""
    rng = np.random.default_rng(seed)
    names = list(strengths)
    results = []
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            wins = int(rng.binomial(games, elo_expected(strengths[a], strengths[b])))
            results.append(PairResult(a, b, wins, 0, games - wins))
    return results


def _elo(results: list[PairResult], **kwargs: float) -> dict[str, float]:
    """Only the ratings of ``fit_elo_intervals``."""
    return {name: e.elo for name, e in fit_elo_intervals(results, **kwargs).items()}


# -- exact math --------------------------------------------------------------------------------
def test_a_76_percent_score_is_200_elo_and_the_mean_is_1200():
    ratings = _elo([PairResult("a", "b", 76, 0, 24)], prior_draws=0)
    # the MLE matches the observed score exactly: 400 log10(0.76 / 0.24) = 200.24
    assert ratings["a"] - ratings["b"] == pytest.approx(400 * math.log10(0.76 / 0.24), abs=1e-6)
    assert (ratings["a"] + ratings["b"]) / 2 == pytest.approx(ELO_MEAN)
    # draws count half: 70 wins + 12 draws + 18 losses is the same 76% score
    assert _elo([PairResult("a", "b", 70, 12, 18)], prior_draws=0) == pytest.approx(ratings)
    # one virtual draw barely moves a 100-game result
    assert _elo([PairResult("a", "b", 76, 0, 24)])["a"] == pytest.approx(ratings["a"], abs=1.5)


def test_gaps_add_up_through_common_opponents():
    results = [PairResult("a", "b", 76, 0, 24), PairResult("c", "b", 24, 0, 76)]
    ratings = _elo(results, prior_draws=0)
    gap = 400 * math.log10(0.76 / 0.24)
    assert ratings["a"] - ratings["c"] == pytest.approx(2 * gap, abs=1e-6)
    assert ratings["b"] == pytest.approx(ELO_MEAN)


def test_the_fit_is_a_maximum_expected_scores_equal_actual_scores():
    results = _simulated({"a": 0, "b": 100, "c": 250, "d": 300}, games=30, seed=5)
    results.append(PairResult("a", "d", 3, 4, 5))
    ratings = _elo(results, prior_draws=0)
    for player in ratings:
        actual = expected = 0.0
        for r in results:
            if player in (r.player, r.opponent):
                me, other = (r.player, r.opponent) if r.player == player else (r.opponent, r.player)
                mine = r.wins if me == r.player else r.losses
                actual += mine + 0.5 * r.draws
                expected += r.decided * elo_expected(ratings[me], ratings[other])
        assert expected == pytest.approx(actual, abs=1e-6)


def test_a_perfect_record_needs_the_prior_and_stays_finite_with_it():
    with pytest.raises(ValueError, match="prior_draws > 0"):
        _elo([PairResult("a", "b", 40, 0, 0)], prior_draws=0)
    chain = [PairResult("a", "b", 3, 0, 2), PairResult("b", "c", 4, 0, 0)]
    with pytest.raises(ValueError, match="'c' and the players it scored against never"):
        _elo([*chain, PairResult("a", "c", 5, 0, 0)], prior_draws=0)
    assert _elo([*chain, PairResult("c", "a", 1, 0, 5)], prior_draws=0)["c"] < 1200
    ratings = _elo([PairResult("a", "b", 40, 0, 0)])  # 40.5 of 41 points
    assert ratings["a"] - ratings["b"] == pytest.approx(400 * math.log10(40.5 / 0.5), abs=1e-6)
    with pytest.raises(ValueError, match="prior_draws must be >= 0"):
        _elo([PairResult("a", "b", 1, 0, 1)], prior_draws=-1)


def test_known_strengths_are_recovered_by_elo_and_ordered_by_openskill():
    truth = {"p0": 0.0, "p1": 150.0, "p2": 300.0, "p3": 450.0, "p4": 600.0}
    results = _simulated(truth, games=400, seed=1)
    ratings = _elo(results)
    assert sorted(ratings, key=ratings.get) == list(truth)
    for name in truth:  # each gap to p0 within ~3 standard errors (about 30 Elo)
        assert ratings[name] - ratings["p0"] == pytest.approx(truth[name], abs=40)
    _, _, errors = fit_bradley_terry(results)
    assert np.all(errors > 0) and np.all(errors * 400 / math.log(10) < 20)
    skills = openskill_ratings(results, seed=0)
    assert sorted(skills, key=lambda n: skills[n].ordinal) == list(truth)
    assert sorted(skills, key=lambda n: skills[n].mu) == list(truth)
    assert all(s.ordinal == pytest.approx(s.mu - 3 * s.sigma) for s in skills.values())


# -- a run's league ----------------------------------------------------------------------------
def _policy_file(path: Path, game: str, behavior: str, seed: int = 0) -> Path:
    """An untrained policy file with weights drawn from ``seed``."""
    spec = make_game(game, num_arenas=1).behavior_specs[behavior]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        policy = TorchPolicy(
            behavior_spec=spec, network_settings=NetworkSettings(hidden_units=8, num_layers=1)
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    policy.save(path)
    return path


@pytest.fixture
def tennis_run(tmp_path) -> Path:
    """A tennis run laid out as ``ghost.run_dir`` writes one: two (untrained) snapshots, a final
    policy, and fixed opponents: a scripted level and another run's policy file."""
    run = tmp_path / "tennis"
    for i in range(2):
        _policy_file(
            run / "Tennis" / "snapshots" / f"snapshot-{i}.pt", "tennis", "Tennis?team=0", seed=i
        )
    _policy_file(run / "Tennis.pt", "tennis", "Tennis?team=0", seed=2)
    other = _policy_file(tmp_path / "other" / "Tennis.pt", "tennis", "Tennis?team=0", seed=3)
    fixed = [
        {"name": "medium-bot", "scripted": "tennis:medium"},
        {"name": "other-run", "policy": str(other)},
        {"name": "gone", "policy": str(tmp_path / "missing.pt")},
    ]
    config = {
        "behaviors": {"Tennis": {"self_play": {"fixed_opponents": fixed}}},
        "env_settings": {"env_path": "tennis"},
    }
    (run / "configuration.yaml").write_text(yaml.safe_dump(config))
    return run


def test_the_players_of_a_run(tennis_run, caplog):
    players = tournament_players(
        [tennis_run], behaviors=["Tennis"], game="tennis",
        include_levels=("strong", "medium", "strong"),
    )  # fmt: skip
    assert [(p.name, p.kind) for p in players] == [
        ("snapshot-0", SNAPSHOT),
        ("snapshot-1", SNAPSHOT),
        ("final", FINAL),
        ("medium-bot", FIXED),
        ("other-run", FIXED),
        ("strong", SCRIPTED),  # medium is already the fixed opponent medium-bot
    ]
    assert "'gone'" in caplog.text and "does not exist" in caplog.text
    assert len(tournament_pairs(players, symmetric=True)) == 15
    with pytest.raises(ConfigError, match="'expert' not a scripted level of tennis"):
        tournament_players(
            [tennis_run], behaviors=["Tennis"], game="tennis", include_levels=("expert",)
        )


def test_a_tennis_league_ranks_strong_above_medium_above_random(tennis_run):
    done = []
    table = play_tournament(
        tennis_run,
        games_per_pair=40,
        include_levels=("strong", "random"),
        progress=lambda i, n, result: done.append((i, n)),
    )
    assert done[-1] == (21, 21) and len(table.results) == 21
    names = [row.player.name for row in table.rows]
    assert names[0] == "strong"
    assert names.index("medium-bot") < names.index("random")
    assert np.mean([row.elo for row in table.rows]) == pytest.approx(ELO_MEAN)
    strong = table.row("strong")
    assert strong.games + strong.interrupted == 6 * 40 and strong.score > 0.8
    ordinals = {row.player.name: row.openskill.ordinal for row in table.rows}
    assert ordinals["strong"] == max(ordinals.values())
    matrix = table.score_matrix()
    assert np.all(np.isnan(np.diag(matrix)))
    np.testing.assert_allclose((matrix + matrix.T)[~np.eye(len(names), dtype=bool)], 1.0)
    again = play_tournament(tennis_run, games_per_pair=40, include_levels=("strong", "random"))
    assert again.results == table.results  # seeded


def test_an_asymmetric_league_pairs_the_two_sides(tmp_path):
    run = tmp_path / "svg"
    for behavior, team in (("Striker", 0), ("Goalie", 1)):
        _policy_file(
            run / behavior / "snapshots" / "snapshot-0.pt",
            "strikers_vs_goalie",
            f"{behavior}?team={team}",
        )
    (run / "configuration.yaml").write_text("env_settings: {env_path: strikers_vs_goalie}\n")
    table = play_tournament(run, games_per_pair=20, include_levels=("strong",))
    assert not table.symmetric
    assert {row.player.name for row in table.rows} == {
        "Striker/snapshot-0",
        "Striker/strong",
        "Goalie/snapshot-0",
        "Goalie/strong",
    }
    assert len(table.results) == 4
    for result in table.results:  # each pair: a striker against a goalie
        assert result.player.startswith("Striker/") and result.opponent.startswith("Goalie/")


# -- the command -------------------------------------------------------------------------------
def test_cli_league_prints_the_table_the_matrix_and_progress(tennis_run, capsys):
    argv = [str(tennis_run), "--league", "--games-per-pair", "10", "--include-levels", "strong"]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert "tennis tournament of" in out and "6 players, 15 pairs x 10 games" in out
    assert "Bradley-Terry" in out and "ordinal = mu - 3 sigma" in out
    assert "score of the row player against the column player" in out
    assert "tournament: 15/15 pairs" in err
    assert main([*argv, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)["league"]
    assert data["game"] == "tennis" and len(data["players"]) == 6 and len(data["results"]) == 15
    elos = [player["elo"] for player in data["players"]]
    assert elos == sorted(elos, reverse=True)
    assert {"kind", "step", "games", "score", "openskill_mu", "openskill_ordinal"} <= set(
        data["players"][0]
    )


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--include-levels", "expert"], "'expert' not a scripted level of tennis"),
        (["--games-per-pair", "0"], "--games-per-pair: must be a whole number > 0"),
        (["--against", "strong"], "leave out --against"),
    ],
)
def test_cli_league_user_errors_are_one_line(tennis_run, extra, message, capsys):
    try:
        code = main([str(tennis_run), "--league", *extra])
    except SystemExit as stop:  # a flag's own error, said by argparse
        code = stop.code
    assert code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_cli_league_options_need_league_and_a_run(tmp_path, capsys):
    assert main(["strong", "--game", "tennis", "--against", "weak", "--games-per-pair", "5"]) == 2
    assert "need --league" in capsys.readouterr().err
    assert main(["strong", "--game", "tennis", "--league"]) == 2
    assert "--league needs a run folder" in capsys.readouterr().err
    # asking for Ray where one evaluation is played is a mistake, said before anything runs
    assert main(["strong", "--game", "tennis", "--against", "weak", "--ray-address", "auto"]) == 2
    assert "--ray-address plays many evaluations at once" in capsys.readouterr().err


TINY_RPS = """
behaviors:
  RockPaperScissors:
    trainer_type: ppo
    hyperparameters: {batch_size: 128, buffer_size: 512, learning_rate: 0.003, num_epoch: 2}
    network_settings: {hidden_units: 8, num_layers: 1}
    max_steps: 2100
    time_horizon: 16
    summary_freq: 1000
    checkpoint_interval: 1000
    self_play:
      save_steps: 1000
      team_change: 2000
      swap_steps: 500
      fixed_opponents: [{name: rocky, scripted: rock}]
env_settings: {env_path: rock_paper_scissors, seed: 0}
"""


def test_a_trained_run_has_snapshot_steps_and_its_fixed_opponent(tmp_path, capsys):
    (tmp_path / "rps.yaml").write_text(TINY_RPS)
    argv = [str(tmp_path / "rps.yaml"), "--run-id", "rps", "--results-dir", str(tmp_path)]
    assert learn_cli.main(argv) == 0
    table = play_tournament(tmp_path / "rps", games_per_pair=20, include_levels=("paper",))
    rows = {row.player.name: row for row in table.rows}
    assert {"snapshot-0", "final", "rocky", "paper"} <= set(rows)
    assert rows["snapshot-0"].player.step == 0 and rows["final"].player.step >= 2000
    assert rows["rocky"].player.kind == FIXED and rows["paper"].player.kind == SCRIPTED
    # paper always beats rock: its score against the fixed opponent is 1
    assert (
        table.score_matrix()[table.rows.index(rows["paper"]), table.rows.index(rows["rocky"])] == 1
    )
