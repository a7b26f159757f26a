"""A minibatch of sequences trimmed to its longest real run (``Sequences.grid``): the networks with
memory give the same outputs and gradients at every real step as on the full padded sequences,
and PPO with memory trains on it."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from mlagents_envs.base_env import ActionSpec

from envs.specs import vector_observation_spec
from trainers.actor import Actor
from trainers.group_critic import GroupCritic
from trainers.memory import masked_mean
from trainers.networks import ValueNetwork
from trainers.sequence_grid import SequenceGrid
from trainers.sequences import cut_sequences
from trainers.settings import MemorySettings, NetworkSettings

pytestmark = pytest.mark.usefixtures("one_torch_thread")

SETTINGS = NetworkSettings(
    hidden_units=16, num_layers=2, normalize=True, memory=MemorySettings(memory_size=8,
                                                                         sequence_length=6)
)  # fmt: skip
OBS_SPECS = [vector_observation_spec(5)]


def _rollout(lengths: list[int]):
    """A buffer of one trajectory per entry of ``lengths`` (each its own slot), one after the
    other: its ``next_index`` and slots."""
    next_index, slots, row = [], [], 0
    for slot, length in enumerate(lengths):
        next_index += [row + i + 1 for i in range(length - 1)] + [-1]
        slots += [slot] * length
        row += length
    return np.array(next_index), np.array(slots)


def test_a_grid_holds_only_real_steps_and_runs_as_long_as_its_longest_sequence():
    next_index, slots = _rollout([3, 8, 2])  # sequences of 6: [3], [6, 2], [2]
    sequences = cut_sequences(next_index, slots, 6)
    assert sequences.lengths.tolist() == [3, 6, 2, 2]
    grid = sequences.grid(np.array([0, 3]))
    assert (grid.sequences, grid.steps) == (2, 3)
    assert grid.rows.tolist() == [0, 1, 2, 11, 12]
    assert grid.positions.tolist() == [0, 1, 2, 3, 4]
    grid = sequences.grid(np.array([3, 1]))
    assert (grid.sequences, grid.steps) == (2, 6)
    assert grid.rows.tolist() == [11, 12, 3, 4, 5, 6, 7, 8]
    assert grid.positions.tolist() == [0, 1, 6, 7, 8, 9, 10, 11]


def test_sequences_that_differ_much_in_length_run_as_two_parts_each_as_long_as_it_needs():
    lengths = [6, 1, 2, 6, 3, 1, 5, 2]
    layout = np.full((len(lengths), 6), -1)
    row = 0
    for sequence, length in enumerate(lengths):
        layout[sequence, :length] = np.arange(row, row + length)
        row += length
    grid = SequenceGrid.of(layout)
    assert grid.lengths.tolist() == lengths
    longer, shorter = grid.parts
    assert sorted(longer.sequences.tolist()) == [0, 3, 4, 6]
    assert (longer.steps, shorter.steps) == (6, 2)
    taken = np.concatenate([longer.steps_taken, shorter.steps_taken])
    assert sorted(taken.tolist()) == list(range(len(grid.rows)))
    # the shorter half's grid holds sequences 2, 7, 1, 5 (longest first) of 2 steps each; its
    # steps are taken in the whole grid's order: sequence 1's, 2's (two), 5's, 7's (two)
    assert shorter.sequences.tolist() == [2, 7, 1, 5]
    assert shorter.positions.tolist() == [4, 0, 1, 6, 2, 3]
    # close lengths: one call
    assert len(SequenceGrid.of(layout[[0, 3, 4, 6]]).parts) == 1


def _padded_and_grid(network, run_padded, run_grid, lengths: list[int], chosen: list[int]):
    """``network``'s outputs at the real steps of the sequences ``chosen`` of a buffer of
    trajectories ``lengths`` long, and the gradients of a loss on them: through the full padded
    sequences (``run_padded(rows, memory, length)``, padding pointing at row 0) and through the
    grid (``run_grid(rows, memory, grid)``). ``rows`` are buffer rows."""
    torch.manual_seed(1)
    next_index, slots = _rollout(lengths)
    sequences = cut_sequences(next_index, slots, 6)
    memories = torch.randn(len(sequences), 8)
    weights = torch.randn(len(next_index))
    chosen = np.array(chosen)
    results = []
    for padded in (True, False):
        network.zero_grad()
        if padded:
            layout = sequences.rows[chosen]
            valid = torch.as_tensor(layout >= 0).reshape(-1)
            rows = torch.as_tensor(np.where(layout >= 0, layout, 0).reshape(-1))
            out = run_padded(rows, memories[chosen], 6)
            loss = masked_mean(out * weights[rows], valid)
            out = out[valid]
        else:
            grid = sequences.grid(chosen)
            rows = torch.as_tensor(grid.rows)
            out = run_grid(rows, memories[chosen], grid)
            loss = (out * weights[rows]).mean()
        loss.backward()
        grads = [p.grad.clone() for p in network.parameters() if p.grad is not None]
        results.append((out.detach(), loss.detach(), grads))
    return results


def _assert_same(padded, grid) -> None:
    torch.testing.assert_close(grid[0], padded[0])
    torch.testing.assert_close(grid[1], padded[1])
    assert len(grid[2]) == len(padded[2]) > 0
    for mine, full in zip(grid[2], padded[2], strict=True):
        torch.testing.assert_close(mine, full)


LENGTHS = [2, 9, 4, 1, 7, 1, 13, 2, 3, 6, 1, 2]


@pytest.mark.parametrize("chosen", [[0, 2, 4], [1, 3], [5, 0, 1, 2], list(range(16))])
def test_the_actor_learns_on_a_grid_exactly_what_it_learns_on_padded_sequences(chosen):
    torch.manual_seed(0)
    actor = Actor(obs_specs=OBS_SPECS, action_spec=ActionSpec.create_continuous(2),
                  settings=SETTINGS)  # fmt: skip
    lengths = LENGTHS
    obs = [torch.randn(sum(lengths), 5) * 3]
    actor.encoder.update_normalizer(obs)

    def mean_of(rows, memory, length=1, grid=None):
        heads = actor.head_outputs([obs[0][rows]], None, memory, length, grid=grid)
        return heads["mean"].sum(dim=1)

    padded, grid = _padded_and_grid(
        actor, mean_of, lambda rows, memory, g: mean_of(rows, memory, grid=g), lengths, chosen
    )
    _assert_same(padded, grid)


def test_the_critic_values_a_grid_as_it_values_padded_sequences():
    torch.manual_seed(0)
    critic = ValueNetwork(OBS_SPECS, SETTINGS)
    lengths = [5, 3, 12, 6]
    obs = [torch.randn(sum(lengths), 5) * 3]
    critic.encoder.update_normalizer(obs)
    padded, grid = _padded_and_grid(
        critic,
        lambda rows, memory, length: critic.recurrent([obs[0][rows]], memory, length)[0],
        lambda rows, memory, g: critic.over_grid([obs[0][rows]], memory, g),
        lengths,
        [0, 1, 2, 3, 4],
    )
    _assert_same(padded, grid)


def test_stacked_grids_ask_two_questions_of_the_same_steps():
    next_index, slots = _rollout([3, 8, 2])
    grid = cut_sequences(next_index, slots, 6).grid(np.array([0, 3]))
    both = grid.stacked(2)
    assert (both.sequences, both.steps) == (4, 3)
    assert both.rows.tolist() == [0, 1, 2, 11, 12] * 2
    assert both.positions.tolist() == [0, 1, 2, 3, 4, 6, 7, 8, 9, 10]


def test_the_group_critic_values_and_baselines_a_grid_as_padded_sequences():
    torch.manual_seed(0)
    critic = GroupCritic(OBS_SPECS, ActionSpec.create_discrete((3,)), SETTINGS)
    lengths, members = LENGTHS, 3
    member_obs = torch.randn(sum(lengths), members, 5)
    present = torch.rand(sum(lengths), members) > 0.3
    present[:, 0] = True
    actions = torch.nn.functional.one_hot(torch.randint(0, 3, (sum(lengths), members)), 3).float()

    def value_plus_baseline(rows, memory, length=1, grid=None):
        value, baseline = critic.recurrent_value_and_baseline(
            [member_obs[rows]], present[rows], actions[rows], memory, memory.flip(0), length,
            grid=grid,
        )  # fmt: skip
        return value + 2 * baseline

    padded, grid = _padded_and_grid(
        critic,
        value_plus_baseline,
        lambda rows, memory, g: value_plus_baseline(rows, memory, grid=g),
        lengths,
        list(range(16)),
    )
    _assert_same(padded, grid)
