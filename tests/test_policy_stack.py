"""Snapshots acting in one batched call: every row must get exactly its own snapshot's policy."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from mlagents_envs.base_env import (
    ActionSpec,
    ActionTuple,
    BehaviorSpec,
    DimensionProperty,
    ObservationSpec,
    ObservationType,
)

from envs.specs import vector_observation_spec
from ghost.core.opponents import FixedOpponent, Opponent
from ghost.core.snapshots import Snapshot
from ghost.running.opponent_policy import STACK_FROM, OpponentPolicy
from trainers.policy import TorchPolicy
from trainers.policy_stack import PolicyStack, stackable
from trainers.settings import NetworkSettings

pytestmark = pytest.mark.usefixtures("one_torch_thread")

IMAGE = ObservationSpec(
    shape=(20, 20, 3),
    dimension_property=(DimensionProperty.NONE,) * 3,
    observation_type=ObservationType.DEFAULT,
    name="image",
)
CASES = {
    "discrete, masked, normalized": (
        BehaviorSpec([vector_observation_spec(5)], ActionSpec.create_discrete((3, 2))),
        {"normalize": True},
        {},
    ),
    "continuous, one log_std per policy": (
        BehaviorSpec([vector_observation_spec(5)], ActionSpec.create_continuous(2)),
        {},
        {},
    ),
    "hybrid, squashed, state-dependent std": (
        BehaviorSpec([vector_observation_spec(5)], ActionSpec(2, (4,))),
        {},
        {"squash": True, "conditional_std": True},
    ),
    "image and vector": (
        BehaviorSpec([IMAGE, vector_observation_spec(3)], ActionSpec.create_discrete((3,))),
        {},
        {},
    ),
}


def distinct_policies(spec: BehaviorSpec, settings: dict, kinds: dict, count: int):
    """``count`` policies of one architecture, each with its own weights and normalizer."""
    rng = np.random.default_rng(7)
    policies = []
    for k in range(count):
        torch.manual_seed(k)
        policy = TorchPolicy(
            behavior_spec=spec,
            network_settings=NetworkSettings(hidden_units=16, num_layers=2, **settings),
            **kinds,
        )
        if "log_std" in dict(policy.actor.named_parameters()):
            with torch.no_grad():
                policy.actor.log_std.fill_(-0.5 * k)
        policy.update_normalizer(random_obs(spec, 20, rng, scale=k + 1.0))
        policies.append(policy)
    return policies


def random_obs(spec: BehaviorSpec, n: int, rng: np.random.Generator, scale: float = 1.0):
    return [
        (scale * rng.normal(size=(n, *o.shape))).astype(np.float32) for o in spec.observation_specs
    ]


def random_masks(spec: BehaviorSpec, n: int, rng: np.random.Generator):
    if not spec.action_spec.discrete_size:
        return None
    masks = []
    for branch in spec.action_spec.discrete_branches:
        mask = rng.random((n, branch)) < 0.3
        mask[:, 0] = False  # one action always stays available
        masks.append(mask)
    return masks


@pytest.mark.parametrize("case", CASES)
def test_each_row_gets_the_distribution_of_its_own_policy(case):
    spec, settings, kinds = CASES[case]
    policies = distinct_policies(spec, settings, kinds, count=4)
    assert stackable(policies)
    stack = PolicyStack(policies)
    rng = np.random.default_rng(1)
    # uneven rows per member, member 2 has none
    members = np.array([3, 0, 0, 1, 3, 3, 0, 1, 3, 3, 0])
    obs = random_obs(spec, len(members), rng)
    masks = random_masks(spec, len(members), rng)
    with torch.inference_mode():
        stacked = stack.distribution(obs, masks, members)
        for row, member in enumerate(members):
            alone = policies[member]._distribution(
                [o[row : row + 1] for o in obs],
                None if masks is None else [m[row : row + 1] for m in masks],
            )
            if alone.mean is not None:
                torch.testing.assert_close(stacked.mean[row], alone.mean[0])
                log_std = alone.log_std[0] if alone.log_std.dim() == 2 else alone.log_std
                torch.testing.assert_close(stacked.log_std[row], log_std)
            for ours, theirs in zip(
                stacked.log_probs_by_branch, alone.log_probs_by_branch, strict=True
            ):
                torch.testing.assert_close(ours[row], theirs[0])


def test_stacked_sampling_respects_masks_and_reports_log_probs():
    spec, settings, kinds = CASES["discrete, masked, normalized"]
    policies = distinct_policies(spec, settings, kinds, count=3)
    stack = PolicyStack(policies)
    rng = np.random.default_rng(2)
    members = rng.integers(0, 3, size=500)
    obs, masks = random_obs(spec, 500, rng), random_masks(spec, 500, rng)
    output = stack.sample(obs, masks, members)
    chosen = output.actions.discrete
    assert chosen.shape == (500, 2)
    for branch, mask in enumerate(masks):
        assert not mask[np.arange(500), chosen[:, branch]].any()
    assert output.log_probs.shape == (500, 2)
    assert (output.log_probs <= 0).all() and np.isfinite(output.log_probs).all()


def test_architectures_that_differ_are_not_stacked():
    spec, settings, kinds = CASES["continuous, one log_std per policy"]
    small = distinct_policies(spec, settings, kinds, count=2)
    wide = TorchPolicy(behavior_spec=spec, network_settings=NetworkSettings(hidden_units=32))
    assert not stackable([*small, wide])
    assert not stackable(small[:1])  # nothing to batch


class ConstantPolicy:
    """A scripted stand-in that always picks ``action``."""

    def __init__(self, action: int) -> None:
        self.action = action

    def act(self, obs, action_mask=None, deterministic=False) -> ActionTuple:
        return ActionTuple(discrete=np.full((len(obs[0]), 1), self.action, dtype=np.int32))


def test_every_arena_plays_its_own_opponent_with_snapshots_and_fixed_ones_mixed():
    spec = BehaviorSpec([vector_observation_spec(4)], ActionSpec.create_discrete((5,)))

    def make_policy() -> TorchPolicy:
        return TorchPolicy(behavior_spec=spec, network_settings=NetworkSettings(hidden_units=8))

    def snapshot_always(action: int, snapshot_id: int) -> Opponent:
        policy = make_policy()
        with torch.no_grad():
            policy.actor.logits_head.weight.zero_()
            policy.actor.logits_head.bias.fill_(-50.0)
            policy.actor.logits_head.bias[action] = 50.0
        return Opponent(Snapshot(snapshot_id, 0, 1200.0, policy.get_weights()))

    opponents = [
        snapshot_always(0, 0),
        Opponent(fixed=FixedOpponent("scripted", ConstantPolicy(1), 1200.0)),
        snapshot_always(2, 1),
        snapshot_always(3, 2),
        Opponent(fixed=FixedOpponent("scripted", ConstantPolicy(4), 1200.0)),
    ]
    acting = OpponentPolicy(make_policy=make_policy)
    acting.assign(opponents)
    arenas = np.array([7, 0, 3, 12, 1, 2, 4, 9, 5, 6, 11, 0])
    obs = [np.random.default_rng(0).normal(size=(len(arenas), 4)).astype(np.float32)]
    played = acting.sample_in_arenas(obs, None, arenas).actions.discrete[:, 0]
    assert acting._stack is None  # three networks: a pass each is cheaper than a stacked one
    expected = [opponents.index(acting.opponent_in(int(a))) for a in arenas]
    # opponent k of the list plays action k in this setup
    assert played.tolist() == expected
    # snapshots alone: one stacked call answers for every arena
    acting.assign([snapshot_always(a, a) for a in range(5)])
    assert acting._stack is not None and STACK_FROM <= 5
    played = acting.sample_in_arenas(obs, None, arenas).actions.discrete[:, 0]
    assert played.tolist() == [int(a) % 5 for a in arenas]
