"""Curiosity and RND: unfamiliar experience pays more, PPO trains and resumes with them, and on
the sparse-reward hallway they reach the goal that the extrinsic reward alone never shows."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from mlagents_envs.base_env import ActionSpec, BehaviorSpec

from envs.hallway import NEAR_REWARD, Hallway
from envs.specs import vector_observation_spec
from envs.stepping import InProcessStepper
from trainers.hyperparameters import PPOSettings
from trainers.intrinsic_rewards import Curiosity, RandomNetworkDistillation
from trainers.rollout import Transitions
from trainers.run_layout import RunLayout
from trainers.settings import (
    CuriositySettings,
    NetworkSettings,
    RewardSignalSettings,
    RNDSettings,
    TrainerSettings,
)
from trainers.training_loop import TrainingLoop

SPEC = BehaviorSpec(
    observation_specs=[vector_observation_spec(8)], action_spec=ActionSpec.create_discrete((2,))
)


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def moves(cells: list[int], steps: list[int]) -> Transitions:
    """One-hot cell ``c`` to ``c + step`` for each pair, action 1 for a step right."""
    obs = np.eye(8, dtype=np.float32)[cells]
    next_obs = np.eye(8, dtype=np.float32)[np.add(cells, steps)]
    n = len(cells)
    return Transitions(
        obs=[obs], next_obs=[next_obs],
        continuous_raw=np.zeros((n, 0), np.float32),
        discrete=(np.asarray(steps) > 0).astype(np.int64)[:, None],
        action_mask=None, next_action_mask=None,
        log_probs=np.zeros((n, 1), np.float32), rewards=np.zeros(n, np.float32),
        dones=np.zeros(n, bool), continues=np.ones(n, bool), slots=np.arange(n),
    )  # fmt: skip


@pytest.mark.parametrize("kind", ["curiosity", "rnd"])
def test_familiar_experience_pays_less_than_new(kind):
    torch.manual_seed(0)
    network = NetworkSettings(hidden_units=16, num_layers=1)
    signal = (
        Curiosity(SPEC, CuriositySettings(network_settings=network, learning_rate=1e-2))
        if kind == "curiosity"
        else RandomNetworkDistillation(
            SPEC, RNDSettings(network_settings=network, learning_rate=1e-2)
        )
    )
    familiar = moves([0, 1, 2, 1, 2, 3] * 20, [1, 1, 1, -1, -1, -1] * 20)
    new = moves([5, 6], [1, 1])
    losses = [signal.update(familiar, np.arange(len(familiar))) for _ in range(100)]
    first, last = losses[0], losses[-1]
    assert all(last[name] < 0.5 * first[name] for name in first)  # every loss falls
    assert signal.rewards(new).mean() > 3 * signal.rewards(familiar).mean()
    if kind == "curiosity":
        assert set(first) == {"Losses/Curiosity Forward Loss", "Losses/Curiosity Inverse Loss"}
    else:
        assert set(first) == {"Losses/RND Loss"}


def test_curiosity_pays_nothing_before_it_has_trained_and_at_most_one_after_strength():
    signal = Curiosity(SPEC, CuriositySettings(strength=50.0))
    data = moves([0, 1], [1, 1])
    assert (signal.rewards(data) == 0).all()
    signal.update(data, np.arange(2))
    assert (signal.rewards(data) * signal.strength <= 1.0 + 1e-6).all()


def hallway_settings(max_steps: int, **signals) -> TrainerSettings:
    return TrainerSettings(
        hyperparameters=PPOSettings(batch_size=256, buffer_size=2048, beta=5.0e-3),
        network_settings=NetworkSettings(hidden_units=64),
        reward_signals={"extrinsic": RewardSignalSettings(), **signals},
        max_steps=max_steps,
        summary_freq=max_steps,
        checkpoint_interval=max_steps // 2,
        time_horizon=64,
    )


def train_hallway(path, settings: TrainerSettings, *, seed: int = 0, resume: bool = False):
    torch.manual_seed(seed)
    loop = TrainingLoop(
        behaviors={"Hallway": settings},
        stepper=InProcessStepper(Hallway(seed=seed)),
        layout=RunLayout(path),
        seed=seed,
    )
    loop.run(resume=resume)
    return loop


def test_ppo_reports_ml_agents_tags_and_resumes_every_network(tmp_path):
    signals = {"curiosity": CuriositySettings(strength=0.1), "rnd": RNDSettings(strength=0.1)}
    loop = train_hallway(tmp_path, hallway_settings(4096, **signals))
    trainer = loop.trainers["Hallway"]
    tags = set(trainer.stats.latest)
    assert {
        "Policy/Curiosity Reward", "Policy/Curiosity Value Estimate",
        "Losses/Curiosity Forward Loss", "Losses/Curiosity Inverse Loss",
        "Policy/RND Reward", "Policy/RND Value Estimate", "Losses/RND Loss",
        "Policy/Extrinsic Value Estimate", "Losses/Value Loss",
    } <= tags  # fmt: skip
    saved = trainer.state_dict()["learner"]["reward_signals"]
    resumed = train_hallway(tmp_path, hallway_settings(4096, **signals), resume=True)
    again = resumed.trainers["Hallway"]
    for key in ("curiosity", "rnd"):
        torch.testing.assert_close(
            again.signal_critics[key].state_dict(), trainer.signal_critics[key].state_dict()
        )
        restored = again.signals[key].state_dict()
        for name, tensor in saved[key].get("modules", saved[key].get("predictor")).items():
            part = restored.get("modules", restored.get("predictor"))
            torch.testing.assert_close(part[name], tensor)


@pytest.mark.slow
def test_curiosity_walks_past_the_near_exit_that_the_extrinsic_reward_settles_for(tmp_path):
    """150k steps, seed 0 (scripts/exploration_bonus.py measures 3 seeds)."""
    curious = train_hallway(
        tmp_path / "c", hallway_settings(150_000, curiosity=CuriositySettings(strength=0.1))
    )
    plain = train_hallway(tmp_path / "p", hallway_settings(150_000))
    reward = "Environment/Cumulative Reward"
    assert curious.trainers["Hallway"].stats.latest[reward] > 0.8  # the far end pays 1
    assert plain.trainers["Hallway"].stats.latest[reward] < 2 * NEAR_REWARD
