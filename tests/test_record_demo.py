"""``ghost-eval match --record-demo``: one side's demonstrations recorded while a match is played
(``ghost.play.demo_recording``), in a built-in game's arenas and in any ``BaseEnv``.

What is checked: the file reads back (``envs.demo_files.read_demo``) with the behavior's spec and
the recorded player's own actions; it holds exactly the counted matches; the results are those of
the same match unrecorded; paths and refusals behave as the command's other outputs do.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from mlagents_envs.base_env import ActionTuple

import ghost
from envs.demo_files import read_demo
from envs.games import make_game, scripted_policy
from ghost.evaluation.cli import main
from ghost.exceptions import ConfigError
from ghost.play.base_env_matches import EnvGames
from ghost.play.demo_recording import DemoRequest
from ghost.play.head_to_head import evaluate
from ghost.play.seated_matches import SeatedVenue
from tests.eval_envs import make_arena_duel, make_hunt

pytestmark = pytest.mark.usefixtures("one_torch_thread")

DUEL = "tests.eval_envs:make_arena_duel"


def ghost_eval(capsys, *argv: object) -> tuple[int, str, str]:
    code = main([str(arg) for arg in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def live_rows(demo) -> np.ndarray:
    """The rows at a decision (the ``done`` rows hold an episode's last observation only)."""
    return ~demo.done


def without_demo(data: dict) -> dict:
    return {key: value for key, value in data.items() if key != "demo"}


def spec_of(game: str, behavior: str):
    env = make_game(game, num_arenas=1)
    try:
        return env.behavior_specs[behavior]
    finally:
        env.close()


# -- built-in games ---------------------------------------------------------------------------------
def test_a_scripted_level_is_recorded_with_its_own_actions(capsys, tmp_path):
    path = tmp_path / "tennis_medium.demo"
    code, out, err = ghost_eval(capsys, "match", "medium", "--against", "medium", "--game",
                                "tennis", "--episodes", 5, "--deterministic", "--record-demo",
                                path)  # fmt: skip
    assert code == 0, err
    demo = read_demo(path)
    line = out.strip().splitlines()[-1]
    assert line == f"recorded 5 episodes ({demo.steps} steps) of Tennis?team=0 to {path}"
    assert demo.behavior_name == "Tennis" and demo.spec == spec_of("tennis", "Tennis?team=0")
    assert demo.episodes == 5 and demo.done.sum() == 5 and demo.max_step_reached.sum() == 0
    rows = live_rows(demo)
    medium = scripted_policy("tennis", "medium", behavior="Tennis")
    expected = medium.act([demo.observations[0][rows]], deterministic=True).continuous
    np.testing.assert_array_equal(demo.continuous_actions[rows], expected)


def test_the_results_are_those_of_the_match_unrecorded(capsys, tmp_path):
    argv = ["match", "medium", "--against", "weak", "--game", "tennis", "--episodes", 12,
            "--seed", 3]  # fmt: skip
    code, plain, err = ghost_eval(capsys, *argv)
    assert code == 0, err
    code, recorded, err = ghost_eval(capsys, *argv, "--record-demo", tmp_path / "t.demo")
    assert code == 0, err
    table, line = recorded.rstrip("\n").rsplit("\n\n", 1)
    assert table + "\n" == plain and line.startswith("recorded 12 episodes")
    code, as_json, err = ghost_eval(capsys, *argv, "--json", "--record-demo", tmp_path / "t.demo")
    assert code == 0, err
    data = json.loads(as_json)
    code, plain_json, _ = ghost_eval(capsys, *argv, "--json")
    assert without_demo(data) == json.loads(plain_json)
    steps = read_demo(tmp_path / "t.demo").steps
    assert data["demo"] == {"path": str(tmp_path / "t.demo"), "behavior": "Tennis?team=0",
                            "episodes": 12, "steps": steps}  # fmt: skip


def test_only_the_counted_matches_are_recorded_though_arenas_play_on(tmp_path):
    # 9 matches in 4 arenas: arena 0 plays three, the others two each, then play on unrecorded
    # (unfiltered, tennis would record 14 episodes and soccer 54 agent episodes)
    for game, behavior, agents in (
        ("tennis", "Tennis?team=0", 1),
        ("soccer", "SoccerTwos?team=0", 2),
    ):
        result = evaluate(
            game=game, policy="medium", opponent="medium", episodes=9, num_arenas=4, seed=1,
            record_demo=DemoRequest(path=tmp_path / f"{game}.demo"),
        )  # fmt: skip
        plain = evaluate(game=game, policy="medium", opponent="medium", episodes=9, num_arenas=4,
                         seed=1)  # fmt: skip
        assert without_demo(result.to_dict()) == plain.to_dict()
        assert result.demo.behavior == behavior and result.demo.episodes == 9 * agents
        demo = read_demo(result.demo.path)
        assert demo.episodes == demo.done.sum() == 9 * agents and demo.steps == result.demo.steps
        if game == "tennis":  # the very matches counted: a won one ends on a positive reward
            final = demo.rewards[demo.done]
            assert ((final > 0).sum(), (final < 0).sum()) == (result.wins, result.losses)


def test_the_recorded_side_can_be_the_opponent_or_every_team(tmp_path):
    result = evaluate(
        game="tennis", policy="random", opponent="strong", episodes=4, opponent_deterministic=True,
        record_demo=DemoRequest(path=tmp_path / "opponent.demo", side="Tennis?team=1"),
    )  # fmt: skip
    assert result.demo.behavior == "Tennis?team=1" and result.demo.episodes == 4
    demo = read_demo(tmp_path / "opponent.demo")
    rows = live_rows(demo)
    strong = scripted_policy("tennis", "strong", behavior="Tennis")
    expected = strong.act([demo.observations[0][rows]], deterministic=True).continuous
    np.testing.assert_array_equal(demo.continuous_actions[rows], expected)
    both = evaluate(game="tennis", policy="weak", opponent="strong", episodes=4,
                    record_demo=DemoRequest(path=tmp_path, side="Tennis"))  # fmt: skip
    assert both.demo.behavior == "Tennis" and both.demo.episodes == 8
    assert both.demo.path == tmp_path / "Tennis.demo"  # a folder gets <Behavior>.demo
    goalie = evaluate(game="strikers_vs_goalie", policy="strong", opponent="weak", episodes=3,
                      record_demo=DemoRequest(path=tmp_path / "g.demo", side="Goalie"))  # fmt: skip
    assert read_demo(goalie.demo.path).spec == spec_of("strikers_vs_goalie", "Goalie?team=1")
    with pytest.raises(ConfigError, match="record side 'Goalie' is not a behavior of tennis"):
        evaluate(game="tennis", policy="weak", opponent="weak", episodes=1,
                 record_demo=DemoRequest(path=tmp_path / "x.demo", side="Goalie"))  # fmt: skip


# -- any BaseEnv ------------------------------------------------------------------------------------
class Sharp:
    """Always hits its target (``TeamArenaEnv`` shows it one-hot)."""

    def act(self, obs, action_mask=None, deterministic=False):
        return ActionTuple(discrete=np.argmax(obs[0], axis=1)[:, None].astype(np.int32))


class Blunt:
    """Always misses it."""

    def act(self, obs, action_mask=None, deterministic=False):
        chosen = (np.argmax(obs[0], axis=1) + 1) % obs[0].shape[1]
        return ActionTuple(discrete=chosen[:, None].astype(np.int32))


def test_a_base_env_records_the_policy_on_each_team_it_plays(tmp_path):
    # 4 areas end their episodes together: the counted 11 are kept, not every one that ended
    with EnvGames(make_arena_duel(), label="duel") as games:
        plain = games.head_to_head(policy=Sharp(), opponent=Blunt(), episodes=11)
        result = games.head_to_head(policy=Sharp(), opponent=Blunt(), episodes=11,
                                    record_demo=DemoRequest(path=tmp_path / "duel.demo"))  # fmt: skip
    assert without_demo(result.to_dict()) == plain.to_dict()
    assert result.demo.behavior == "Arena" and result.demo.episodes == 11  # both teams, in turn
    demo = read_demo(tmp_path / "duel.demo")
    assert demo.spec == make_arena_duel().behavior_specs["Arena?team=0"]
    rows = live_rows(demo)
    hits = np.argmax(demo.observations[0][rows], axis=1)
    np.testing.assert_array_equal(demo.discrete_actions[rows, 0], hits)  # Sharp's, never Blunt's


def test_a_base_env_policy_of_two_behaviors_names_the_side_to_record(tmp_path):
    with EnvGames(make_hunt(), label="hunt") as games:
        with pytest.raises(ConfigError, match="plays Hunter and Prey in hunt.*--record-side"):
            games.head_to_head(policy=Sharp(), opponent=Blunt(), episodes=4,
                               record_demo=DemoRequest(path=tmp_path / "h.demo"))  # fmt: skip
        result = games.head_to_head(policy=Sharp(), opponent=Blunt(), episodes=4,
                                    record_demo=DemoRequest(path=tmp_path, side="Prey"))  # fmt: skip
    assert result.demo.behavior == "Prey" and result.demo.episodes == 4
    assert not (tmp_path / "h.demo").exists()
    demo = read_demo(tmp_path / "Prey.demo")
    rows = live_rows(demo)
    played = np.argmax(demo.observations[0][rows], axis=1)
    # Prey is the opponent (Blunt) while the policy hunts, then the policy (Sharp): both moves
    assert set(np.unique(demo.discrete_actions[rows, 0] == played)) == {False, True}


@pytest.fixture(scope="module")
def duel_run(tmp_path_factory) -> Path:
    """A run trained for a moment on ``tests.eval_envs:make_arena_duel``."""
    results = tmp_path_factory.mktemp("results")
    config = {
        "behaviors": {
            "Arena": {
                "trainer_type": "ppo",
                "hyperparameters": {"batch_size": 32, "buffer_size": 64, "num_epoch": 1},
                "network_settings": {"hidden_units": 16, "num_layers": 1},
                "max_steps": 200,
                "summary_freq": 200,
                "self_play": {"save_steps": 100, "swap_steps": 50, "team_change": 100},
            }
        }
    }
    threads = torch.get_num_threads()
    try:
        ghost.train(config, env=DUEL, run_id="duel", results_dir=results, seed=1)
    finally:
        torch.set_num_threads(threads)
    return results / "duel"


def test_a_callable_run_records_in_its_environment(duel_run, capsys, tmp_path):
    argv = ["match", duel_run, "--against", duel_run, "--episodes", 6, "--json"]
    code, plain, err = ghost_eval(capsys, *argv)
    assert code == 0, err
    code, out, err = ghost_eval(capsys, *argv, "--record-demo", f"{tmp_path / 'demos'}/",
                                "--record-side", "Arena?team=1")  # fmt: skip
    assert code == 0, err
    data = json.loads(out)
    assert without_demo(data) == json.loads(plain)
    assert data["demo"]["path"] == str(tmp_path / "demos" / "Arena.demo")
    assert data["demo"]["behavior"] == "Arena?team=1" and data["demo"]["episodes"] == 6
    assert read_demo(tmp_path / "demos" / "Arena.demo").episodes == 6


# -- paths and refusals -----------------------------------------------------------------------------
def test_a_missing_folder_is_made_and_an_existing_file_replaced_whole(capsys, tmp_path):
    path = tmp_path / "new" / "folders" / "t.demo"
    argv = ["match", "weak", "--against", "weak", "--game", "tennis", "--episodes", 2]
    code, _, err = ghost_eval(capsys, *argv, "--record-demo", path)
    assert code == 0, err
    assert read_demo(path).episodes == 2
    code, _, err = ghost_eval(capsys, *argv, "--episodes", 3, "--record-demo", path)
    assert code == 0, err
    assert read_demo(path).episodes == 3
    assert sorted(p.name for p in path.parent.iterdir()) == ["t.demo"]  # no temporary left


def test_a_match_that_fails_leaves_the_old_file_as_it_was(tmp_path):
    path = tmp_path / "kept.demo"
    path.write_bytes(b"an older recording")

    class Breaks:
        calls = 0

        def act(self, obs, action_mask=None, deterministic=False):
            self.calls += 1
            if self.calls > 20:
                raise RuntimeError("the policy broke")
            return ActionTuple(continuous=np.zeros((len(obs[0]), 2), dtype=np.float32))

    with pytest.raises(RuntimeError, match="the policy broke"):
        evaluate(game="tennis", policy=Breaks(), opponent="weak", episodes=2,
                 record_demo=DemoRequest(path=path))  # fmt: skip
    assert path.read_bytes() == b"an older recording"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.demo"]


def test_unwritable_paths_and_misplaced_flags_are_one_line_errors(capsys, tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("in the way")
    base = ["match", "weak", "--against", "weak", "--game", "tennis", "--episodes", 1]
    cases = [
        (["--record-demo", blocker / "t.demo"], f"cannot write {blocker / 't.demo'}"),
        (["--record-side", "Tennis"], "--record-side Tennis goes with --record-demo FILE"),
        (["--record-demo", tmp_path / "x.demo", "--record-side", "Nope"], "record side 'Nope'"),
    ]
    for extra, message in cases:
        code, _, err = ghost_eval(capsys, *base, *extra)
        assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
    code, _, err = ghost_eval(capsys, "match", "weak", "--against", "snapshots", "--game",
                              "tennis", "--record-demo", tmp_path / "s.demo")  # fmt: skip
    assert code == 2 and "--record-demo records one match" in err
    for command in ("snapshots", "tournament"):
        with pytest.raises(SystemExit):
            main([command, str(tmp_path), "--record-demo", str(tmp_path / "x.demo")])
        assert "unrecognized argument --record-demo" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_file"]


def test_a_seated_game_refuses_to_record_in_one_line(tmp_path):
    venue = SeatedVenue(env_path="openspiel:tic_tac_toe")
    with pytest.raises(ConfigError, match="not in OpenSpiel/PettingZoo games") as refused:
        venue.play(policy="random", opponent="random", episodes=1,
                   record_demo=DemoRequest(path=tmp_path / "t.demo"))  # fmt: skip
    assert "\n" not in str(refused.value) and not (tmp_path / "t.demo").exists()
