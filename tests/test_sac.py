"""SAC: replay-buffer mask links, the update ratio, learning on toy tasks, exact resume."""

from __future__ import annotations

import copy
import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from mlagents_envs.base_env import ActionSpec, ActionTuple, BehaviorSpec

from envs.specs import vector_observation_spec
from envs.stepping import InProcessStepper, StepResult
from tests.toy_envs import ReachEnv, TargetEnv, _ToyEnv
from trainers.agent_processor import AgentProcessor
from trainers.base import ExperienceQueue
from trainers.buffers import ReplayBuffer
from trainers.hyperparameters import SACSettings
from trainers.rollout import Transitions
from trainers.run_files.layout import RunLayout
from trainers.sac import SACTrainer
from trainers.settings import NetworkSettings, RewardSignalSettings, TrainerSettings
from trainers.training_loop import TrainingLoop


@pytest.fixture(autouse=True)
def one_thread():
    torch.set_num_threads(1)


# -- a step-level driver for exact tests (learning runs use trainers.training_loop) ------------
def _trainer(
    hp: SACSettings,
    max_steps: int,
    path: Path,
    *,
    seed: int = 0,
    normalize: bool = False,
    **settings: Any,
) -> SACTrainer:
    network = NetworkSettings(hidden_units=32, normalize=normalize)
    trainer_settings = TrainerSettings(
        trainer_type="sac", hyperparameters=hp, max_steps=max_steps,
        network_settings=network, summary_freq=max(max_steps // 8, 1), **settings,
    )  # fmt: skip
    return SACTrainer(behavior_name="toy", settings=trainer_settings, artifact_dir=path, seed=seed)


def _connect(trainer: SACTrainer, stepper: InProcessStepper) -> dict:
    processors = {}
    for behavior_id, spec in stepper.behavior_specs.items():
        policy = trainer.create_policy(behavior_id, spec)
        trainer.add_policy(behavior_id, policy)
        queue = ExperienceQueue(behavior_id)
        trainer.subscribe_trajectory_queue(queue)
        processors[behavior_id] = AgentProcessor(policy=policy, queue=queue)
    return processors


def _run(
    trainer: SACTrainer,
    stepper: InProcessStepper,
    processors: dict,
    result: StepResult,
    env_steps: int | None = None,
) -> StepResult:
    """Step until training ends (or for ``env_steps`` steps); returns the latest step result."""
    done = 0
    while trainer.should_still_train and (env_steps is None or done < env_steps):
        actions = {b: processors[b].process(steps) for b, steps in result.items()}
        result = stepper.step({b: a for b, a in actions.items() if a is not None})
        trainer.advance()
        done += 1
    return result


def _train(env, hp: SACSettings, max_steps: int, path: Path, **kwargs) -> SACTrainer:
    """Train through the trainer stack's own loop (no ghosts)."""
    settings = _trainer(hp, max_steps, path, **kwargs).settings
    loop = TrainingLoop(
        behaviors={env.name: settings}, stepper=InProcessStepper(env), layout=RunLayout(path),
        seed=kwargs.get("seed", 0),
    )  # fmt: skip
    loop.run()
    trainer = loop.trainers[env.name]
    assert isinstance(trainer, SACTrainer)
    return trainer


# -- exact: replay buffer and update ratio ------------------------------------------------------
def _transitions(slots, masks, dones, reward=0.0, next_masks=None) -> Transitions:
    n = len(slots)
    masks = np.asarray(masks, bool)
    return Transitions(
        obs=[np.full((n, 1), reward, np.float32)], next_obs=[np.zeros((n, 1), np.float32)],
        continuous_raw=np.zeros((n, 0), np.float32), discrete=np.zeros((n, 1), np.int32),
        action_mask=masks,
        next_action_mask=np.zeros_like(masks) if next_masks is None else np.asarray(next_masks, bool),
        log_probs=np.zeros((n, 1), np.float32),
        rewards=np.full(n, reward, np.float32), dones=np.asarray(dones, bool),
        continues=~np.asarray(dones, bool), slots=np.asarray(slots),
    )  # fmt: skip


def test_replay_buffer_keeps_next_action_masks_and_wraps():
    buffer = ReplayBuffer(capacity=4)
    a, b, c = [True, False], [False, True], [False, False]
    buffer.add(_transitions([0, 1], [a, a], [False, True], reward=1.0, next_masks=[b, c]))
    buffer.add(_transitions([0, 1], [b, b], [False, False], reward=2.0, next_masks=[a, a]))
    np.testing.assert_array_equal(buffer.state_dict()["arrays"]["next_action_mask"], [b, c, a, a])
    buffer.add(_transitions([1], [a], [False], reward=3.0, next_masks=[b]))  # overwrites row 0
    rings = buffer.state_dict()["arrays"]
    np.testing.assert_array_equal(rings["next_action_mask"], [b, c, a, a])
    np.testing.assert_array_equal(rings["rewards"], [3.0, 1.0, 2.0, 2.0])
    assert len(buffer) == 4
    batch = buffer.sample(64, np.random.default_rng(0))
    # every drawn row's observation matches its reward (rows stay aligned across rings)
    np.testing.assert_array_equal(batch.obs[0][:, 0], batch.rewards)
    assert set(batch.rewards.tolist()) == {1.0, 2.0, 3.0}


def test_replay_buffer_state_round_trip_does_not_alias():
    buffer = ReplayBuffer(capacity=8)
    buffer.add(_transitions([0, 1], [[True, False]] * 2, [False, False], reward=1.0))
    copy_of = ReplayBuffer(capacity=8)
    copy_of.load_state_dict(buffer.state_dict())
    buffer.add(_transitions([0, 1], [[False, True]] * 2, [False, False], reward=2.0))
    assert len(copy_of) == 2 and len(buffer) == 4
    np.testing.assert_array_equal(copy_of.state_dict()["arrays"]["rewards"][:4], [1, 1, 0, 0])


@pytest.mark.parametrize("steps_per_update", [0.5, 10.0])
def test_updates_follow_steps_per_update_after_init_steps(tmp_path, steps_per_update):
    hp = SACSettings(batch_size=32, buffer_init_steps=160, steps_per_update=steps_per_update)
    trainer = _trainer(hp, 10**6, tmp_path)
    stepper = InProcessStepper(TargetEnv(seed=0))
    processors = _connect(trainer, stepper)
    result = _run(trainer, stepper, processors, stepper.reset(), env_steps=10)
    assert trainer.step == 144 and trainer.updates == 0  # 9 steps of 16 agents have outcomes
    _run(trainer, stepper, processors, result, env_steps=5)
    assert trainer.step == 224
    assert trainer.updates == int((224 - 160) / steps_per_update)


def test_only_real_terminations_stop_bootstrapping(tmp_path):
    # reward 1 everywhere; state A always terminates, state B is always cut (bootstrapped), so
    # with gamma 0.5 and a negligible entropy bonus Q(A) = 1 and Q(B) = 1 + 0.5 Q(B) = 2
    hp = SACSettings(batch_size=64, learning_rate=3e-3, init_entcoef=1e-6, tau=0.5)
    signals = {"extrinsic": RewardSignalSettings(gamma=0.5)}
    trainer = _trainer(hp, 1000, tmp_path, reward_signals=signals)
    _connect(trainer, InProcessStepper(ReachEnv(seed=0)))
    n = 32
    obs = np.repeat(np.array([[0.0, 0.0], [0.5, 0.5]], np.float32), n // 2, axis=0)
    trainer.buffer.add(
        Transitions(
            obs=[obs],
            next_obs=[obs.copy()],
            action_mask=None,
            next_action_mask=None,
            continuous_raw=np.random.default_rng(0).normal(size=(n, 2)).astype(np.float32),
            discrete=np.zeros((n, 0), np.int32),
            log_probs=np.zeros((n, 2), np.float32),
            rewards=np.ones(n, np.float32),
            dones=np.arange(n) < n // 2,
            continues=np.zeros(n, bool),
            slots=np.arange(n),
        )
    )
    for _ in range(500):
        trainer._gradient_step()
    with torch.no_grad():
        q = trainer.q1([torch.tensor([[0.0, 0.0], [0.5, 0.5]])], torch.zeros(2, 2)).squeeze(1)
    torch.testing.assert_close(q, torch.tensor([1.0, 2.0]), atol=0.05, rtol=0)


# -- learning -----------------------------------------------------------------------------------
def test_sac_learns_continuous_task(tmp_path):
    hp = SACSettings(batch_size=128, buffer_size=10000, learning_rate=3e-3, steps_per_update=4.0)
    trainer = _train(ReachEnv(seed=0), hp, 8000, tmp_path)
    reward = trainer.stats.latest["Environment/Cumulative Reward"]
    # optimum 5, the untrained policy about 1.7; seeds 0-3 reach 4.29-4.35
    assert reward > 3.8
    assert trainer.stats.latest["Policy/Continuous Entropy Coeff"] < 1.0


def test_sac_learns_discrete_task_and_respects_masks(tmp_path):
    env = TargetEnv(seed=0)
    hp = SACSettings(batch_size=128, buffer_size=5000, learning_rate=3e-3, steps_per_update=4.0)
    trainer = _train(env, hp, 4000, tmp_path)
    reward = trainer.stats.latest["Environment/Cumulative Reward"]
    # optimum 5, random about 2.5; seeds 0-3 reach 4.65-4.70
    assert reward > 4.2
    assert env.chosen_masked == 0


class HybridEnv(_ToyEnv):
    """TargetEnv and ReachEnv at once, plus a second discrete branch whose choice 0 pays 0.5."""

    name = "Hybrid"
    spec = BehaviorSpec([vector_observation_spec(5)], ActionSpec(2, (3, 2)))

    def _new_targets(self) -> None:
        n = self.num_agents
        self.target = self.rng.integers(0, 3, n)
        self.point = self.rng.uniform(-0.8, 0.8, (n, 2)).astype(np.float32)
        self.masked = np.zeros((n, 3), bool)
        self.masked[np.arange(n), (self.target + self.rng.integers(1, 3, n)) % 3] = True
        self.chosen_masked = getattr(self, "chosen_masked", 0)

    def _obs(self) -> np.ndarray:
        return np.concatenate([np.eye(3, dtype=np.float32)[self.target], self.point], axis=1)

    def _mask(self) -> list[np.ndarray]:
        return [self.masked.copy(), np.zeros((self.num_agents, 2), bool)]

    def _reward(self, action: ActionTuple) -> np.ndarray:
        chosen = action.discrete[:, 0]
        self.chosen_masked += int(self.masked[np.arange(self.num_agents), chosen].sum())
        reach = 1.0 - np.abs(action.continuous - self.point).mean(axis=1)
        return (chosen == self.target) + reach + 0.5 * (action.discrete[:, 1] == 0)


def test_sac_learns_hybrid_multi_branch_task(tmp_path):
    env = HybridEnv(seed=0)
    hp = SACSettings(batch_size=128, buffer_size=5000, learning_rate=3e-3, steps_per_update=4.0)
    trainer = _train(env, hp, 4000, tmp_path)
    latest = trainer.stats.latest
    # optimum 12.5, untrained about 5.6
    assert latest["Environment/Cumulative Reward"] > 9.0
    assert env.chosen_masked == 0
    for key in ("Losses/Q1 Loss", "Losses/Policy Loss", "Policy/Discrete Entropy Coeff"):
        assert np.isfinite(latest[key])


# -- persistence --------------------------------------------------------------------------------
def _through_bytes(state: dict) -> dict:
    stream = io.BytesIO()
    torch.save(state, stream)
    stream.seek(0)
    return torch.load(stream, weights_only=False)


def test_state_dict_round_trip_continues_exactly(tmp_path):
    hp = SACSettings(batch_size=64, learning_rate=1e-3, save_replay_buffer=True)
    env_steps = 30
    original = _trainer(hp, 10**6, tmp_path / "a", seed=3, normalize=True)
    stepper = InProcessStepper(TargetEnv(seed=3))
    processors = _connect(original, stepper)
    result = _run(original, stepper, processors, stepper.reset(), env_steps=env_steps)
    assert original.updates > 0
    state = _through_bytes(original.state_dict())
    fork_stepper, fork_result = copy.deepcopy((stepper, result))
    _run(original, stepper, processors, result, env_steps=5)

    resumed = _trainer(hp, 10**6, tmp_path / "b", seed=99, normalize=True)
    fork_processors = _connect(resumed, fork_stepper)
    resumed.load_state_dict(state)
    assert resumed.step == state["step"] and resumed.updates == state["learner"]["updates"]
    assert len(resumed.buffer) == state["step"]
    _run(resumed, fork_stepper, fork_processors, fork_result, env_steps=5)

    assert resumed.step == original.step and resumed.updates == original.updates
    for name in ("q1", "q2", "q1_target", "q2_target"):
        expected = getattr(original, name).state_dict()
        for key, value in getattr(resumed, name).state_dict().items():
            torch.testing.assert_close(value, expected[key])
    for key, value in resumed.policy.get_weights().items():
        torch.testing.assert_close(value, original.policy.get_weights()[key])
    expected_opt = original.q_optimizer.state_dict()["state"]
    got_opt = resumed.q_optimizer.state_dict()["state"]
    assert expected_opt.keys() == got_opt.keys() and expected_opt
    for index in expected_opt:
        torch.testing.assert_close(got_opt[index]["exp_avg"], expected_opt[index]["exp_avg"])
        torch.testing.assert_close(got_opt[index]["step"], expected_opt[index]["step"])
    torch.testing.assert_close(resumed.log_ent_coef_discrete, original.log_ent_coef_discrete)


def test_batch_larger_than_buffer_is_refused_by_the_settings():
    with pytest.raises(ValueError, match=r"batch_size \(256\) is larger than buffer_size \(128\)"):
        SACSettings(batch_size=256, buffer_size=128)


def test_replay_buffer_is_saved_only_on_request(tmp_path):
    trainer = _trainer(SACSettings(batch_size=16), 10**6, tmp_path)
    stepper = InProcessStepper(TargetEnv(seed=0))
    _run(trainer, stepper, _connect(trainer, stepper), stepper.reset(), env_steps=3)
    assert "buffer" not in trainer.state_dict()["learner"]
