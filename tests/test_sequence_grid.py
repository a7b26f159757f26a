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
from trainers.memory import masked_mean
from trainers.networks import ValueNetwork
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


def _padded_and_grid(network, run_padded, run_grid, lengths: list[int], chosen: list[int]):
    """``network``'s outputs at the real steps of the sequences ``chosen`` and the gradients of a
    loss on them, through the full padded sequences and through the grid."""
    torch.manual_seed(1)
    next_index, slots = _rollout(lengths)
    obs = [torch.randn(len(next_index), 5) * 3]
    network.encoder.update_normalizer(obs)
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
            out = run_padded([o[rows] for o in obs], memories[chosen], 6)
            loss = masked_mean(out * weights[rows], valid)
            out = out[valid]
        else:
            grid = sequences.grid(chosen)
            rows = torch.as_tensor(grid.rows)
            out = run_grid([o[rows] for o in obs], memories[chosen], grid)
            loss = (out * weights[rows]).mean()
        loss.backward()
        grads = [p.grad.clone() for p in network.parameters() if p.grad is not None]
        results.append((out.detach(), loss.detach(), grads))
    return results


@pytest.mark.parametrize("chosen", [[0, 2, 4], [1, 3], [5, 0, 1, 2]])
def test_the_actor_learns_on_a_grid_exactly_what_it_learns_on_padded_sequences(chosen):
    torch.manual_seed(0)
    actor = Actor(obs_specs=OBS_SPECS, action_spec=ActionSpec.create_continuous(2),
                  settings=SETTINGS)  # fmt: skip

    def mean_of(heads):
        return heads["mean"].sum(dim=1)

    padded, grid = _padded_and_grid(
        actor,
        lambda obs, memory, length: mean_of(actor.head_outputs(obs, None, memory, length)),
        lambda obs, memory, g: mean_of(actor.head_outputs(obs, None, memory, grid=g)),
        [2, 9, 4, 1, 7],
        chosen,
    )
    torch.testing.assert_close(grid[0], padded[0])
    torch.testing.assert_close(grid[1], padded[1])
    assert len(grid[2]) == len(padded[2]) > 0
    for mine, full in zip(grid[2], padded[2], strict=True):
        torch.testing.assert_close(mine, full)


def test_the_critic_values_a_grid_as_it_values_padded_sequences():
    torch.manual_seed(0)
    critic = ValueNetwork(OBS_SPECS, SETTINGS)
    padded, grid = _padded_and_grid(
        critic,
        lambda obs, memory, length: critic.recurrent(obs, memory, length)[0],
        critic.over_grid,
        [5, 3, 12, 6],
        [0, 1, 2, 3, 4],
    )
    torch.testing.assert_close(grid[0], padded[0])
    for mine, full in zip(grid[2], padded[2], strict=True):
        torch.testing.assert_close(mine, full)
