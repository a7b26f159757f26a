"""Trainer stack: exact GAE, Unity agent semantics, masks, PPO learning, exact resume."""

from __future__ import annotations

from pathlib import Path

import attrs
import numpy as np
import pytest
import torch
from mlagents_envs.base_env import ActionTuple, DecisionSteps, TerminalSteps

from envs.behavior_id import BehaviorId
from envs.stepping import BehaviorSteps, InProcessStepper
from tests.toy_envs import ReachEnv, TargetEnv
from trainers.base import ActionOutput, StepBatch
from trainers.buffers import RolloutBuffer
from trainers.gae import compute_gae
from trainers.hyperparameters import PPOSettings
from trainers.policy import load_policy
from trainers.rollout import TransitionAssembler
from trainers.run_files.layout import RunLayout
from trainers.settings import NetworkSettings, TrainerSettings
from trainers.training_loop import TrainingLoop


@pytest.fixture(autouse=True)
def one_thread():
    torch.set_num_threads(1)


def test_gae_matches_hand_computation():
    # one agent, three steps, episode ends at the third; gamma 0.9, lambda 0.5
    rewards = np.array([1.0, 0.0, 2.0], np.float32)
    values = np.array([0.5, 1.0, 1.5], np.float32)
    next_values = np.array([1.0, 1.5, 9.9], np.float32)  # 9.9 must be ignored: terminal
    dones = np.array([False, False, True])
    advantages = compute_gae(
        rewards=rewards, values=values, next_values=next_values, dones=dones,
        next_index=np.array([1, 2, -1]), chunk_bounds=[(0, 1), (1, 2), (2, 3)],
        gamma=0.9, lambd=0.5,
    )  # fmt: skip
    d2 = 2.0 - 1.5
    d1 = 0.0 + 0.9 * 1.5 - 1.0
    d0 = 1.0 + 0.9 * 1.0 - 0.5
    a2 = d2
    a1 = d1 + 0.45 * a2
    a0 = d0 + 0.45 * a1
    np.testing.assert_allclose(advantages, [a0, a1, a2], rtol=1e-6)


def test_gae_bootstraps_cut_and_interrupted_trajectories():
    # two agents in one chunk each step; agent 1's trajectory is cut after its first step
    advantages = compute_gae(
        rewards=np.array([1.0, 1.0, 0.0, 0.0], np.float32),
        values=np.zeros(4, np.float32),
        next_values=np.array([0.0, 3.0, 2.0, 2.0], np.float32),
        dones=np.zeros(4, bool),
        next_index=np.array([2, -1, -1, -1]),
        chunk_bounds=[(0, 2), (2, 4)],
        gamma=0.5, lambd=1.0,
    )  # fmt: skip
    # row 1 stops its sum but bootstraps: 1 + 0.5 * 3
    np.testing.assert_allclose(advantages, [1.0 + 0.5 * 1.0, 2.5, 1.0, 1.0], rtol=1e-6)


def _batch(spec, decision=None, terminal=None, actions=None):
    bid = BehaviorId("Toy", 0)
    empty_d = DecisionSteps.empty(spec)
    empty_t = TerminalSteps.empty(spec)
    d = decision or empty_d
    t = terminal or empty_t
    n = len(d)
    output = ActionOutput(
        actions=ActionTuple(
            discrete=np.asarray(actions if actions is not None else np.zeros((n, 1)), np.int32)
        ),
        log_probs=np.zeros((n, 1), np.float32),
        continuous_raw=np.zeros((n, 0), np.float32),
    )
    steps = BehaviorSteps(behavior_id=bid, decision=d, terminal=t,
                          decision_arenas=np.zeros(len(d), np.int64),
                          terminal_arenas=np.zeros(len(t), np.int64))  # fmt: skip
    return StepBatch(steps=steps, output=output)


def _decision(obs, rewards, ids):
    n = len(ids)
    return DecisionSteps([np.asarray(obs, np.float32)], np.asarray(rewards, np.float32),
                         np.asarray(ids, np.int32), None, np.zeros(n, np.int32),
                         np.zeros(n, np.float32))  # fmt: skip


def _terminal(obs, rewards, ids, interrupted):
    n = len(ids)
    return TerminalSteps([np.asarray(obs, np.float32)], np.asarray(rewards, np.float32),
                         np.asarray(interrupted, bool), np.asarray(ids, np.int32),
                         np.zeros(n, np.int32), np.zeros(n, np.float32))  # fmt: skip


def test_agent_in_terminal_and_decision_in_one_step():
    spec = TargetEnv.spec
    assembler = TransitionAssembler(behavior_spec=spec, time_horizon=100)
    first = [[1, 0, 0], [0, 1, 0]]
    out, _ = assembler.add(_batch(spec, _decision(first, [0, 0], [7, 9]), actions=[[0], [1]]))
    assert out is None  # no outcome known yet
    # agent 7's episode ends (reward 1) and restarts in the same step; agent 9 continues
    terminal = _terminal([[0, 0, 1]], [1.0], [7], [False])
    decision = _decision([[0, 1, 0], [1, 0, 0]], [0.0, 0.5], [7, 9])
    out, episodes = assembler.add(_batch(spec, decision, terminal, actions=[[2], [2]]))
    assert out is not None and len(out) == 2
    by_slot = {int(s): i for i, s in enumerate(out.slots)}
    ended, going = by_slot[0], by_slot[1]
    assert out.dones[ended] and not out.continues[ended]
    np.testing.assert_array_equal(out.next_obs[0][ended], [0, 0, 1])  # the terminal observation
    assert out.rewards[ended] == 1.0 and out.discrete[ended, 0] == 0
    assert not out.dones[going] and out.continues[going] and out.rewards[going] == 0.5
    np.testing.assert_array_equal(episodes.rewards, [1.0])
    np.testing.assert_array_equal(episodes.lengths, [1])
    # agent 7's new pending action (2) completes as an interrupted episode: bootstrapped
    out, _ = assembler.add(_batch(spec, terminal=_terminal([[1, 1, 1]], [0.0], [7], [True])))
    assert len(out) == 1 and not out.dones[0] and out.discrete[0, 0] == 2


def test_next_action_mask_is_the_next_decisions_mask():
    env = TargetEnv(num_agents=4, seed=0)
    stepper = InProcessStepper(env)
    assembler = TransitionAssembler(behavior_spec=TargetEnv.spec, time_horizon=100)
    steps = stepper.reset()[BehaviorId("Target")]
    assembler.add(_batch(TargetEnv.spec, steps.decision, actions=np.zeros((4, 1))))
    env.set_actions("Target", ActionTuple(discrete=np.zeros((4, 1), np.int32)))
    env.step()
    decision, terminal = env.get_steps("Target")
    out, _ = assembler.add(_batch(TargetEnv.spec, decision, terminal, actions=np.zeros((4, 1))))
    np.testing.assert_array_equal(out.next_action_mask, decision.action_mask[0])
    np.testing.assert_array_equal(out.action_mask, steps.decision.action_mask[0])


def test_slots_stay_apart_across_behavior_ids_and_resets():
    # two teams' assemblers of one trainer share a slot table: the same agent id is two slots
    table: dict = {}
    spec = TargetEnv.spec
    team0 = TransitionAssembler(behavior_spec=spec, time_horizon=100, slot_table=table, table_key=0)
    team1 = TransitionAssembler(behavior_spec=spec, time_horizon=100, slot_table=table, table_key=1)
    buffer = RolloutBuffer()
    for assembler in (team0, team1, team0):
        for _ in range(2):
            out, _ = assembler.add(_batch(spec, _decision([[1, 0, 0]], [1.0], [5])))
            if out is not None:
                buffer.add(out)
        assembler.reset()
        buffer.cut_links()
    data, next_index, _ = buffer.contents()
    assert sorted(set(data.slots.tolist())) == [0, 1]
    np.testing.assert_array_equal(next_index, [-1, -1, -1])  # nothing links across resets


def test_time_horizon_cuts_trajectories_and_buffer_links():
    spec = TargetEnv.spec
    assembler = TransitionAssembler(behavior_spec=spec, time_horizon=2)
    buffer = RolloutBuffer()
    for _ in range(5):
        out, _ = assembler.add(_batch(spec, _decision([[1, 0, 0]], [1.0], [3])))
        if out is not None:
            buffer.add(out)
    _, next_index, _ = buffer.contents()
    # 4 transitions; every 2nd one is a cut, so the links are 0->1, then 2->3
    np.testing.assert_array_equal(next_index, [1, -1, 3, -1])


def _filled_buffer(steps: int) -> RolloutBuffer:
    """A buffer of ``steps`` step batches of three agents, one of them leaving halfway."""
    spec = TargetEnv.spec
    assembler = TransitionAssembler(behavior_spec=spec, time_horizon=4)
    buffer = RolloutBuffer()
    for step in range(steps):
        agents = [3, 5, 8] if step < steps // 2 else [3, 8]
        obs = [[step % 3 == a % 3, 1, 0] for a in agents]
        out, _ = assembler.add(_batch(spec, _decision(obs, [0.5] * len(agents), agents)))
        if out is not None:
            buffer.add(out)
    return buffer


def _assert_same_contents(buffer: RolloutBuffer, other: RolloutBuffer) -> None:
    (data, next_index, bounds), (data2, next_index2, bounds2) = buffer.contents(), other.contents()
    np.testing.assert_array_equal(next_index2, next_index)
    assert bounds2 == bounds
    for field in ("rewards", "dones", "continues", "slots", "discrete", "log_probs"):
        np.testing.assert_array_equal(getattr(data2, field), getattr(data, field))
    np.testing.assert_array_equal(data2.obs[0], data.obs[0])


def test_a_checkpointed_buffer_is_a_few_arrays_and_goes_on_as_it_would_have():
    buffer, twin = _filled_buffer(40), _filled_buffer(40)
    state = buffer.state_dict()
    sizes = {key: len(value) for key, value in state.items() if isinstance(value, list)}
    assert sizes == {}, "no per-chunk lists: the state's size follows the bytes, not the steps"
    assert len(state["bounds"]) == len(buffer.contents()[2]) > 30
    restored = RolloutBuffer()
    restored.load_state_dict(state)
    _assert_same_contents(twin, restored)
    # both go on alike: a later step links to the trajectories stored before the checkpoint
    for target in (twin, restored):
        target.add(_filled_buffer(3).contents()[0])
    _assert_same_contents(twin, restored)


def test_a_buffer_checkpointed_chunk_by_chunk_still_loads():
    buffer = _filled_buffer(20)
    data, _, bounds = buffer.contents()
    older = {
        "chunks": [buffer._chunks[i] for i in range(len(bounds))],
        "links": list(buffer._links),
        "size": len(buffer),
        "last_row_of_slot": buffer._last_row_of_slot.copy(),
    }
    restored = RolloutBuffer()
    restored.load_state_dict(older)
    _assert_same_contents(buffer, restored)


def _behaviors(max_steps: int, hp: PPOSettings, hidden: int = 32, **extra) -> dict:
    settings = TrainerSettings(
        hyperparameters=hp, network_settings=NetworkSettings(hidden_units=hidden),
        max_steps=max_steps, summary_freq=max_steps // 6, **extra,
    )  # fmt: skip
    return {"Target": settings, "Reach": settings}


def _loop(env, behaviors: dict, path: Path) -> TrainingLoop:
    return TrainingLoop(behaviors=behaviors, stepper=InProcessStepper(env), layout=RunLayout(path))


def _train(env, behaviors: dict, path: Path, **run) -> TrainingLoop:
    loop = _loop(env, behaviors, path)
    loop.run(**run)
    return loop


def test_ppo_learns_discrete_task_and_respects_masks(tmp_path):
    env = TargetEnv(seed=0)
    hp = PPOSettings(batch_size=256, buffer_size=1024, learning_rate=3e-3, beta=0.01)
    session = _train(env, _behaviors(12000, hp), tmp_path)
    reward = session.trainers["Target"].stats.latest["Environment/Cumulative Reward"]
    assert reward > 4.3  # optimum 5, random about 2.5
    assert env.chosen_masked == 0
    policy = load_policy(tmp_path / "Target.pt")
    probs = policy.action_probabilities([np.eye(3, dtype=np.float32)],
                                        [np.array([[0, 1, 0], [0, 0, 1], [1, 0, 0]], bool)])[0]  # fmt: skip
    assert probs[0, 1] == 0 and probs[1, 2] == 0 and probs[2, 0] == 0
    assert (np.argmax(probs, axis=1) == [0, 1, 2]).all()


def test_ppo_learns_continuous_task(tmp_path):
    hp = PPOSettings(batch_size=256, buffer_size=2048, learning_rate=3e-3, beta=0.001)
    session = _train(ReachEnv(seed=0), _behaviors(40000, hp), tmp_path)
    reward = session.trainers["Reach"].stats.latest["Environment/Cumulative Reward"]
    assert reward > 3.7  # optimum 5, the untrained policy about 2.6


def _state(session: TrainingLoop) -> dict:
    trainer = session.trainers["Target"]
    return {
        "step": trainer.step,
        "weights": trainer.policy.get_weights(),
        "optimizer": trainer.optimizer.state_dict(),
        "normalizer": dict(trainer.policy.actor.encoder.normalizer.state_dict()),
    }


def test_resume_restores_step_optimizer_and_normalizer(tmp_path):
    hp = PPOSettings(batch_size=64, buffer_size=256, learning_rate=1e-3)
    target = _behaviors(1000, hp, checkpoint_interval=500)["Target"]
    behaviors = {"Target": attrs_evolve_normalize(target)}
    uninterrupted = _train(TargetEnv(seed=1), behaviors, tmp_path / "a", max_env_steps=40)
    stopped = _train(TargetEnv(seed=1), behaviors, tmp_path / "b", max_env_steps=40)
    resumed = _loop(TargetEnv(seed=1), behaviors, tmp_path / "b")
    resumed.start(resume=True)
    expected, got = _state(uninterrupted), _state(resumed)
    assert got["step"] == expected["step"] == 40 * 16 - 16  # first step has no outcome yet
    for key, value in expected["weights"].items():
        torch.testing.assert_close(got["weights"][key], value)
    for key, value in expected["normalizer"].items():
        torch.testing.assert_close(got["normalizer"][key], value)
    assert expected["normalizer"]["count"] > 0
    exp_opt, got_opt = expected["optimizer"]["state"], got["optimizer"]["state"]
    assert exp_opt.keys() == got_opt.keys() and exp_opt
    for index in exp_opt:
        torch.testing.assert_close(got_opt[index]["exp_avg"], exp_opt[index]["exp_avg"])
        torch.testing.assert_close(got_opt[index]["step"], exp_opt[index]["step"])
    assert stopped.trainers["Target"].step == expected["step"]


def attrs_evolve_normalize(settings: TrainerSettings) -> TrainerSettings:
    return attrs.evolve(settings, network_settings=NetworkSettings(hidden_units=16, normalize=True))
