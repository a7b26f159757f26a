"""``envs.unity_messages`` against mlagents_envs' own conversions, on messages built here.

Agent infos go through ``UnityRLOutputProto`` wire bytes, as they arrive from a build; each
decode is compared with ``rpc_utils.steps_from_proto`` array by array (values, dtypes, shapes),
each encode with ``UnityEnvironment._generate_step_input`` byte by byte.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from mlagents_envs import rpc_utils
from mlagents_envs.base_env import (
    ActionSpec,
    ActionTuple,
    BehaviorSpec,
    DecisionSteps,
    DimensionProperty,
    ObservationSpec,
    ObservationType,
    TerminalSteps,
)
from mlagents_envs.communicator_objects.unity_rl_output_pb2 import UnityRLOutputProto
from mlagents_envs.environment import UnityEnvironment
from mlagents_envs.exception import UnityObservationException
from mlagents_envs.side_channel.environment_parameters_channel import (
    EnvironmentParametersChannel,
)
from mlagents_envs.side_channel.side_channel_manager import SideChannelManager

from envs.unity_environment import UnityBuildEnvironment
from envs.unity_messages import agent_actions_wire, steps_from_output

SEED = 7


def observation_spec(shape: tuple[int, ...]) -> ObservationSpec:
    return ObservationSpec(
        name=f"obs{shape}",
        shape=shape,
        dimension_property=(DimensionProperty.UNSPECIFIED,) * len(shape),
        observation_type=ObservationType.DEFAULT,
    )


def behavior_spec(
    shapes: Sequence[tuple[int, ...]], *, continuous: int = 0, branches: tuple[int, ...] = ()
) -> BehaviorSpec:
    return BehaviorSpec(
        [observation_spec(shape) for shape in shapes], ActionSpec(continuous, branches)
    )


def agent_infos(
    rng: np.random.Generator,
    spec: BehaviorSpec,
    done: Sequence[bool],
    *,
    masks: Sequence[bool] | None = None,
):
    """One AgentInfoProto per ``done`` flag, random fields; agent ``i`` sends an action mask
    (of the spec's size) where ``masks[i]``, every agent where ``masks`` is None."""
    output = UnityRLOutputProto()
    infos = output.agentInfos["behavior"].value
    mask_size = sum(spec.action_spec.discrete_branches)
    for index, ended in enumerate(done):
        info = infos.add(
            reward=float(rng.normal()),
            group_reward=float(rng.normal()) if index % 3 else 0.0,
            done=ended,
            max_step_reached=ended and index % 2 == 0,
            id=int(rng.integers(-5, 300)),
            group_id=index % 4,
        )
        for obs_spec in spec.observation_specs:
            observation = info.observations.add(shape=obs_spec.shape)
            values = rng.normal(size=obs_spec.shape).astype(np.float32)
            observation.float_data.data.extend(values.ravel().tolist())
        if mask_size and (masks is None or masks[index]):
            info.action_mask.extend(rng.random(mask_size) < 0.5)
    return UnityRLOutputProto.FromString(output.SerializeToString()).agentInfos["behavior"].value


def assert_same_arrays(ours: np.ndarray, theirs: np.ndarray) -> None:
    assert isinstance(ours, np.ndarray)
    assert ours.dtype == theirs.dtype
    assert ours.shape == theirs.shape
    np.testing.assert_array_equal(ours, theirs)


def assert_same_steps(ours: tuple, theirs: tuple) -> None:
    (decision, terminal), (their_decision, their_terminal) = ours, theirs
    assert isinstance(decision, DecisionSteps) and isinstance(terminal, TerminalSteps)
    for part, their_part in ((decision, their_decision), (terminal, their_terminal)):
        assert len(part.obs) == len(their_part.obs)
        for obs, their_obs in zip(part.obs, their_part.obs, strict=True):
            assert_same_arrays(obs, their_obs)
        assert_same_arrays(part.reward, their_part.reward)
        assert_same_arrays(part.agent_id, their_part.agent_id)
        assert_same_arrays(part.group_reward, their_part.group_reward)
        assert type(part.group_id) is type(their_part.group_id)
        assert list(part.group_id) == list(their_part.group_id)
    assert_same_arrays(terminal.interrupted, their_terminal.interrupted)
    if their_decision.action_mask is None:
        assert decision.action_mask is None
    else:
        assert len(decision.action_mask) == len(their_decision.action_mask)
        for mask, their_mask in zip(decision.action_mask, their_decision.action_mask, strict=True):
            assert_same_arrays(mask, their_mask)


def assert_decodes_alike(infos, spec: BehaviorSpec) -> tuple[DecisionSteps, TerminalSteps]:
    ours = steps_from_output(infos, spec)
    assert_same_steps(ours, rpc_utils.steps_from_proto(infos, spec))
    return ours


def test_decisions_and_terminals_mixed_with_several_vector_observations():
    rng = np.random.default_rng(SEED)
    spec = behavior_spec([(8,), (3, 4), (1,)], branches=(3, 2))
    done = rng.random(40) < 0.3
    decision, terminal = assert_decodes_alike(agent_infos(rng, spec, done), spec)
    assert len(decision) == 40 - done.sum() and len(terminal) == done.sum() > 0
    assert terminal.interrupted.any()


def test_only_decisions_and_only_terminals():
    rng = np.random.default_rng(SEED)
    spec = behavior_spec([(5,)], branches=(4,))
    assert_decodes_alike(agent_infos(rng, spec, [False] * 12), spec)
    decision, _ = assert_decodes_alike(agent_infos(rng, spec, [True] * 12), spec)
    assert decision.action_mask is None


@pytest.mark.parametrize("masks", ["none", "some", "all"])
def test_action_masks_present_or_absent(masks):
    rng = np.random.default_rng(SEED)
    spec = behavior_spec([(6,)], continuous=2, branches=(3, 1, 4))
    sent = {"none": [False] * 10, "some": [i % 3 == 0 for i in range(10)], "all": [True] * 10}
    done = [i % 4 == 1 for i in range(10)]
    decision, _ = assert_decodes_alike(agent_infos(rng, spec, done, masks=sent[masks]), spec)
    assert [mask.shape[1] for mask in decision.action_mask] == [3, 1, 4]


def test_a_mask_of_the_wrong_size_masks_nothing():
    rng = np.random.default_rng(SEED)
    spec = behavior_spec([(2,)], branches=(2, 2))
    infos = agent_infos(rng, spec, [False] * 4, masks=[False] * 4)
    infos[1].action_mask.extend([True, True, True])
    infos[2].action_mask.extend([True] * 4)
    infos[3].action_mask.extend([True] * 6)
    decision, _ = assert_decodes_alike(infos, spec)
    assert decision.action_mask[0][2].all()
    assert not decision.action_mask[0][[1, 3]].any()


def test_continuous_actions_have_no_mask():
    rng = np.random.default_rng(SEED)
    spec = behavior_spec([(3,)], continuous=2)
    decision, _ = assert_decodes_alike(agent_infos(rng, spec, [False, True, False]), spec)
    assert decision.action_mask is None


def test_no_agents():
    spec = behavior_spec([(8,), (2, 3)], branches=(3,))
    decision, terminal = assert_decodes_alike(UnityRLOutputProto().agentInfos["b"].value, spec)
    assert len(decision) == len(terminal) == 0


def test_visual_observations_beside_vector_ones():
    rng = np.random.default_rng(SEED)
    spec = behavior_spec([(4,), (2, 3, 2)], branches=(2,))
    assert_decodes_alike(agent_infos(rng, spec, [False, True, False, False]), spec)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("reward", float("nan"), "The rewards provided had NaN values."),
        ("reward", float("inf"), "The rewards provided had Infinite values."),
        ("group_reward", float("nan"), "The group_rewards provided had NaN values."),
        ("observation", float("-inf"), "The observations provided had Infinite values."),
    ],
)
def test_nan_and_infinite_values_raise_as_in_mlagents(field, value, message):
    rng = np.random.default_rng(SEED)
    spec = behavior_spec([(4,)], branches=(2,))
    infos = agent_infos(rng, spec, [False, True, False])
    if field == "observation":
        infos[2].observations[0].float_data.data[1] = value
    else:
        setattr(infos[1], field, value)
    with pytest.raises(RuntimeError) as theirs:
        rpc_utils.steps_from_proto(infos, spec)
    with pytest.raises(RuntimeError, match=message) as ours:
        steps_from_output(infos, spec)
    assert str(ours.value) == str(theirs.value) == message


def test_an_observation_of_the_wrong_shape_raises_as_in_mlagents():
    rng = np.random.default_rng(SEED)
    spec = behavior_spec([(4,)])
    infos = agent_infos(rng, spec, [False] * 3)
    del infos[1].observations[0].shape[:]
    infos[1].observations[0].shape.append(3)
    del infos[1].observations[0].float_data.data[3:]
    with pytest.raises(UnityObservationException):
        rpc_utils.steps_from_proto(infos, spec)
    with pytest.raises(UnityObservationException, match="index=0 for agent with id="):
        steps_from_output(infos, spec)
    # the shape field right but the values not: mlagents_envs fails in numpy, with a ValueError
    infos[1].observations[0].shape[0] = 4
    with pytest.raises(ValueError):
        rpc_utils.steps_from_proto(infos, spec)
    with pytest.raises(ValueError, match="has 3 values"):
        steps_from_output(infos, spec)


def environment(agents: dict[str, int], channel: EnvironmentParametersChannel | None = None):
    """A ``UnityBuildEnvironment`` with no build: just what ``_generate_step_input`` reads."""
    env = object.__new__(UnityBuildEnvironment)
    spec = behavior_spec([(1,)])
    env._env_state = {}
    for name, count in agents.items():
        empty_obs = [np.zeros((count, 1), np.float32)]
        ids = np.arange(count, dtype=np.int32)
        rewards = np.zeros(count, np.float32)
        decision = DecisionSteps(empty_obs, rewards, ids, None, [0] * count, rewards)
        env._env_state[name] = (decision, TerminalSteps.empty(spec))
    env._side_channel_manager = SideChannelManager([] if channel is None else [channel])
    return env


def assert_encodes_alike(agents: dict[str, int], actions: dict[str, ActionTuple]) -> None:
    env = environment(agents)
    ours = env._generate_step_input(actions)
    theirs = UnityEnvironment._generate_step_input(env, actions)
    assert ours.SerializeToString(deterministic=True) == theirs.SerializeToString(
        deterministic=True
    )
    assert ours == theirs


def random_actions(
    rng: np.random.Generator, agents: int, continuous: int, branches: Sequence[int]
) -> ActionTuple:
    discrete = [rng.integers(0, size, agents) for size in branches]
    return ActionTuple(
        continuous=rng.normal(size=(agents, continuous)).astype(np.float32),
        discrete=np.array(discrete, np.int32).T.reshape(agents, len(branches)),
    )


@pytest.mark.parametrize(
    ("continuous", "branches"),
    [(3, ()), (0, (5,)), (2, (3,)), (1, (2, 7, 3)), (0, (2, 2, 2, 2)), (0, ()), (40, (3,))],
)
def test_actions_encode_as_in_mlagents(continuous, branches):
    rng = np.random.default_rng(SEED)
    assert_encodes_alike({"b": 9}, {"b": random_actions(rng, 9, continuous, branches)})


def test_only_continuous_or_only_discrete_arrays():
    rng = np.random.default_rng(SEED)
    assert_encodes_alike({"b": 4}, {"b": ActionTuple(continuous=rng.normal(size=(4, 2)))})
    assert_encodes_alike({"b": 4}, {"b": ActionTuple(discrete=rng.integers(0, 3, (4, 2)))})
    assert_encodes_alike({"b": 4}, {"b": ActionTuple(continuous=np.zeros((4, 0)))})


def test_several_behaviors_and_behaviors_without_agents():
    rng = np.random.default_rng(SEED)
    agents = {"a": 3, "empty": 0, "c": 130}
    actions = {
        "a": random_actions(rng, 3, 2, (3,)),
        "empty": random_actions(rng, 0, 2, (3,)),
        "c": random_actions(rng, 130, 0, (4, 2)),
    }
    assert_encodes_alike(agents, actions)
    # no behavior with agents: no STEP command, as in mlagents_envs
    env = environment({"empty": 0})
    assert env._generate_step_input({"empty": actions["empty"]}).rl_input.command == 0
    assert_encodes_alike({"empty": 0}, {"empty": actions["empty"]})


def test_discrete_values_of_every_varint_length():
    edges = [0, 1, 127, 128, 300, 16383, 16384, 2**21, 2**24 + 1, 2**28, 2**31 - 1]
    negatives = [-1, -128, -(2**31)]
    values = np.array(edges + negatives, np.int32)
    discrete = np.stack([values, values[::-1]], axis=1)
    continuous = np.array([[0.5, -0.0]] * len(values), np.float32)
    continuous[0] = [np.inf, 1e-45]
    actions = {"b": ActionTuple(continuous=continuous, discrete=discrete)}
    assert_encodes_alike({"b": len(values)}, actions)
    assert_encodes_alike({"b": 1}, {"b": ActionTuple(discrete=np.array([[200]]))})
    # rows of different lengths, some over 127 bytes (two-byte lengths)
    rng = np.random.default_rng(SEED)
    wide = rng.choice(values, size=(20, 16)) * (rng.random((20, 16)) < 0.5)
    wide[::3] = -1
    assert_encodes_alike({"b": 20}, {"b": ActionTuple(discrete=wide.astype(np.int32))})


def test_side_channel_messages_are_sent_with_the_actions():
    rng = np.random.default_rng(SEED)
    actions = {"b": random_actions(rng, 2, 1, (2,))}
    channel = EnvironmentParametersChannel()
    env = environment({"b": 2}, channel)
    channel.set_float_parameter("speed", 2.5)
    ours = env._generate_step_input(actions)
    channel.set_float_parameter("speed", 2.5)
    theirs = UnityEnvironment._generate_step_input(env, actions)
    assert ours.rl_input.side_channel and ours == theirs


def test_rows_beyond_the_agents_are_not_sent():
    rng = np.random.default_rng(SEED)
    assert_encodes_alike({"b": 3}, {"b": random_actions(rng, 5, 2, (3,))})
    with pytest.raises(IndexError):
        agent_actions_wire(random_actions(rng, 2, 2, (3,)), 3)
