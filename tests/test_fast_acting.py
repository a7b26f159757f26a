"""Numpy acting (``trainers.fast_acting``) must decide exactly as torch does, with the same draws,
and follow every change of the torch weights."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from mlagents_envs.base_env import ActionSpec, BehaviorSpec

from envs.specs import vector_observation_spec
from trainers.adam import Adam
from trainers.fast_acting import FORCE_TORCH_VARIABLE, NUMPY_WORK_LIMIT, NumpyActor
from trainers.policy import TorchPolicy
from trainers.run_files.safe_load import load_pt
from trainers.settings import MemorySettings, NetworkSettings

pytestmark = pytest.mark.usefixtures("one_torch_thread")

CASES = {
    "continuous": (
        BehaviorSpec([vector_observation_spec(6)], ActionSpec.create_continuous(3)),
        {"normalize": True},
        {},
    ),
    "discrete, two inputs": (
        BehaviorSpec(
            [vector_observation_spec(4), vector_observation_spec(3)],
            ActionSpec.create_discrete((3, 5)),
        ),
        {"normalize": True, "num_layers": 3},
        {},
    ),
    "hybrid, squashed, state-dependent std": (
        BehaviorSpec([vector_observation_spec(5)], ActionSpec(2, (4,))),
        {"num_layers": 1},
        {"squash": True, "conditional_std": True},
    ),
}


def make(spec: BehaviorSpec, settings: dict, kinds: dict) -> TorchPolicy:
    return TorchPolicy(
        behavior_spec=spec,
        network_settings=NetworkSettings(hidden_units=32, **settings),
        **kinds,
    )


def observations(spec: BehaviorSpec, rows: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [
        rng.normal(2.0, 3.0, (rows, *s.shape)).astype(np.float32) for s in spec.observation_specs
    ]


def masks(spec: BehaviorSpec, rows: int, seed: int) -> list[np.ndarray] | None:
    branches = spec.action_spec.discrete_branches
    if not branches:
        return None
    rng = np.random.default_rng(seed)
    out = []
    for size in branches:
        mask = rng.random((rows, size)) < 0.4
        mask[np.arange(rows), rng.integers(0, size, rows)] = False  # one action stays open
        out.append(mask)
    return out


@pytest.fixture(params=list(CASES))
def pair(request, monkeypatch):
    """A numpy-acting policy and a torch-acting one with the same weights and statistics."""
    spec, settings, kinds = CASES[request.param]
    torch.manual_seed(3)
    fast = make(spec, settings, kinds)
    fast.update_normalizer(observations(spec, 50, 1))
    monkeypatch.setenv(FORCE_TORCH_VARIABLE, "1")
    slow = make(spec, settings, kinds)
    monkeypatch.delenv(FORCE_TORCH_VARIABLE)
    slow.load_weights(fast.get_weights())
    return spec, fast, slow


def assert_same_draws(spec: BehaviorSpec, fast: TorchPolicy, slow: TorchPolicy, seed: int) -> None:
    obs, mask = observations(spec, 32, seed), masks(spec, 32, seed)
    assert fast._numpy_actor(obs) is not None and slow._numpy_actor(obs) is None
    torch.manual_seed(seed)
    mine = fast.sample(obs, mask)
    after_mine = torch.rand(1)
    torch.manual_seed(seed)
    theirs = slow.sample(obs, mask)
    assert torch.rand(1) == after_mine, "the two paths drew different amounts of randomness"
    assert_same_log_probs(mine, theirs, squash=fast.squash)
    np.testing.assert_allclose(mine.continuous_raw, theirs.continuous_raw, atol=1e-5)
    assert mine.log_probs.dtype == theirs.log_probs.dtype == np.float32
    assert_same_actions(mine.actions, theirs.actions)
    assert_same_actions(fast.act(obs, mask, True), slow.act(obs, mask, True))
    if spec.action_spec.discrete_branches:
        mine_p, theirs_p = (
            fast.action_probabilities(obs, mask),
            slow.action_probabilities(obs, mask),
        )
        for a, b in zip(mine_p, theirs_p, strict=True):
            np.testing.assert_allclose(a, b, atol=1e-6)


def assert_same_log_probs(mine, theirs, *, squash: bool) -> None:
    """Equal log-probabilities; squashed dimensions only where ``tanh`` is not saturated:
    there ``1 - tanh(x)**2`` keeps no digits in float32 and either library's rounding of
    ``tanh`` moves its log by up to 0.1, on both paths alike."""
    close = np.ones_like(mine.log_probs, dtype=bool)
    if squash:
        dims = mine.continuous_raw.shape[1]
        close[:, :dims] = np.abs(theirs.continuous_raw) < 2.0
        assert np.isfinite(mine.log_probs).all()
    np.testing.assert_allclose(mine.log_probs[close], theirs.log_probs[close], atol=1e-5)


def assert_same_actions(mine, theirs) -> None:
    if theirs.continuous is None:
        assert mine.continuous is None
    else:
        assert mine.continuous.dtype == theirs.continuous.dtype
        np.testing.assert_allclose(mine.continuous, theirs.continuous, atol=1e-5)
    if theirs.discrete is None:
        assert mine.discrete is None
    else:
        assert mine.discrete.dtype == theirs.discrete.dtype == np.int32
        np.testing.assert_array_equal(mine.discrete, theirs.discrete)


def test_numpy_acting_draws_what_torch_draws(pair):
    spec, fast, slow = pair
    for seed in range(5):
        assert_same_draws(spec, fast, slow, seed)


def test_masked_actions_are_never_drawn(pair):
    spec, fast, _ = pair
    if not spec.action_spec.discrete_branches:
        pytest.skip("no discrete branches")
    obs, mask = observations(spec, 128, 5), masks(spec, 128, 5)
    for _ in range(5):
        chosen = fast.sample(obs, mask).actions.discrete
        for branch, branch_mask in enumerate(mask):
            assert not branch_mask[np.arange(128), chosen[:, branch]].any()


def test_numpy_copy_follows_an_update_without_notice(pair):
    """An optimizer step changes the actor in place; no ``weights_changed`` is called here."""
    spec, fast, slow = pair
    fast.sample(*[observations(spec, 8, 0)])
    optimizer = Adam(list(fast.actor.parameters()), lr=0.05)
    obs = [torch.as_tensor(o) for o in observations(spec, 16, 9)]
    dist = fast.actor(obs)
    loss = sum(lp.sum() for lp in dist.log_probs_by_branch) if dist.logits else dist.mean.sum()
    loss.backward()
    optimizer.step()
    slow.load_weights(fast.get_weights())
    assert_same_draws(spec, fast, slow, 11)


def test_numpy_copy_follows_loads_and_normalizer_updates(pair):
    spec, fast, slow = pair
    fast.sample(observations(spec, 8, 0))
    torch.manual_seed(21)
    other = fast.clone_architecture()
    fast.load_weights(other.get_weights())
    slow.load_weights(other.get_weights())
    assert_same_draws(spec, fast, slow, 12)
    fast.update_normalizer(observations(spec, 40, 13))
    slow.load_weights(fast.get_weights())
    assert_same_draws(spec, fast, slow, 14)
    fast.actor.load_state_dict(other.get_weights())
    slow.load_weights(other.get_weights())
    assert_same_draws(spec, fast, slow, 15)
    fast.actor.encoder.update_normalizer([torch.as_tensor(o) for o in observations(spec, 9, 16)])
    slow.load_weights(fast.get_weights())
    assert_same_draws(spec, fast, slow, 17)


def test_large_batches_memory_and_the_variable_act_through_torch(monkeypatch):
    spec, settings, kinds = CASES["continuous"]
    policy = make(spec, settings, kinds)
    rows = NUMPY_WORK_LIMIT // (32 * 32)
    assert policy._numpy_actor(observations(spec, rows - 1, 0)) is not None
    assert policy._numpy_actor(observations(spec, rows, 0)) is None
    memory = make(spec, {"memory": MemorySettings(memory_size=8, sequence_length=4)}, kinds)
    assert memory._numpy is None
    monkeypatch.setenv(FORCE_TORCH_VARIABLE, "1")
    assert make(spec, settings, kinds)._numpy is None


TENNIS = {
    "behaviors": {
        "Tennis": {
            "hyperparameters": {"batch_size": 256, "buffer_size": 1024},
            "network_settings": {"hidden_units": 32, "normalize": True},
            "max_steps": 3000,
            "summary_freq": 1000,
            "self_play": {"save_steps": 1000, "team_change": 2000, "swap_steps": 500},
        }
    },
    "env_settings": {"env_path": "tennis", "seed": 3},
}


def trained(tmp_path, name: str, monkeypatch, *, numpy: bool):
    import ghost  # the top layer, only for this end-to-end check

    calls = []
    distribution = NumpyActor.distribution
    monkeypatch.setattr(NumpyActor, "distribution", lambda *a: calls.append(1) or distribution(*a))
    result = ghost.train(TENNIS, run_id=name, results_dir=tmp_path)
    assert bool(calls) == numpy, "acted on the other path than asked"
    weights = load_pt(result.policies["Tennis"])  # read as any policy file: no pickled code
    return result, weights


def test_same_seed_same_run_on_either_path(tmp_path, monkeypatch):
    """Tennis, ghost-learn, 3000 steps (three updates, swaps, a team change): a seed gives the
    same run bit for bit; acting through torch instead gives the same Elo and the same weights to
    float rounding (numpy's and torch's matrix products round differently)."""
    fast, fast_file = trained(tmp_path, "numpy", monkeypatch, numpy=True)
    again, again_file = trained(tmp_path, "numpy-again", monkeypatch, numpy=True)
    monkeypatch.setenv(FORCE_TORCH_VARIABLE, "1")
    slow, slow_file = trained(tmp_path, "torch", monkeypatch, numpy=False)
    assert fast.ratings == again.ratings
    for key, value in fast_file["weights"].items():
        assert torch.equal(value, again_file["weights"][key]), key
    assert fast.steps == slow.steps
    assert fast.ratings == pytest.approx(slow.ratings, abs=1e-9)
    torch.testing.assert_close(fast_file["weights"], slow_file["weights"], rtol=1e-5, atol=1e-6)
