"""RLlib self-play: the same seed is the same run whatever ``PYTHONHASHSEED`` a process has.

RLlib keeps agent ids in sets, whose order follows the strings' per-process salted hashes
(``ghost/integrations/rllib/agent_order.py``). The fast tests check the order ``AgentOrder``
gives and where it is pinned; the slow ones train the same seed in two processes whose hash
seeds iterate the agents' sets in different orders and compare what they learnt.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("ray.rllib")
pytest.importorskip("pyspiel")

from ray.rllib.algorithms.ppo import PPOConfig  # noqa: E402
from ray.rllib.connectors.common.agent_to_module_mapping import AgentToModuleMapping  # noqa: E402

from ghost.integrations.rllib import LEARNER_MODULE, ghost_module, ghost_self_play  # noqa: E402
from ghost.integrations.rllib.agent_order import AgentOrder, agent_order  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
# hash seeds under which sets of this project's agent ids iterate in different orders
# (t0_a0/t1_a1, t0_a0/t0_a1, and the module ids); each run checks it still holds
HASH_SEEDS = ("1", "4")


# -- the order --------------------------------------------------------------------------------
def test_agents_come_by_episode_then_by_agent_id():
    data = {
        ("e1", "t1_a1", "ghost_t1_0"): [1],
        ("e0", "t1_a3", "main"): [2],
        ("e1", "t0_a0", "main"): [3],
        ("e0", "t0_a1", "ghost_t0_0"): [4],
        ("e0", "t1_a2", "main"): [5],
    }
    order = agent_order(data, {"e0": 0, "e1": 1})
    assert [(episode, agent) for episode, agent, _ in order] == [
        ("e0", "t0_a1"), ("e0", "t1_a2"), ("e0", "t1_a3"), ("e1", "t0_a0"), ("e1", "t1_a1"),
    ]  # fmt: skip


def test_agents_of_one_module_with_unequal_lengths_keep_rllibs_order():
    # RLlib's advantage estimation splits a module's rows by lengths in its own order
    data = {
        ("e0", "t0_a1", "main"): [1, 2, 3],
        ("e0", "t1_a0", "ghost_t1_0"): [4],
        ("e0", "t0_a0", "main"): [5],
    }
    order = agent_order(data, {"e0": 0})
    assert [agent for _, agent, _ in order] == ["t0_a1", "t0_a0", "t1_a0"]


def test_an_unknown_episode_comes_last_as_it_came():
    data = {("x", "b", "m"): [1], ("x", "a", "m"): [1], ("e0", "c", "m"): [1]}
    assert [agent for _, agent, _ in agent_order(data, {"e0": 0})] == ["c", "b", "a"]


class _Episode:
    def __init__(self, id_: str) -> None:
        self.id_ = id_


def test_every_per_agent_column_takes_the_same_order():
    keys = [("e0", "t1_a1", "ghost_t1_0"), ("e0", "t0_a0", "main")]
    batch = {
        "obs": {key: [index] for index, key in enumerate(keys)},
        "rewards": {key: [10 + index] for index, key in enumerate(keys)},
        "main": {"obs": [0]},  # a column already by module: left as it is
    }
    out = AgentOrder()(rl_module=None, batch=batch, episodes=[_Episode("e0")])
    assert list(out["obs"]) == list(out["rewards"]) == keys[::-1]
    assert out["obs"][keys[0]] == [0] and out["rewards"][keys[0]] == [10]
    assert out["main"] == {"obs": [0]}


def test_columns_of_different_agents_are_not_reordered():
    batch = {
        "obs": {("e0", "b", "m"): [1], ("e0", "a", "m"): [2]},
        "rewards": {("e0", "b", "m"): [3]},
    }
    out = AgentOrder()(rl_module=None, batch=batch, episodes=[_Episode("e0")])
    assert [agent for _, agent, _ in out["obs"]] == ["b", "a"]


# -- where it is pinned -----------------------------------------------------------------------
def test_modules_are_built_in_one_order():
    # a set of module ids would build them, and draw their initial weights, in hash order
    config = ghost_self_play(
        PPOConfig(), env="openspiel:leduc_poker", self_play={"window": 2}, seed=0
    )
    assert list(config.policies) == [LEARNER_MODULE, ghost_module(0, 0), ghost_module(1, 0)]


def test_env_runner_and_learner_order_agents_before_mapping_them_to_modules():
    import ray

    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    config = PPOConfig().env_runners(num_env_runners=0, rollout_fragment_length=32)
    config.training(train_batch_size_per_learner=32, minibatch_size=32, num_epochs=1)
    algorithm = ghost_self_play(config, env="tennis", seed=0).build_algo()
    try:
        algorithm.env_runner.sample(num_timesteps=4)  # its first episodes pin the order
        learner = algorithm.learner_group._learner
        for pipeline in (algorithm.env_runner._env_to_module, learner._learner_connector):
            kinds = [type(piece) for piece in pipeline.connectors]
            assert kinds.count(AgentOrder) == 1
            assert kinds.index(AgentOrder) + 1 == kinds.index(AgentToModuleMapping)
    finally:
        algorithm.stop()
        if started:
            ray.shutdown()


# -- across processes -------------------------------------------------------------------------
RUN = textwrap.dedent(
    """
    import hashlib, json, sys
    import numpy as np, ray, torch
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig
    from ghost.integrations.rllib import GhostMultiAgentEnv, LEARNER_MODULE, ghost_self_play
    from ghost.integrations.rllib import self_play_of

    env = sys.argv[1]
    torch.set_num_threads(1)
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    config = (
        PPOConfig()
        .env_runners(num_env_runners=0, num_envs_per_env_runner=2, rollout_fragment_length=64)
        .training(train_batch_size_per_learner=128, minibatch_size=64, num_epochs=1)
        .rl_module(model_config=DefaultModelConfig(fcnet_hiddens=[32]))
    )
    self_play = {"save_steps": 100, "swap_steps": 100, "team_change": 300, "window": 3}
    algorithm = ghost_self_play(config, env=env, self_play=self_play, seed=11).build_algo()
    reports = [algorithm.train()["Self-play"] for _ in range(3)]
    weights = algorithm.learner_group.get_weights(module_ids=[LEARNER_MODULE])[LEARNER_MODULE]
    digest = hashlib.sha256()
    for name in sorted(weights):
        digest.update(np.ascontiguousarray(weights[name]).tobytes())
    found = self_play_of(algorithm)
    agents = GhostMultiAgentEnv({"env": env}).possible_agents
    print(json.dumps({
        "set order": [list(set(agents)), list(set(config.policies))],
        "reports": reports,
        "Elo": found.state.rating,
        "learner_steps": found.learner_steps,
        "window": [snapshot.snapshot_id for snapshot in found.state.window],
        "main weights": digest.hexdigest(),
    }, default=str))
    algorithm.stop()
    """
)


def run_in_processes(env: str) -> list[dict]:
    """The run of ``RUN`` in one process per hash seed, side by side."""
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", RUN, env],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        )  # fmt: skip
        for seed in HASH_SEEDS
    ]
    found = []
    for run in runs:
        out, err = run.communicate(timeout=600)
        assert run.returncode == 0, err[-3000:]
        found.append(json.loads(out.strip().splitlines()[-1]))
    return found


@pytest.mark.slow
@pytest.mark.parametrize("env", ["tennis", "openspiel:leduc_poker", "soccer"])
def test_same_seed_same_run_under_other_hash_seeds(env):
    first, second = run_in_processes(env)
    assert first.pop("set order") != second.pop("set order"), (
        f"PYTHONHASHSEED {HASH_SEEDS} iterate the agents and modules alike; pick others"
    )
    assert first == second
