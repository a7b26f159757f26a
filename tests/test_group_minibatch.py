"""Group-aware minibatches: POCA's critic computes each group step once, with the same results."""

from __future__ import annotations

import numpy as np
import torch
from mlagents_envs.base_env import ActionSpec

from envs.specs import vector_observation_spec
from trainers.group_critic import GroupCritic
from trainers.group_minibatch import GroupIndex
from trainers.group_rollout import find_mates
from trainers.settings import NetworkSettings


def _members(groups: np.ndarray) -> np.ndarray:
    mates = find_mates(groups)
    return np.concatenate([np.arange(len(groups))[:, None], mates], axis=1)


# a step of pairs, a lone agent, a group of three, a pair whose mate left, and ungrouped rows
GROUPS = np.array([4, 4, 0, 9, 9, 9, 4 + 100, 4 + 100, 0, 7, 0, 12, 12])


def test_an_epoch_takes_every_row_once_with_each_groups_rows_together():
    index = GroupIndex(_members(GROUPS))
    order = index.epoch_order(np.random.default_rng(0))
    assert sorted(order) == list(range(len(GROUPS)))
    position = {row: i for i, row in enumerate(order)}
    for key in set(GROUPS[GROUPS != 0]):
        places = sorted(position[row] for row in np.flatnonzero(key == GROUPS))
        assert places == list(range(places[0], places[0] + len(places)))
    assert not np.array_equal(order, index.epoch_order(np.random.default_rng(1)))


def test_grouped_values_and_baselines_equal_the_row_by_row_ones():
    torch.manual_seed(0)
    critic = GroupCritic(
        [vector_observation_spec(3)], ActionSpec(1, (3,)), NetworkSettings(hidden_units=16)
    )
    members = _members(GROUPS)
    obs = torch.randn(len(GROUPS), 3)
    actions = torch.randn(len(GROUPS), 4)
    index = GroupIndex(members)
    # a minibatch that holds some groups whole and cuts the group of three
    rows = np.array([0, 1, 3, 4, 6, 2, 11, 12])
    batch = index.minibatch(rows)
    assert len(batch.rows) == 10  # row 5 is encoded as rows 3 and 4's mate; 7 as row 6's
    values, baselines = critic.grouped_value_and_baseline(
        [obs[batch.rows]], actions[batch.rows], batch
    )
    assert len(values) == 5  # one per group step: {0,1}, {2}, {3,4,5}, {6,7}, {11,12}
    safe = np.maximum(members[rows], 0)
    expected_value, expected_baseline = critic.value_and_baseline(
        [obs[safe]], torch.as_tensor(members[rows] >= 0), actions[safe]
    )
    torch.testing.assert_close(values[batch.group_of_row], expected_value)
    torch.testing.assert_close(baselines, expected_baseline)
    # gradients reach the critic through both answers
    (values.sum() + baselines.sum()).backward()
    assert critic.embed_obs.weight.grad is not None
    assert critic.embed_obs_action.weight.grad is not None
