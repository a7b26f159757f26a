"""Demonstrations: ML-Agents' ``.demo`` files read into arrays, written from steps, checked against
a behavior.

Vocabulary:

- *demonstration*: the recorded steps of one behavior (all its teams, or one), as
  ``Demonstration`` holds them: one *row* per agent step, column arrays over all rows.
- *row*: one agent's step: its observations at a decision (or its last observation, when the row
  is ``done``), the reward it received since its previous row, and the action it took there.
  The rows of one agent's episode are consecutive, and episodes follow each other.
- *done* row: the last of an episode; *max step reached*: that episode was cut off (interrupted)
  rather than ended.

``read_demo`` reads one file, ``read_demos`` a file or every ``.demo`` file of a folder (as
ML-Agents' ``demo_path`` allows), ``check_demo_fits`` compares a demonstration with the behavior it
is used for, and ``DemoWriter`` (``envs.demo_writer``) writes files that ML-Agents 1.1 reads.
Every problem with a file is a ``DemoFileError`` of one line that names the file. The byte layout
is described in ``envs.demo_format``.
"""

from __future__ import annotations

import itertools
import logging
import operator
from collections.abc import Sequence
from pathlib import Path
from typing import TypeVar

import attrs
import numpy as np
from google.protobuf.message import DecodeError, Message
from mlagents_envs import rpc_utils
from mlagents_envs.base_env import ActionSpec, BehaviorSpec, ObservationSpec

from envs.behavior_id import BehaviorId
from envs.demo_format import (
    METADATA_REGION,
    SUPPORTED_API_VERSIONS,
    AgentInfoActionPairProto,
    BrainParametersProto,
    CutShort,
    DemonstrationMetaProto,
    ObservationProto,
    decode_varint,
    encode_varint,
)
from envs.demo_writer import DemoWriter
from envs.exceptions import DemoFileError

__all__ = [
    "DemoFileError",
    "DemoWriter",
    "Demonstration",
    "check_demo_fits",
    "read_demo",
    "read_demos",
]

logger = logging.getLogger(__name__)

_Message = TypeVar("_Message", bound=Message)

#: the suffix of demonstration files in a folder
DEMO_SUFFIX = ".demo"


def _starts_after_done(demo: Demonstration) -> np.ndarray:
    start = np.ones(len(demo.done), dtype=bool)
    start[1:] = demo.done[:-1]
    return start


@attrs.frozen(eq=False)
class Demonstration:
    """The rows of a demonstration as column arrays (see the module docstring for the words).

    Attributes:
        behavior_name: the behavior's name without ``?team=`` (``"Tennis"``).
        spec: the behavior spec: observation specs from the first row, action spec from the
            file's brain parameters.
        observations: one float32 array per observation spec, ``[steps, *shape]``.
        continuous_actions: ``[steps, continuous_size]`` float32.
        discrete_actions: ``[steps, n_branches]`` int64.
        rewards: ``[steps]`` float32: the reward received at this row (since the agent's
            previous row).
        done: ``[steps]`` bool: this row ends its episode.
        max_step_reached: ``[steps]`` bool: that episode was cut off (interrupted), not ended.
        action_masks: ``[steps, sum(branch sizes)]`` bool, ``True`` where an action was *not*
            allowed (as ``DecisionSteps.action_mask``); ``None`` when no row carries a mask.
        episodes: the number of episodes, from the files' metadata.
        episode_start: ``[steps]`` bool: this row starts an episode (the first row, every row after
            a ``done`` one, and in ``read_demos`` the first row of every file).
    """

    behavior_name: str
    spec: BehaviorSpec
    observations: list[np.ndarray]
    continuous_actions: np.ndarray
    discrete_actions: np.ndarray
    rewards: np.ndarray
    done: np.ndarray
    max_step_reached: np.ndarray
    action_masks: np.ndarray | None
    episodes: int
    episode_start: np.ndarray = attrs.field(
        default=attrs.Factory(_starts_after_done, takes_self=True)
    )

    @property
    def steps(self) -> int:
        """The number of rows."""
        return len(self.rewards)


def read_demo(path: str | Path) -> Demonstration:
    """Read one ``.demo`` file (any ML-Agents release's: format versions 0 and 1).

    Visual observations stored as PNG are decompressed to floats in [0, 1], as ML-Agents does.
    Bytes after the number of rows the metadata announces are ignored (Unity's writer leaves a
    copy of the metadata there); a metadata step count of 0 (a recording that never closed)
    reads every row to the end of the file.

    Raises:
        DemoFileError: no such file; not a demonstration file (empty, garbage, another format);
            truncated; an unsupported format version; rows that disagree with the first one.
    """
    path = Path(path)
    data = _file_bytes(path)
    meta = _read_metadata(data, path)
    if len(data) < METADATA_REGION:
        raise _truncated(path, f"it ends at byte {len(data)}, before its brain parameters")
    brain, pos = _read_message(
        data, METADATA_REGION, BrainParametersProto, "the brain parameters", path
    )
    rows = _read_rows(data, pos, meta.number_steps, path)
    demo = _demonstration(meta, brain, rows, path)
    logger.debug("read %s: %d steps, %d episodes", path, demo.steps, demo.episodes)
    return demo


def read_demos(path: str | Path) -> Demonstration:
    """Read a ``.demo`` file, or every ``.demo`` file of a folder (in name order) as one.

    Raises:
        DemoFileError: ``path`` does not exist, a folder holds no ``.demo`` file, a file cannot be
            read (see ``read_demo``), or the files record different behaviors or specs.
    """
    path = Path(path)
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix == DEMO_SUFFIX and p.is_file())
        if not files:
            raise DemoFileError(
                f"{path}: no {DEMO_SUFFIX} files in this folder; point demo_path at a "
                f"{DEMO_SUFFIX} file or a folder of them"
            )
    else:
        files = [path]
    demos = [read_demo(file) for file in files]
    return _concatenate(demos, files)


def check_demo_fits(demo: Demonstration, spec: BehaviorSpec, *, where: str) -> None:
    """Raise unless ``demo``'s observation shapes and action spec are ``spec``'s.

    Args:
        where: what the message starts with: the file, or the setting that named it.

    Raises:
        DemoFileError: one line naming the first difference.
    """
    mismatch = _mismatch(demo.spec, spec, "the behavior")
    if mismatch:
        raise DemoFileError(
            f"{where}: the demonstration of {demo.behavior_name!r} does not fit the behavior: "
            f"{mismatch}; use a demonstration recorded from this behavior"
        )


# ------------------------------------------------------------------------------- the bytes
def _file_bytes(path: Path) -> bytes:
    if path.is_dir():
        raise DemoFileError(f"{path} is a folder; read_demos reads every {DEMO_SUFFIX} file in it")
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise DemoFileError(f"{path}: no such demonstration file") from None
    except OSError as error:
        raise DemoFileError(f"{path}: cannot read it ({error.strerror or error})") from None
    if not data:
        raise DemoFileError(f"{path}: the file is empty, not a demonstration ({DEMO_SUFFIX}) file")
    return data


def _not_a_demo(path: Path, why: str) -> DemoFileError:
    return DemoFileError(
        f"{path}: not a demonstration ({DEMO_SUFFIX}) file: {why}; give a file that Unity's "
        "Demonstration Recorder or ghost-trainer wrote"
    )


def _truncated(path: Path, why: str) -> DemoFileError:
    return DemoFileError(
        f"{path}: truncated demonstration file: {why}; record it again, or remove it"
    )


def _read_metadata(data: bytes, path: Path) -> DemonstrationMetaProto:
    try:
        length, start = decode_varint(data, 0)
    except (CutShort, ValueError):
        raise _not_a_demo(path, "its first bytes are no metadata") from None
    if start + length > METADATA_REGION:
        raise _not_a_demo(path, f"its first bytes announce {length} bytes of metadata")
    if start + length > len(data):
        raise _truncated(path, f"it ends at byte {len(data)}, inside its metadata")
    try:
        meta = DemonstrationMetaProto.FromString(data[start : start + length])
    except DecodeError:
        raise _not_a_demo(path, "its first bytes are no metadata") from None
    known = DemonstrationMetaProto(
        api_version=meta.api_version,
        demonstration_name=meta.demonstration_name,
        number_steps=meta.number_steps,
        number_episodes=meta.number_episodes,
        mean_reward=meta.mean_reward,
    )
    if known.ByteSize() != length or meta.number_steps < 0 or meta.number_episodes < 0:
        raise _not_a_demo(path, "its first bytes are no metadata")
    if meta.api_version not in SUPPORTED_API_VERSIONS:
        versions = " and ".join(str(v) for v in sorted(SUPPORTED_API_VERSIONS))
        raise DemoFileError(
            f"{path}: demonstration format version {meta.api_version} is not supported (this "
            f"reader, like ML-Agents 1.1, reads versions {versions}); it comes from a newer "
            "recorder, or is damaged"
        )
    return meta


def _read_message(
    data: bytes, pos: int, message_type: type[_Message], what: str, path: Path
) -> tuple[_Message, int]:
    """The delimited message of ``message_type`` at ``pos`` and the position after it."""
    try:
        length, start = decode_varint(data, pos)
    except CutShort:
        raise _truncated(path, f"it ends inside the length of {what} at byte {pos}") from None
    except ValueError:
        raise _not_a_demo(path, f"{what} at byte {pos} has no valid length") from None
    end = start + length
    if end > len(data):
        raise _truncated(
            path,
            f"{what} at byte {pos} needs {length} bytes, the file ends after {len(data) - start}",
        )
    try:
        message = message_type()
        message.ParseFromString(data[start:end])
        return message, end
    except DecodeError:
        raise _not_a_demo(path, f"{what} at byte {pos} does not parse") from None


def _read_rows(data: bytes, pos: int, expected: int, path: Path) -> list[AgentInfoActionPairProto]:
    rows: list[AgentInfoActionPairProto] = []
    while pos < len(data) and (expected == 0 or len(rows) < expected):
        row, pos = _read_message(data, pos, AgentInfoActionPairProto, f"step {len(rows)}", path)
        rows.append(row)
    if expected and len(rows) < expected:
        why = f"it holds {len(rows)} of the {expected} steps its metadata announces"
        raise _truncated(path, why)
    if not rows:
        raise DemoFileError(f"{path}: the demonstration holds no steps; record some first")
    return rows


# ------------------------------------------------------------------------- rows to columns
def _demonstration(
    meta: DemonstrationMetaProto,
    brain: BrainParametersProto,
    rows: list[AgentInfoActionPairProto],
    path: Path,
) -> Demonstration:
    try:
        spec = rpc_utils.behavior_spec_from_proto(brain, rows[0].agent_info)
    except (IndexError, ValueError) as error:  # no action spec in either layout, or a bad enum
        raise _not_a_demo(
            path, f"its brain parameters or first step do not parse ({error})"
        ) from None
    count = len(spec.observation_specs)
    for index, row in enumerate(rows):
        if len(row.agent_info.observations) != count:
            raise DemoFileError(
                f"{path}: step {index} has {len(row.agent_info.observations)} observations, the "
                f"first step {count}; the file mixes behaviors or is damaged"
            )
    continuous, discrete = _action_columns(rows, spec.action_spec, path)
    infos = [row.agent_info for row in rows]
    return Demonstration(
        behavior_name=BehaviorId.parse(brain.brain_name).name,
        spec=spec,
        observations=[
            _observation_column(infos, index, obs_spec, path)
            for index, obs_spec in enumerate(spec.observation_specs)
        ],
        continuous_actions=continuous,
        discrete_actions=discrete,
        rewards=np.fromiter((info.reward for info in infos), np.float32, len(infos)),
        done=np.fromiter((info.done for info in infos), bool, len(infos)),
        max_step_reached=np.fromiter((info.max_step_reached for info in infos), bool, len(infos)),
        action_masks=_action_masks(infos, spec.action_spec),
        episodes=meta.number_episodes,
    )


def _observation_column(infos: list, index: int, spec: ObservationSpec, path: Path) -> np.ndarray:
    shape = tuple(spec.shape)
    protos: list[ObservationProto] = [info.observations[index] for info in infos]
    first = protos[0].shape
    for step, proto in enumerate(protos):
        if proto.shape != first:
            raise DemoFileError(
                f"{path}: observation {index} of step {step} has shape {tuple(proto.shape)}, the "
                f"first step's {shape}; the file mixes behaviors or is damaged"
            )
    sizes = np.fromiter((len(proto.float_data.data) for proto in protos), np.int64, len(protos))
    size = int(np.prod(shape))
    if (sizes == size).all():
        return _float_rows(protos, size).reshape((len(protos),) + shape)
    return np.stack(
        [_observation_row(proto, step, shape, path) for step, proto in enumerate(protos)]
    )


def _float_rows(protos: list[ObservationProto], size: int) -> np.ndarray:
    """``[rows, size]`` float32 from observations of ``size`` floats each.

    Reading the floats one by one out of the messages costs far more than protobuf's C
    serializer: each row's ``FloatData`` is serialized instead, to the same header (the packed
    field's tag and byte count) followed by its little-endian floats, and numpy drops the headers.
    """
    header = 1 + len(encode_varint(4 * size)) if size else 0  # the tag, then the byte count
    blob = b"".join(proto.float_data.SerializeToString() for proto in protos)
    if len(blob) != len(protos) * (header + 4 * size):  # a writer that did not pack: one by one
        values = itertools.chain.from_iterable(proto.float_data.data for proto in protos)
        return np.fromiter(values, np.float32, size * len(protos)).reshape(len(protos), size)
    rows = np.frombuffer(blob, dtype=np.uint8).reshape(len(protos), header + 4 * size)
    return rows[:, header:].copy().view("<f4").astype(np.float32, copy=False)


def _observation_row(proto: ObservationProto, step: int, shape: tuple, path: Path) -> np.ndarray:
    """One row's observation: its floats, or its PNG images decoded to floats in [0, 1]."""
    where = f"{path}: observation of shape {shape} at step {step}"
    if proto.WhichOneof("observation_data") != "compressed_data":
        if len(proto.float_data.data) != int(np.prod(shape)):
            raise DemoFileError(f"{where} holds {len(proto.float_data.data)} values; damaged file")
        return np.asarray(proto.float_data.data, dtype=np.float32).reshape(shape)
    if len(shape) != 3:
        raise DemoFileError(
            f"{where} is compressed; only images (height, width, channels) can be; damaged file"
        )
    mapping = list(proto.compressed_channel_mapping)
    try:
        image = rpc_utils.process_pixels(proto.compressed_data, shape[2], mapping)
    except (OSError, ValueError) as error:  # PIL's UnidentifiedImageError is an OSError
        raise DemoFileError(f"{where}: its image does not decode ({error})") from None
    if image.shape != shape:
        raise DemoFileError(f"{where} decodes to shape {image.shape}; damaged file")
    return image.astype(np.float32, copy=False)


def _action_columns(
    rows: list[AgentInfoActionPairProto], action_spec: ActionSpec, path: Path
) -> tuple[np.ndarray, np.ndarray]:
    """``[steps, continuous]`` float32 and ``[steps, branches]`` int64; a row with no action is
    zeros, and one with only ``vector_actions_deprecated`` (older files) has its continuous
    values first, then its discrete ones."""
    actions = [row.action_info for row in rows]
    n_continuous, n_discrete = action_spec.continuous_size, action_spec.discrete_size
    continuous = _action_field(actions, "continuous_actions", n_continuous, np.float32)
    discrete = _action_field(actions, "discrete_actions", n_discrete, np.int64)
    for field, width, column in (
        ("continuous_actions", n_continuous, continuous),
        ("discrete_actions", n_discrete, discrete),
    ):
        wrong = np.flatnonzero((column.lengths != 0) & (column.lengths != width))
        if len(wrong):
            found = f"{column.lengths[wrong[0]]} {field.partition('_')[0]} actions"
            raise _action_error(path, int(wrong[0]), found, action_spec)
    unset = np.flatnonzero((continuous.lengths == 0) & (discrete.lengths == 0))
    for step in unset:
        legacy = list(actions[step].vector_actions_deprecated)
        if not legacy:
            continue
        if len(legacy) != n_continuous + n_discrete:
            raise _action_error(path, int(step), f"{len(legacy)} actions", action_spec)
        continuous.values[step] = legacy[:n_continuous]
        discrete.values[step] = np.rint(legacy[n_continuous:])
    return continuous.values, discrete.values


@attrs.frozen
class _ActionField:
    values: np.ndarray
    lengths: np.ndarray


def _action_field(actions: list, field: str, width: int, dtype: type) -> _ActionField:
    """One action field of every row: its values where a row has ``width`` of them (zeros
    elsewhere), and how many each row has."""
    read = operator.attrgetter(field)
    lengths = np.fromiter((len(read(action)) for action in actions), np.int64, len(actions))
    values: np.ndarray = np.zeros((len(actions), width), dtype=dtype)
    full = lengths == width
    if width and full.any():
        chosen = itertools.compress(actions, full)
        flat = itertools.chain.from_iterable(read(action) for action in chosen)
        values[full] = np.fromiter(flat, dtype, int(full.sum()) * width).reshape(-1, width)
    return _ActionField(values=values, lengths=lengths)


def _action_error(path: Path, step: int, found: str, action_spec: ActionSpec) -> DemoFileError:
    return DemoFileError(
        f"{path}: step {step} has {found}, the brain parameters say "
        f"{_describe_actions(action_spec)}; the file is damaged"
    )


def _action_masks(infos: list, action_spec: ActionSpec) -> np.ndarray | None:
    """Rows whose mask is not one flag per discrete action allow every action (as ML-Agents)."""
    width = int(sum(action_spec.discrete_branches))
    if not width or not any(len(info.action_mask) == width for info in infos):
        return None
    masks = np.zeros((len(infos), width), dtype=bool)
    for step, info in enumerate(infos):
        if len(info.action_mask) == width:
            masks[step] = info.action_mask
    return masks


# ------------------------------------------------------------------------ specs and joining
def _describe_actions(action_spec: ActionSpec) -> str:
    parts = []
    if action_spec.continuous_size:
        parts.append(f"{action_spec.continuous_size} continuous")
    if action_spec.discrete_size:
        parts.append(f"discrete branches {tuple(action_spec.discrete_branches)}")
    return " and ".join(parts) or "no actions"


def _mismatch(demo_spec: BehaviorSpec, spec: BehaviorSpec, other: str) -> str | None:
    """The first difference of observation shapes or actions, worded for a message, or None."""
    ours = [tuple(s.shape) for s in demo_spec.observation_specs]
    theirs = [tuple(s.shape) for s in spec.observation_specs]
    if len(ours) != len(theirs):
        return (
            f"it has {len(ours)} observations of shapes {ours}, {other} {len(theirs)} of "
            f"shapes {theirs}"
        )
    for index, (mine, wanted) in enumerate(zip(ours, theirs, strict=True)):
        if mine != wanted:
            return f"its observation {index} has shape {mine}, {other}'s {wanted}"
    if demo_spec.action_spec != spec.action_spec:
        return (
            f"its actions are {_describe_actions(demo_spec.action_spec)}, {other}'s "
            f"{_describe_actions(spec.action_spec)}"
        )
    return None


def _concatenate(demos: list[Demonstration], files: Sequence[Path]) -> Demonstration:
    first = demos[0]
    if len(demos) == 1:
        return first
    for demo, file in zip(demos[1:], files[1:], strict=True):
        mismatch = _mismatch(demo.spec, first.spec, f"{files[0].name}")
        if demo.behavior_name != first.behavior_name or mismatch:
            why = mismatch or (
                f"it records {demo.behavior_name!r}, {files[0].name} {first.behavior_name!r}"
            )
            raise DemoFileError(f"{file}: does not go with the folder's other files: {why}")
    masks = None
    if any(demo.action_masks is not None for demo in demos):
        width = int(sum(first.spec.action_spec.discrete_branches))
        masks = np.concatenate(
            [
                demo.action_masks
                if demo.action_masks is not None
                else np.zeros((demo.steps, width), dtype=bool)
                for demo in demos
            ]
        )
    return Demonstration(
        behavior_name=first.behavior_name,
        spec=first.spec,
        observations=[
            np.concatenate([demo.observations[i] for demo in demos])
            for i in range(len(first.observations))
        ],
        continuous_actions=np.concatenate([demo.continuous_actions for demo in demos]),
        discrete_actions=np.concatenate([demo.discrete_actions for demo in demos]),
        rewards=np.concatenate([demo.rewards for demo in demos]),
        done=np.concatenate([demo.done for demo in demos]),
        max_step_reached=np.concatenate([demo.max_step_reached for demo in demos]),
        action_masks=masks,
        episodes=sum(demo.episodes for demo in demos),
        episode_start=np.concatenate([demo.episode_start for demo in demos]),
    )
