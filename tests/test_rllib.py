"""Our self-play inside RLlib's PPO (``ghost.integrations.rllib``), with real RLlib training.

Every training run here is tiny (one local env runner, small networks, one thread): what is
checked is the wiring a user relies on, not learning; the one learning run is marked slow.
"""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("ray.rllib")
pytest.importorskip("pyspiel")

import torch  # noqa: E402
from ray.rllib.algorithms.algorithm import Algorithm  # noqa: E402
from ray.rllib.algorithms.ppo import PPOConfig  # noqa: E402
from ray.rllib.core.columns import Columns  # noqa: E402
from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig  # noqa: E402

from envs.openspiel import OpenSpielSource  # noqa: E402
from ghost.exceptions import ConfigError, GhostError  # noqa: E402
from ghost.integrations.rllib import (  # noqa: E402
    LEARNER_MODULE,
    GhostMultiAgentEnv,
    GhostPPO,
    MaskedPPOTorchRLModule,
    ghost_module,
    ghost_self_play,
    restore_checkpoint,
    save_checkpoint,
    self_play_of,
    self_play_settings,
)
from ghost.integrations.rllib.host import FOLDER  # noqa: E402
from ghost.integrations.rllib.routing import Routing, map_agent_to_module  # noqa: E402
from trainers.exceptions import CheckpointError  # noqa: E402
from trainers.run_files.safe_load import load_pt  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SELF_PLAY = {"save_steps": 100, "swap_steps": 100, "team_change": 300, "window": 3}


@pytest.fixture(scope="module", autouse=True)
def ray_session():
    import ray

    torch.set_num_threads(1)
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    yield
    if started:
        ray.shutdown()


def small_ppo(**training) -> PPOConfig:
    return (
        PPOConfig()
        .env_runners(num_env_runners=0, num_envs_per_env_runner=2, rollout_fragment_length=64)
        .training(train_batch_size_per_learner=128, minibatch_size=64, num_epochs=1, **training)
        .rl_module(model_config=DefaultModelConfig(fcnet_hiddens=[32]))
    )


def leduc_algorithm(seed: int = 5, self_play=None, **options):
    config = ghost_self_play(
        small_ppo(), env="openspiel:leduc_poker", self_play=self_play or SELF_PLAY, seed=seed,
        **options,
    )  # fmt: skip
    return config.build_algo()


def main_weights(algorithm) -> np.ndarray:
    state = algorithm.learner_group.get_weights(module_ids=[LEARNER_MODULE])[LEARNER_MODULE]
    return np.concatenate([np.asarray(value).ravel() for value in state.values()])


# -- the environment ----------------------------------------------------------------------------
def play_random(env: GhostMultiAgentEnv, steps: int, seed: int = 0):
    """Random legal play; yields each step's (observations, rewards, terminateds, infos)."""
    rng = np.random.default_rng(seed)
    observations, _ = env.reset(seed=seed)
    for _ in range(steps):
        actions = {}
        for agent, obs in observations.items():
            legal = np.flatnonzero(obs[-env.action_spaces[agent].n :])
            actions[agent] = int(rng.choice(legal))
        observations, rewards, terminateds, truncateds, infos = env.step(actions)
        yield observations, rewards, terminateds, infos
        if terminateds["__all__"] or truncateds["__all__"]:
            observations, _ = env.reset()


def test_turn_based_game_asks_only_the_player_to_move_and_masks_illegal_moves():
    env = GhostMultiAgentEnv({"env": "openspiel:connect_four"})
    assert env.possible_agents == ["t0_a0", "t1_a1"]
    assert env.action_mask
    observations, _ = env.reset(seed=0)
    assert list(observations) == ["t0_a0"]  # first player only
    movers, finished = [], 0
    for observations, _, terminateds, infos in play_random(env, 200):
        if terminateds["__all__"]:
            finished += 1
            assert set(observations) == {"t0_a0", "t1_a1"}  # the end reaches everyone
            assert sorted(r["final_reward"] for r in infos.values()) in ([-1, 1], [0, 0])
        else:
            assert len(observations) == 1
            movers.append(next(iter(observations)))
    assert finished >= 3
    assert movers[:2] == ["t1_a1", "t0_a0"]  # players alternate


def test_a_full_column_is_flagged_illegal():
    env = GhostMultiAgentEnv({"env": "openspiel:connect_four"})
    observations, _ = env.reset(seed=0)
    for _ in range(6):  # both players fill column 3
        (agent,) = observations
        assert observations[agent][-7:][3] == 1.0
        observations, *_ = env.step({agent: 3})
    (agent,) = observations
    assert observations[agent][-7:].tolist() == [1, 1, 1, 0, 1, 1, 1]


def test_pettingzoo_game_plays_through_the_same_adapter():
    pytest.importorskip("pettingzoo")
    env = GhostMultiAgentEnv({"env": "pettingzoo:pettingzoo.classic.connect_four_v3"})
    assert env.possible_agents == ["t0_a0", "t1_a1"] and env.action_mask
    finished = sum(t["__all__"] for _, _, t, _ in play_random(env, 120))
    assert finished >= 2


def test_real_time_builtin_game_has_every_agent_act_every_step():
    env = GhostMultiAgentEnv({"env": "tennis"})
    assert not env.action_mask
    observations, _ = env.reset(seed=1)
    assert set(observations) == set(env.possible_agents) == {"t0_a0", "t1_a1"}
    actions = {agent: env.action_spaces[agent].sample() for agent in observations}
    observations, *_ = env.step(actions)
    assert set(observations) == {"t0_a0", "t1_a1"}


def test_a_game_with_several_tables_is_refused_with_the_fix():
    with pytest.raises(GhostError, match="one table per environment.*copies=1"):
        GhostMultiAgentEnv({"env": OpenSpielSource(game="leduc_poker", copies=4)})


def test_same_seed_same_episodes():
    def rewards(seed: int) -> list:
        env = GhostMultiAgentEnv({"env": "openspiel:leduc_poker"})
        return [sorted(r.items()) for _, r, t, _ in play_random(env, 60, seed) if t["__all__"]]

    assert rewards(3) == rewards(3)
    assert rewards(3) != rewards(4)


# -- routing and the masked module ---------------------------------------------------------------
class _Episode:
    def __init__(self) -> None:
        self.custom_data: dict = {}


def test_policy_mapping_sends_the_learning_team_to_main_and_the_others_to_their_ghost():
    from ghost.integrations.rllib import routing

    class Runner:
        worker_index = 0

    runner = Runner()
    routing.set_routing(runner, Routing(learning_team=1, slots=2))
    modules = {}
    for env_index in range(2):
        episode = _Episode()
        routing.stamp_episode(episode, runner, env_index)
        modules[env_index] = [map_agent_to_module(a, episode) for a in ("t0_a0", "t1_a1")]
    assert modules == {
        0: [ghost_module(0, 0), LEARNER_MODULE],
        1: [ghost_module(0, 1), LEARNER_MODULE],
    }
    assert map_agent_to_module("t0_a0", _Episode()) == LEARNER_MODULE  # unrouted: main


def test_masked_module_never_samples_an_illegal_action():
    import gymnasium as gym

    space = gym.spaces.Box(-np.inf, np.inf, (4 + 3,), np.float32)
    module = MaskedPPOTorchRLModule(
        observation_space=space, action_space=gym.spaces.Discrete(3),
        model_config={"fcnet_hiddens": [8]},
    )  # fmt: skip
    obs = torch.zeros(64, 7)
    obs[:, :4] = torch.randn(64, 4)
    obs[:, 4:] = torch.tensor([0.0, 1.0, 0.0])  # only action 1 is legal
    logits = module.forward_exploration({Columns.OBS: obs})[Columns.ACTION_DIST_INPUTS]
    distribution = module.get_exploration_action_dist_cls().from_logits(logits)
    assert (distribution.sample() == 1).all()
    assert (logits[:, [0, 2]] < -1e8).all()


# -- settings ------------------------------------------------------------------------------------
def test_self_play_keys_are_strict_and_name_the_key():
    with pytest.raises(ConfigError, match=r"self_play\.swap_step.*did you mean 'swap_steps'"):
        self_play_settings({"swap_step": 10})
    with pytest.raises(ConfigError, match=r"self_play\.window = 0"):
        self_play_settings({"window": 0})
    with pytest.raises(ConfigError, match=r"self_play\.preset: not supported with RLlib"):
        self_play_settings({"preset": "robust"})


def test_self_play_from_a_yaml_section_or_a_trainer_config(tmp_path):
    section = tmp_path / "self_play.yaml"
    section.write_text("self_play:\n  window: 4\n  swap_steps: 50\n")
    assert self_play_settings(section).window == 4
    trainer = tmp_path / "trainer.yaml"
    trainer.write_text("behaviors:\n  Leduc:\n    self_play:\n      save_steps: 77\n")
    assert self_play_settings(trainer).save_steps == 77
    broken = tmp_path / "broken.yaml"
    broken.write_text("self_play:\n  windw: 4\n")
    with pytest.raises(ConfigError, match=r"broken\.yaml: self_play\.windw"):
        self_play_settings(broken)


def test_a_game_of_several_behaviors_is_refused():
    with pytest.raises(GhostError, match="one behavior name played by two or more teams"):
        ghost_self_play(small_ppo(), env="strikers_vs_goalie")


# -- training ------------------------------------------------------------------------------------
def test_ppo_trains_main_against_frozen_snapshots_and_reports_elo():
    algorithm = leduc_algorithm()
    self_play = self_play_of(algorithm)
    ghost_before = self_play.learner.weights()
    reports, episodes = [], 0
    for _ in range(24):  # 3072 env steps
        result = algorithm.train()
        reports.append(result["Self-play"])
        if self_play.controller.team_changes == 0:
            episodes += result["env_runners"]["num_episodes"]
    turn_one = [r for r in reports if r["team_changes"] == 0]
    # one Elo result per finished episode while the first team learns
    assert sum(r["matches"] for r in turn_one) == episodes > 0
    assert len({r["ELO"] for r in reports}) > 1
    assert reports[-1]["team_changes"] >= 2  # learning passed to team 1 and back
    assert {r["learning_team"] for r in reports} == {0, 1}
    assert len(self_play.state.window) == 3 and self_play.state.swaps >= 3
    # the ghosted team plays the snapshot the cycle drew, never trained by RLlib
    runner = algorithm.env_runner_group.local_env_runner
    team = next(t for t in self_play.teams if t != self_play.controller.learning_team)
    (opponent,) = self_play.state.opponents[team]
    ghost = runner.module[ghost_module(team, 0)].get_state()
    for key, value in opponent.snapshot.weights.items():
        if key in ghost:
            np.testing.assert_array_equal(np.asarray(ghost[key]), value.numpy())
    assert not np.array_equal(main_weights(algorithm), np.concatenate(
        [v.numpy().ravel() for v in ghost_before.values()]))  # fmt: skip
    algorithm.stop()


def module_weights(algorithm, module_id) -> np.ndarray:
    state = algorithm.learner_group.get_weights(module_ids=[module_id])[module_id]
    return np.concatenate([np.asarray(v).ravel() for v in state.values()])


def test_league_exploiters_take_turns_with_modules_of_their_own(tmp_path):
    league = {"main_exploiters": 1, "league_exploiters": 1, "main_turns": 1,
              "promote_win_rate": 0.0}  # fmt: skip
    algorithm = leduc_algorithm(self_play={**SELF_PLAY, "team_change": 200, "league": league})
    self_play = self_play_of(algorithm)
    league_start = module_weights(algorithm, "exploiter_1")
    seen = []
    for _ in range(30):
        role = self_play.league.learning_module
        elo, main_steps = self_play.state.rating, self_play.learner_steps
        result = algorithm.train()["Self-play"]
        seen.append(role)
        if role != LEARNER_MODULE and result["role"] != "main":
            # an exploiter's matches never move the main learner's Elo; main acts only to finish
            # the episodes it began before the turn (one per env at most, 128 steps a batch)
            assert self_play.state.rating == elo
            assert self_play.learner_steps - main_steps < 16
        if "exploiter_1" not in seen:
            np.testing.assert_array_equal(module_weights(algorithm, "exploiter_1"), league_start)
    order = [role for i, role in enumerate(seen) if i == 0 or seen[i - 1] != role]
    assert order[:4] == ["main", "exploiter_0", "main", "exploiter_1"]
    assert not np.array_equal(module_weights(algorithm, "exploiter_1"), league_start)
    # promote_win_rate 0 promotes every exploiter at the end of its turn; a main exploiter
    # then restarts from fresh weights, so its module no longer holds the promoted member
    members = self_play.state.league.members
    assert [m.name for m in members][:2] == ["exploiter-0-1", "exploiter-1-1"]
    promoted = np.concatenate([v.numpy().ravel() for v in members[0].snapshot.weights.values()])
    assert not np.array_equal(module_weights(algorithm, "exploiter_0"), promoted)
    assert self_play.state.league.exploiters[0].generation >= 1

    before = (self_play_summary(algorithm), self_play.league.state_dict(),
              [m.name for m in self_play.state.league.members])  # fmt: skip
    path = algorithm.save_to_path(tmp_path / "league")
    algorithm.stop()
    rebuilt = Algorithm.from_checkpoint(path)
    restored = self_play_of(rebuilt)
    assert (self_play_summary(rebuilt), restored.league.state_dict(),
            [m.name for m in restored.state.league.members]) == before  # fmt: skip
    rebuilt.stop()


def test_remote_env_runners_play_the_opponents_spread_over_them():
    config = small_ppo().env_runners(
        num_env_runners=1, num_envs_per_env_runner=2, rollout_fragment_length=64
    )
    config = ghost_self_play(
        config, env="openspiel:leduc_poker", seed=2,
        self_play={**SELF_PLAY, "opponents_per_swap": 2},
    )  # fmt: skip
    algorithm = config.build_algo()
    results = [algorithm.train() for _ in range(3)]
    self_play = self_play_of(algorithm)
    assert sum(r["Self-play"]["matches"] for r in results) == sum(
        r["env_runners"]["num_episodes"] for r in results
    )
    team = next(t for t in self_play.teams if t != self_play.controller.learning_team)
    opponents = self_play.state.opponents[team]
    assert len(opponents) == 2

    def ghost_states(env_runner):
        return [env_runner.module[ghost_module(team, slot)].get_state() for slot in (0, 1)]

    (remote,) = algorithm.env_runner_group.foreach_env_runner(ghost_states, local_env_runner=False)
    for state, opponent in zip(remote, opponents, strict=True):
        key = next(k for k in opponent.snapshot.weights if k in state)
        np.testing.assert_array_equal(np.asarray(state[key]), opponent.snapshot.weights[key])
    algorithm.stop()


def test_same_seed_same_run():
    runs = []
    for _ in range(2):
        algorithm = leduc_algorithm(seed=11)
        reports = [algorithm.train()["Self-play"] for _ in range(3)]
        runs.append((reports, main_weights(algorithm)))
        algorithm.stop()
    assert runs[0][0] == runs[1][0]
    np.testing.assert_array_equal(runs[0][1], runs[1][1])


def self_play_summary(algorithm):
    found = self_play_of(algorithm)
    return (found.learner_steps, found.state.rating, [s.snapshot_id for s in found.state.window],
            found.controller.state_dict(), found.state.swaps)  # fmt: skip


def test_checkpoint_resumes_the_self_play_state(tmp_path):
    algorithm = leduc_algorithm()
    for _ in range(5):
        algorithm.train()
    before = self_play_summary(algorithm)
    path = save_checkpoint(algorithm, tmp_path / "checkpoint")
    weights = main_weights(algorithm)
    algorithm.stop()
    assert (path / FOLDER / "state.pt").is_file() and (path / FOLDER / "payoff.csv").is_file()
    load_pt(path / FOLDER / "state.pt")  # our files load without unpickling code

    resumed = leduc_algorithm()
    restore_checkpoint(resumed, path)
    restored = self_play_of(resumed)
    assert self_play_summary(resumed) == before
    np.testing.assert_array_equal(main_weights(resumed), weights)
    # the restored opponents are back in the env runner's ghost modules
    team = next(t for t in restored.teams if t != restored.controller.learning_team)
    (opponent,) = restored.state.opponents[team]
    ghost = resumed.env_runner_group.local_env_runner.module[ghost_module(team, 0)].get_state()
    key = next(k for k in opponent.snapshot.weights if k in ghost)
    np.testing.assert_array_equal(np.asarray(ghost[key]), opponent.snapshot.weights[key].numpy())
    result = resumed.train()
    assert result["Self-play"]["learner_steps"] > before[0]
    resumed.stop()


def test_rllibs_own_checkpoints_carry_the_self_play_state(tmp_path):
    algorithm = leduc_algorithm()
    assert isinstance(algorithm, GhostPPO)
    for _ in range(4):
        algorithm.train()
    before = self_play_summary(algorithm)
    weights = main_weights(algorithm)
    path = algorithm.save_to_path(tmp_path / "rllib")  # what Algorithm.save and Tune call
    algorithm.train()
    algorithm.restore_from_path(path)  # what Algorithm.restore and Tune's restore call
    assert self_play_summary(algorithm) == before
    algorithm.stop()
    assert (Path(path) / FOLDER / "state.pt").is_file()

    rebuilt = Algorithm.from_checkpoint(path)
    assert isinstance(rebuilt, GhostPPO)
    assert self_play_summary(rebuilt) == before
    np.testing.assert_array_equal(main_weights(rebuilt), weights)
    assert rebuilt.train()["Self-play"]["learner_steps"] > before[0]
    rebuilt.stop()


def test_a_checkpoint_without_self_play_state_restores_rllib_and_says_so(tmp_path, caplog):
    algorithm = leduc_algorithm()
    path = algorithm.save_to_path(tmp_path / "rllib")
    shutil.rmtree(Path(path) / FOLDER)
    with caplog.at_level("WARNING"):
        algorithm.restore_from_path(path)
    assert "holds no self-play state" in caplog.text
    with pytest.raises(FileNotFoundError, match="ghost_self_play/state.pt"):
        restore_checkpoint(algorithm, path)
    algorithm.stop()


def test_only_ppo_is_driven():
    from ray.rllib.algorithms.appo import APPOConfig

    with pytest.raises(GhostError, match="drives RLlib's PPO"):
        ghost_self_play(APPOConfig(), env="openspiel:leduc_poker")


def test_a_self_play_state_that_would_run_code_is_refused(tmp_path):
    class Exploit:
        def __reduce__(self):
            return (os.system, ("echo owned",))

    folder = tmp_path / FOLDER
    folder.mkdir()
    torch.save({"format": 1, "evil": Exploit()}, folder / "state.pt", pickle_protocol=2)
    algorithm = leduc_algorithm()
    with pytest.raises(CheckpointError):
        self_play_of(algorithm).load(tmp_path)
    algorithm.stop()
    assert pickle  # (the exploit above is a pickle payload)


def test_import_without_rllib_names_the_extra():
    script = textwrap.dedent(
        """
        import sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name == "ray" or name.startswith("ray."):
                    raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        sys.meta_path.insert(0, Block())
        try:
            import ghost.integrations.rllib
        except ModuleNotFoundError as error:
            print(error)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert "pip install 'ghost-trainer[rllib]'" in result.stdout, result.stderr


@pytest.mark.slow
def test_ppo_with_ghost_beats_random_at_connect_four():
    from ghost.integrations.rllib.evaluation import win_rate

    config = (
        PPOConfig()
        .env_runners(num_env_runners=0, num_envs_per_env_runner=8, rollout_fragment_length=64)
        .training(train_batch_size_per_learner=512, minibatch_size=128, num_epochs=4, lr=5e-4)
        .rl_module(model_config=DefaultModelConfig(fcnet_hiddens=[128, 128]))
    )
    config = ghost_self_play(
        config, env="openspiel:connect_four", seed=0,
        self_play={"save_steps": 1000, "swap_steps": 500, "team_change": 4000, "window": 10},
    )  # fmt: skip
    algorithm = config.build_algo()
    while self_play_of(algorithm).learner_steps < 30_000:
        algorithm.train()
    assert win_rate(algorithm, "connect_four", opponent="random", games=100) > 0.75
    algorithm.stop()
