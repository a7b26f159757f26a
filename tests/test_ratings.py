"""Ratings: Elo arithmetic, per-match updates through the controller, OpenSkill for 3+ teams."""

from __future__ import annotations

import json

import pytest

from ghost.core.controller import GhostController
from ghost.core.ratings import (
    DRAW,
    LOSS,
    WIN,
    MultiTeamRating,
    elo_change,
    elo_expected,
    result_from_reward,
)
from tests.team_envs import GhostRig

pytestmark = pytest.mark.usefixtures("one_torch_thread")


# -- pure arithmetic ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reward", "score"), [(1.0, WIN), (0.01, WIN), (-0.5, LOSS), (-1e-6, LOSS), (0.0, DRAW)]
)
def test_result_from_reward(reward, score):
    assert result_from_reward(reward) == score


@pytest.mark.parametrize(
    ("rating", "opponent", "expected"),
    [
        (1200.0, 1200.0, 0.5),
        (1400.0, 1200.0, 0.7597469266479578),  # 1 / (1 + 10 ** -0.5)
        (1200.0, 1400.0, 0.2402530733520421),
        (1000.0, 1400.0, 1.0 / 11.0),  # 1 / (1 + 10 ** 1)
    ],
)
def test_elo_expected(rating, opponent, expected):
    assert elo_expected(rating, opponent) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(
    ("rating", "opponent", "score", "k", "change"),
    [
        (1200.0, 1200.0, WIN, 16.0, 8.0),
        (1200.0, 1200.0, LOSS, 16.0, -8.0),
        (1200.0, 1200.0, DRAW, 16.0, 0.0),
        (1400.0, 1200.0, LOSS, 32.0, -24.31190165273465),  # -32 * 0.75974...
        (1000.0, 1400.0, WIN, 16.0, 14.545454545454545),  # 16 * 10 / 11
        (1208.0, 1192.0, WIN, 16.0, 7.631846603239003),  # 16 * (1 - 1 / (1 + 10 ** -0.04))
    ],
)
def test_elo_change(rating, opponent, score, k, change):
    assert elo_change(rating, opponent, score, k) == pytest.approx(change, abs=1e-9)
    # zero-sum: the opponent's change from its own point of view is the negative
    assert elo_change(opponent, rating, 1.0 - score, k) == pytest.approx(-change, abs=1e-9)


# -- per-match updates through the controller ---------------------------------------------------------


def start_first_turn(rig):
    """The first advance starts the first turn: it draws the opponents before it drains a batch.

    ``SelfPlaySession`` does the same on its first env step; an empty advance here fixes the
    opponents the following matches are played (and rated) against.
    """
    rig.ghost.advance()
    assert rig.ghost.state.swaps == 1 and rig.ghost.step == 0
    return rig


def elo_rig(tmp_path, **self_play):
    options = {"opponents_per_swap": 1, "team_change": 10**6, "swap_steps": 10**6}
    return start_first_turn(GhostRig(artifact_dir=tmp_path, **(options | self_play)))


def finish(rig, **terminal):
    """One step in which learning agents (team 0) end episodes; returns the opponent in arena 0."""
    opponent = rig.ghost.state.opponent_in(1, 0)
    rig.put(0, **terminal)
    rig.ghost.advance()
    return opponent


def test_win_against_the_latest_copy_counts(tmp_path):
    rig = elo_rig(tmp_path, play_against_latest_model_ratio=1.0)
    opponent = finish(rig, terminal_ids=[0], rewards=[1.0])
    assert opponent.is_latest
    # ML-Agents' defect: in symmetric games these cancel and the learner stays at 1200
    assert rig.ghost.state.rating == pytest.approx(1208.0)
    assert opponent.snapshot.rating == pytest.approx(1192.0)
    assert rig.ghost.state.window[0].rating == 1200.0  # the window snapshot did not play


def test_loss_and_draw_against_a_window_snapshot(tmp_path):
    rig = elo_rig(tmp_path, play_against_latest_model_ratio=0.0)
    opponent = finish(rig, terminal_ids=[0], rewards=[-1.0])
    assert opponent.snapshot is rig.ghost.state.window[0]
    assert rig.ghost.state.rating == pytest.approx(1192.0)
    assert rig.ghost.state.window[0].rating == pytest.approx(1208.0)
    finish(rig, terminal_ids=[0], rewards=[0.0])  # a draw against a stronger one gains a little
    assert rig.ghost.state.rating == pytest.approx(1192.0 + 16 * (0.5 - 0.4769904127024377))


def test_group_reward_decides_the_result(tmp_path):
    rig = elo_rig(tmp_path, play_against_latest_model_ratio=1.0)
    finish(rig, terminal_ids=[0], rewards=[0.0], group_rewards=[1.0])
    assert rig.ghost.state.rating == pytest.approx(1208.0)


def test_k_factor_is_configurable(tmp_path):
    rig = elo_rig(tmp_path, play_against_latest_model_ratio=1.0, elo_k=32.0)
    finish(rig, terminal_ids=[0], rewards=[1.0])
    assert rig.ghost.state.rating == pytest.approx(1216.0)


def test_teammates_of_one_group_finishing_together_are_one_match(tmp_path):
    rig = elo_rig(tmp_path, play_against_latest_model_ratio=1.0)
    opponent = finish(rig, terminal_ids=[0, 1], rewards=[1.0, 1.0], group_ids=[7, 7])
    assert rig.ghost.state.rating == pytest.approx(1208.0)  # once, not 1208 + 7.63
    assert opponent.snapshot.rating == pytest.approx(1192.0)


def test_ungrouped_agents_finishing_together_are_separate_matches(tmp_path):
    rig = elo_rig(tmp_path, play_against_latest_model_ratio=1.0)
    opponent = finish(rig, terminal_ids=[0, 1], rewards=[1.0, 1.0], arenas=[0, 1])
    assert rig.ghost.state.rating == pytest.approx(1215.631846603239)  # +8, then +7.6318...
    assert opponent.snapshot.rating == pytest.approx(1184.368153396761)


def test_interrupted_episodes_give_no_result(tmp_path):
    rig = elo_rig(tmp_path, play_against_latest_model_ratio=1.0)
    opponent = finish(rig, terminal_ids=[0, 1], rewards=[1.0, -1.0], interrupted=[True, True])
    assert rig.ghost.state.rating == 1200.0 and opponent.snapshot.rating == 1200.0
    finish(rig, terminal_ids=[0, 1], rewards=[-1.0, 1.0], interrupted=[True, False], arenas=[0, 1])
    assert rig.ghost.state.rating == pytest.approx(1208.0)  # only the finished one


def test_ghosted_team_results_do_not_rate(tmp_path):
    rig = elo_rig(tmp_path, play_against_latest_model_ratio=1.0)
    rig.put(1, terminal_ids=[5], rewards=[1.0])  # the same match seen from the ghost's side
    rig.ghost.advance()
    assert rig.ghost.state.rating == 1200.0
    assert all(o.snapshot.rating == 1200.0 for o in rig.opponents(1))


def test_elo_ratings_survive_a_state_round_trip(tmp_path):
    def play(rig, wins):
        for _ in range(wins):
            finish(rig, terminal_ids=[0], rewards=[1.0])

    straight = elo_rig(tmp_path / "a", play_against_latest_model_ratio=0.0)
    play(straight, 4)
    first = elo_rig(tmp_path / "b", play_against_latest_model_ratio=0.0)
    play(first, 3)
    state, controller = first.ghost.state_dict(), first.controller.state_dict()
    resumed = elo_rig(tmp_path / "c", play_against_latest_model_ratio=0.0)
    resumed.ghost.load_state_dict(state)
    resumed.controller.load_state_dict(controller)
    assert resumed.ghost.state.rating == first.ghost.state.rating
    play(resumed, 1)
    assert resumed.ghost.state.rating == pytest.approx(straight.ghost.state.rating)
    assert resumed.ghost.state.window[0].rating == pytest.approx(
        straight.ghost.state.window[0].rating
    )


# -- three or more teams: OpenSkill ---------------------------------------------------------------


def three_team_rig(tmp_path, controller=None):
    rig = GhostRig(artifact_dir=tmp_path, teams=(0, 1, 2), controller=controller,
                   opponents_per_swap=1, team_change=10**6, swap_steps=10**6,
                   play_against_latest_model_ratio=0.0)  # fmt: skip
    return start_first_turn(rig)


def expected_multi_team(scores):
    model = MultiTeamRating(1200.0)
    learner, snapshot = model.new(), model.new()
    for score in scores:
        learner, (snapshot, snapshot) = model.update(learner, [snapshot, snapshot], score)
    return model.as_elo(learner), model.as_elo(snapshot)


@pytest.mark.parametrize(("reward", "score"), [(1.0, WIN), (-1.0, LOSS)])
def test_three_teams_rate_with_openskill(tmp_path, reward, score):
    rig = three_team_rig(tmp_path)
    faced = [rig.ghost.state.opponent_in(team, 0) for team in (1, 2)]
    rig.put(0, terminal_ids=[0], rewards=[reward])
    rig.ghost.advance()
    learner, snapshot = expected_multi_team([score])
    assert rig.ghost.state.rating == pytest.approx(learner)
    assert all(o.snapshot.rating == pytest.approx(snapshot) for o in faced)
    if score == WIN:
        assert rig.ghost.state.rating > 1200.0 > snapshot
    else:
        assert rig.ghost.state.rating < 1200.0 < snapshot


def test_three_teams_repeated_wins_keep_raising_the_rating(tmp_path):
    rig = three_team_rig(tmp_path)
    ratings = [rig.ghost.state.rating]
    for _ in range(4):
        rig.put(0, terminal_ids=[0], rewards=[1.0])
        rig.ghost.advance()
        ratings.append(rig.ghost.state.rating)
    assert ratings == sorted(ratings) and len(set(ratings)) == 5
    assert ratings[-1] == pytest.approx(expected_multi_team([WIN] * 4)[0])


def test_three_team_ratings_survive_a_state_round_trip(tmp_path):
    def win(rig, times):
        for _ in range(times):
            rig.put(0, terminal_ids=[0], rewards=[1.0])
            rig.ghost.advance()

    straight = three_team_rig(tmp_path / "a")
    win(straight, 4)
    first = three_team_rig(tmp_path / "b")
    win(first, 3)
    state = first.ghost.state_dict()
    # the controller's state goes into checkpoint.json: it must survive JSON
    controller = json.loads(json.dumps(first.controller.state_dict()))
    resumed = three_team_rig(tmp_path / "c", controller=GhostController())
    resumed.ghost.load_state_dict(state)
    resumed.controller.load_state_dict(controller)
    assert resumed.ghost.state.rating == first.ghost.state.rating
    win(resumed, 1)
    assert resumed.ghost.state.rating == pytest.approx(straight.ghost.state.rating)
    assert resumed.ghost.state.window[0].rating == pytest.approx(
        straight.ghost.state.window[0].rating
    )
