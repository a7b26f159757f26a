"""``network_settings.memory``: memories carried per agent and forgotten at episode ends, stored
with each transition, trained on padded sequences; PPO with memory solves ``envs.recall``, which
no policy without memory can do better than chance on; resume keeps every recurrent part."""

from __future__ import annotations

import attrs
import numpy as np
import pytest
import torch
from mlagents_envs.base_env import ActionSpec, BehaviorSpec

from envs.behavior_id import BehaviorId
from envs.recall import CUES, EPISODE_LENGTH, Recall
from envs.specs import vector_observation_spec
from envs.stepping import InProcessStepper
from ghost.core.opponents import Opponent
from ghost.core.snapshots import Snapshot
from ghost.running.opponent_policy import OpponentPolicy
from trainers.exceptions import MemoryUseError
from trainers.hyperparameters import PPOSettings
from trainers.memory import AgentMemories, act_on_steps, masked_mean
from trainers.networks import ValueNetwork
from trainers.policy import TorchPolicy, load_policy
from trainers.ppo import PPOTrainer, _Rollout
from trainers.ppo_sequences import CriticMemories, critic_pass
from trainers.run_files.layout import RunLayout
from trainers.sequences import cut_sequences
from trainers.settings import MemorySettings, NetworkSettings, RewardSignalSettings, TrainerSettings
from trainers.training_loop import TrainingLoop

pytestmark = pytest.mark.usefixtures("one_torch_thread")

SPEC = BehaviorSpec([vector_observation_spec(4)], ActionSpec.create_discrete((3,)))
MEMORY = NetworkSettings(hidden_units=16, num_layers=1, memory=MemorySettings(memory_size=8))


def _policy(seed: int = 0) -> TorchPolicy:
    torch.manual_seed(seed)
    return TorchPolicy(behavior_spec=SPEC, network_settings=MEMORY)


def _obs(*rows: list[float]) -> list[np.ndarray]:
    return [np.asarray(rows, dtype=np.float32)]


# -- acting --------------------------------------------------------------------------------------
def test_each_agent_carries_its_own_memory_until_it_is_forgotten():
    policy = _policy()
    a, b, c = [1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]
    first = policy.action_probabilities(_obs(a, c), agent_ids=np.array([7, 9]))[0]
    # the same observation, different pasts: different answers
    second = policy.action_probabilities(_obs(b, b), agent_ids=np.array([7, 9]))[0]
    assert not np.allclose(second[0], second[1])
    # rows in another order: each agent still gets its own memory
    memories = policy.memories.recall(np.array([7, 9]))
    swapped = policy.memories.recall(np.array([9, 7]))
    assert np.array_equal(swapped, memories[::-1])
    # agent 7's episode ended: it starts afresh, agent 9 does not
    policy.forget(np.array([7]))
    again = policy.action_probabilities(_obs(a, c), agent_ids=np.array([7, 9]))[0]
    np.testing.assert_allclose(again[0], first[0], rtol=1e-6)
    assert not np.allclose(again[1], first[1])


def test_agent_memories_act_like_a_dict_of_rows_by_agent_id():
    """The array storage gives what a plain ``{agent_id: row}`` would: zeros for an unknown or
    forgotten agent, the last row stored when an id comes twice in one call, however many ids
    come and go."""
    rng = np.random.default_rng(0)
    memories, reference = AgentMemories(3), {}
    memories.KEPT_FORGOTTEN = 4  # forgotten rows are dropped now and then on the way
    for _ in range(400):
        ids = rng.integers(-3, 20, rng.integers(0, 7))
        action = rng.random()
        if action < 0.5:
            rows = rng.normal(size=(len(ids), 3)).astype(np.float32)
            memories.store(ids, rows)
            reference.update(zip(ids.tolist(), rows, strict=True))
        elif action < 0.95:
            memories.forget(ids)
            for agent_id in ids.tolist():
                reference.pop(agent_id, None)
        else:
            memories.forget()
            reference.clear()
        asked = rng.integers(-3, 20, rng.integers(0, 9))
        expected = [reference.get(a, np.zeros(3, np.float32)) for a in asked.tolist()]
        assert np.array_equal(memories.recall(asked), np.reshape(expected, (len(asked), 3)))
        assert len(memories) == len(reference)


def test_a_policy_with_memory_asks_for_agent_ids():
    with pytest.raises(MemoryUseError, match="agent_ids"):
        _policy().act(_obs([0, 0, 0, 0]))


def test_stored_memories_are_the_ones_each_decision_started_from(tmp_path):
    """The memory stored with a transition is zero at an episode's first step and, after it, the
    memory the actor gave at the agent's previous step."""
    loop = _train(tmp_path, _settings(300, memory=True, buffer_size=4096))
    trainer = loop.trainers["Recall"]
    data, next_index, _ = trainer.buffer.contents()
    first_steps = data.obs[0][:, CUES + 1] == 0
    assert first_steps.any() and (~first_steps).any()
    assert not data.memories[first_steps].any()
    linked = np.flatnonzero(next_index >= 0)
    with torch.no_grad():
        heads = trainer.policy.actor.head_outputs(
            [torch.as_tensor(data.obs[0][linked])], None, torch.as_tensor(data.memories[linked])
        )
    np.testing.assert_allclose(
        heads["memory"].numpy(), data.memories[next_index[linked]], atol=1e-6
    )


def test_the_self_play_opponents_keep_memories_apart_and_forget_them_at_a_swap():
    def snapshot(seed: int, snapshot_id: int) -> Opponent:
        return Opponent(Snapshot(snapshot_id, 0, 1200.0, _policy(seed).get_weights()))

    acting = OpponentPolicy(make_policy=_policy)
    acting.assign([snapshot(1, 0), snapshot(2, 1)])
    assert acting.memory_size == 8
    arenas, agents = np.array([0, 1, 0, 1]), np.array([10, 11, 12, 13])
    obs = [np.random.default_rng(0).normal(size=(4, 4)).astype(np.float32)]
    acting.sample_in_arenas(obs, None, arenas, agent_ids=agents)
    remembered = [len(network.memories) for network in acting._networks]
    assert sorted(remembered) == [2, 2]  # each opponent holds only the agents it plays
    acting.assign([snapshot(3, 2), snapshot(4, 3)])
    assert all(len(network.memories) == 0 for network in acting._networks)


def test_evaluation_carries_memory_and_forgets_it_when_an_episode_ends():
    env = Recall(seed=0, num_arenas=4)
    env.reset()
    name = "Recall?team=0"
    policy = TorchPolicy(
        behavior_spec=env.behavior_specs[name],
        network_settings=NetworkSettings(memory=MemorySettings(memory_size=8), hidden_units=8),
    )
    restarted = False
    for step in range(EPISODE_LENGTH + 1):
        decision, terminal = env.get_steps(name)
        before = policy.memories.recall(decision.agent_id)
        env.set_actions(name, act_on_steps(policy, decision, terminal))
        restarted = restarted or len(terminal) > 0
        started = np.zeros_like(before) if step == 0 or len(terminal) else before
        assert step == 0 or before.any()
        with torch.no_grad():
            heads = policy.actor.head_outputs(
                [torch.as_tensor(decision.obs[0])], None, torch.as_tensor(started)
            )
        np.testing.assert_allclose(
            policy.memories.recall(decision.agent_id), heads["memory"].numpy(), atol=1e-6
        )
        env.step()
    assert restarted  # every arena's episode ended on the way, and its agent started afresh


# -- sequences -----------------------------------------------------------------------------------
def test_trajectories_are_cut_into_sequences_padded_at_their_end():
    # agent a: rows 0 -> 2 -> 4 (then a time-horizon cut), 6; agent b: rows 1 -> 3 -> 5
    next_index = np.array([2, 3, 4, 5, -1, -1, -1])
    slots = np.array([0, 1, 0, 1, 0, 1, 0])
    sequences = cut_sequences(next_index, slots, sequence_length=2)
    assert sequences.rows.tolist() == [[0, 2], [4, -1], [1, 3], [5, -1], [6, -1]]
    assert sequences.slots.tolist() == [0, 0, 1, 1, 0]
    assert sequences.depth.tolist() == [0, 1, 0, 1, 2]
    assert sequences.lengths.tolist() == [2, 1, 2, 1, 1]
    assert sequences.last_rows.tolist() == [2, 4, 3, 5, 6]


def test_sequences_follow_each_trajectory_step_by_step():
    """Trajectories of any shape, their rows arriving interleaved: each sequence holds the next
    ``sequence_length`` rows of one trajectory (trajectories in the order they began), and a
    slot's sequences count their depth in that order."""
    rng = np.random.default_rng(1)
    for _ in range(50):
        count, length = int(rng.integers(2, 80)), int(rng.integers(1, 6))
        shuffled = rng.permutation(count)
        next_index = np.full(count, -1)
        cuts = rng.choice(np.arange(1, count), min(count - 1, 6), replace=False)
        for chain in np.split(shuffled, np.sort(cuts)):
            next_index[chain[:-1]] = chain[1:]
        slots = rng.integers(0, 3, count)
        sequences = cut_sequences(next_index, slots, length)
        expected, owners = [], []
        heads = sorted(set(range(count)) - set(next_index[next_index >= 0].tolist()))
        for head in heads:
            chain = [head]
            while next_index[chain[-1]] >= 0:
                chain.append(int(next_index[chain[-1]]))
            for start in range(0, len(chain), length):
                part = chain[start : start + length]
                expected.append(part + [-1] * (length - len(part)))
                owners.append(int(slots[head]))
        assert sequences.rows.tolist() == expected
        assert sequences.slots.tolist() == owners
        assert sequences.depth.tolist() == [owners[:i].count(s) for i, s in enumerate(owners)]


def test_padding_counts_in_no_mean():
    values = torch.tensor([[1.0, 3.0], [5.0, 7.0], [100.0, 100.0]])
    valid = torch.tensor([True, True, False])
    assert masked_mean(values, valid).item() == 4.0
    assert masked_mean(values[:, 0], valid).item() == 3.0


def test_the_critic_pass_carries_each_agents_memory_and_clears_it_after_an_episode():
    """Values equal the critic run one step at a time along each agent's trajectory, its memory
    carried across sequences and rollouts, and zeroed after the episode's last step."""
    torch.manual_seed(0)
    critic = ValueNetwork([vector_observation_spec(4)], MEMORY)
    obs = torch.randn(7, 4)
    next_obs = [np.random.default_rng(1).normal(size=(7, 4)).astype(np.float32)]
    next_index = np.array([2, 3, 4, 5, -1, -1, -1])
    slots = np.array([0, 1, 0, 1, 0, 1, 0])
    ended = np.array([False, False, False, False, False, True, False])  # b's episode ends at 5
    needs_next = np.array([False, False, False, False, True, False, True])
    carried = CriticMemories(8)
    carried.reserve(2)
    carried.memory[0] = torch.randn(8)  # a's memory from the previous rollout
    start_a = carried.memory[0].clone()
    result = critic_pass(
        critic,
        obs=[obs],
        next_obs=next_obs,
        sequences=cut_sequences(next_index, slots, 2),
        needs_next=needs_next,
        ended=ended,
        carried=carried,
    )
    with torch.no_grad():
        for rows, memory in (([0, 2, 4, 6], start_a), ([1, 3, 5], torch.zeros(8))):
            memory = memory.unsqueeze(0)
            for row in rows:
                value, memory = critic.recurrent([obs[row : row + 1]], memory)
                assert value.item() == pytest.approx(result.values[row], abs=1e-5)
                if needs_next[row]:
                    tail, _ = critic.recurrent(
                        [torch.as_tensor(next_obs[0][row : row + 1])], memory
                    )
                    assert tail.item() == pytest.approx(result.next_values[row], abs=1e-5)
            if rows[0] == 0:
                torch.testing.assert_close(carried.memory[0], memory[0])
    assert not carried.memory[1].any()  # b's episode ended


# -- training ------------------------------------------------------------------------------------
def _settings(max_steps: int, *, memory: bool, buffer_size: int = 2048) -> TrainerSettings:
    return TrainerSettings(
        hyperparameters=PPOSettings(
            batch_size=256, buffer_size=buffer_size, beta=5.0e-3, learning_rate=3.0e-3
        ),
        network_settings=NetworkSettings(
            hidden_units=32,
            num_layers=1,
            memory=MemorySettings(memory_size=32, sequence_length=8) if memory else None,
        ),
        reward_signals={"extrinsic": RewardSignalSettings()},
        max_steps=max_steps,
        summary_freq=max_steps,
        checkpoint_interval=max(max_steps // 2, 1),
        time_horizon=64,
    )


def _train(path, settings: TrainerSettings, *, seed: int = 0, resume: bool = False):
    torch.manual_seed(seed)
    loop = TrainingLoop(
        behaviors={"Recall": settings},
        stepper=InProcessStepper(Recall(seed=seed, num_arenas=32)),
        layout=RunLayout(path),
        seed=seed,
    )
    loop.run(resume=resume)
    return loop


def _recall_score(policy: TorchPolicy, episodes: int = 320) -> float:
    """The mean reward of ``policy`` over ``episodes`` recall episodes (chance: 1 / CUES)."""
    env = Recall(seed=123, num_arenas=64)
    env.reset()
    total, count = 0.0, 0
    while count < episodes:
        decision, terminal = env.get_steps("Recall?team=0")
        total, count = total + float(terminal.reward.sum()), count + len(terminal)
        env.set_actions("Recall?team=0", act_on_steps(policy, decision, terminal))
        env.step()
    return total / count


def test_ppo_with_memory_recalls_the_cue_that_no_memory_can(tmp_path):
    remembering = _train(tmp_path / "memory", _settings(20_000, memory=True))
    forgetting = _train(tmp_path / "plain", _settings(20_000, memory=False))
    with_memory = _recall_score(remembering.trainers["Recall"].policy)
    without = _recall_score(forgetting.trainers["Recall"].policy)
    assert without < 1 / CUES + 0.1  # chance, whatever it learned
    assert with_memory > 0.8


def test_same_seed_same_run_and_resume_keeps_every_recurrent_part(tmp_path):
    first = _train(tmp_path / "a", _settings(4096, memory=True))
    second = _train(tmp_path / "b", _settings(4096, memory=True))
    trainer = first.trainers["Recall"]
    torch.testing.assert_close(
        trainer.policy.get_weights(), second.trainers["Recall"].policy.get_weights()
    )
    resumed = _train(tmp_path / "a", _settings(4096, memory=True), resume=True)
    again = resumed.trainers["Recall"]
    torch.testing.assert_close(again.policy.get_weights(), trainer.policy.get_weights())
    torch.testing.assert_close(again.critic.state_dict(), trainer.critic.state_dict())
    assert trainer.critic_memories.memory.any()
    # the environments restart at resume: every agent's memories start afresh
    assert not again.critic_memories.memory.any()
    saved = load_policy(tmp_path / "a" / "Recall.pt")
    assert saved.memory_size == 32
    decision, _ = _fresh_steps()
    with pytest.raises(MemoryUseError):
        saved.act(decision.obs)
    saved.act(decision.obs, agent_ids=decision.agent_id)
    assert len(saved.memories) == len(decision)


def _fresh_steps():
    env = Recall(seed=0, num_arenas=3)
    env.reset()
    return env.get_steps("Recall?team=0")


def test_padding_changes_no_loss_of_the_update(tmp_path):
    """The same rollout cut into sequences with padding and without gives the same losses."""
    settings = _settings(1000, memory=True)
    trainer = PPOTrainer(behavior_name="Recall", settings=settings, artifact_dir=tmp_path)
    behavior_id = BehaviorId.parse("Recall?team=0")
    spec = Recall(num_arenas=1).behavior_specs["Recall?team=0"]
    trainer.add_policy(behavior_id, trainer.create_policy(behavior_id, spec))
    rng = np.random.default_rng(0)
    rows = 5  # one agent's trajectory: rows 0 -> 1 -> 2 -> 3 -> 4
    next_index = np.array([1, 2, 3, 4, -1])
    obs = [torch.as_tensor(rng.normal(size=(rows, CUES + 2)).astype(np.float32))]
    memories = torch.as_tensor(rng.normal(size=(rows, 32)).astype(np.float32))
    rollout = _Rollout(
        obs=obs,
        continuous=None,
        discrete=torch.as_tensor(rng.integers(0, CUES, size=(rows, 1))),
        masks=None,
        old_log_probs=torch.as_tensor(np.log(rng.uniform(0.2, 0.5, size=(rows, 1)))).float(),
        advantages=torch.as_tensor(rng.normal(size=rows).astype(np.float32)),
    )
    losses = []
    for length in (5, 8):  # 8: three rows of padding after the trajectory
        sequences = cut_sequences(next_index, np.zeros(rows, np.int64), length)
        layout = rollout._replace(sequences=sequences, start_memories=memories[[0]])
        policy_loss, entropy, _ = trainer._actor_losses(layout, torch.tensor([0]), 0.2)
        losses.append((policy_loss.item(), entropy.item()))
    assert losses[0] == pytest.approx(losses[1], rel=1e-6)


def test_self_play_with_memory_swaps_opponents_changes_teams_and_resumes(tmp_path):
    import ghost
    from tests.fake_envs import make_duel

    duel = {
        "hyperparameters": {"batch_size": 64, "buffer_size": 256},
        "network_settings": {"hidden_units": 16, "memory": {"memory_size": 8, "sequence_length": 4}},
        "max_steps": 1200,
        "summary_freq": 600,
        "checkpoint_interval": 600,
        "self_play": {"save_steps": 200, "swap_steps": 100, "team_change": 400,
                      "opponents_per_swap": 2},
    }  # fmt: skip
    config = {"behaviors": {"Duel": duel}}
    first = ghost.train(config, env=make_duel, run_id="duel", results_dir=tmp_path, seed=1)
    assert first.steps["Duel"] >= 1200
    assert load_policy(first.policies["Duel"]).memory_size == 8
    longer = {"behaviors": {"Duel": {**duel, "max_steps": 1800}}}
    resumed = ghost.train(longer, env=make_duel, run_id="duel", results_dir=tmp_path, resume=True)
    assert resumed.steps["Duel"] >= 1800


def test_exploitability_refuses_a_policy_with_memory():
    from types import SimpleNamespace

    from ghost.play.exploitability import table_probabilities

    table = SimpleNamespace(legal=np.ones((2, 3), dtype=bool))
    with pytest.raises(MemoryUseError, match="memory"):
        table_probabilities(table, {0: _policy()})


def test_curiosity_and_rnd_train_with_memory_and_resume(tmp_path):
    from trainers.settings import CuriositySettings, RNDSettings

    signals = {"curiosity": CuriositySettings(strength=0.1), "rnd": RNDSettings(strength=0.1)}
    settings = _settings(4096, memory=True)
    settings = attrs.evolve(
        settings, reward_signals={"extrinsic": RewardSignalSettings(), **signals}
    )
    trainer = _train(tmp_path, settings).trainers["Recall"]
    assert {"Policy/Curiosity Value Estimate", "Policy/RND Value Estimate",
            "Losses/Curiosity Forward Loss", "Losses/RND Loss"} <= set(trainer.stats.latest)  # fmt: skip
    assert all(memories.memory.any() for memories in trainer.signal_memories.values())
    again = _train(tmp_path, settings, resume=True).trainers["Recall"]
    for key in signals:
        torch.testing.assert_close(
            again.signal_critics[key].state_dict(), trainer.signal_critics[key].state_dict()
        )
