"""The byte layout of ML-Agents' demonstration (``.demo``) files, shared by their reader and writer.

A ``.demo`` file is a run of *delimited* protocol messages (``mlagents_envs.communicator_objects``),
each a varint byte count followed by that many bytes of the message:

1. at byte 0, the *metadata* (``DemonstrationMetaProto``: format version, demonstration name,
   number of steps and episodes, mean reward per episode). Unity writes it last, over the first
   ``METADATA_REGION`` bytes it left free, so it must fit there;
2. at byte ``METADATA_REGION`` (whatever the metadata's length), the *brain parameters*
   (``BrainParametersProto``: the behavior's name and action spec);
3. then one *row* per agent step (``AgentInfoActionPairProto``): the agent's ``AgentInfoProto``
   (observations, reward, done, max step reached, action mask) and the ``AgentActionProto`` it
   took. A behavior's observation specs are read off the first row.

The format has no magic number: a file is recognised by a metadata message that fits its region,
parses, has no unknown fields and names a known format version.
"""

from __future__ import annotations

import numpy as np
from mlagents_envs.base_env import BehaviorSpec, ObservationSpec
from mlagents_envs.communicator_objects.agent_action_pb2 import AgentActionProto
from mlagents_envs.communicator_objects.agent_info_action_pair_pb2 import (
    AgentInfoActionPairProto,
)
from mlagents_envs.communicator_objects.agent_info_pb2 import AgentInfoProto
from mlagents_envs.communicator_objects.brain_parameters_pb2 import (
    ActionSpecProto,
    BrainParametersProto,
)
from mlagents_envs.communicator_objects.demonstration_meta_pb2 import DemonstrationMetaProto
from mlagents_envs.communicator_objects.observation_pb2 import ObservationProto

__all__ = [
    "API_VERSION",
    "METADATA_REGION",
    "SUPPORTED_API_VERSIONS",
    "AgentActionProto",
    "AgentInfoActionPairProto",
    "AgentInfoProto",
    "BrainParametersProto",
    "CutShort",
    "DemonstrationMetaProto",
    "ObservationProto",
    "brain_parameters",
    "decode_varint",
    "delimited",
    "encode_varint",
    "observation_proto",
]

#: bytes reserved at the start of a file for the delimited metadata; the brain parameters start
#: here (ML-Agents' C# writer reserves 32 bytes and seeks one past them)
METADATA_REGION = 33
#: the format version this writer puts into the metadata (Unity's since ML-Agents 1.0)
API_VERSION = 1
#: the format versions ML-Agents 1.1 reads, and so do we
SUPPORTED_API_VERSIONS = frozenset({0, 1})

_VARINT_MAX_BYTES = 10


class CutShort(Exception):
    """Raised by ``decode_varint`` when the data ends inside a varint."""


def decode_varint(data: bytes | memoryview, pos: int) -> tuple[int, int]:
    """The unsigned varint at ``data[pos:]``: its value and the position after it.

    Raises:
        CutShort: ``data`` ends before the varint does.
        ValueError: the varint runs longer than 10 bytes (no varint does).
    """
    value = shift = 0
    for offset in range(_VARINT_MAX_BYTES):
        if pos + offset >= len(data):
            raise CutShort
        byte = data[pos + offset]
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos + offset + 1
        shift += 7
    raise ValueError(f"a varint at byte {pos} runs longer than {_VARINT_MAX_BYTES} bytes")


def encode_varint(value: int) -> bytes:
    """The unsigned varint encoding of ``value`` (>= 0)."""
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def delimited(message_bytes: bytes) -> bytes:
    """``message_bytes`` with its varint byte count in front, as the file holds each message."""
    return encode_varint(len(message_bytes)) + message_bytes


def brain_parameters(behavior_name: str, spec: BehaviorSpec) -> BrainParametersProto:
    """The brain parameters message of a behavior (its action spec in the current fields only,
    as Unity writes them for trainers that take hybrid actions)."""
    action = spec.action_spec
    return BrainParametersProto(
        brain_name=behavior_name,
        is_training=False,
        action_spec=ActionSpecProto(
            num_continuous_actions=action.continuous_size,
            num_discrete_actions=action.discrete_size,
            discrete_branch_sizes=list(action.discrete_branches),
        ),
    )


def observation_proto(spec: ObservationSpec, row: np.ndarray) -> ObservationProto:
    """One uncompressed observation of ``spec`` holding ``row`` (float32, any shape of its size)."""
    proto = ObservationProto(
        shape=list(spec.shape),
        dimension_properties=[int(d.value) for d in spec.dimension_property],
        observation_type=int(spec.observation_type.value),
        name=spec.name,
    )
    proto.float_data.data.extend(np.asarray(row, dtype=np.float32).ravel().tolist())
    return proto
