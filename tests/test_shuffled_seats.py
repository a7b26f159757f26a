"""``self_play.seats: shuffled``: turn-based games deal their seats to the teams at random every
game, so the learning team plays every seat in every turn."""

from __future__ import annotations

import numpy as np
import pytest
from mlagents_envs.base_env import ActionTuple

pytest.importorskip("pyspiel", reason="OpenSpiel is an optional extra (open-spiel)")

import ghost  # noqa: E402
from envs.exceptions import EnvironmentSourceError  # noqa: E402
from envs.openspiel import OpenSpielSource  # noqa: E402
from envs.sources import resolve_env, with_shuffled_seats  # noqa: E402
from ghost.config.loader import resolve_options  # noqa: E402
from ghost.exceptions import ConfigError  # noqa: E402
from ghost.running.api import training_games  # noqa: E402

TEAMS = ("tic_tac_toe?team=0", "tic_tac_toe?team=1")


def first_legal_games(env, steps: int) -> dict[int, list[float]]:
    """Both teams always take the first legal square (so the first mover wins on the diagonal
    2-4-6); each team's final rewards, game by game."""
    finals: dict[int, list[float]] = {0: [], 1: []}
    for _ in range(steps):
        for team, name in enumerate(TEAMS):
            decision, terminal = env.get_steps(name)
            finals[team].extend(terminal.reward.tolist())
            if len(decision):
                first = [[int(np.flatnonzero(~row)[0])] for row in decision.action_mask[0]]
                env.set_actions(name, ActionTuple(discrete=np.array(first)))
        env.step()
    return finals


def test_fixed_seats_keep_team_zero_first_so_it_always_wins():
    env = OpenSpielSource(game="tic_tac_toe", copies=8)(seed=3)
    finals = first_legal_games(env, 60)
    assert finals[0] and set(finals[0]) == {1.0} and set(finals[1]) == {-1.0}


def test_shuffled_seats_give_each_team_both_seats_and_the_rewards_follow_the_team():
    env = OpenSpielSource(game="tic_tac_toe", copies=32, shuffle_seats=True)(seed=3)
    assert set(env.behavior_specs) == set(TEAMS)  # same behaviors, same agent ids
    finals = first_legal_games(env, 80)
    wins = np.array(finals[0])
    assert len(wins) > 200
    # team 0 moves first (and wins) in about half of the games, and every game has one winner
    assert 0.4 < np.mean(wins == 1.0) < 0.6
    assert sorted(finals[0]) == sorted(-r for r in finals[1])
    decision, _ = env.get_steps(TEAMS[1])
    assert set((decision.agent_id % 2).tolist()) <= {1}  # team 1's agents keep odd ids


def test_shuffled_seats_are_the_same_for_the_same_seed():
    deals = [OpenSpielSource(game="tic_tac_toe", copies=16, shuffle_seats=True)(seed=9).seat_of
             for _ in range(2)]  # fmt: skip
    np.testing.assert_array_equal(deals[0], deals[1])
    assert len({tuple(row) for row in deals[0]}) == 2


def test_only_symmetric_turn_based_games_deal_seats():
    with pytest.raises(ValueError, match="symmetric game"):
        OpenSpielSource(game="tic_tac_toe", copies=2, seats="separate", shuffle_seats=True)()
    with pytest.raises(EnvironmentSourceError, match="self_play.seats: shuffled"):
        with_shuffled_seats(resolve_env("tennis"))


def test_the_key_is_strict():
    with pytest.raises(ConfigError, match="seats"):
        ghost.train(
            {"behaviors": {"tic_tac_toe": {"self_play": {"seats": "random"}}}},
            env="openspiel:tic_tac_toe", max_steps=100, verbose=0,
        )  # fmt: skip


def test_a_run_with_shuffled_seats_trains_with_dealt_seats(tmp_path):
    config = {
        "behaviors": {"tic_tac_toe": {
            "hyperparameters": {"batch_size": 64, "buffer_size": 256},
            "network_settings": {"hidden_units": 16, "num_layers": 1},
            "time_horizon": 16,
            "self_play": {"seats": "shuffled", "save_steps": 256, "team_change": 512},
        }},
        "env_settings": {"num_areas": 16},
    }  # fmt: skip
    options = resolve_options(config, {"env_settings.env_path": "openspiel:tic_tac_toe"})
    factory = resolve_env("openspiel:tic_tac_toe")
    assert training_games(options, factory).shuffle_seats  # the training games deal seats
    assert not factory.shuffle_seats  # evaluations keep theirs fixed
    result = ghost.train(
        config, env="openspiel:tic_tac_toe", run_id="seats", results_dir=tmp_path,
        max_steps=1200, verbose=0,
    )  # fmt: skip
    assert result.steps["tic_tac_toe"] >= 1200


@pytest.mark.parametrize(
    "module", ["ghost.integrations.sb3.settings", "ghost.integrations.rllib.settings"]
)
def test_hosts_that_seat_agents_themselves_refuse_the_key(module):
    settings = pytest.importorskip(module)
    kwargs = {"behavior": "tic_tac_toe"} if module.endswith("sb3.settings") else {}
    with pytest.raises(ConfigError, match="seats"):
        settings.self_play_settings({"seats": "shuffled"}, **kwargs)
