"""``network_settings.memory`` with SAC and POCA: SAC's replay of whole sequences, updates that
padding does not change, exact resume, self-play with memory, and the recurrent ``.onnx`` brain
of a trained policy acting like the torch one."""

from __future__ import annotations

import copy
import io
from pathlib import Path

import attrs
import numpy as np
import pytest
import torch
from mlagents_envs.base_env import ActionSpec

import ghost
from envs.behavior_id import BehaviorId
from envs.recall import CUES, Recall
from envs.specs import vector_observation_spec
from envs.stepping import InProcessStepper, StepResult
from tests.group_envs import SacrificeEnv
from trainers.agent_processor import AgentProcessor
from trainers.base import ExperienceQueue
from trainers.group_critic import GroupCritic
from trainers.hyperparameters import POCASettings, SACSettings
from trainers.memory import act_on_steps
from trainers.policy import TorchPolicy, load_policy
from trainers.rollout import Transitions
from trainers.run_files.layout import RunLayout
from trainers.run_files.safe_load import SAFE_GLOBALS
from trainers.sac import SACTrainer
from trainers.sequence_replay import SequenceReplayBuffer
from trainers.settings import (
    MemorySettings,
    NetworkSettings,
    RewardSignalSettings,
    ScheduleType,
    TrainerSettings,
)
from trainers.training_loop import TrainingLoop

pytestmark = pytest.mark.usefixtures("one_torch_thread")

BEHAVIOR = "Recall?team=0"


# -- SAC's sequence replay -------------------------------------------------------------------------
def _steps(slots, continues, step: int, memory_size: int = 2) -> Transitions:
    """Transitions of agents ``slots`` at ``step``: each row's observation is ``[step, slot]`` and
    its stored memory ``10 * step + slot`` everywhere."""
    slots = np.asarray(slots)
    n = len(slots)
    obs = np.stack([np.full(n, step), slots], axis=1).astype(np.float32)
    return Transitions(
        obs=[obs], next_obs=[obs + [1, 0]],
        continuous_raw=np.zeros((n, 0), np.float32), discrete=np.zeros((n, 1), np.int32),
        action_mask=None, next_action_mask=None, log_probs=np.zeros((n, 1), np.float32),
        rewards=np.full(n, step, np.float32), dones=~np.asarray(continues),
        continues=np.asarray(continues), slots=slots,
        memories=np.repeat((10 * step + slots)[:, None], memory_size, 1).astype(np.float32),
    )  # fmt: skip


def _all_sequences(buffer: SequenceReplayBuffer) -> list[tuple[list[float], float]]:
    """Every sequence in the ring as (its real steps' ``step`` values, its start memory)."""
    state = buffer.state_dict()
    found = []
    for row in range(buffer.sequences):
        steps = state["ring"]["obs.0"][row, state["valid"][row], 0].tolist()
        found.append((steps, float(state["start_memory"][row, 0])))
    return found


def test_sequences_follow_each_agent_and_end_with_its_trajectory():
    buffer = SequenceReplayBuffer(capacity=30, sequence_length=3)
    # agents 0 and 1 act together; agent 1's episode ends after step 1; agent 2 joins at step 2
    buffer.add(_steps([0, 1], [True, True], 0))
    buffer.add(_steps([0, 1], [True, False], 1))
    assert len(buffer) == 2 and buffer.sequences == 1  # agent 1's trajectory stopped
    buffer.add(_steps([0, 2], [True, True], 2))  # agent 0's sequence is full
    buffer.add(_steps([0, 2], [True, True], 3))
    assert _all_sequences(buffer) == [([0.0, 1.0], 1.0), ([0.0, 1.0, 2.0], 0.0)]
    buffer.flush()  # the environments reset: staged steps become (padded) sequences
    assert _all_sequences(buffer)[2:] == [([3.0], 30.0), ([2.0, 3.0], 22.0)]
    assert len(buffer) == 8
    batch = buffer.sample(6, np.random.default_rng(1))  # two sequences of three rows
    assert len(batch.rewards) == 6 and batch.valid.shape == (6,)
    assert batch.start_memories.shape == (2, 2)


def test_an_agent_twice_in_one_batch_keeps_its_steps_in_order():
    buffer = SequenceReplayBuffer(capacity=30, sequence_length=4)
    twice = Transitions.concatenate([_steps([5], [False], 0), _steps([5], [True], 1)])
    buffer.add(twice)
    buffer.flush()
    assert _all_sequences(buffer) == [([0.0], 5.0), ([1.0], 15.0)]


def test_the_ring_overwrites_its_oldest_sequences():
    buffer = SequenceReplayBuffer(capacity=4, sequence_length=2)  # room for two sequences
    for step in range(3):
        buffer.add(_steps([0], [False], step))
    assert buffer.sequences == 2 and len(buffer) == 2
    assert sorted(_all_sequences(buffer)) == [([1.0], 10.0), ([2.0], 20.0)]


# -- SAC's update on sequences ---------------------------------------------------------------------
def _sac_settings(
    max_steps: int, *, sequence_length: int = 8, save_replay_buffer: bool = True
) -> TrainerSettings:
    return TrainerSettings(
        trainer_type="sac",
        hyperparameters=SACSettings(
            batch_size=64, buffer_size=4000, buffer_init_steps=200, steps_per_update=4.0,
            learning_rate=1e-3, save_replay_buffer=save_replay_buffer,
        ),
        network_settings=NetworkSettings(
            hidden_units=16, num_layers=1,
            memory=MemorySettings(memory_size=16, sequence_length=sequence_length),
        ),
        reward_signals={"extrinsic": RewardSignalSettings()},
        max_steps=max_steps, summary_freq=max_steps, checkpoint_interval=max_steps,
        time_horizon=64,
    )  # fmt: skip


def _sac(path: Path, settings: TrainerSettings, seed: int = 0) -> tuple[SACTrainer, dict]:
    """A SAC trainer for recall, and the agent processor of its one behavior id."""
    trainer = SACTrainer(behavior_name="Recall", settings=settings, artifact_dir=path, seed=seed)
    behavior_id = BehaviorId.parse(BEHAVIOR)
    policy = trainer.create_policy(behavior_id, Recall(num_arenas=1).behavior_specs[BEHAVIOR])
    trainer.add_policy(behavior_id, policy)
    queue = ExperienceQueue(behavior_id)
    trainer.subscribe_trajectory_queue(queue)
    return trainer, {behavior_id: AgentProcessor(policy=policy, queue=queue)}


def _drive(trainer, stepper, processors, result: StepResult, env_steps: int) -> StepResult:
    for _ in range(env_steps):
        actions = {b: processors[b].process(steps) for b, steps in result.items()}
        result = stepper.step({b: a for b, a in actions.items() if a is not None})
        trainer.advance()
    return result


def test_padding_changes_nothing_in_a_sac_update(tmp_path):
    """One recall episode (five steps) as a sequence of five, and as one of eight with three rows
    of padding: the update moves every network the same way."""
    rng = np.random.default_rng(0)
    episode = []
    for step in range(5):
        obs = rng.normal(size=(1, CUES + 2)).astype(np.float32)
        episode.append(
            attrs.evolve(
                _steps([0], [step < 4], step, memory_size=16),
                obs=[obs], next_obs=[obs + 1],
                discrete=rng.integers(0, CUES, (1, 1)).astype(np.int32),
                action_mask=np.zeros((1, CUES), bool), next_action_mask=np.zeros((1, CUES), bool),
            )
        )  # fmt: skip
    trainers = []
    for length in (5, 8):
        torch.manual_seed(0)
        trainer, _ = _sac(tmp_path / str(length), _sac_settings(1000, sequence_length=length))
        for t in episode:
            trainer.buffer.add(t)
        batch = trainer.buffer.sample(length, np.random.default_rng(0))
        losses = trainer._learn(trainer._tensors(batch))
        trainers.append((trainer, losses))
    (short, short_losses), (padded, padded_losses) = trainers
    torch.testing.assert_close(short_losses, padded_losses)
    for name in ("q1", "q2", "q1_target", "q2_target"):
        torch.testing.assert_close(
            getattr(short, name).state_dict(), getattr(padded, name).state_dict()
        )
    torch.testing.assert_close(short.policy.get_weights(), padded.policy.get_weights())


def _through_bytes(state: dict) -> dict:
    """``state`` written and read back as a checkpoint is (weights-only, like ``load_pt``)."""
    stream = io.BytesIO()
    torch.save(state, stream)
    stream.seek(0)
    with torch.serialization.safe_globals(SAFE_GLOBALS):
        return torch.load(stream, weights_only=True)


def test_sac_with_memory_resumes_from_its_state_exactly(tmp_path):
    settings = _sac_settings(10**6)
    original, processors = _sac(tmp_path / "a", settings, seed=3)
    stepper = InProcessStepper(Recall(seed=3, num_arenas=8))
    result = _drive(original, stepper, processors, stepper.reset(), 60)
    assert original.updates > 0 and original.buffer.sequences > 0
    state = _through_bytes(original.state_dict())
    fork = copy.deepcopy((stepper, result, original.policy.memories))
    _drive(original, stepper, processors, result, 12)

    resumed, fork_processors = _sac(tmp_path / "b", settings, seed=99)
    resumed.load_state_dict(state)
    fork_stepper, fork_result, resumed.policy.memories = fork  # the agents' memories go on
    _drive(resumed, fork_stepper, fork_processors, fork_result, 12)

    assert resumed.step == original.step and resumed.updates == original.updates
    for name in ("q1", "q2", "q1_target", "q2_target"):
        torch.testing.assert_close(
            getattr(resumed, name).state_dict(), getattr(original, name).state_dict()
        )
    torch.testing.assert_close(resumed.policy.get_weights(), original.policy.get_weights())
    assert len(resumed.buffer) == len(original.buffer)
    torch.testing.assert_close(resumed.buffer.state_dict(), original.buffer.state_dict())


# -- SAC with memory end to end ---------------------------------------------------------------------
def _recall_score(policy: TorchPolicy, episodes: int = 320) -> float:
    env = Recall(seed=123, num_arenas=64)
    env.reset()
    total, count = 0.0, 0
    while count < episodes:
        decision, terminal = env.get_steps(BEHAVIOR)
        total, count = total + float(terminal.reward.sum()), count + len(terminal)
        env.set_actions(BEHAVIOR, act_on_steps(policy, decision, terminal))
        env.step()
    return total / count


def _onnx_acts_like_the_policy(onnx_path: Path, policy_path: Path) -> None:
    """The ``.onnx`` brain has the recurrent interface and acts like the ``.pt`` policy."""
    pytest.importorskip("onnx", reason="the onnx extra is not installed")
    ort = pytest.importorskip("onnxruntime", reason="the onnx extra is not installed")
    policy = load_policy(policy_path)
    session = ort.InferenceSession(str(onnx_path))
    inputs = [i.name for i in session.get_inputs()]
    outputs = [o.name for o in session.get_outputs()]
    assert inputs[-1] == "recurrent_in" and outputs[-1] == "recurrent_out"
    spec = policy.behavior_spec
    rng = np.random.default_rng(0)
    obs = [rng.normal(size=(6, *o.shape)).astype(np.float32) for o in spec.observation_specs]
    agents = np.arange(6)
    memories = rng.normal(0, 0.5, (6, policy.memory_size)).astype(np.float32)
    policy.memories.store(agents, memories)
    feeds = dict(zip(inputs, obs, strict=False))
    branches = spec.action_spec.discrete_branches
    if branches:
        feeds["action_masks"] = np.ones((6, sum(branches)), np.float32)
    feeds["recurrent_in"] = memories[:, None, :]
    out = dict(zip(outputs, session.run(None, feeds), strict=True))
    greedy = policy.act(obs, deterministic=True, agent_ids=agents)
    np.testing.assert_allclose(out["recurrent_out"][:, 0], policy.memories.recall(agents),
                               atol=1e-5)  # fmt: skip
    if branches:
        assert np.array_equal(out["deterministic_discrete_actions"], greedy.discrete)
    if spec.action_spec.continuous_size:
        np.testing.assert_allclose(out["deterministic_continuous_actions"], greedy.continuous,
                                   atol=1e-5)  # fmt: skip


def test_sac_with_memory_trains_on_recall_and_exports_a_recurrent_brain(tmp_path):
    loop = TrainingLoop(
        # sequences of 3 cut each five-step episode in two
        behaviors={"Recall": _sac_settings(1500, sequence_length=3)},
        stepper=InProcessStepper(Recall(seed=0, num_arenas=16)),
        layout=RunLayout(tmp_path),
        seed=0,
    )
    loop.run()
    trainer = loop.trainers["Recall"]
    assert trainer.updates > 200 and "Losses/Q1 Loss" in trainer.stats.latest
    assert trainer.policy.memory_size == 16 and trainer.q1.memory_size == 16
    # a sequence that starts an episode starts from no memory (the acting policy forgot the agent
    # when its last episode ended); one that starts later carries what the agent saw before
    state = trainer.buffer.state_dict()
    stored = np.arange(trainer.buffer.sequences)
    first_step = state["ring"]["obs.0"][stored, 0, CUES + 1] == 0
    assert first_step.any() and (~first_step).any()
    starts = state["start_memory"][stored]
    assert not starts[first_step].any()
    assert np.abs(starts[~first_step]).sum(axis=1).min() > 0
    _onnx_acts_like_the_policy(tmp_path / "Recall.onnx", tmp_path / "Recall.pt")


def test_sac_self_play_with_memory_swaps_opponents_and_resumes(tmp_path):
    from tests.fake_envs import make_duel

    duel = {
        "trainer_type": "sac",
        "hyperparameters": {"batch_size": 32, "buffer_size": 2000, "steps_per_update": 8,
                            "save_replay_buffer": True},
        "network_settings": {"hidden_units": 16, "memory": {"memory_size": 8, "sequence_length": 4}},
        "max_steps": 800,
        "summary_freq": 400,
        "checkpoint_interval": 400,
        "self_play": {"save_steps": 200, "swap_steps": 100, "team_change": 400},
    }  # fmt: skip
    first = ghost.train({"behaviors": {"Duel": duel}}, env=make_duel, run_id="duel",
                        results_dir=tmp_path, seed=1)  # fmt: skip
    assert first.steps["Duel"] >= 800
    assert load_policy(first.policies["Duel"]).memory_size == 8
    longer = {"behaviors": {"Duel": {**duel, "max_steps": 1200}}}
    resumed = ghost.train(longer, env=make_duel, run_id="duel", results_dir=tmp_path, resume=True)
    assert resumed.steps["Duel"] >= 1200


@pytest.mark.slow
def test_sac_with_memory_recalls_the_cue(tmp_path):
    """The settings of ``scripts/memory_recall.py --trainer sac`` (docs/benchmarks.md)."""
    settings = attrs.evolve(
        _sac_settings(12_000, save_replay_buffer=False),
        hyperparameters=SACSettings(
            batch_size=256, buffer_size=20_000, buffer_init_steps=1000, steps_per_update=2,
            learning_rate=1e-3, init_entcoef=0.1,
        ),
        network_settings=NetworkSettings(
            hidden_units=32, num_layers=1,
            memory=MemorySettings(memory_size=32, sequence_length=8),
        ),
    )  # fmt: skip
    loop = TrainingLoop(
        behaviors={"Recall": settings},
        stepper=InProcessStepper(Recall(seed=0, num_arenas=32)),
        layout=RunLayout(tmp_path),
        seed=0,
    )
    loop.run()
    assert _recall_score(loop.trainers["Recall"].policy) > 0.8


# -- POCA with memory -------------------------------------------------------------------------------
def test_the_group_critic_along_sequences_is_the_critic_step_by_step():
    """One batched pass of value and baseline over sequences, each from its own memories, equals
    the critic run a step at a time from those memories, and hands on the memories it reached."""
    torch.manual_seed(0)
    network = NetworkSettings(hidden_units=16, num_layers=1, memory=MemorySettings(memory_size=8))
    critic = GroupCritic([vector_observation_spec(3)], ActionSpec(0, (3,)), network)
    sequences, length, members = 2, 3, 2
    rows = sequences * length
    obs = [torch.randn(rows, members, 3)]
    present = torch.tensor([[True, True], [True, False]] * length)
    actions = torch.nn.functional.one_hot(torch.randint(0, 3, (rows, members)), 3).float()
    value_memory, baseline_memory = torch.randn(sequences, 8), torch.randn(sequences, 8)
    with torch.no_grad():
        values, baselines = critic.recurrent_value_and_baseline(
            obs, present, actions, value_memory, baseline_memory, length
        )
        _, value_after = critic.recurrent_value(obs, present, value_memory, length)
        for sequence in range(sequences):
            memories = [
                value_memory[sequence : sequence + 1],
                baseline_memory[sequence : sequence + 1],
            ]
            for step in range(length):
                row = slice(sequence * length + step, sequence * length + step + 1)
                value, memories[0] = critic.recurrent_value(
                    [obs[0][row]], present[row], memories[0]
                )
                baseline, memories[1] = critic.recurrent_baseline(
                    [obs[0][row]], present[row], actions[row], memories[1]
                )
                assert value.item() == pytest.approx(values[row].item(), abs=1e-5)
                assert baseline.item() == pytest.approx(baselines[row].item(), abs=1e-5)
            torch.testing.assert_close(memories[0][0], value_after[sequence])
    with pytest.raises(TypeError, match="recurrent"):
        critic.value(obs, present)


def _poca_pair(path: Path, steps: int, seed: int = 0) -> tuple[TrainingLoop, SacrificeEnv]:
    hyperparameters = POCASettings(
        batch_size=256, buffer_size=1024, learning_rate=3e-3, beta=0.01,
        learning_rate_schedule=ScheduleType.CONSTANT,
    )  # fmt: skip
    settings = TrainerSettings(
        trainer_type="poca", hyperparameters=hyperparameters,
        network_settings=NetworkSettings(
            hidden_units=32, memory=MemorySettings(memory_size=16, sequence_length=8)
        ),
        max_steps=steps, summary_freq=max(steps // 4, 1), checkpoint_interval=max(steps // 2, 1),
    )  # fmt: skip
    env = SacrificeEnv(seed=seed)
    loop = TrainingLoop(behaviors={"Pair": settings}, stepper=InProcessStepper(env),
                        layout=RunLayout(path), seed=seed)  # fmt: skip
    return loop, env


def test_poca_with_memory_resumes_with_every_recurrent_part(tmp_path):
    whole, _ = _poca_pair(tmp_path / "whole", 4096)
    whole.run(max_env_steps=40)
    stopped, _ = _poca_pair(tmp_path / "stopped", 4096)
    stopped.run(max_env_steps=40)
    resumed, _ = _poca_pair(tmp_path / "stopped", 4096)
    resumed.start(resume=True)
    expected, got = whole.trainers["Pair"], resumed.trainers["Pair"]
    assert got.step == expected.step > 1024  # at least one update happened
    torch.testing.assert_close(got.policy.get_weights(), expected.policy.get_weights())
    torch.testing.assert_close(got.critic.state_dict(), expected.critic.state_dict())
    assert got.critic.memory_size == 16
    saved = stopped.trainers["Pair"].state_dict()["learner"]
    for key in ("critic_memories", "baseline_memories"):
        memory = getattr(expected, key).memory
        assert memory.any()  # carried from one rollout to the next
        torch.testing.assert_close(saved[key]["memory"], memory)
        # the environments restart at resume: every agent's critic starts afresh
        assert not getattr(got, key).memory.any()


def test_poca_with_memory_plays_soccer_in_self_play_and_resumes(tmp_path):
    soccer = {
        "trainer_type": "poca",
        "hyperparameters": {"batch_size": 256, "buffer_size": 1024},
        "network_settings": {"hidden_units": 32, "num_layers": 1,
                             "memory": {"memory_size": 16, "sequence_length": 8}},
        "max_steps": 3000, "summary_freq": 1500, "checkpoint_interval": 1500, "time_horizon": 64,
        "self_play": {"save_steps": 500, "swap_steps": 500, "team_change": 1500, "window": 3},
    }  # fmt: skip
    first = ghost.train({"behaviors": {"SoccerTwos": soccer}}, env="soccer", run_id="soccer",
                        results_dir=tmp_path, seed=0, verbose=0)  # fmt: skip
    assert first.steps["SoccerTwos"] >= 3000
    run = tmp_path / "soccer"
    _onnx_acts_like_the_policy(run / "SoccerTwos.onnx", run / "SoccerTwos.pt")
    longer = {"behaviors": {"SoccerTwos": {**soccer, "max_steps": 4000}}}
    resumed = ghost.train(longer, env="soccer", run_id="soccer", results_dir=tmp_path,
                          resume=True, verbose=0)  # fmt: skip
    assert resumed.steps["SoccerTwos"] >= 4000


@pytest.mark.slow
def test_poca_with_memory_learns_to_sacrifice(tmp_path):
    loop, env = _poca_pair(tmp_path, 30_000)
    loop.run()
    assert env.success_rate() > 0.9  # measured: 1.0 with seed 0
