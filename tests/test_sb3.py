"""Self-play inside Stable-Baselines3 (``ghost.integrations.sb3``): the VecEnv view of the learning
team, the callback driving our cycle, resume, every supported algorithm, same seed same run."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("stable_baselines3", reason="Stable-Baselines3 is an optional extra")
pytest.importorskip("pettingzoo", reason="PettingZoo is an optional extra")

import torch  # noqa: E402
from mlagents_envs.base_env import ActionTuple  # noqa: E402

from ghost.exceptions import ConfigError, EnvironmentSpecError  # noqa: E402
from ghost.integrations.sb3 import GhostCallback, GhostVecEnv, SB3Player  # noqa: E402
from ghost.integrations.sb3.actors import PlayerActor, PolicyActor  # noqa: E402
from ghost.integrations.sb3.vec_env import SB3Weights  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TICTACTOE = "pettingzoo:pettingzoo.classic.tictactoe_v3"
QUICK = {"save_steps": 256, "swap_steps": 128, "team_change": 1024, "window": 3}


@pytest.fixture(autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


class CountingActor:
    """Plays random legal moves and remembers how many rows each call had."""

    def __init__(self, discrete: bool, seed: int = 0) -> None:
        self.calls: list[int] = []
        self.discrete = discrete
        self.rng = np.random.default_rng(seed)

    def act(self, obs: np.ndarray, allowed: np.ndarray | None) -> ActionTuple:
        self.calls.append(len(obs))
        if not self.discrete:
            return ActionTuple(continuous=self.rng.uniform(-1, 1, (len(obs), 2)).astype(np.float32))
        assert allowed is not None
        picks = [self.rng.choice(np.flatnonzero(row)) for row in allowed]
        return ActionTuple(discrete=np.asarray(picks, dtype=np.int32).reshape(-1, 1))


def random_legal(env: GhostVecEnv, rng: np.random.Generator) -> np.ndarray:
    return np.asarray([rng.choice(np.flatnonzero(row)) for row in env.action_masks()])


# -- settings ----------------------------------------------------------------------------------
def test_self_play_dict_with_a_typo_names_the_key_and_the_valid_ones():
    with pytest.raises(ConfigError, match=r"self_play\.swap_step .*did you mean 'swap_steps'"):
        GhostVecEnv("tennis", num_arenas=2, self_play={"swap_step": 10})


def test_self_play_from_a_trainer_yaml_takes_that_behaviors_section():
    env = GhostVecEnv(TICTACTOE, num_arenas=2, self_play=ROOT / "config" / "tictactoe.yaml")
    assert env.state.settings.swap_steps == 10000
    assert env.state.settings.opponents_per_swap == 8


def test_self_play_keys_sb3_cannot_run_are_refused_not_ignored():
    with pytest.raises(ConfigError, match="league"):
        GhostVecEnv("tennis", num_arenas=2, self_play={"league": {"main_exploiters": 1}})


def test_an_asymmetric_game_is_refused_with_the_reason():
    with pytest.raises(EnvironmentSpecError, match="one behavior name"):
        GhostVecEnv("strikers_vs_goalie", num_arenas=2)


# -- the VecEnv ----------------------------------------------------------------------------------
def test_real_time_game_has_one_index_per_learning_agent_and_one_call_per_opponent():
    env = GhostVecEnv("tennis", num_arenas=6, seed=0)
    first, second = CountingActor(False, 1), CountingActor(False, 2)
    env.field(1, [first, second])
    env.reset()
    assert env.num_envs == 6
    for _ in range(3):
        env.step(np.zeros((6, 2), dtype=np.float32))
    # arenas are spread over the two opponents; each is asked once per step for all of its rows
    assert first.calls == [3, 3, 3] and second.calls == [3, 3, 3]
    assert env.take_results()[1] == {1: 18}


def test_turn_based_learner_is_always_to_move_and_is_paid_for_the_opponents_winning_moves():
    env = GhostVecEnv(TICTACTOE, num_arenas=8, seed=3)
    opponent = CountingActor(True, 5)
    env.field(1, [opponent])
    env.reset()
    rng = np.random.default_rng(0)
    losses = 0
    results = []
    for _ in range(300):
        masks = env.action_masks()
        # seat 0 moves on an empty or evenly filled board: an odd number of free squares
        assert (masks.sum(axis=1) % 2 == 1).all()
        obs, rewards, dones, infos = env.step(random_legal(env, rng))
        for index in np.flatnonzero(dones):
            assert infos[index]["terminal_observation"].shape == (18,)
            assert infos[index]["TimeLimit.truncated"] is False
        # tic-tac-toe is lost only on the opponent's move: that -1 is the learner's last reward
        losses += int(((rewards < 0) & dones).sum())
        results += env.take_results()[0]
    assert losses > 10
    assert sum(score == 0.0 for _, score in results) == losses
    # one batched call per opponent move round, never more rows than tables
    assert max(opponent.calls) <= 8 and len(opponent.calls) <= 300


def test_a_team_change_cuts_every_episode_and_the_learner_then_moves_second():
    env = GhostVecEnv(TICTACTOE, num_arenas=4, seed=0)
    env.reset()
    rng = np.random.default_rng(1)
    env.step(random_legal(env, rng))
    before = env._obs.copy()
    env.set_learning_team(1)
    obs, rewards, dones, infos = env.step(random_legal(env, rng))
    assert dones.all() and not rewards.any()
    assert all(info["TimeLimit.truncated"] for info in infos)
    np.testing.assert_array_equal(np.stack([i["terminal_observation"] for i in infos]), before)
    assert env.learning_team == 1
    # seat 1 moves after one opponent move: an even number of free squares
    assert (env.action_masks().sum(axis=1) % 2 == 0).all()


def test_opponent_replies_and_opening_moves_of_new_games_share_one_batch():
    env = GhostVecEnv(TICTACTOE, num_arenas=4, seed=0)
    opponent = CountingActor(True, 2)
    env.field(0, [opponent])
    env.set_learning_team(1)
    env.reset()
    rng = np.random.default_rng(3)
    finished = 0
    for _ in range(40):
        before = len(opponent.calls)
        finished += int(env.step(random_legal(env, rng))[2].sum())
        assert (env.action_masks().sum(axis=1) % 2 == 0).all()
        # one call with all four tables (a reply, or a new game's opening move); a second only
        # where the reply won and the next game's opening move is still to come
        calls = opponent.calls[before:]
        assert calls[0] == 4 and len(calls) <= 2
    assert finished > 4


def test_action_masks_follow_sb3s_convention_true_is_allowed():
    env = GhostVecEnv(TICTACTOE, num_arenas=2, seed=0)
    env.reset()
    env.step(np.array([4, 4]))
    masks = np.stack(env.env_method("action_masks"))
    assert masks.dtype == bool and masks.shape == (2, 9)
    assert not masks[:, 4].any()  # the learner's own X
    assert masks.sum(axis=1).tolist() == [7, 7]


# -- training with the callback ----------------------------------------------------------------
def train_tictactoe(logs: Path | None, *, seed: int, steps: int, **callback):
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.logger import configure

    env = GhostVecEnv(TICTACTOE, num_arenas=8, seed=seed, self_play=QUICK)
    model = MaskablePPO("MlpPolicy", env, seed=seed, n_steps=32, batch_size=64, n_epochs=2)
    if logs is not None:
        model.set_logger(configure(str(logs), ["csv"]))
    model.learn(steps, callback=GhostCallback(**callback))
    return model, env


def test_maskable_ppo_runs_the_whole_cycle_and_saves_a_resumable_state(tmp_path):
    from sb3_contrib import MaskablePPO

    path = tmp_path / "run" / "model"
    model, env = train_tictactoe(tmp_path / "logs", seed=0, steps=2048, save_path=path)
    state = env.state
    assert len(state.window) == 3 and state.window.next_id > 3  # snapshots and evictions
    assert state.swaps > 3 and env.controller.team_changes >= 1
    assert state.rating != 1200.0
    other = [team for team in env.teams if team != env.learning_team][0]
    frozen = env.driver.actors[other][0]
    assert isinstance(frozen, PolicyActor) and frozen.policy is not model.policy
    assert type(frozen.policy) is type(model.policy)
    folder = tmp_path / "run" / "model.self_play"
    assert (tmp_path / "run" / "model.zip").is_file()
    assert {p.name for p in folder.glob("snapshot-*.pt")} == {
        f"snapshot-{s.snapshot_id}.pt" for s in state.window
    }
    assert "learner version" in (folder / "payoff.csv").read_text()
    header = (tmp_path / "logs" / "progress.csv").read_text().splitlines()[0].split(",")
    assert {"Self-play/ELO", "Self-play/Win Rate", "rollout/ep_rew_mean"} <= set(header)

    resumed_env = GhostVecEnv(TICTACTOE, num_arenas=8, seed=0, self_play=QUICK)
    resumed = MaskablePPO.load(path, env=resumed_env)
    callback = GhostCallback(resume_from=path)
    callback.init_callback(resumed)
    assert [s.snapshot_id for s in resumed_env.state.window] == [
        s.snapshot_id for s in state.window
    ]
    assert resumed_env.state.rating == state.rating
    assert resumed_env.controller.learning_team == env.controller.learning_team
    assert resumed_env.controller.team_changes == env.controller.team_changes
    weights = resumed_env.state.window[-1].weights
    assert all(torch.equal(weights[k], v) for k, v in state.window[-1].weights.items())
    resumed.learn(512, callback=callback, reset_num_timesteps=False)
    assert resumed.num_timesteps > model.num_timesteps
    assert resumed_env.state.window.next_id >= state.window.next_id


def test_same_seed_same_run():
    first, first_env = train_tictactoe(None, seed=7, steps=1024)
    second, second_env = train_tictactoe(None, seed=7, steps=1024)
    assert first_env.state.rating == second_env.state.rating
    one, two = first.policy.state_dict(), second.policy.state_dict()
    assert all(torch.equal(one[key], two[key]) for key in one)


@pytest.mark.parametrize("algorithm", ["PPO", "A2C", "SAC"])
def test_continuous_algorithms_train_on_tennis_against_frozen_copies(algorithm):
    import stable_baselines3

    options = {
        "PPO": {"n_steps": 64, "batch_size": 128, "n_epochs": 2},
        "SAC": {"learning_starts": 64, "batch_size": 64, "train_freq": 8},
    }
    env = GhostVecEnv("tennis", num_arenas=4, seed=0, self_play=QUICK)
    algo = getattr(stable_baselines3, algorithm)
    model = algo("MlpPolicy", env, seed=0, **options.get(algorithm, {}))
    model.learn(600 if algorithm == "SAC" else 2000, callback=GhostCallback())
    actor = env.driver.actors[1 - env.learning_team][0]
    assert type(actor.policy) is type(model.policy) and actor.policy is not model.policy
    assert env.state.swaps >= 2


def test_dqn_trains_on_a_discrete_game():
    from stable_baselines3 import DQN

    env = GhostVecEnv("rock_paper_scissors", num_arenas=4, seed=0, self_play=QUICK)
    model = DQN("MlpPolicy", env, seed=0, learning_starts=64, train_freq=4)
    model.learn(800, callback=GhostCallback())
    assert env.state.rating != 1200.0 and len(env.state.window) == 3


def test_naive_mode_plays_against_the_live_learner():
    from stable_baselines3 import PPO

    env = GhostVecEnv("tennis", num_arenas=2, seed=0, opponent="latest")
    model = PPO("MlpPolicy", env, seed=0, n_steps=64, batch_size=64)
    model.learn(128, callback=GhostCallback())
    assert env.driver.actors[1][0].policy is model.policy


def test_fixed_opponents_scripted_or_saved_by_sb3(tmp_path):
    from stable_baselines3 import PPO

    donor = PPO("MlpPolicy", GhostVecEnv("tennis", num_arenas=2), seed=1)
    donor.save(tmp_path / "donor")
    mixture = {"latest": 0.0, "window": 0.0, "fixed": 1.0}
    settings = {
        "sampling": {"strategy": "mixture", "mixture": mixture},
        "opponents_per_swap": 2,
        "fixed_opponents": [
            {"name": "medium", "scripted": "medium"},
            {"name": "donor", "policy": str(tmp_path / "donor.zip")},
        ],
    }
    env = GhostVecEnv("tennis", num_arenas=4, seed=0, self_play=settings)
    assert isinstance(env.state.fixed_opponents[1].policy, SB3Weights)
    model = PPO("MlpPolicy", env, seed=0, n_steps=64, batch_size=64)
    model.learn(256, callback=GhostCallback())
    kinds = {type(actor) for actor in env.driver.actors[1]}
    assert kinds == {PlayerActor, PolicyActor}  # the scripted level and the SB3 model
    copies = [a.policy for a in env.driver.actors[1] if isinstance(a, PolicyActor)]
    expected = donor.policy.state_dict()
    for policy in copies:
        assert all(torch.equal(policy.state_dict()[k].cpu(), v) for k, v in expected.items())


def test_sb3_player_plays_in_ghost_evaluation():
    from sb3_contrib import MaskablePPO

    from envs.board_players import RandomLegalPolicy
    from envs.sources import resolve_env
    from ghost.play.seated_matches import evaluate_both_seats

    env = GhostVecEnv(TICTACTOE, num_arenas=2, seed=0)
    model = MaskablePPO("MlpPolicy", env, seed=0)
    player = SB3Player(model, env.behavior_spec.action_spec)
    spec = env.behavior_spec.action_spec
    both = evaluate_both_seats(
        lambda seed: resolve_env(TICTACTOE)(worker_id=0, seed=seed),
        policy={0: player, 1: player},
        opponent={s: RandomLegalPolicy(action_spec=spec, seed=s) for s in (0, 1)},
        games=10,
    )
    assert [result.games for result in both.seats] == [10, 10]


def test_import_without_sb3_names_the_extra():
    code = textwrap.dedent(
        """
        import sys
        sys.modules["stable_baselines3"] = None
        try:
            import ghost.integrations.sb3
        except ImportError as error:
            print(error)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert "pip install 'ghost-trainer[sb3]'" in out.stdout


def test_openspiel_games_and_factories_are_games_too():
    pytest.importorskip("pyspiel", reason="OpenSpiel is an optional extra")
    from envs.games import make_game

    env = GhostVecEnv("openspiel:leduc_poker", num_arenas=4, seed=0)
    env.reset()
    rng = np.random.default_rng(0)
    finished = 0
    for _ in range(50):
        finished += int(env.step(random_legal(env, rng))[2].sum())
    assert finished > 0 and len(env.take_results()[0]) == finished
    made = GhostVecEnv(lambda seed: make_game("tennis", num_arenas=3, seed=seed), seed=1)
    given = GhostVecEnv(make_game("tennis", num_arenas=3, seed=1))
    assert made.num_envs == given.num_envs == 3


@pytest.mark.slow
def test_maskable_ppo_with_the_ghost_learns_tictactoe_in_both_seats():
    from sb3_contrib import MaskablePPO

    from envs.board_players import RandomLegalPolicy
    from envs.sources import resolve_env
    from ghost.play.seated_matches import evaluate_both_seats

    settings = {"save_steps": 2500, "swap_steps": 1250, "team_change": 10000, "window": 10}
    env = GhostVecEnv(TICTACTOE, num_arenas=64, seed=0, self_play=settings)
    model = MaskablePPO("MlpPolicy", env, seed=0, n_steps=128, batch_size=512, n_epochs=3)
    model.learn(50_000, callback=GhostCallback())
    spec = env.behavior_spec.action_spec
    player = SB3Player(model, spec)
    both = evaluate_both_seats(
        lambda seed: resolve_env(TICTACTOE)(worker_id=0, seed=seed),
        policy={0: player, 1: player},
        opponent={s: RandomLegalPolicy(action_spec=spec, seed=s) for s in (0, 1)},
        games=200,
    )
    # a random player wins about 0.58 as the first mover and 0.29 as the second
    first, second = both.seats
    assert first.win_rate > 0.65 and second.win_rate > 0.4, both.seats
