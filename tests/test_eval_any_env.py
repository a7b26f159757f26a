"""``ghost-eval match``, ``snapshots`` and ``league`` on runs trained on a ``module:callable``
environment or a Unity build: they play in the environment the run recorded.

The ``module:callable`` runs train on ``tests.eval_envs`` (matches with winners); the Unity runs on
the stand-in player ``tests/fake_unity/FakePong`` over the real protocol, each on free ports.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from mlagents_envs.base_env import ActionTuple

import ghost
from ghost.evaluation import cli_commands
from ghost.evaluation.cli import main
from ghost.exceptions import ConfigError
from ghost.play.base_env_matches import EnvGames
from tests.eval_envs import make_arena_duel
from tests.test_unity_build import PONG, free_ports

pytestmark = pytest.mark.usefixtures("one_torch_thread")

TINY_PPO = {
    "trainer_type": "ppo",
    "hyperparameters": {"batch_size": 32, "buffer_size": 64, "num_epoch": 1},
    "network_settings": {"hidden_units": 16, "num_layers": 1},
    "max_steps": 300,
    "summary_freq": 300,
    "checkpoint_interval": 300,
    "self_play": {"save_steps": 100, "swap_steps": 50, "team_change": 200, "window": 3},
}


def _train(results: Path, run_id: str, env: str, behavior: str, **overrides) -> Path:
    threads = torch.get_num_threads()
    try:
        config = {"behaviors": {behavior: TINY_PPO}}
        ghost.train(
            config, env=env, run_id=run_id, results_dir=results, seed=1, overrides=overrides
        )
    finally:
        torch.set_num_threads(threads)
    return results / run_id


def ghost_eval(capsys, *argv: str) -> tuple[int, str, str]:
    code = main([str(arg) for arg in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# -- counting on a BaseEnv ------------------------------------------------------------------------
class Sharp:
    """Always hits its target (``TeamArenaEnv`` shows it one-hot)."""

    def act(self, obs, action_mask=None, deterministic=False):
        return ActionTuple(discrete=np.argmax(obs[0], axis=1)[:, None].astype(np.int32))


class Blunt:
    """Always misses it."""

    def act(self, obs, action_mask=None, deterministic=False):
        chosen = (np.argmax(obs[0], axis=1) + 1) % obs[0].shape[1]
        return ActionTuple(discrete=chosen[:, None].astype(np.int32))


def test_results_are_counted_from_the_policys_side_on_each_team_in_turn():
    with EnvGames(make_arena_duel(), label="duel") as games:
        won = games.head_to_head(policy=Sharp(), opponent=Blunt(), episodes=11)
        assert (won.wins, won.draws, won.losses, won.interrupted) == (11, 0, 0, 0)
        assert won.side == ("Arena?team=0", "Arena?team=1")  # sides swapped halfway
        lost = games.head_to_head(policy=Blunt(), opponent=Sharp(), episodes=6, side="Arena?team=1")
        assert (lost.losses, lost.side) == (6, ("Arena?team=1",))
        even = games.head_to_head(policy=Sharp(), opponent=Sharp(), episodes=5)
        assert even.draws == 5 and even.game == "duel"
        with pytest.raises(ConfigError, match="side 'Goalie' is not a behavior"):
            games.head_to_head(policy=Sharp(), opponent=Blunt(), episodes=2, side="Goalie")


# -- a module:callable run ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def duel_runs(tmp_path_factory) -> tuple[Path, Path]:
    results = tmp_path_factory.mktemp("results")
    env = "tests.eval_envs:make_arena_duel"
    return _train(results, "a", env, "Arena"), _train(results, "b", env, "Arena")


def test_match_plays_a_callable_run_against_another_run(duel_runs, capsys, monkeypatch):
    monkeypatch.setattr(cli_commands, "MATCH_QUIET_FOR_S", 0.0)  # show the progress of any match
    run, other = duel_runs
    code, out, err = ghost_eval(capsys, "match", run, "--against", other, "--episodes", "12",
                                "--json")  # fmt: skip
    assert code == 0, err
    data = json.loads(out)
    assert data["game"] == "tests.eval_envs:make_arena_duel" and data["episodes"] == 12
    assert data["side"] == ["Arena?team=0", "Arena?team=1"]
    assert data["wins"] + data["draws"] + data["losses"] + data["interrupted"] == 12
    assert "match: 12/12 episodes (100%)" in err  # both teams' shares on one progress line
    code, out, err = ghost_eval(capsys, "match", run, "--against", "snapshots", "--episodes", "4",
                                "--json")  # fmt: skip
    assert code == 0, err
    rows = json.loads(out)["evaluations"]
    assert len(rows) >= 2 and all(row["snapshots_of"] == f"{run} (Arena snapshots)" for row in rows)
    assert all(row["result"]["policy"] == str(run) for row in rows)


def test_snapshots_play_the_final_policy_by_default(duel_runs, capsys):
    run, other = duel_runs
    code, out, err = ghost_eval(capsys, "snapshots", run, "--episodes", "4", "--json")
    assert code == 0, err
    rows = json.loads(out)["evaluations"]
    assert [row["snapshot_id"] for row in rows] == sorted(row["snapshot_id"] for row in rows)
    assert len(rows) >= 2 and all(row["result"]["episodes"] == 4 for row in rows)
    assert all(row["result"]["opponent"] == str(run) for row in rows)
    code, out, err = ghost_eval(capsys, "snapshots", run, "--against", other, "--episodes", "2")
    assert code == 0, err
    assert f"(Arena snapshots) vs {other}" in out


def test_league_rates_the_players_of_two_runs(duel_runs, capsys):
    run, other = duel_runs
    code, out, err = ghost_eval(capsys, "league", run, other, "--games-per-pair", "4", "--json")
    assert code == 0, err
    league = json.loads(out)["league"]
    names = {player["player"] for player in league["players"]}
    assert {"a/final", "b/final"} <= names and any(n.startswith("b/snapshot-") for n in names)
    assert league["symmetric"] and league["run"] == f"{run}, {other}"
    assert all(r["wins"] + r["draws"] + r["losses"] + r["interrupted"] == 4
               for r in league["results"])  # fmt: skip
    code, out, err = ghost_eval(capsys, "league", run, "--games-per-pair", "2")
    assert code == 0, err
    assert "tests.eval_envs:make_arena_duel tournament of" in out and "final" in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["match", "{run}", "--against", "medium"],
         "--against takes a run folder or a policy file"),
        (["league", "{run}", "--include-levels", "medium"], "scripted levels exist only for"),
        (["match", "{run}", "--against", "{run}", "--num-arenas", "4"], "--num-arenas: for built-in"),
        (["match", "{run}", "--against", "{run}", "--base-port", "6000"], "are for Unity builds"),
        (["match", "{run}", "--against", "{run}", "--env", "tennis"], "pass --game tennis"),
    ],
)  # fmt: skip
def test_what_does_not_apply_outside_builtin_games_is_one_clear_line(
    duel_runs, argv, message, capsys
):
    run, _ = duel_runs
    code, _, err = ghost_eval(capsys, *[a.format(run=run) for a in argv])
    assert code == 2 and message in err and err.count("\n") == 1


def test_each_side_plays_only_what_its_player_has(duel_runs, tmp_path, capsys):
    """An asymmetric game: a run with only a Hunter policy meets one with only a Prey policy."""
    arena_policy = duel_runs[0] / "Arena.pt"  # TeamArenaEnv: every behavior has its spec
    for name, behavior in (("hunter", "Hunter"), ("prey", "Prey")):
        (tmp_path / name).mkdir()
        shutil.copy(arena_policy, tmp_path / name / f"{behavior}.pt")
        config = {
            "behaviors": {behavior: {}},
            "env_settings": {"env_path": "tests.eval_envs:make_hunt"},
        }
        (tmp_path / name / "configuration.yaml").write_text(yaml.safe_dump(config))
    code, out, err = ghost_eval(capsys, "match", tmp_path / "hunter", "--against", tmp_path / "prey",
                                "--episodes", "6", "--json")  # fmt: skip
    assert code == 0, err
    assert json.loads(out)["side"] == ["Hunter?team=0"] and json.loads(out)["episodes"] == 6
    code, _, err = ghost_eval(capsys, "match", tmp_path / "prey", "--against", tmp_path / "prey")
    assert code == 2 and "has no final policy of Hunter" in err


# -- a Unity build --------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def pong_run(tmp_path_factory) -> Path:
    results = tmp_path_factory.mktemp("unity")
    return _train(
        results, "pong", PONG, "Pong",
        **{"env_settings.base_port": free_ports(1), "env_settings.num_areas": 4,
           "env_settings.timeout_wait": 30, "engine_settings.no_graphics": True},
    )  # fmt: skip


def test_match_on_a_unity_build_plays_in_the_recorded_build(pong_run, capsys):
    snapshot = sorted((pong_run / "Pong" / "snapshots").glob("snapshot-*.pt"))[0]
    code, out, err = ghost_eval(capsys, "match", pong_run, "--against", snapshot, "--episodes", "6",
                                "--base-port", free_ports(1), "--json")  # fmt: skip
    assert code == 0, err
    data = json.loads(out)
    assert data["game"] == "FakePong" and data["opponent"] == str(snapshot)
    assert data["side"] == ["Pong?team=0", "Pong?team=1"]
    assert data["wins"] + data["draws"] + data["losses"] + data["interrupted"] == 6


def test_a_moved_build_is_named_with_env(pong_run, tmp_path, capsys):
    moved = tmp_path / "moved"
    shutil.copytree(pong_run, moved)
    config = yaml.safe_load((moved / "configuration.yaml").read_text())
    config["env_settings"]["env_path"] = str(tmp_path / "gone" / "FakePong")
    (moved / "configuration.yaml").write_text(yaml.safe_dump(config))
    code, _, err = ghost_eval(capsys, "match", moved, "--against", moved, "--episodes", "2")
    assert code == 2 and "pass --env" in err
    code, out, err = ghost_eval(capsys, "match", moved, "--against", moved, "--episodes", "2",
                                "--env", PONG)  # fmt: skip
    assert code == 0, err
    assert out.startswith(f"FakePong: {moved} [Pong?team=0, Pong?team=1] vs {moved}")


def test_league_on_a_unity_build_rates_the_runs_players(pong_run, capsys):
    code, out, err = ghost_eval(capsys, "league", pong_run, "--games-per-pair", "2", "--json")
    assert code == 0, err
    league = json.loads(out)["league"]
    assert league["game"] == "FakePong" and league["symmetric"]
    assert "final" in {player["player"] for player in league["players"]}
    assert len(league["players"]) >= 3
    assert all(r["wins"] + r["draws"] + r["losses"] + r["interrupted"] == 2
               for r in league["results"])  # fmt: skip
