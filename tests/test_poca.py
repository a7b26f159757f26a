"""POCA: group mates, the counterfactual baseline, group value targets, learning, resume."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from mlagents_envs.base_env import ActionSpec, ActionTuple, DecisionSteps, TerminalSteps

import ghost
from envs.behavior_id import BehaviorId
from envs.specs import vector_observation_spec
from envs.stepping import AGENT_ID_STRIDE, BehaviorSteps, InProcessStepper
from tests.conftest import REFERENCE_CONFIGS, needs_reference_configs
from tests.group_envs import SacrificeEnv
from trainers.base import ActionOutput, StepBatch
from trainers.group_critic import GroupCritic
from trainers.group_minibatch import GroupIndex
from trainers.group_rollout import find_mates
from trainers.hyperparameters import POCASettings, PPOSettings
from trainers.poca import GROUP_CUMULATIVE_REWARD, GroupedRows, POCATrainer, flat_actions
from trainers.policy import to_tensors
from trainers.policy_file import read_policy_weights
from trainers.rollout import group_keys
from trainers.run_files.layout import RunLayout
from trainers.settings import NetworkSettings, RewardSignalSettings, ScheduleType, TrainerSettings
from trainers.stats import CUMULATIVE_REWARD
from trainers.training_loop import TrainingLoop


@pytest.fixture(autouse=True)
def one_thread():
    torch.set_num_threads(1)


# -- group mates ----------------------------------------------------------------------------------
def test_mates_are_the_other_rows_of_the_same_group():
    mates = find_mates(np.array([5, 0, 5, 7, 7, 7]))
    assert mates.shape == (6, 2)
    assert sorted(mates[0][mates[0] >= 0]) == [2]
    assert (mates[1] == -1).all()  # in no group
    assert sorted(mates[3]) == [4, 5] and sorted(mates[4]) == [3, 5] and sorted(mates[5]) == [3, 4]


def test_groups_of_different_environments_never_mix():
    # group 1 of environment 0 and group 1 of environment 1 (agent ids carry the environment)
    keys = group_keys(np.array([3, AGENT_ID_STRIDE + 3]), np.array([1, 1]))
    assert keys[0] != keys[1]
    assert (find_mates(keys) == -1).all()
    assert group_keys(np.array([3]), np.array([0]))[0] == 0


# -- the critic -----------------------------------------------------------------------------------
def _critic(seed: int = 0) -> GroupCritic:
    torch.manual_seed(seed)
    spec = [vector_observation_spec(3)]
    return GroupCritic(spec, ActionSpec(1, (3,)), NetworkSettings(hidden_units=16, num_layers=2))


def test_value_ignores_actions_and_member_order():
    critic = _critic()
    obs = [torch.randn(5, 3, 3)]
    present = torch.ones(5, 3, dtype=torch.bool)
    value = critic.value(obs, present)
    swapped = [obs[0][:, [0, 2, 1]]]
    torch.testing.assert_close(critic.value(swapped, present), value)


def test_baseline_marginalizes_only_the_agents_own_action():
    critic = _critic()
    obs = [torch.randn(5, 3, 3)]
    present = torch.ones(5, 3, dtype=torch.bool)
    actions = torch.randn(5, 3, 4)
    baseline = critic.baseline(obs, present, actions)
    own_changed = actions.clone()
    own_changed[:, 0] += 5.0
    torch.testing.assert_close(critic.baseline(obs, present, own_changed), baseline)
    mate_changed = actions.clone()
    mate_changed[:, 2] += 5.0
    assert not torch.allclose(critic.baseline(obs, present, mate_changed), baseline)


def test_any_width_of_network_works():
    spec = [vector_observation_spec(3)]
    for hidden in (30, 7):  # not multiples of the 4 attention heads
        critic = GroupCritic(spec, ActionSpec(0, (2,)), NetworkSettings(hidden_units=hidden))
        value = critic.value([torch.randn(2, 3, 3)], torch.ones(2, 3, dtype=torch.bool))
        assert value.shape == (2,) and torch.isfinite(value).all()


def test_one_pass_answers_both_questions():
    critic = _critic()
    obs, actions = [torch.randn(6, 3, 3)], torch.randn(6, 3, 4)
    present = torch.tensor([[True, True, True], [True, False, True], [True, False, False]] * 2)
    value, baseline = critic.value_and_baseline(obs, present, actions)
    torch.testing.assert_close(value, critic.value(obs, present))
    torch.testing.assert_close(baseline, critic.baseline(obs, present, actions))


def test_absent_members_change_nothing_whatever_they_hold():
    critic = _critic()
    obs = [torch.randn(4, 2, 3)]
    actions = torch.randn(4, 2, 4)
    two = torch.ones(4, 2, dtype=torch.bool)
    value, baseline = critic.value(obs, two), critic.baseline(obs, two, actions)
    # the same groups with a third member slot that is absent and full of garbage
    padded = [torch.cat([obs[0], torch.full((4, 1, 3), 1e6)], dim=1)]
    padded_actions = torch.cat([actions, torch.full((4, 1, 4), -1e6)], dim=1)
    present = torch.tensor([[True, True, False]] * 4)
    torch.testing.assert_close(critic.value(padded, present), value)
    torch.testing.assert_close(critic.baseline(padded, present, padded_actions), baseline)


# -- value targets --------------------------------------------------------------------------------
SPEC = SacrificeEnv.spec
BEHAVIOR = BehaviorId("Pair", 0)


def _steps_batch(decision: list[tuple], terminal: list[tuple], actions: list[int]) -> StepBatch:
    """``decision`` rows: (agent, obs value, reward, group reward); ``terminal`` rows add
    ``interrupted``. Everybody is in group 1; an observation is ``[value, 0, 0, 0]``."""

    def obs(rows: list[tuple]) -> list[np.ndarray]:
        return [np.array([[r[1], 0, 0, 0] for r in rows], np.float32).reshape(-1, 4)]

    def column(rows: list[tuple], i: int, dtype: type) -> np.ndarray:
        return np.array([r[i] for r in rows], dtype)

    n = len(decision)
    steps = BehaviorSteps(
        behavior_id=BEHAVIOR,
        decision=DecisionSteps(
            obs(decision), column(decision, 2, np.float32), column(decision, 0, np.int32),
            [np.zeros((n, 2), bool)], np.ones(n, np.int32), column(decision, 3, np.float32),
        ),
        terminal=TerminalSteps(
            obs(terminal), column(terminal, 2, np.float32), column(terminal, 4, bool),
            column(terminal, 0, np.int32), np.ones(len(terminal), np.int32),
            column(terminal, 3, np.float32),
        ),
        decision_arenas=np.zeros(n, np.int64),
        terminal_arenas=np.zeros(len(terminal), np.int64),
    )  # fmt: skip
    output = ActionOutput(
        actions=ActionTuple(discrete=np.array(actions, np.int32).reshape(n, 1)),
        log_probs=np.zeros((n, 1), np.float32),
        continuous_raw=np.zeros((n, 0), np.float32),
    )
    return StepBatch(steps=steps, output=output)


class KnownCritic:
    """Value: the sum of the present members' first observation; baseline: the value minus 10 for
    every present mate whose action was 1 (so it reads mates' actions, not the agent's own)."""

    def value(self, obs, present):  # type: ignore[no-untyped-def]
        return (obs[0][..., 0] * present).sum(dim=1)

    def baseline(self, obs, present, actions):  # type: ignore[no-untyped-def]
        chose_one = actions[:, 1:, 1] * present[:, 1:]
        return self.value(obs, present) - 10.0 * chose_one.sum(dim=1)

    def value_and_baseline(self, obs, present, actions):  # type: ignore[no-untyped-def]
        return self.value(obs, present), self.baseline(obs, present, actions)

    def grouped_value_and_baseline(self, obs, actions, batch):  # type: ignore[no-untyped-def]
        values = self.value([obs[0][batch.value_members]], batch.value_present)
        members = batch.baseline_members
        baselines = self.baseline([obs[0][members]], batch.baseline_present, actions[members])
        return values, baselines


def _poca(tmp_path: Path, **hyperparameters) -> POCATrainer:
    settings = TrainerSettings(
        trainer_type="poca",
        hyperparameters=POCASettings(batch_size=4, buffer_size=4, **hyperparameters),
        network_settings=NetworkSettings(hidden_units=8),
        reward_signals={"extrinsic": RewardSignalSettings(gamma=0.5)},
    )
    trainer = POCATrainer(behavior_name="Pair", settings=settings, artifact_dir=tmp_path)
    trainer.add_policy(BEHAVIOR, trainer.create_policy(BEHAVIOR, SPEC))
    return trainer


def _grouped(trainer: POCATrainer, data) -> GroupedRows:  # type: ignore[no-untyped-def]
    return GroupedRows(
        groups=GroupIndex(data.members),
        obs=to_tensors(data.own.obs, "cpu"),
        actions=torch.as_tensor(flat_actions(data.own, trainer._branches)),
    )


def test_group_value_targets_with_an_agent_that_left_early(tmp_path):
    trainer = _poca(tmp_path, lambd=0.5)
    assembler = trainer.assemblers[BEHAVIOR]
    # step 0: agents 0 and 1 decide (agent 0 picks action 1, agent 1 action 0)
    batches = [
        _steps_batch([(0, 1.0, 0, 0), (1, 2.0, 0, 0)], [], actions=[1, 0]),
        # step 1: agent 0's episode ends (reward 1, group reward 0.25); agent 1 goes on
        _steps_batch([(1, 4.0, 0.0, 0.25)], [(0, 3.0, 1.0, 0.25, False)], actions=[1]),
        # step 2: agent 1's episode ends (reward 2), alone in its group now
        _steps_batch([], [(1, 5.0, 2.0, 0.0, False)], actions=[]),
    ]
    for batch in batches:
        transitions, _ = assembler.add(batch)
        if transitions is not None:
            trainer._take(transitions)
    data, next_index, bounds = trainer.buffer.contents()
    # rows: 0 = agent 0 ends, 1 = agent 1 goes on, 2 = agent 1 ends
    np.testing.assert_array_equal(data.mates[:, 0], [1, 0, -1])
    np.testing.assert_allclose(data.group_rewards_sum(), [1.25, 1.25, 2.0])
    np.testing.assert_array_equal(data.group_finished(), [False, False, True])
    trainer.critic = KnownCritic()
    inputs = _grouped(trainer, data)
    extrinsic = trainer._streams(data)[0]
    values, baselines, returns = trainer._targets(extrinsic, data, inputs, next_index, bounds)
    np.testing.assert_allclose(values, [1 + 2, 2 + 1, 4])
    # agent 0 left while its group went on: bootstrap from the group's next value, 3 + 4 = 7
    # (PPO would stop at its reward). gamma 0.5, lambda 0.5.
    np.testing.assert_allclose(returns[0], 1.25 + 0.5 * 7)
    np.testing.assert_allclose(returns[2], 2.0)  # the whole group is done: nothing to bootstrap
    np.testing.assert_allclose(returns[1], 1.25 + 0.5 * (0.5 * 4 + 0.5 * 2.0))
    # the baseline reads the mate's action: agent 1's mate (agent 0) chose 1, agent 0's mate did not
    np.testing.assert_allclose(baselines, [3.0, 3.0 - 10.0, 4.0])


def test_interrupted_group_keeps_bootstrapping(tmp_path):
    trainer = _poca(tmp_path, lambd=1.0)
    assembler = trainer.assemblers[BEHAVIOR]
    for batch in [
        _steps_batch([(0, 1.0, 0, 0), (1, 2.0, 0, 0)], [], actions=[0, 0]),
        _steps_batch([], [(0, 3.0, 0.5, 0, True), (1, 4.0, 0.0, 0, True)], actions=[]),
    ]:
        transitions, _ = assembler.add(batch)
        if transitions is not None:
            trainer._take(transitions)
    data, next_index, bounds = trainer.buffer.contents()
    assert not data.group_finished().any()
    trainer.critic = KnownCritic()
    inputs = _grouped(trainer, data)
    _, _, returns = trainer._targets(trainer._streams(data)[0], data, inputs, next_index, bounds)
    np.testing.assert_allclose(returns, [0.5 + 0.5 * 7, 0.5 + 0.5 * 7])


# -- learning -------------------------------------------------------------------------------------
def _train_pair(trainer_type: str, tmp_path: Path, steps: int, seed: int = 0) -> tuple:
    kind = POCASettings if trainer_type == "poca" else PPOSettings
    hyperparameters = kind(
        batch_size=256, buffer_size=1024, learning_rate=3e-3, beta=0.01,
        learning_rate_schedule=ScheduleType.CONSTANT,
    )  # fmt: skip
    settings = TrainerSettings(
        trainer_type=trainer_type, hyperparameters=hyperparameters,
        network_settings=NetworkSettings(hidden_units=32), max_steps=steps,
        summary_freq=steps // 4, checkpoint_interval=steps // 2,
    )  # fmt: skip
    env = SacrificeEnv(seed=seed)
    loop = TrainingLoop(
        behaviors={"Pair": settings}, stepper=InProcessStepper(env),
        layout=RunLayout(tmp_path / trainer_type), seed=seed,
    )  # fmt: skip
    return loop, env


def test_poca_learns_to_sacrifice_where_ppo_cannot(tmp_path):
    rates = {}
    for trainer_type in ("poca", "ppo"):
        loop, env = _train_pair(trainer_type, tmp_path, 40000, seed=1)
        loop.run()
        rates[trainer_type] = env.success_rate()
        if trainer_type == "poca":
            stats = loop.trainers["Pair"].stats.latest
            # per agent episode: the one who left collects 0, the one who stayed 1
            assert stats[GROUP_CUMULATIVE_REWARD] > 0.45
            assert stats[CUMULATIVE_REWARD] == 0.0  # individual rewards only, as ML-Agents
            assert "Losses/Baseline Loss" in stats and "Policy/Extrinsic Baseline Estimate" in stats
    # measured: POCA 1.0 on seeds 1-6 (seed 0: 0.09 since minibatches take whole groups; 1.0 with
    # rows shuffled one by one), PPO 0.004-0.08 on seeds 0-2
    assert rates["poca"] > 0.9, rates
    assert rates["ppo"] < 0.3, rates


def test_resume_continues_exactly(tmp_path):
    def state(loop: TrainingLoop) -> dict:
        trainer = loop.trainers["Pair"]
        return {
            "step": trainer.step,
            "weights": trainer.policy.get_weights(),
            "critic": trainer.critic.state_dict(),
            "optimizer": trainer.optimizer.state_dict()["state"],
        }

    whole, _ = _train_pair("poca", tmp_path / "whole", 4096)
    whole.run(max_env_steps=70)
    stopped, _ = _train_pair("poca", tmp_path / "stopped", 4096)
    stopped.run(max_env_steps=70)
    resumed, _ = _train_pair("poca", tmp_path / "stopped", 4096)
    resumed.start(resume=True)
    expected, got = state(whole), state(resumed)
    assert got["step"] == expected["step"] > 1024  # at least one update happened
    for part in ("weights", "critic"):
        for key, value in expected[part].items():
            torch.testing.assert_close(got[part][key], value)
    assert expected["optimizer"].keys() == got["optimizer"].keys()
    for index, moments in expected["optimizer"].items():
        torch.testing.assert_close(got["optimizer"][index]["exp_avg"], moments["exp_avg"])


# -- ML-Agents' own POCA configs --------------------------------------------------------------------
@needs_reference_configs
@pytest.mark.parametrize(
    ("name", "game", "grouped"),
    [("SoccerTwos-poca.yaml", "soccer", "SoccerTwos"),
     ("StrikersVsGoalie-poca.yaml", "strikers_vs_goalie", "Striker")],
)  # fmt: skip
def test_mlagents_poca_configs_train_on_the_built_in_games(tmp_path, name, game, grouped):
    config = yaml.safe_load((REFERENCE_CONFIGS / name).read_text())
    for behavior in config["behaviors"].values():
        # shorter than shipped (the networks and everything else as they are): one update each
        behavior["max_steps"] = 2200
        behavior["summary_freq"] = 1000
        behavior["hyperparameters"].update(buffer_size=2048, batch_size=1024)
    result = ghost.train(config, env=game, run_id="poca", results_dir=tmp_path)
    assert all(step >= 2048 for step in result.steps.values()), result.steps
    events = list((tmp_path / "poca" / grouped).glob("events.out.tfevents.*"))
    assert events, "TensorBoard events of the grouped behavior"
    assert (tmp_path / "poca" / f"{grouped}.onnx").exists()
    untrained = read_policy_weights(tmp_path / "poca" / grouped / "snapshots" / "snapshot-0.pt")
    final = read_policy_weights(tmp_path / "poca" / f"{grouped}.pt")
    assert any(not torch.equal(untrained[key], final[key]) for key in final), "no update ran"
