"""``envs.versus_scripted``: a built-in game with one side scripted, as a one-team environment."""

from __future__ import annotations

import importlib
import pickle

import numpy as np
import pytest
from mlagents_envs.base_env import ActionTuple

from envs import versus_scripted
from envs.sources import resolve_env
from envs.versus_scripted import VersusScripted, VersusScriptedFactory


def test_only_the_learner_is_exposed_and_the_level_plays_the_other_side() -> None:
    env = versus_scripted.tennis_vs_strong(worker_id=0, seed=3)
    assert list(env.behavior_specs) == ["Tennis?team=0"]
    with pytest.raises(KeyError, match="only the learner"):
        env.get_steps("Tennis?team=1")
    start = env.game.player_x.copy()
    for _ in range(5):
        env.step()  # the learner's actions default to zeros: it stands still
    assert np.array_equal(env.game.player_x[:, 0], start[:, 0])
    assert not np.allclose(env.game.player_x[:, 1], start[:, 1])  # the strong level ran


def test_the_learner_loses_points_to_a_strong_level_by_standing_still() -> None:
    env = VersusScripted(game="volley", level="strong", seed=0, num_arenas=16)
    name = "Volley?team=0"
    rewards = []
    for _ in range(300):
        env.set_actions(name, ActionTuple(continuous=np.zeros((16, 2), np.float32)))
        env.step()
        rewards += list(env.get_steps(name)[1].reward)
    assert len(rewards) > 16 and np.mean(rewards) < -0.9


def test_asymmetric_learner_side_and_errors() -> None:
    env = VersusScripted(game="strikers_vs_goalie", level="weak", learner="Goalie", num_arenas=2)
    assert list(env.behavior_specs) == ["Goalie?team=1"]
    assert list(env.opponents) == ["Striker?team=0"]
    decision, _ = env.get_steps("Goalie?team=1")
    env.set_actions("Goalie?team=1", ActionTuple(discrete=np.zeros((len(decision), 3), np.int32)))
    env.step()
    with pytest.raises(ValueError, match="valid levels"):
        VersusScripted(game="tennis", level="expert")
    with pytest.raises(ValueError, match="Goalie"):
        VersusScripted(game="strikers_vs_goalie", level="weak", learner="Keeper")


def test_factories_by_name_pickle_and_resolve_as_env_sources() -> None:
    module = importlib.import_module("envs.versus_scripted")
    factory = module.strikers_vs_goalie_vs_medium
    assert factory == VersusScriptedFactory("strikers_vs_goalie", "medium")
    assert pickle.loads(pickle.dumps(factory)) == factory
    assert versus_scripted.factory_name("volley", "weak") == "volley_vs_weak"
    for missing in ("tennis_vs_expert", "golf_vs_medium", "make_env"):
        assert not hasattr(module, missing)
    source = resolve_env("envs.versus_scripted:volley_vs_weak")
    env = source(worker_id=1, seed=2)
    assert list(env.behavior_specs) == ["Volley?team=0"]


def test_same_seed_same_game() -> None:
    def rewards(seed: int) -> list[float]:
        env = versus_scripted.volley_vs_medium(worker_id=0, seed=seed)
        out: list[float] = []
        for _ in range(150):
            env.step()
            out += list(env.get_steps("Volley?team=0")[1].reward)
            out += list(env.get_steps("Volley?team=0")[0].obs[0][:, 3])
        return out

    assert rewards(4) == rewards(4)
    assert rewards(4) != rewards(5)
