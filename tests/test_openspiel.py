"""OpenSpiel games as BaseEnvs: who decides when, rewards, masks, episode ends, agent ids; the
live exploitability of a training run and ``ghost-eval --exploitability``."""

from __future__ import annotations

import numpy as np
import pytest
from mlagents_envs.base_env import ActionTuple

pyspiel = pytest.importorskip("pyspiel", reason="OpenSpiel is an optional extra (open-spiel)")

from envs.exceptions import EnvironmentSourceError  # noqa: E402
from envs.openspiel import OpenSpielSource  # noqa: E402
from envs.sources import resolve_env  # noqa: E402

TEAM0, TEAM1 = "tic_tac_toe?team=0", "tic_tac_toe?team=1"


def play(env, moves: dict[str, list[int]]) -> None:
    """Set one discrete action per deciding agent of each behavior, then step."""
    for name, actions in moves.items():
        env.set_actions(name, ActionTuple(discrete=np.array(actions).reshape(-1, 1)))
    env.step()


def test_turn_based_only_the_player_to_move_decides_and_ids_are_table_times_seats_plus_seat():
    env = OpenSpielSource(game="tic_tac_toe", copies=3)(worker_id=0, seed=0)
    first, _ = env.get_steps(TEAM0)
    second, _ = env.get_steps(TEAM1)
    assert first.agent_id.tolist() == [0, 2, 4]  # seat 0 of tables 0, 1, 2
    assert len(second) == 0
    play(env, {TEAM0: [4, 4, 4]})
    assert len(env.get_steps(TEAM0)[0]) == 0
    second, _ = env.get_steps(TEAM1)
    assert second.agent_id.tolist() == [1, 3, 5]
    # the centre is taken: blocked in the mask (True = blocked), everything else free
    blocked = second.action_mask[0]
    assert blocked[:, 4].all() and not blocked[:, [0, 1, 2, 3, 5, 6, 7, 8]].any()
    with pytest.raises(ValueError, match="not legal"):
        play(env, {TEAM1: [4, 0, 0]})


def test_the_winning_move_pays_both_players_and_the_table_restarts_in_the_same_step():
    env = OpenSpielSource(game="tic_tac_toe", copies=1)(worker_id=0, seed=0)
    for x, o in ((0, 3), (1, 4)):
        play(env, {TEAM0: [x]})
        play(env, {TEAM1: [o]})
    play(env, {TEAM0: [2]})  # three in the top row
    decision0, terminal0 = env.get_steps(TEAM0)
    decision1, terminal1 = env.get_steps(TEAM1)
    assert terminal0.agent_id.tolist() == [0] and terminal0.reward.tolist() == [1.0]
    assert terminal1.agent_id.tolist() == [1] and terminal1.reward.tolist() == [-1.0]
    assert not terminal0.interrupted.any() and not terminal1.interrupted.any()
    # the next game starts at once: the same agent id, an empty board, nothing owed
    assert decision0.agent_id.tolist() == [0] and decision0.reward.tolist() == [0.0]
    assert not decision0.action_mask[0].any()
    assert len(decision1) == 0


def test_poker_rewards_reach_the_waiting_player_and_sum_to_zero():
    env = OpenSpielSource(game="leduc_poker", copies=8)(worker_id=0, seed=3)
    rng = np.random.default_rng(0)
    totals = np.zeros(2)
    ended = 0
    for _ in range(300):
        for seat, name in enumerate(("leduc_poker?team=0", "leduc_poker?team=1")):
            decision, terminal = env.get_steps(name)
            assert (terminal.agent_id % 2 == seat).all()
            totals[seat] += terminal.reward.sum()
            ended += len(terminal)
            assert (decision.reward == 0).all()  # poker pays only at the end
            if len(decision):
                legal = [rng.choice(np.flatnonzero(~row)) for row in decision.action_mask[0]]
                env.set_actions(name, ActionTuple(discrete=np.array(legal).reshape(-1, 1)))
        env.step()
    assert ended > 100
    assert totals.sum() == pytest.approx(0.0)


def test_simultaneous_moves_ask_both_players_at_once():
    env = OpenSpielSource(game="goofspiel(num_cards=4)", copies=2)(worker_id=0, seed=0)
    names = sorted(env.behavior_specs)
    for _ in range(3):  # three bids; the last card of each hand plays itself
        for name in names:
            decision, _ = env.get_steps(name)
            assert len(decision) == 2
            first_legal = decision.action_mask[0].argmin(axis=1)
            env.set_actions(name, ActionTuple(discrete=first_legal.reshape(-1, 1)))
        env.step()
    terminal_rewards = [env.get_steps(name)[1].reward for name in names]
    assert all(len(rewards) == 2 for rewards in terminal_rewards)
    # both bid the same card every round: every prize is split, a draw
    assert np.allclose(terminal_rewards, 0.0)


def test_chance_is_seeded_per_worker():
    source = OpenSpielSource(game="leduc_poker", copies=4)
    same = [source(worker_id=0, seed=5).get_steps("leduc_poker?team=0")[0].obs[0] for _ in range(2)]
    other = source(worker_id=1, seed=5).get_steps("leduc_poker?team=0")[0].obs[0]
    assert np.array_equal(same[0], same[1])
    assert not np.array_equal(same[0], other)


def test_separate_seats_make_one_behavior_per_player():
    env = OpenSpielSource(game="leduc_poker", copies=1, seats="separate")(worker_id=0, seed=0)
    assert sorted(env.behavior_specs) == ["leduc_poker_p0?team=0", "leduc_poker_p1?team=1"]


def test_env_strings_resolve_and_errors_say_what_to_write():
    source = resolve_env("openspiel:goofspiel(num_cards=4)")
    assert isinstance(source, OpenSpielSource) and source.game == "goofspiel(num_cards=4)"
    with pytest.raises(EnvironmentSourceError, match="cannot load OpenSpiel game 'no_such_game'"):
        resolve_env("openspiel:no_such_game")
    with pytest.raises(EnvironmentSourceError, match="names no game"):
        resolve_env("openspiel:")


@pytest.mark.parametrize(
    ("env", "name", "closest"),
    [
        ("openspiel:kuhn_pokr", "kuhn_pokr", "kuhn_poker"),
        ("openspiel:leduc_pokr(players=2)", "leduc_pokr", "leduc_poker"),
    ],
)
def test_an_unknown_game_is_one_line_with_suggestions_and_no_listing(capfd, env, name, closest):
    with pytest.raises(EnvironmentSourceError) as error:
        resolve_env(env)
    message = str(error.value)
    assert "\n" not in message
    assert f"no game is named {name!r}; did you mean {closest}" in message
    assert "pyspiel.registered_names()" in message  # how to see them all
    out, err = capfd.readouterr()
    assert out == "" and err == ""  # OpenSpiel's C++ would print its 126-line list of games


def test_a_bad_parameter_is_one_error_and_nothing_on_stderr(capfd):
    with pytest.raises(EnvironmentSourceError) as error:
        resolve_env("openspiel:goofspiel(bogus=3)").make(seed=0, worker_id=0)
    assert "Unknown parameter 'bogus'" in str(error.value) and "num_cards" in str(error.value)
    out, err = capfd.readouterr()
    assert out == "" and err == ""  # OpenSpiel's C++ also writes "OpenSpiel exception: ..."


def test_the_cli_prints_one_error_line_for_an_unknown_game(capfd, tmp_path):
    from ghost.running import cli

    args = ["--env", "openspiel:not_a_game", "--check", "--results-dir", str(tmp_path)]
    assert cli.main(args) != 0
    out, err = capfd.readouterr()
    assert "Available games" not in out + err and "\n2048\n" not in out + err
    errors = [line for line in err.splitlines() if "not_a_game" in line]
    assert len(errors) == 1 and "cannot load OpenSpiel game 'not_a_game'" in errors[0]


# -- a training run ------------------------------------------------------------------------------
def leduc_config(tmp_path, **self_play):
    import yaml

    config = {
        "behaviors": {
            "leduc_poker": {
                "trainer_type": "ppo",
                "hyperparameters": {"batch_size": 256, "buffer_size": 2048, "num_epoch": 2},
                "network_settings": {"hidden_units": 32, "num_layers": 1, "normalize": False},
                "max_steps": 12000,
                "summary_freq": 4000,
                "time_horizon": 32,
                "self_play": {"save_steps": 4000, "team_change": 8000, **self_play},
            }
        },
        "env_settings": {"env_path": "openspiel:leduc_poker", "num_areas": 64, "seed": 1},
    }
    path = tmp_path / "leduc.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def test_training_scores_exploitability_live_and_ghost_eval_scores_final_and_snapshots(
    tmp_path, caplog, capsys
):
    import json
    import logging

    from ghost.evaluation.cli import main as ghost_eval
    from ghost.running import cli

    config = leduc_config(tmp_path, exploitability_every=4000)
    with caplog.at_level(logging.INFO):
        code = cli.main([str(config), "--run-id", "leduc", "--results-dir", str(tmp_path)])
    assert code == 0
    assert "Exploitability of leduc_poker at step " in caplog.text  # on the console
    run = tmp_path / "leduc"
    rows = (run / "run_logs" / "exploitability.csv").read_text().splitlines()
    assert rows[0].startswith("step,exploitability")
    scores = [line.split(",") for line in rows[1:]]
    assert len(scores) >= 3  # steps 4000 and 8000 in the background, the final one at the end
    assert all(0.0 < float(row[1]) < 4.0 for row in scores)  # uniform play: 2.37

    capsys.readouterr()
    assert ghost_eval([str(run), "--exploitability", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)["exploitability"]
    assert report[0]["policy"] == "final"
    # the same final policy, scored by the run and by ghost-eval
    assert report[0]["exploitability"] == pytest.approx(float(scores[-1][1]), abs=1e-5)
    snapshots = [row for row in report[1:] if row["policy"].startswith("leduc_poker #")]
    assert len(snapshots) >= 3
    assert snapshots[0]["step"] == 0
    # the untrained first snapshot is near-uniform: exploitability close to uniform play's
    assert snapshots[0]["exploitability"] == pytest.approx(2.37, abs=0.3)


def test_exploitability_can_be_turned_off(tmp_path):
    from ghost.running import cli

    config = leduc_config(tmp_path, exploitability_every=0)
    assert cli.main([str(config), "--run-id", "off", "--results-dir", str(tmp_path)]) == 0
    assert not (tmp_path / "off" / "run_logs" / "exploitability.csv").exists()
