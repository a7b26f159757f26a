"""Volley: its spec, the landing as the only reward, the shot geometry, scripted levels, seeds."""

from __future__ import annotations

import numpy as np
import pytest
from mlagents_envs.base_env import ActionTuple

from envs import volley
from envs.games import make_game, scripted_levels, scripted_policy
from envs.scripted import play_matches

NAMES = ("Volley?team=0", "Volley?team=1")


def scripted_step(env: volley.Volley, players: dict) -> None:
    for name, policy in players.items():
        env.set_actions(name, policy.act(env.get_steps(name)[0].obs))
    env.step()


def test_spec_and_first_observations() -> None:
    env = make_game("volley", num_arenas=6)
    assert tuple(env.behavior_specs) == NAMES
    assert scripted_levels("volley") == ("random", "weak", "medium", "strong")
    for name in NAMES:
        spec = env.behavior_specs[name]
        assert spec.observation_specs[0].shape == (volley.OBS_SIZE,)
        assert spec.action_spec.continuous_size == 2 and spec.action_spec.discrete_size == 0
        decision, terminal = env.get_steps(name)
        assert len(decision) == 6 and len(terminal) == 0
        obs = decision.obs[0]
        assert obs.dtype == np.float32 and np.all(np.isfinite(obs))
        assert np.all(obs[:, 0] < 0) and np.all(obs[:, 3] > 0)  # own half is negative x
        assert np.all(np.abs(obs) <= 1.5)


def test_reward_only_when_the_ball_lands() -> None:
    env = make_game("volley", num_arenas=32, seed=3)
    rng = np.random.default_rng(0)
    landed = 0
    for _ in range(600):
        for name in NAMES:
            env.set_actions(name, ActionTuple(continuous=rng.uniform(-1, 1, (32, 2))))
        env.step()
        results = {}
        for team, name in enumerate(NAMES):
            decision, terminal = env.get_steps(name)
            assert np.all(decision.reward == 0) and np.all(decision.group_reward == 0)
            cut = terminal.interrupted
            assert np.all(terminal.reward[cut] == 0)
            assert set(np.abs(terminal.reward[~cut])) <= {1.0}
            obs, reward = terminal.obs[0][~cut], terminal.reward[~cut]
            # the final observation: ball on the ground, on the loser's half
            assert np.all(obs[:, 6] * 4.0 <= volley.BALL_RADIUS + 1e-6)
            np.testing.assert_array_equal(obs[:, 11] > 0.5, reward < 0)
            for arena, value in zip(terminal.agent_id[~cut] // 2, reward, strict=True):
                results.setdefault(int(arena), {})[team] = value
        for by_team in results.values():
            assert by_team[0] == -by_team[1]
        landed += len(results)
    assert landed > 100


def test_interrupted_points_score_nothing() -> None:
    # a serve is in the air for about a second: 20 steps
    env = make_game("volley", num_arenas=16, seed=1, max_episode_steps=5)
    for _ in range(5):
        env.step()
    for name in NAMES:
        _, terminal = env.get_steps(name)
        assert len(terminal) == 16 and terminal.interrupted.all()
        assert np.all(terminal.reward == 0)


def test_where_the_ball_meets_the_player_decides_the_shot() -> None:
    env = volley.Volley(num_arenas=3, seed=0)
    env.player_x[:] = [-2.0, 2.0]
    env.ball_v[:] = [0.0, -3.0]
    # above the centre, on the net side, on the far side of player 0
    env.ball[:, 0] = -2.0 + np.array([0.0, 0.3, -0.3])
    env.ball[:, 1] = 1.0
    for _ in range(4):
        env.step()
    vx, vy = env.ball_v[:, 0], env.ball_v[:, 1]
    assert abs(vx[0]) < 1e-9 and vy[0] > 7.0  # straight up
    assert vx[1] > 3.0 and vx[2] < -3.0  # toward the net / away from it
    assert np.all(np.abs(np.hypot(vx, vy) - volley.HIT_SPEED) < 1.5)  # less what gravity took


def test_the_net_sends_a_low_ball_back() -> None:
    env = volley.Volley(num_arenas=1, seed=0)
    env.player_x[:] = [-3.5, 3.5]
    env.ball[:] = [-0.5, 0.6]
    env.ball_v[:] = [6.0, 0.0]
    env.step()
    env.step()
    assert env.ball[0, 0] < 0 and env.ball_v[0, 0] < 0


@pytest.mark.parametrize(
    ("level", "rate"),
    # measured (64 arenas, seed 5, 150 points a side): strong 1.00, medium 0.84-0.86, weak 0.64
    [("strong", 0.95), ("medium", 0.7), ("weak", 0.55)],
)
def test_scripted_levels_beat_random(level: str, rate: float) -> None:
    env = make_game("volley", num_arenas=64, seed=5)
    for team in (0, 1):
        order = (level, "random") if team == 0 else ("random", level)
        players = {n: scripted_policy("volley", lv, seed=s + 1) for s, (n, lv) in enumerate(zip(NAMES, order, strict=True))}  # fmt: skip
        tally = play_matches(env, players, episodes=150)
        assert tally.win_rate(team) > rate, tally


def test_random_almost_never_scores_against_strong() -> None:
    env = make_game("volley", num_arenas=64, seed=6)
    players = {NAMES[0]: scripted_policy("volley", "random", seed=1),
               NAMES[1]: scripted_policy("volley", "strong", seed=2)}  # fmt: skip
    tally = play_matches(env, players, episodes=300)
    assert tally.win_rate(0) < 0.03, tally  # measured: 0.00-0.01


def test_each_level_beats_the_one_below() -> None:
    # measured (seed 5, 300 points): medium-weak 0.70, strong-medium 1.00
    for better, worse, rate in (("medium", "weak", 0.6), ("strong", "medium", 0.9)):
        env = make_game("volley", num_arenas=64, seed=5)
        players = {NAMES[0]: scripted_policy("volley", better, seed=1),
                   NAMES[1]: scripted_policy("volley", worse, seed=2)}  # fmt: skip
        tally = play_matches(env, players, episodes=300)
        assert tally.win_rate(0) > rate, (better, worse, tally)


def test_same_seed_same_points_other_worker_other_points() -> None:
    def points(worker_id: int) -> list[np.ndarray]:
        env = volley.make_env(worker_id=worker_id, seed=4, num_arenas=8)
        players = {n: scripted_policy("volley", "weak", seed=9) for n in NAMES}
        out = []
        for _ in range(200):
            scripted_step(env, players)
            for name in NAMES:
                decision, terminal = env.get_steps(name)
                out += [decision.obs[0], terminal.agent_id, terminal.reward]
        return out

    first, again, other = points(0), points(0), points(1)
    assert all(np.array_equal(a, b) for a, b in zip(first, again, strict=True))
    assert not all(np.array_equal(a, b) for a, b in zip(first, other, strict=True))
