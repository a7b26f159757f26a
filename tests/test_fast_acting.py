"""Numpy acting (``trainers.fast_acting``) must decide exactly as torch does, with the same draws,
and follow every change of the torch weights."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from mlagents_envs.base_env import ActionSpec, BehaviorSpec
from threadpoolctl import threadpool_limits

from envs.specs import vector_observation_spec
from trainers import fast_acting
from trainers.adam import Adam
from trainers.exceptions import MemoryUseError
from trainers.fast_acting import (
    FORCE_TORCH_VARIABLE,
    NUMPY_WORK_LIMIT,
    NumpyActor,
    blas_threads,
    limit_blas_threads,
)
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
    "continuous, memory": (
        BehaviorSpec([vector_observation_spec(6)], ActionSpec.create_continuous(3)),
        {"normalize": True, "memory": MemorySettings(memory_size=16, sequence_length=4)},
        {},
    ),
    "hybrid, two inputs, memory, squashed": (
        BehaviorSpec(
            [vector_observation_spec(4), vector_observation_spec(3)], ActionSpec(2, (3, 5))
        ),
        {"num_layers": 1, "memory": MemorySettings(memory_size=8, sequence_length=4)},
        {"squash": True, "conditional_std": True},
    ),
}
MEMORY_CASES = [name for name in CASES if "memory" in name]
DISCRETE_CASES = [
    name for name, (spec, _, _) in CASES.items() if spec.action_spec.discrete_branches
]


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


def torch_twin(policy: TorchPolicy, monkeypatch) -> TorchPolicy:
    """A torch-acting policy with ``policy``'s architecture, weights and statistics."""
    monkeypatch.setenv(FORCE_TORCH_VARIABLE, "1")
    twin = policy.clone_architecture()
    monkeypatch.delenv(FORCE_TORCH_VARIABLE)
    twin.load_weights(policy.get_weights())
    return twin


def ids(policy: TorchPolicy, rows: int) -> np.ndarray | None:
    """Agent ids for a batch of ``rows``, where ``policy`` has memory."""
    return np.arange(100, 100 + rows) if policy.memory_size else None


def pair_for(name: str, monkeypatch) -> tuple[BehaviorSpec, TorchPolicy, TorchPolicy]:
    spec, settings, kinds = CASES[name]
    torch.manual_seed(3)
    fast = make(spec, settings, kinds)
    fast.update_normalizer(observations(spec, 50, 1))
    return spec, fast, torch_twin(fast, monkeypatch)


@pytest.fixture(params=list(CASES))
def pair(request, monkeypatch):
    """A numpy-acting policy and a torch-acting one with the same weights and statistics."""
    return pair_for(request.param, monkeypatch)


@pytest.fixture(params=MEMORY_CASES)
def memory_pair(request, monkeypatch):
    """``pair`` for the actors with memory."""
    return pair_for(request.param, monkeypatch)


@pytest.fixture(params=DISCRETE_CASES)
def discrete_pair(request, monkeypatch):
    """``pair`` for the actors with discrete branches."""
    return pair_for(request.param, monkeypatch)


def assert_same_draws(spec: BehaviorSpec, fast: TorchPolicy, slow: TorchPolicy, seed: int) -> None:
    """Both policies decide alike for one batch: sampled (same draws), deterministic, and the
    action probabilities; with memory each call moves both policies' memories on alike."""
    obs, mask, agents = observations(spec, 32, seed), masks(spec, 32, seed), ids(fast, 32)
    assert fast._numpy_actor(obs) is not None and slow._numpy_actor(obs) is None
    torch.manual_seed(seed)
    mine = fast.sample(obs, mask, agents)
    after_mine = torch.rand(1)
    torch.manual_seed(seed)
    theirs = slow.sample(obs, mask, agents)
    assert torch.rand(1) == after_mine, "the two paths drew different amounts of randomness"
    assert_same_log_probs(mine, theirs, squash=fast.squash)
    np.testing.assert_allclose(mine.continuous_raw, theirs.continuous_raw, atol=1e-5)
    assert mine.log_probs.dtype == theirs.log_probs.dtype == np.float32
    assert_same_actions(mine.actions, theirs.actions)
    assert_same_memories(fast, slow, mine.memories, theirs.memories, agents)
    deterministic = (p.act(obs, mask, True, agents) for p in (fast, slow))
    assert_same_actions(*deterministic)
    assert_same_memories(fast, slow, None, None, agents)
    if spec.action_spec.discrete_branches:
        mine_p, theirs_p = (
            fast.action_probabilities(obs, mask, agents),
            slow.action_probabilities(obs, mask, agents),
        )
        for a, b in zip(mine_p, theirs_p, strict=True):
            np.testing.assert_allclose(a, b, atol=1e-6)
        assert_same_memories(fast, slow, None, None, agents)


def assert_same_memories(fast, slow, mine, theirs, agents) -> None:
    """The memories a draw started from (``ActionOutput.memories``), and those it left."""
    if not fast.memory_size:
        assert mine is None and theirs is None
        return
    if mine is not None:
        assert mine.dtype == theirs.dtype == np.float32
        np.testing.assert_allclose(mine, theirs, atol=1e-5)
    after = fast.memories.recall(agents)
    np.testing.assert_allclose(after, slow.memories.recall(agents), atol=1e-5)
    assert np.abs(after).max() > 0.0


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


def test_masked_actions_are_never_drawn(discrete_pair):
    spec, fast, _ = discrete_pair
    obs, mask = observations(spec, 128, 5), masks(spec, 128, 5)
    for _ in range(5):
        chosen = fast.sample(obs, mask, ids(fast, 128)).actions.discrete
        for branch, branch_mask in enumerate(mask):
            assert not branch_mask[np.arange(128), chosen[:, branch]].any()


def test_numpy_copy_follows_an_update_without_notice(pair):
    """An optimizer step changes the actor in place; no ``weights_changed`` is called here."""
    spec, fast, slow = pair
    for policy in (fast, slow):  # with memory, both carry the same memories on
        policy.sample(observations(spec, 8, 0), agent_ids=ids(fast, 8))
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
    for policy in (fast, slow):
        policy.sample(observations(spec, 8, 0), agent_ids=ids(fast, 8))
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


def test_memories_follow_the_agents_and_are_forgotten(memory_pair):
    """Agents come and go between decisions, some episodes end (``forget``), one id comes twice
    in a batch: both paths carry, start from zeros and keep the same memories."""
    spec, fast, slow = memory_pair
    rng = np.random.default_rng(7)
    for step in range(6):
        agents = rng.choice(12, size=6, replace=False).astype(np.int64)
        if step == 3:
            agents[-1] = agents[0]
        obs, mask = observations(spec, 6, 30 + step), masks(spec, 6, 30 + step)
        torch.manual_seed(step)
        mine = fast.sample(obs, mask, agents)
        torch.manual_seed(step)
        theirs = slow.sample(obs, mask, agents)
        assert_same_actions(mine.actions, theirs.actions)
        assert_same_memories(fast, slow, mine.memories, theirs.memories, agents)
        ended = agents[rng.random(6) < 0.3]
        fast.forget(ended)
        slow.forget(ended)
        assert not fast.memories.recall(ended).any()
    fast.forget()
    assert len(fast.memories) == 0


def steps(policy: TorchPolicy, spec: BehaviorSpec, seed: int) -> list:
    """Eight decisions of six agents with episodes ending, from ``seed``: the actions taken."""
    torch.manual_seed(seed)
    agents = np.arange(6)
    taken = []
    for step in range(8):
        obs, mask = observations(spec, 6, step), masks(spec, 6, step)
        taken.append(policy.act(obs, mask, agent_ids=agents))
        if step % 3 == 2:  # two agents' episodes end; new agents take their places
            policy.forget(agents[:2])
            agents = np.concatenate([agents[2:], agents[:2] + 6])
    return taken


def test_same_seed_same_actions_on_either_path(memory_pair):
    spec, fast, slow = memory_pair
    again = fast.clone_architecture()
    again.load_weights(fast.get_weights())
    mine, theirs, mine_again = (steps(p, spec, seed=5) for p in (fast, slow, again))
    for one, other, repeat in zip(mine, theirs, mine_again, strict=True):
        assert_same_actions(one, other)
        for part in ("continuous", "discrete"):
            np.testing.assert_array_equal(getattr(one, part), getattr(repeat, part))


def test_numpy_copy_follows_an_lstm_update(memory_pair):
    """A step of the optimizer on a sequence loss, which reaches the LSTM's own weights."""
    spec, fast, slow = memory_pair
    obs = [torch.as_tensor(o) for o in observations(spec, 8, 3)]
    memory = torch.zeros(2, fast.memory_size)
    heads = fast.actor.head_outputs(obs, None, memory, sequence_length=4)
    optimizer = Adam(list(fast.actor.parameters()), lr=0.05)
    (heads["memory"].sum() + heads["mean"].sum()).backward()
    lstm = fast.actor.memory.lstm
    versions = lstm.weight_hh_l0._version, lstm.bias_ih_l0._version
    optimizer.step()
    assert (lstm.weight_hh_l0._version, lstm.bias_ih_l0._version) != versions
    slow.load_weights(fast.get_weights())
    assert_same_draws(spec, fast, slow, 18)
    fast.actor.memory.load_state_dict(fast.clone_architecture().actor.memory.state_dict())
    slow.load_weights(fast.get_weights())
    assert_same_draws(spec, fast, slow, 19)


def test_memory_without_agent_ids_is_an_error(memory_pair):
    spec, fast, _ = memory_pair
    with pytest.raises(MemoryUseError, match="agent_ids"):
        fast.sample(observations(spec, 2, 0))


def test_the_rule_picks_torch_for_large_batches_only_while_blas_is_threaded(monkeypatch):
    spec, settings, kinds = CASES["continuous"]
    policy = make(spec, settings, kinds)  # two layers of 32: the widest has 32 x 32 weights
    rows = NUMPY_WORK_LIMIT // (32 * 32)
    monkeypatch.setattr(fast_acting, "blas_threads", lambda: 2)
    assert policy._numpy_actor(observations(spec, rows - 1, 0)) is not None
    assert policy._numpy_actor(observations(spec, rows, 0)) is None
    memory = make(spec, {"memory": MemorySettings(memory_size=64)}, kinds)  # LSTM: 64 x 128
    assert memory._numpy.widest == (32 + 32) * 128
    assert memory._numpy_actor(observations(spec, NUMPY_WORK_LIMIT // (64 * 128), 0)) is None
    monkeypatch.setattr(fast_acting, "blas_threads", lambda: 1)
    assert policy._numpy_actor(observations(spec, rows, 0)) is not None
    monkeypatch.setenv(FORCE_TORCH_VARIABLE, "1")
    assert make(spec, settings, kinds)._numpy is None
    assert make(spec, {"memory": MemorySettings(memory_size=8)}, kinds)._numpy is None


def test_limit_blas_threads_leaves_one_thread():
    with threadpool_limits(limits=2, user_api="blas"):  # the thread count is restored after
        limit_blas_threads()
        assert blas_threads() == 1


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
TENNIS_MEMORY = copy.deepcopy(TENNIS)
TENNIS_MEMORY["behaviors"]["Tennis"]["network_settings"]["memory"] = {
    "memory_size": 16,
    "sequence_length": 8,
}


def trained(tmp_path, name: str, monkeypatch, *, numpy: bool, config: dict = TENNIS):
    import ghost  # the top layer, only for this end-to-end check

    calls = []
    decide = NumpyActor.decide
    monkeypatch.setattr(NumpyActor, "decide", lambda *a: calls.append(1) or decide(*a))
    with threadpool_limits(limits=None):  # the run limits numpy's BLAS; the test restores it
        result = ghost.train(config, run_id=name, results_dir=tmp_path)
    assert bool(calls) == numpy, "acted on the other path than asked"
    weights = load_pt(result.policies["Tennis"])  # read as any policy file: no pickled code
    return result, weights


@pytest.mark.parametrize("config", [TENNIS, TENNIS_MEMORY], ids=["mlp", "memory"])
def test_same_seed_same_run_on_either_path(tmp_path, monkeypatch, config):
    """Tennis, ghost-learn, 3000 steps (three updates, swaps, a team change, episodes ending): a
    seed gives the same run bit for bit; acting through torch instead gives the same Elo and the
    same weights to float rounding (numpy's and torch's matrix products round differently)."""
    fast, fast_file = trained(tmp_path, "numpy", monkeypatch, numpy=True, config=config)
    again, again_file = trained(tmp_path, "numpy-again", monkeypatch, numpy=True, config=config)
    monkeypatch.setenv(FORCE_TORCH_VARIABLE, "1")
    slow, slow_file = trained(tmp_path, "torch", monkeypatch, numpy=False, config=config)
    assert fast.ratings == again.ratings
    for key, value in fast_file["weights"].items():
        assert torch.equal(value, again_file["weights"][key]), key
    assert fast.steps == slow.steps
    assert fast.ratings == pytest.approx(slow.ratings, abs=1e-9)
    torch.testing.assert_close(fast_file["weights"], slow_file["weights"], rtol=1e-5, atol=1e-6)
