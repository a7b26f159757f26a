"""Batched conversions between the ML-Agents protocol messages and numpy, for ``UnityEnvironment``.

mlagents_envs converts a step's messages agent by agent in Python, which at many agents costs more
than the rest of a step on our side. These functions give exactly the same results with the work
per agent left to protobuf's C parser or to one pass of cheap field reads.

Vocabulary (the protocol's, ``mlagents_envs.communicator_objects``):

- *agent infos*: a behavior's ``AgentInfoProto`` list in a ``UnityRLOutputProto``, one per agent
  that requested a decision (``done`` false) or ended its episode (``done`` true), in the order the
  build sent them; ``steps_from_output`` turns them into ``(DecisionSteps, TerminalSteps)``.
- *agent actions*: a behavior's ``UnityRLInputProto.ListAgentActionProto``, one
  ``AgentActionProto`` per deciding agent, in the order of the ``DecisionSteps``;
  ``agent_actions_wire`` writes its wire bytes from an ``ActionTuple``.
- *wire bytes*: protobuf's binary encoding. A message is a sequence of fields, each a *tag*
  (``field number << 3 | wire type``, a varint) and a value; a length-delimited value (wire type
  2: a sub-message, or a packed repeated scalar field) is a varint length and that many bytes. A
  *varint* holds 7 bits per byte, low bits first, the high bit set on every byte but the last; an
  ``int32`` below zero is written as its 64-bit two's complement, so in 10 bytes.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from mlagents_envs import rpc_utils
from mlagents_envs.base_env import ActionTuple, BehaviorSpec, DecisionSteps, TerminalSteps
from mlagents_envs.exception import UnityObservationException

if TYPE_CHECKING:
    from mlagents_envs.communicator_objects.agent_info_pb2 import AgentInfoProto

#: wire type of length-delimited fields (sub-messages, packed repeated scalars)
LENGTH_DELIMITED = 2
#: ListAgentActionProto.value
LIST_VALUE_FIELD = 1
#: AgentActionProto's fields (``value``, field 4, is never sent)
VECTOR_ACTIONS_DEPRECATED_FIELD = 1
CONTINUOUS_ACTIONS_FIELD = 6
DISCRETE_ACTIONS_FIELD = 7

_VARINT_SHIFTS = np.arange(0, 70, 7, dtype=np.uint64)


def agent_actions_wire(action: ActionTuple, n_agents: int) -> bytes:
    """The wire bytes of the ``ListAgentActionProto`` holding ``action``'s first ``n_agents`` rows.

    Each agent's ``AgentActionProto`` has, as mlagents_envs' ``UnityEnvironment`` writes them,
    ``vector_actions_deprecated`` (the continuous row, then the discrete row as floats),
    ``continuous_actions`` and ``discrete_actions``. ``action`` holds the arrays ``ActionTuple``
    makes (float32 and int32, one row per agent; a missing part counts as zero columns).
    """
    continuous = _action_rows(action.continuous, n_agents, np.dtype("<f4"))
    discrete = _action_rows(action.discrete, n_agents, np.dtype(np.int32))
    n_continuous, n_discrete = continuous.shape[1], discrete.shape[1]
    message = _Rows(n_agents)
    if n_continuous + n_discrete:
        floats = np.concatenate([continuous, discrete.astype("<f4")], axis=1)
        message.add_bytes(_tag(VECTOR_ACTIONS_DEPRECATED_FIELD))
        message.add_varint(4 * (n_continuous + n_discrete))
        message.add(floats.view(np.uint8))
    if n_continuous:
        message.add_bytes(_tag(CONTINUOUS_ACTIONS_FIELD))
        message.add_varint(4 * n_continuous)
        message.add(continuous.view(np.uint8))
    if n_discrete:
        values = _Rows(n_agents)
        values.add_varints(discrete)
        message.add_bytes(_tag(DISCRETE_ACTIONS_FIELD))
        message.add_varint(values.lengths())
        message.extend(values)
    entry = _Rows(n_agents)
    entry.add_bytes(_tag(LIST_VALUE_FIELD))
    entry.add_varint(message.lengths())
    entry.extend(message)
    return entry.tobytes()


def _action_rows(array: np.ndarray | None, n_agents: int, dtype: np.dtype) -> np.ndarray:
    if array is None:
        return np.zeros((n_agents, 0), dtype)
    if len(array) < n_agents:
        raise IndexError(f"{len(array)} action rows for {n_agents} agents")
    return np.ascontiguousarray(array[:n_agents], dtype)


def _tag(field: int) -> bytes:
    """A length-delimited field's tag (one byte for the field numbers used here)."""
    return bytes([field << 3 | LENGTH_DELIMITED])


def _varint(value: int) -> bytes:
    """One non-negative varint."""
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


class _Rows:
    """Wire bytes for every agent, built left to right: one row per agent, each piece either the
    same bytes in every row or ``(agents, width)`` bytes of which a row may use only the first
    few (varints of different lengths)."""

    def __init__(self, n_agents: int) -> None:
        self.n_agents = n_agents
        #: (bytes per row, which of them a row uses, or None for all)
        self.pieces: list[tuple[np.ndarray, np.ndarray | None]] = []

    def add_bytes(self, data: bytes) -> None:
        self.pieces.append((np.frombuffer(data, np.uint8), None))

    def add(self, data: np.ndarray, used: np.ndarray | None = None) -> None:
        self.pieces.append((data, used))

    def add_varint(self, value: int | np.ndarray) -> None:
        """A varint: the same in every row (an int), or one per row."""
        if isinstance(value, int):
            self.add_bytes(_varint(value))
        else:
            self.add_varints(value[:, None])

    def add_varints(self, values: np.ndarray) -> None:
        """The varints of an ``(agents, k)`` integer array, as protobuf writes ``int32`` values."""
        unsigned = values.astype(np.int64).view(np.uint64)
        top = int(unsigned.max()) if unsigned.size else 0
        width = max(1, -(-top.bit_length() // 7))
        if width == 1:
            self.add(unsigned.astype(np.uint8))
            return
        groups = unsigned[..., None] >> _VARINT_SHIFTS[:width]
        used = groups != 0
        used[..., 0] = True
        more = np.zeros_like(used)
        more[..., :-1] = used[..., 1:]
        data = (groups & 0x7F).astype(np.uint8) | (more.view(np.uint8) << 7)
        self.add(data.reshape(self.n_agents, -1), used.reshape(self.n_agents, -1))

    def extend(self, rows: _Rows) -> None:
        self.pieces += rows.pieces

    def lengths(self) -> int | np.ndarray:
        """Each row's length: an int when every row has the same."""
        fixed = sum(data.shape[-1] for data, used in self.pieces if used is None)
        varying = [used.sum(axis=1) for _, used in self.pieces if used is not None]
        return fixed + sum(varying) if varying else fixed

    def tobytes(self) -> bytes:
        """Every row, the bytes it uses, one row after the other."""
        widths = [data.shape[-1] for data, _ in self.pieces]
        out = np.empty((self.n_agents, sum(widths)), np.uint8)
        used_out = None
        start = 0
        for (data, used), width in zip(self.pieces, widths, strict=True):
            out[:, start : start + width] = data
            if used is not None:
                if used_out is None:
                    used_out = np.ones(out.shape, bool)
                used_out[:, start : start + width] = used
            start += width
        return out.tobytes() if used_out is None else out[used_out].tobytes()


#: the columns of ``steps_from_output``'s scalars, one row per agent
_DONE, _MAX_STEP_REACHED, _REWARD, _GROUP_REWARD, _ID, _GROUP_ID, _FIELDS = range(7)


def steps_from_output(
    agent_info_list: Sequence[AgentInfoProto], behavior_spec: BehaviorSpec
) -> tuple[DecisionSteps, TerminalSteps]:
    """A behavior's agent infos as ``mlagents_envs.rpc_utils.steps_from_proto`` returns them.

    Same arrays and dtypes, same order (infos not ``done`` in the DecisionSteps, ``done`` ones in
    the TerminalSteps, each in the order sent), same action masks (``None`` without deciding
    agents or discrete actions; an agent whose mask is missing or the wrong size masks nothing)
    and the same errors: ``RuntimeError`` for NaN or infinite observations and rewards,
    ``UnityObservationException`` for an observation whose shape is not the spec's.
    """
    deciding, ending = _split_agents(list(agent_info_list))
    _read_observations(behavior_spec, deciding, ending)
    for agents in (deciding, ending):
        _check_finite(agents.reward, "rewards")
    for agents in (deciding, ending):
        _check_finite(agents.group_reward, "group_rewards")
    action_mask = None
    branches = behavior_spec.action_spec.discrete_branches
    if branches and deciding.infos:
        action_mask = _action_masks(deciding.infos, branches)
    decision = DecisionSteps(
        deciding.obs,
        deciding.reward,
        deciding.agent_id,
        action_mask,
        deciding.group_id,
        deciding.group_reward,
    )
    terminal = TerminalSteps(
        ending.obs,
        ending.reward,
        ending.scalars[:, _MAX_STEP_REACHED] != 0,
        ending.agent_id,
        ending.group_id,
        ending.group_reward,
    )
    return decision, terminal


def _split_agents(infos: list[AgentInfoProto]) -> tuple[_Agents, _Agents]:
    """The deciding and the ending agents of ``infos``, each in the order sent."""
    n_agents = len(infos)
    # each field read once per agent (the reads, not numpy, are the cost per agent here), in the
    # order of the columns
    fields = [
        (info.done, info.max_step_reached, info.reward, info.group_reward, info.id, info.group_id)
        for info in infos
    ]
    flat = itertools.chain.from_iterable(fields)
    scalars = np.fromiter(flat, np.float64, count=_FIELDS * n_agents)
    scalars = scalars.reshape(n_agents, _FIELDS)
    observations = [info.observations for info in infos]
    done = scalars[:, _DONE] != 0
    if not done.any():
        return _Agents(infos, observations, scalars), _Agents([], [], scalars[:0])
    ended = done.tolist()
    deciding = _Agents.where(infos, observations, scalars, [not end for end in ended])
    ending = _Agents.where(infos, observations, scalars, ended)
    return deciding, ending


def _read_observations(behavior_spec: BehaviorSpec, deciding: _Agents, ending: _Agents) -> None:
    """Each observation of the spec, for the deciding then the ending agents, into their ``obs``."""
    for index, obs_spec in enumerate(behavior_spec.observation_specs):
        for agents in (deciding, ending):
            if len(obs_spec.shape) == 3:
                obs = rpc_utils._process_maybe_compressed_observation(index, obs_spec, agents.infos)
            else:
                obs = _vector_observation(index, obs_spec.shape, agents)
            agents.obs.append(obs)


class _Agents:
    """The deciding or the ending agents of a behavior's infos, and their fields."""

    def __init__(self, infos: list[AgentInfoProto], observations: list, scalars: np.ndarray):
        self.infos = infos
        #: each agent's ``observations`` field
        self.observations = observations
        self.scalars = scalars
        self.obs: list[np.ndarray] = []
        self.reward = scalars[:, _REWARD].astype(np.float32)
        self.group_reward = scalars[:, _GROUP_REWARD].astype(np.float32)
        self.agent_id = scalars[:, _ID].astype(np.int32)
        # a list of ints, as mlagents_envs gives
        self.group_id = scalars[:, _GROUP_ID].astype(np.int64).tolist()

    @classmethod
    def where(
        cls,
        infos: list[AgentInfoProto],
        observations: list,
        scalars: np.ndarray,
        selected: list[bool],
    ) -> _Agents:
        """The agents of ``infos`` where ``selected``, in order."""
        return cls(
            list(itertools.compress(infos, selected)),
            list(itertools.compress(observations, selected)),
            scalars[np.array(selected, bool)],
        )


def _vector_observation(index: int, shape: tuple[int, ...], agents: _Agents) -> np.ndarray:
    """Observation ``index`` (rank 1 or 2, as floats) of every agent of ``agents``."""
    size = math.prod(shape)
    # a slice copies the values into a list in C, which iterates far faster than the container
    values = [observations[index].float_data.data[:] for observations in agents.observations]
    if values and set(map(len, values)) != {size}:
        _raise_observation_size(index, shape, agents.infos)
    flat = itertools.chain.from_iterable(values)
    count = size * len(values)
    obs = np.fromiter(flat, np.float32, count=count).reshape((len(values), *shape))
    _check_finite(obs, "observations")
    return obs


def _raise_observation_size(
    index: int, shape: tuple[int, ...], infos: Sequence[AgentInfoProto]
) -> None:
    for info in infos:
        observation = info.observations[index]
        if tuple(observation.shape) != shape:
            raise UnityObservationException(
                f"Observation at index={index} for agent with id={info.id} didn't match the "
                f"ObservationSpec. Expected shape {shape} but got {tuple(observation.shape)}."
            )
    # the shape fields match the spec but the values do not: mlagents_envs fails in numpy here
    for info in infos:
        values = len(info.observations[index].float_data.data)
        if values != math.prod(shape):
            raise ValueError(
                f"Observation at index={index} for agent with id={info.id} has {values} values; "
                f"its shape {shape} holds {math.prod(shape)}."
            )


def _check_finite(values: np.ndarray, source: str) -> None:
    """Raise ``RuntimeError`` as mlagents_envs does for NaN or infinite values."""
    if values.size == 0:
        return
    # the sum, not each value, as mlagents_envs (its mean): values that overflow the sum fail too
    total = np.add.reduce(values, axis=None)
    if np.isnan(total):
        raise RuntimeError(f"The {source} provided had NaN values.")
    if not np.isfinite(total):
        raise RuntimeError(f"The {source} provided had Infinite values.")


def _action_masks(infos: Sequence[AgentInfoProto], branches: tuple[int, ...]) -> list[np.ndarray]:
    """Each branch's ``(agents, branch size)`` mask, ``True`` where an action is masked."""
    size = sum(branches)
    masks = [info.action_mask[:] for info in infos]
    if set(map(len, masks)) != {size}:
        unmasked = [False] * size
        masks = [mask if len(mask) == size else unmasked for mask in masks]
    flat = np.fromiter(itertools.chain.from_iterable(masks), bool, count=size * len(infos))
    ends = np.cumsum(branches)[:-1]
    return np.split(flat.reshape(len(infos), size), ends, axis=1)
