"""Step answers and actions between the trainer and a worker process, each as one buffer.

Pickled object by object, one step's answer of a small game (two behaviors, each a
``DecisionSteps`` and a ``TerminalSteps`` of a dozen small arrays) takes far longer to write and
read than the game takes to step, since pickle calls back into Python for every object and
array. Here a message is a short pickled header (behavior ids, counts, each array's dtype and
shape) followed by every array's bytes, back to back: writing copies each array once into the
message, and reading makes one writable copy of the message with an ``np.frombuffer`` view on it
for each array.

Messages holding arrays of Python objects, which have no bytes of their own to send, are left to
pickle (``pack`` returns None).
"""

from __future__ import annotations

import math
import pickle
import struct
from collections.abc import Sequence

import numpy as np
from mlagents_envs.base_env import DecisionSteps, TerminalSteps

from envs.behavior_id import BehaviorId
from envs.stepping import BehaviorSteps, StepResult

#: every array starts at a multiple of this many bytes from the buffer's start
_ALIGN = 8
_LENGTH = struct.Struct("<Q")
# dtypes by their string code and back: ``np.dtype(code)`` and ``dtype.str`` cost several
# times a dictionary lookup
_DTYPES: dict[str, np.dtype] = {}
_CODES: dict[np.dtype, str] = {}


def pack(skeleton: object, arrays: Sequence[np.ndarray]) -> bytes | None:
    """``skeleton`` (pickled) and ``arrays`` in one buffer for ``unpack``; None where an array
    holds Python objects."""
    layout, chunks = [], []
    for array in arrays:
        if array.dtype.hasobject:
            return None
        code = _CODES.get(array.dtype)
        if code is None:
            code = _CODES[array.dtype] = array.dtype.str
        layout.append((code, array.shape))
        # a contiguous array's own buffer, joined below without a copy of its own
        chunks.append(array.data if array.flags.c_contiguous else array.tobytes())
        if array.nbytes % _ALIGN:
            chunks.append(bytes(-array.nbytes % _ALIGN))
    header = pickle.dumps((skeleton, layout), protocol=pickle.HIGHEST_PROTOCOL)
    padding = bytes(-(_LENGTH.size + len(header)) % _ALIGN)
    return b"".join([_LENGTH.pack(len(header)), header, padding, *chunks])


def unpack(data: bytes) -> tuple[object, list[np.ndarray]]:
    """The skeleton and the arrays ``pack`` put in ``data``; the arrays are writable views of one
    copy of ``data``."""
    buffer = bytearray(data)
    (length,) = _LENGTH.unpack_from(buffer)
    start = _LENGTH.size
    skeleton, layout = pickle.loads(memoryview(buffer)[start : start + length])
    offset = start + length
    offset += -offset % _ALIGN
    arrays = []
    for code, shape in layout:
        dtype = _DTYPES.get(code)
        if dtype is None:
            dtype = _DTYPES[code] = np.dtype(code)
        count = math.prod(shape)
        array = np.frombuffer(buffer, dtype, count, offset)
        arrays.append(array if len(shape) == 1 else array.reshape(shape))
        size = count * dtype.itemsize
        offset += size + (-size % _ALIGN)
    return skeleton, arrays


#: a behavior's id as name and team (pickled faster than a ``BehaviorId``), then how many
#: decision observations, action masks (-1: none) and terminal observations its steps hold
Counts = tuple[str, int, int, int, int]


def step_arrays(steps: StepResult) -> tuple[list[Counts], list[np.ndarray]]:
    """Each behavior's ``Counts``, and every array of ``steps`` in the order ``steps_from``
    reads them."""
    counts, arrays = [], []
    for behavior_id, behavior in steps.items():
        decision, terminal = behavior.decision, behavior.terminal
        masks = decision.action_mask
        masks_count = -1 if masks is None else len(masks)
        counts.append(
            (behavior_id.name, behavior_id.team, len(decision.obs), masks_count, len(terminal.obs))
        )
        arrays += decision.obs
        arrays += (decision.reward, decision.agent_id, decision.group_id, decision.group_reward)
        if masks is not None:
            arrays += masks
        arrays += terminal.obs
        arrays += (terminal.reward, terminal.interrupted, terminal.agent_id, terminal.group_id)
        arrays += (terminal.group_reward, behavior.decision_arenas, behavior.terminal_arenas)
    return counts, [np.asarray(array) for array in arrays]


def steps_from(counts: Sequence[Counts], arrays: list[np.ndarray]) -> StepResult:
    """The ``StepResult`` that ``step_arrays`` took apart."""
    steps: StepResult = {}
    position = 0

    def take(count: int) -> list[np.ndarray]:
        nonlocal position
        position += count
        return arrays[position - count : position]

    for name, team, decision_obs, masks, terminal_obs in counts:
        behavior_id = BehaviorId(name, team)
        obs = take(decision_obs)
        reward, agent_id, group_id, group_reward = take(4)
        mask = None if masks < 0 else take(masks)
        decision = DecisionSteps(obs, reward, agent_id, mask, group_id, group_reward)
        obs = take(terminal_obs)
        reward, interrupted, agent_id, group_id, group_reward, arenas, ended_arenas = take(7)
        terminal = TerminalSteps(obs, reward, interrupted, agent_id, group_id, group_reward)
        steps[behavior_id] = BehaviorSteps(
            behavior_id=behavior_id,
            decision=decision,
            terminal=terminal,
            decision_arenas=arenas,
            terminal_arenas=ended_arenas,
        )
    return steps
