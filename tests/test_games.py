"""The built-in games: BaseEnv contract, Unity step semantics, determinism, scripted levels."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
from mlagents_envs.base_env import ActionTuple, BaseEnv

from envs.behavior_id import BehaviorId
from envs.games import BUILTIN_GAMES, make_game, scripted_levels, scripted_policy
from envs.matrix_games import BiasedRPS, RockPaperScissors, exploitability
from envs.scripted import play_matches
from envs.soccer import SoccerTwos
from envs.vector_game import VectorGame, mix_seed

GAMES = sorted(BUILTIN_GAMES)
EXPECTED = {
    # game: {behavior: (agents per arena, obs size, continuous size, discrete branches)}
    "tennis": {"Tennis?team=0": (1, 10, 2, ()), "Tennis?team=1": (1, 10, 2, ())},
    "volley": {"Volley?team=0": (1, 12, 2, ()), "Volley?team=1": (1, 12, 2, ())},
    "soccer": {"SoccerTwos?team=0": (2, 16, 0, (3, 3)), "SoccerTwos?team=1": (2, 16, 0, (3, 3))},
    "strikers_vs_goalie": {
        "Striker?team=0": (2, 15, 0, (3, 3)),
        "Goalie?team=1": (1, 13, 0, (3, 3, 2)),
    },
    "rock_paper_scissors": {
        "RockPaperScissors?team=0": (1, 1, 0, (3,)),
        "RockPaperScissors?team=1": (1, 1, 0, (3,)),
    },
    "biased_rps": {"BiasedRPS?team=0": (1, 1, 0, (3,)), "BiasedRPS?team=1": (1, 1, 0, (3,))},
}
ARENAS = 8


def random_step(env: BaseEnv, rng: np.random.Generator) -> None:
    """Random actions for every agent, then one step."""
    for name, spec in env.behavior_specs.items():
        n = len(env.get_steps(name)[0])
        a = spec.action_spec
        discrete = np.stack(
            [rng.integers(0, b, size=n) for b in a.discrete_branches] or [np.zeros(n, int)], axis=1
        )[:, : a.discrete_size]
        env.set_actions(
            name,
            ActionTuple(continuous=rng.uniform(-1, 1, (n, a.continuous_size)), discrete=discrete),
        )
    env.step()


def run_until_terminals(env: BaseEnv, rng: np.random.Generator, max_steps: int = 2000) -> None:
    for _ in range(max_steps):
        random_step(env, rng)
        if any(len(env.get_steps(name)[1]) for name in env.behavior_specs):
            return
    raise AssertionError("no episode ended")


@pytest.mark.parametrize("game", GAMES)
def test_behavior_specs_and_first_steps(game: str) -> None:
    env = make_game(game, num_arenas=ARENAS)
    assert isinstance(env, BaseEnv)
    assert list(env.behavior_specs) == list(EXPECTED[game])
    teams = {BehaviorId.parse(name).team for name in env.behavior_specs}
    assert teams == {0, 1}
    for name, (per_arena, obs_size, continuous, branches) in EXPECTED[game].items():
        spec = env.behavior_specs[name]
        assert spec.observation_specs[0].shape == (obs_size,)
        assert spec.action_spec.continuous_size == continuous
        assert tuple(spec.action_spec.discrete_branches) == branches
        decision, terminal = env.get_steps(name)
        assert len(decision) == ARENAS * per_arena and len(terminal) == 0
        assert decision.obs[0].shape == (ARENAS * per_arena, obs_size)
        assert decision.obs[0].dtype == np.float32
        assert np.all(np.isfinite(decision.obs[0]))
        assert np.all(decision.reward == 0)
        if branches:  # like Unity: one all-False (everything allowed) mask per branch
            assert [m.shape for m in decision.action_mask] == [(len(decision), b) for b in branches]
            assert not any(m.any() for m in decision.action_mask)
        else:
            assert decision.action_mask is None
    ids = np.concatenate([env.get_steps(n)[0].agent_id for n in env.behavior_specs])
    assert sorted(ids) == list(range(ARENAS * env.agents_per_arena))


@pytest.mark.parametrize("game", GAMES)
def test_episode_end_reports_terminal_and_new_decision_for_same_agents(game: str) -> None:
    env = make_game(game, num_arenas=ARENAS, seed=1)
    run_until_terminals(env, np.random.default_rng(0))
    for name in env.behavior_specs:
        decision, terminal = env.get_steps(name)
        assert len(decision) == ARENAS * EXPECTED[game][name][0]  # everyone decides again
        assert set(terminal.agent_id) <= set(decision.agent_id)
        restarted = np.isin(decision.agent_id, terminal.agent_id)
        assert np.all(decision.reward[restarted] == 0)
        assert np.all(decision.group_reward[restarted] == 0)
        if game in ("tennis", "soccer", "strikers_vs_goalie") and len(terminal):
            fresh = decision.obs[0][restarted]
            order = np.argsort(decision.agent_id[restarted])
            final = terminal.obs[0][np.argsort(terminal.agent_id)]
            assert not np.allclose(fresh[order], final)  # the new episode's first observation


@pytest.mark.parametrize("game", GAMES)
def test_arena_of_and_whole_arenas_end_together(game: str) -> None:
    env = make_game(game, num_arenas=ARENAS, seed=2)
    name = next(iter(env.behavior_specs))
    ids = env.get_steps(name)[0].agent_id
    np.testing.assert_array_equal(env.arena_of(name, ids), ids // env.agents_per_arena)
    run_until_terminals(env, np.random.default_rng(1))
    ended = [set(env.arena_of(n, env.get_steps(n)[1].agent_id)) for n in env.behavior_specs]
    assert all(arenas == ended[0] for arenas in ended)


@pytest.mark.parametrize("game", GAMES)
def test_same_seed_same_trajectory_and_workers_differ(game: str) -> None:
    def trajectory(worker_id: int) -> list[np.ndarray]:
        env = make_game(game, num_arenas=4, seed=7, worker_id=worker_id)
        rng, out = np.random.default_rng(3), []
        for _ in range(60):
            random_step(env, rng)
            for name in env.behavior_specs:
                decision, terminal = env.get_steps(name)
                out += [decision.obs[0], decision.reward, terminal.agent_id, terminal.reward]
        return out

    assert mix_seed(-1, 0) is None  # ML-Agents' seed -1: fresh entropy
    first, second = trajectory(0), trajectory(0)
    assert all(np.array_equal(a, b) for a, b in zip(first, second, strict=True))
    if game in ("tennis", "soccer", "strikers_vs_goalie"):
        other = trajectory(1)
        assert not all(np.array_equal(a, b) for a, b in zip(first, other, strict=True))


@pytest.mark.parametrize(
    ("game", "limit"), [("tennis", 15), ("soccer", 40), ("strikers_vs_goalie", 40)]
)
def test_results_have_opposite_signs_and_interruptions_only_on_timeout(
    game: str, limit: int
) -> None:
    env = make_game(game, num_arenas=32, seed=3, max_episode_steps=limit)
    players = {name: scripted_policy(game, "weak", behavior=name) for name in env.behavior_specs}
    seen = {"interrupted": 0, "decided": 0}
    for _ in range(200):
        lengths = env.episode_steps + 1
        for name, policy in players.items():
            env.set_actions(name, policy.act(env.get_steps(name)[0].obs))
        env.step()
        results = {}
        for name in env.behavior_specs:
            _, terminal = env.get_steps(name)
            team = BehaviorId.parse(name).team
            arenas = env.arena_of(name, terminal.agent_id)
            # interrupted only when the step limit cut the episode
            assert not np.any(terminal.interrupted & (lengths[arenas] < limit))
            if game == "strikers_vs_goalie":
                assert not terminal.interrupted.any()  # a timeout is the goalie's win
            done = ~terminal.interrupted
            total = terminal.reward + terminal.group_reward
            # ±1 for the result, plus at most 0.1 of shaping
            assert np.all((np.abs(total[done]) >= 0.9) & (np.abs(total[done]) <= 1.1))
            for arena, value in zip(arenas[done], total[done], strict=True):
                results.setdefault(arena, {}).setdefault(team, set()).add(np.sign(value))
            decision, _ = env.get_steps(name)
            assert np.all(np.abs(decision.reward + decision.group_reward) <= 0.1)  # shaping only
            seen["interrupted"] += int(terminal.interrupted.sum())
            seen["decided"] += int(done.sum())
        for by_team in results.values():
            assert all(len(signs) == 1 for signs in by_team.values())  # teammates agree
            assert sum(next(iter(s)) for s in by_team.values()) == 0  # zero-sum result
    assert seen["decided"] > 0
    assert seen["interrupted"] > 0 or game == "strikers_vs_goalie"


def test_strikers_timeout_is_a_goalie_win() -> None:
    env = make_game("strikers_vs_goalie", num_arenas=16, max_episode_steps=2)
    for _ in range(2):
        env.step()  # zero actions: nobody reaches the ball in two steps
    striker, goalie = env.get_steps("Striker?team=0")[1], env.get_steps("Goalie?team=1")[1]
    assert len(striker) == 32 and len(goalie) == 16
    assert np.all(striker.reward == -1) and np.all(goalie.reward == 1)
    assert not striker.interrupted.any() and not goalie.interrupted.any()


def test_soccer_group_ids_and_group_rewards() -> None:
    env = make_game("soccer", num_arenas=ARENAS, seed=4, approach_reward=0.0)
    groups = {}
    for name in env.behavior_specs:
        decision, _ = env.get_steps(name)
        assert np.all(decision.group_id > 0)
        for agent, group in zip(decision.agent_id, decision.group_id, strict=True):
            groups[agent] = group
    for arena in range(ARENAS):
        team0, team1 = (
            (groups[arena * 4], groups[arena * 4 + 1]),
            (groups[arena * 4 + 2], groups[arena * 4 + 3]),
        )
        assert team0[0] == team0[1] and team1[0] == team1[1] and team0[0] != team1[0]
    assert len(set(groups.values())) == 2 * ARENAS
    # a goal: the ball placed just in front of team 1's goal, rolling in
    with_individual = SoccerTwos(num_arenas=ARENAS, individual_reward=True, approach_reward=0.0)
    for game_env, individual in ((env, 0.0), (with_individual, 1.0)):
        game_env.ball[0] = [5.9, 0.0]
        game_env.ball_v[0] = [3.0, 0.0]
        game_env.step()
        scorer = game_env.get_steps("SoccerTwos?team=0")[1]
        conceder = game_env.get_steps("SoccerTwos?team=1")[1]
        assert list(scorer.agent_id) == [0, 1] and list(conceder.agent_id) == [2, 3]
        assert np.all(scorer.group_reward == 1) and np.all(conceder.group_reward == -1)
        # the individual reward is the ±1 (if asked for) plus the ball-progress shaping (the
        # approach shaping is off here)
        np.testing.assert_allclose(scorer.reward, individual + 0.1 * 0.1 / 6, atol=1e-6)
        np.testing.assert_allclose(conceder.reward, -scorer.reward)
        assert not scorer.interrupted.any()


def test_matrix_round_rewards_follow_the_payoff_matrix() -> None:
    for cls in (RockPaperScissors, BiasedRPS):
        env = cls(num_arenas=9)
        moves = np.array([[a, b] for a in range(3) for b in range(3)])
        names = list(env.behavior_specs)
        for team, name in enumerate(names):
            env.set_actions(name, ActionTuple(discrete=moves[:, team : team + 1]))
        env.step()
        first, second = (env.get_steps(name)[1] for name in names)
        np.testing.assert_array_equal(first.reward, cls.payoff_matrix[moves[:, 0], moves[:, 1]])
        np.testing.assert_array_equal(second.reward, -first.reward)
        assert not first.interrupted.any() and len(env.get_steps(names[0])[0]) == 9
        assert env.render_arena(1)["actions"] == ["rock", "paper"]


def test_exploitability_is_exact() -> None:
    assert RockPaperScissors.exploitability(np.ones(3) / 3) == pytest.approx(0.0, abs=1e-12)
    assert RockPaperScissors.exploitability(np.array([1.0, 0.0, 0.0])) == pytest.approx(1.0)
    assert RockPaperScissors.exploitability(np.array([0.5, 0.5, 0.0])) == pytest.approx(0.5)
    np.testing.assert_allclose(RockPaperScissors.equilibrium(), np.ones(3) / 3)
    np.testing.assert_allclose(BiasedRPS.equilibrium(), [0.25, 0.5, 0.25])
    assert BiasedRPS.exploitability(BiasedRPS.equilibrium()) == pytest.approx(0.0, abs=1e-12)
    assert BiasedRPS.exploitability(np.ones(3) / 3) == pytest.approx(1 / 3)
    assert BiasedRPS.exploitability(np.array([1.0, 0.0, 0.0])) == pytest.approx(1.0)
    assert BiasedRPS.exploitability(np.array([0.0, 0.0, 1.0])) == pytest.approx(2.0)
    with pytest.raises(ValueError, match="summing to 1"):
        exploitability(RockPaperScissors.payoff_matrix, np.array([0.5, 0.5, 0.5]))


@pytest.mark.parametrize("game", ["tennis", "soccer"])
def test_scripted_strong_beats_random(game: str) -> None:
    env = make_game(game, num_arenas=64, seed=5)
    first, second = list(env.behavior_specs)
    for strong_team, order in ((0, ("strong", "random")), (1, ("random", "strong"))):
        policies = {
            first: scripted_policy(game, order[0], seed=1),
            second: scripted_policy(game, order[1], seed=2),
        }
        tally = play_matches(env, policies, episodes=150)
        assert tally.win_rate(strong_team) > 0.6, tally


def test_scripted_policies_act_in_their_action_space() -> None:
    for game in GAMES:
        env = make_game(game, num_arenas=4)
        for level in scripted_levels(game):
            for name, spec in env.behavior_specs.items():
                policy = scripted_policy(game, level, behavior=name)
                decision, _ = env.get_steps(name)
                action = policy.act(decision.obs)
                env.set_actions(name, action)  # validates shapes and ranges
                assert action.continuous.shape[1] == spec.action_spec.continuous_size
        env.step()


def test_registry_errors_list_the_valid_choices() -> None:
    with pytest.raises(ValueError, match="tennis"):
        make_game("tenis")
    with pytest.raises(ValueError, match="random, weak, medium, strong"):
        scripted_policy("tennis", "expert")
    with pytest.raises(ValueError, match="Goalie, Striker"):
        scripted_policy("strikers_vs_goalie", "strong")
    assert "equilibrium" in scripted_levels("biased_rps")


def test_actions_are_validated_and_default_to_zero() -> None:
    env = make_game("soccer", num_arenas=2)
    with pytest.raises(ValueError, match="shape"):
        env.set_actions("SoccerTwos?team=0", ActionTuple(discrete=np.zeros((3, 2), np.int32)))
    with pytest.raises(ValueError, match="branch"):
        env.set_actions("SoccerTwos?team=0", ActionTuple(discrete=np.full((4, 2), 3, np.int32)))
    with pytest.raises(KeyError, match="SoccerTwos"):
        env.get_steps("Soccer?team=0")
    before = env.pos.copy()
    env.set_action_for_agent("SoccerTwos?team=1", 6, ActionTuple(discrete=np.array([[1, 0]])))
    env.step()
    moved = np.abs(env.pos - before).sum(axis=-1) > 0
    # only agent 6 (arena 1, slot 2) had an action; it moves along its own +x, world -x
    assert moved.tolist() == [[False] * 4, [False, False, True, False]]
    assert env.pos[1, 2, 0] < before[1, 2, 0]


@pytest.mark.parametrize("game", GAMES)
def test_render_arena_is_plain_data(game: str) -> None:
    env = make_game(game, num_arenas=2)
    random_step(env, np.random.default_rng(0))
    frame = env.render_arena(1)
    assert isinstance(frame, dict) and "game" in frame
    assert isinstance(env, VectorGame)


#: the ML-Agents 1.1 venv that ``../shared/peers/setup-mlagents.sh`` builds (``PEER_VENV``)
PEER_PYTHON = Path(os.environ.get("PEER_VENV", "/tmp/peer-mlagents")) / "bin" / "python"


@pytest.mark.skipif(
    not PEER_PYTHON.exists(),
    reason=f"no ML-Agents 1.1 peer venv (numpy 1.23) at {PEER_PYTHON}: build it with "
    "../shared/peers/setup-mlagents.sh (or set PEER_VENV) to check the games under old numpy",
)
def test_games_run_under_the_peer_numpy() -> None:
    script = (
        "import numpy as np\n"
        "from envs.games import BUILTIN_GAMES, make_game, scripted_policy\n"
        "for game in BUILTIN_GAMES:\n"
        "    env = make_game(game, num_arenas=4)\n"
        "    for _ in range(50):\n"
        "        for name, spec in env.behavior_specs.items():\n"
        "            env.set_actions(name, scripted_policy(game, 'random', behavior=name).act(\n"
        "                env.get_steps(name)[0].obs))\n"
        "        env.step()\n"
        "print(np.__version__)\n"
    )
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run(
        [str(PEER_PYTHON), "-c", script],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(root)},
    )
    assert done.returncode == 0, done.stderr
