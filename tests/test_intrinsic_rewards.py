"""Curiosity and RND: unfamiliar experience pays more, PPO, SAC and POCA train and resume with
them, and on the sparse-reward hallway they reach the goal that the extrinsic reward alone never
shows."""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np
import pytest
import torch
from mlagents_envs.base_env import ActionSpec, BehaviorSpec

from envs.behavior_id import BehaviorId
from envs.hallway import NEAR_REWARD, Hallway
from envs.specs import vector_observation_spec
from envs.stepping import InProcessStepper
from tests.group_envs import SacrificeEnv
from trainers.exceptions import CheckpointError
from trainers.hyperparameters import POCASettings, PPOSettings, SACSettings
from trainers.intrinsic_rewards import Curiosity, RandomNetworkDistillation
from trainers.poca import POCATrainer
from trainers.rollout import Transitions
from trainers.run_files.layout import RunLayout
from trainers.sac import SACTrainer
from trainers.settings import (
    CuriositySettings,
    MemorySettings,
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
        ended=np.zeros(n, bool), group_rewards=np.zeros(n, np.float32),
        groups=np.zeros(n, np.int64),
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


# -- SAC and POCA ----------------------------------------------------------------------------------
SIGNALS = {"curiosity": CuriositySettings(strength=0.1), "rnd": RNDSettings(strength=0.1)}
TAGS = {
    "curiosity": {"Policy/Curiosity Reward", "Policy/Curiosity Value Estimate",
                  "Losses/Curiosity Forward Loss", "Losses/Curiosity Inverse Loss"},
    "rnd": {"Policy/RND Reward", "Policy/RND Value Estimate", "Losses/RND Loss"},
}  # fmt: skip
FAST_SIGNALS = {
    "curiosity": CuriositySettings(
        network_settings=NetworkSettings(hidden_units=16, num_layers=1), learning_rate=1e-2
    ),
    "rnd": RNDSettings(
        network_settings=NetworkSettings(hidden_units=16, num_layers=1), learning_rate=1e-2
    ),
}


def assert_same_state(got: Any, expected: Any, where: str = "state") -> None:
    """Nested state dicts hold the same tensors, arrays and values."""
    if isinstance(expected, dict):
        assert got.keys() == expected.keys(), where
        for key in expected:
            assert_same_state(got[key], expected[key], f"{where}.{key}")
    elif isinstance(expected, list | tuple):
        assert len(got) == len(expected), where
        for index, (a, b) in enumerate(zip(got, expected, strict=True)):
            assert_same_state(a, b, f"{where}[{index}]")
    elif isinstance(expected, torch.Tensor | np.ndarray):
        torch.testing.assert_close(torch.as_tensor(got), torch.as_tensor(expected), msg=where)
    else:
        assert got == expected, where


def _memory(memory: bool) -> MemorySettings | None:
    return MemorySettings(memory_size=16, sequence_length=8) if memory else None


def sac_hallway_settings(max_steps: int, *, memory: bool = False, **signals) -> TrainerSettings:
    return TrainerSettings(
        trainer_type="sac",
        hyperparameters=SACSettings(
            batch_size=64, buffer_size=4000, buffer_init_steps=200, steps_per_update=4.0,
            save_replay_buffer=True,
        ),
        network_settings=NetworkSettings(hidden_units=32, memory=_memory(memory)),
        reward_signals={"extrinsic": RewardSignalSettings(), **signals},
        max_steps=max_steps, summary_freq=max_steps, checkpoint_interval=max_steps,
    )  # fmt: skip


@pytest.mark.parametrize("memory", [False, True], ids=["plain", "memory"])
def test_sac_reports_the_tags_and_resumes_every_signal_network(tmp_path, memory):
    settings = sac_hallway_settings(1000, memory=memory, **SIGNALS)
    trainer = train_hallway(tmp_path, settings).trainers["Hallway"]
    assert trainer.updates > 150
    assert TAGS["curiosity"] | TAGS["rnd"] | {"Policy/Extrinsic Value Estimate"} <= set(
        trainer.stats.latest
    )
    assert trainer.stats.latest["Policy/Curiosity Reward"] > 0
    saved = trainer.state_dict()["learner"]
    again = train_hallway(tmp_path, settings, resume=True).trainers["Hallway"]
    assert again.updates == trainer.updates
    for key, signal in again.signals.signals.items():
        assert_same_state(signal.state_dict(), saved["reward_signals"][key], key)
    for name in ("q1", "q2_target", "q_optimizer"):
        assert_same_state(getattr(again, name).state_dict(), saved[name], name)


@pytest.mark.parametrize("ratio", [2.0, 0.5])
def test_sac_updates_the_signals_once_per_reward_signal_steps_per_update(tmp_path, ratio):
    settings = sac_hallway_settings(600, rnd=SIGNALS["rnd"])
    settings = attrs.evolve(
        settings,
        hyperparameters=attrs.evolve(
            settings.hyperparameters, reward_signal_steps_per_update=4.0 * ratio
        ),
    )
    trainer = train_hallway(tmp_path, settings).trainers["Hallway"]
    assert trainer.updates > 50
    assert trainer.signal_updates == pytest.approx(trainer.updates / ratio, abs=1)
    saved = trainer.state_dict()["learner"]
    assert saved["signal_updates"] == trainer.signal_updates


def test_sac_refuses_to_resume_with_other_reward_signals(tmp_path):
    train_hallway(tmp_path, sac_hallway_settings(300, rnd=SIGNALS["rnd"]))
    with pytest.raises(CheckpointError, match=r"signals \[rnd\] and the configuration names"):
        train_hallway(tmp_path, sac_hallway_settings(300), resume=True)


def train_pair(path, *, memory: bool = False, max_steps: int = 1200, resume: bool = False):
    settings = TrainerSettings(
        trainer_type="poca",
        hyperparameters=POCASettings(batch_size=128, buffer_size=256),
        network_settings=NetworkSettings(hidden_units=16, memory=_memory(memory)),
        reward_signals={"extrinsic": RewardSignalSettings(), **SIGNALS},
        max_steps=max_steps, summary_freq=max_steps, checkpoint_interval=max_steps,
    )  # fmt: skip
    torch.manual_seed(0)
    loop = TrainingLoop(
        behaviors={"Pair": settings}, stepper=InProcessStepper(SacrificeEnv(seed=0)),
        layout=RunLayout(path), seed=0,
    )  # fmt: skip
    loop.run(resume=resume)
    return loop.trainers["Pair"]


@pytest.mark.parametrize("memory", [False, True], ids=["plain", "memory"])
def test_poca_reports_the_tags_and_resumes_every_signal_network(tmp_path, memory):
    trainer = train_pair(tmp_path, memory=memory)
    baselines = {"Policy/Curiosity Baseline Estimate", "Policy/RND Baseline Estimate"}
    assert TAGS["curiosity"] | TAGS["rnd"] | baselines <= set(trainer.stats.latest)
    # the signals read one agent's observation, not its group's
    assert (
        trainer.signals["rnd"].target.encoder.output_size
        == SacrificeEnv.spec.observation_specs[0].shape[0]
    )
    saved = trainer.state_dict()["learner"]
    again = train_pair(tmp_path, memory=memory, resume=True)
    for key, signal in again.signals.items():
        assert_same_state(
            {"critic": again.signal_critics[key].state_dict(), **signal.state_dict()},
            {name: part for name, part in saved["reward_signals"][key].items()
             if name not in ("critic_memories", "baseline_memories")},
            key,
        )  # fmt: skip
        if memory:  # kept from one rollout to the next; the environments restart at resume
            for part in ("critic_memories", "baseline_memories"):
                assert saved["reward_signals"][key][part]["memory"].any()
            assert not again.signal_baseline_memories[key].memory.any()
    assert_same_state(again.optimizer.state_dict(), saved["optimizer"], "optimizer")


@pytest.mark.parametrize("kind", ["curiosity", "rnd"])
@pytest.mark.parametrize("trainer_type", ["sac", "poca"])
def test_trained_by_the_trainer_familiar_experience_pays_less_than_new(
    tmp_path, kind, trainer_type
):
    """The trainer's own update path trains the signal: SAC on replay minibatches, POCA on its
    buffer's minibatches."""
    torch.manual_seed(0)
    familiar = moves([0, 1, 2, 1, 2, 3] * 20, [1, 1, 1, -1, -1, -1] * 20)
    new = moves([5, 6], [1, 1])
    hyperparameters = (
        SACSettings(batch_size=64, buffer_init_steps=0)
        if trainer_type == "sac"
        else POCASettings(batch_size=60, buffer_size=len(familiar) - 1, num_epoch=1)
    )
    settings = TrainerSettings(
        trainer_type=trainer_type,
        hyperparameters=hyperparameters,
        network_settings=NetworkSettings(hidden_units=16, num_layers=1),
        reward_signals={"extrinsic": RewardSignalSettings(), kind: FAST_SIGNALS[kind]},
    )
    kind_of = SACTrainer if trainer_type == "sac" else POCATrainer
    trainer = kind_of(behavior_name="Moves", settings=settings, artifact_dir=tmp_path)
    behavior = BehaviorId("Moves", 0)
    trainer.add_policy(behavior, trainer.create_policy(behavior, SPEC))
    if trainer_type == "sac":
        trainer._take(familiar)
        for _ in range(100):
            trainer._gradient_step()
        signal = trainer.signals.signals[kind]
    else:
        for _ in range(50):
            trainer._take(familiar)
            trainer._update()
        signal = trainer.signals[kind]
    assert signal.rewards(new).mean() > 3 * signal.rewards(familiar).mean()


def test_sac_self_play_with_curiosity_and_rnd_swaps_opponents_and_resumes(tmp_path):
    """The ghost hands the wrapped trainer only the learning team's experience
    (``tests/test_ghost.py``), and the signals learn only inside its update."""
    import ghost
    from tests.fake_envs import make_duel

    duel = {
        "trainer_type": "sac",
        "hyperparameters": {"batch_size": 32, "buffer_size": 2000, "steps_per_update": 8},
        "network_settings": {"hidden_units": 16},
        "reward_signals": {"extrinsic": {}, "curiosity": {"strength": 0.1}, "rnd": {}},
        "max_steps": 400, "summary_freq": 200, "checkpoint_interval": 200,
        "self_play": {"save_steps": 100, "swap_steps": 50, "team_change": 200},
    }  # fmt: skip
    first = ghost.train({"behaviors": {"Duel": duel}}, env=make_duel, run_id="duel",
                        results_dir=tmp_path, seed=1, verbose=0)  # fmt: skip
    assert first.steps["Duel"] >= 400
    longer = {"behaviors": {"Duel": {**duel, "max_steps": 600}}}
    resumed = ghost.train(longer, env=make_duel, run_id="duel", results_dir=tmp_path,
                          resume=True, verbose=0)  # fmt: skip
    assert resumed.steps["Duel"] >= 600
