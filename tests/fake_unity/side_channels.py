"""The side channels of a fake Unity player: C#'s IncomingMessage, OutgoingMessage and
SideChannelManager, written with ``struct`` rather than borrowed from mlagents_envs, so that tests
check the wire format against mlagents_envs' own channels.

Framing: each message is the channel's ``uuid.bytes_le`` id, an int32 length and the payload;
numbers are little-endian, strings ASCII with an int32 length. Channels: engine configuration,
environment parameters (floats and uniform, gaussian and multi-range uniform samplers, each with
its own generator seeded with the message's seed, the interval choice with seed + 1, as
``SamplerFactory`` does; the draws are numpy's, not .NET's), training analytics (decoded for the
log), stats (sent by the player). The player logs the channels it does not know.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from google.protobuf.any_pb2 import Any as AnyProto
from google.protobuf.json_format import MessageToDict
from mlagents_envs.communicator_objects.training_analytics_pb2 import (
    TrainingBehaviorInitialized,
    TrainingEnvironmentInitialized,
)

ENGINE_CONFIGURATION_CHANNEL = uuid.UUID("e951342c-4f7e-11ea-b238-784f4387d1f7")
ENVIRONMENT_PARAMETERS_CHANNEL = uuid.UUID("534c891e-810f-11ea-a9d0-822485860400")
STATS_CHANNEL = uuid.UUID("a1d8f7b7-cec8-50f9-b78b-d3e165a78520")
TRAINING_ANALYTICS_CHANNEL = uuid.UUID("b664a4a9-d86f-5a5f-95cb-e8353a7e8356")
STAT_AVERAGE = 0
STAT_MOST_RECENT = 1
ENGINE_SETTINGS = {
    0: "screen_resolution",
    1: "quality_level",
    2: "time_scale",
    3: "target_frame_rate",
    4: "capture_frame_rate",
}


class SideChannelError(Exception):
    """Side-channel bytes that do not follow the wire format."""


class MessageReader:
    """Reads one message as C#'s IncomingMessage: a used-up message yields the default value."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._offset = 0

    def has_more(self) -> bool:
        return self._offset < len(self._data)

    def _unpack(self, fmt: str) -> Any:
        try:
            (value,) = struct.unpack_from(fmt, self._data, self._offset)
        except struct.error as error:
            raise SideChannelError(f"message ends inside a value: {error}") from None
        self._offset += struct.calcsize(fmt)
        return value

    def read_bool(self, default: bool = False) -> bool:
        return bool(self._unpack("<?")) if self.has_more() else default

    def read_int32(self, default: int = 0) -> int:
        return self._unpack("<i") if self.has_more() else default

    def read_float32(self, default: float = 0.0) -> float:
        return self._unpack("<f") if self.has_more() else default

    def read_string(self, default: str = "") -> str:
        if not self.has_more():
            return default
        length = self.read_int32()
        raw = self._data[self._offset : self._offset + length]
        if length < 0 or len(raw) != length:
            raise SideChannelError(f"string of {length} bytes runs past the message end")
        self._offset += length
        return raw.decode("ascii", errors="replace")

    def read_float_list(self, default: Sequence[float] = ()) -> list[float]:
        if not self.has_more():
            return list(default)
        return [self.read_float32() for _ in range(self.read_int32())]


class MessageWriter:
    """Writes one message as C#'s OutgoingMessage."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []

    def write_int32(self, value: int) -> None:
        self._parts.append(struct.pack("<i", value))

    def write_float32(self, value: float) -> None:
        self._parts.append(struct.pack("<f", value))

    def write_string(self, value: str) -> None:
        encoded = value.encode("ascii", errors="replace")
        self.write_int32(len(encoded))
        self._parts.append(encoded)

    def to_bytes(self) -> bytes:
        return b"".join(self._parts)


def split_side_channel_data(data: bytes) -> list[tuple[uuid.UUID, bytes]]:
    """The (channel id, payload) messages packed in a ``side_channel`` field."""
    messages = []
    offset = 0
    while offset < len(data):
        if len(data) - offset < 20:
            raise SideChannelError(f"{len(data) - offset} bytes left, too few for a message header")
        channel = uuid.UUID(bytes_le=bytes(data[offset : offset + 16]))
        (length,) = struct.unpack_from("<i", data, offset + 16)
        body = bytes(data[offset + 20 : offset + 20 + length])
        if length < 0 or len(body) != length:
            raise SideChannelError(f"message of channel {channel} claims {length} bytes")
        messages.append((channel, body))
        offset += 20 + length
    return messages


def join_side_channel_messages(messages: Sequence[tuple[uuid.UUID, bytes]]) -> bytes:
    """Pack messages into one ``side_channel`` field."""
    return b"".join(c.bytes_le + struct.pack("<i", len(body)) + body for c, body in messages)


def stat_message(key: str, value: float, aggregation: int) -> bytes:
    """A stats-channel message (C#'s StatsSideChannel.AddStat)."""
    writer = MessageWriter()
    writer.write_string(key)
    writer.write_float32(value)
    writer.write_int32(aggregation)
    return writer.to_bytes()


def read_engine_configuration(reader: MessageReader) -> dict[str, Any]:
    """One engine-configuration message: a setting type, then its value(s)."""
    kind = reader.read_int32()
    setting = ENGINE_SETTINGS.get(kind)
    if setting == "screen_resolution":
        return {"setting": setting, "width": reader.read_int32(), "height": reader.read_int32()}
    if setting == "time_scale":
        return {"setting": setting, "time_scale": reader.read_float32()}
    if setting is not None:
        return {"setting": setting, setting: reader.read_int32()}
    return {"setting": "unknown", "type": kind}


Sampler = Callable[[], float]


def _generator(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed % 2**32)


def _uniform_draw(rng: np.random.Generator, low: float, high: float) -> float:
    return float(np.float32(low + rng.random() * (high - low)))


def uniform_sampler(low: float, high: float, seed: int) -> Sampler:
    rng = _generator(seed)
    return lambda: _uniform_draw(rng, low, high)


def gaussian_sampler(mean: float, st_dev: float, seed: int) -> Sampler:
    rng = _generator(seed)
    return lambda: float(np.float32(mean + st_dev * rng.standard_normal()))


def multirange_sampler(intervals: Sequence[tuple[float, float]], seed: int) -> Sampler:
    values, choices = _generator(seed), _generator(seed + 1)
    sizes = np.array([high - low for low, high in intervals])
    cumulative = np.cumsum(sizes / sizes.sum())

    def sample() -> float:
        index = min(
            int(np.searchsorted(cumulative, choices.random(), side="right")), len(sizes) - 1
        )
        return _uniform_draw(values, *intervals[index])

    return sample


def read_environment_parameter(reader: MessageReader) -> tuple[str, Sampler | None, dict]:
    """One environment-parameters message: key, what reads of it return, and its log fields."""
    key = reader.read_string()
    kind = reader.read_int32()
    if kind == 0:
        value = reader.read_float32()
        return key, lambda: value, {"kind": "float", "value": value}
    if kind != 1:
        return key, None, {"kind": "unknown", "type": kind}
    seed = reader.read_int32()
    sampler_type = reader.read_int32()
    if sampler_type == 0:
        low, high = reader.read_float32(), reader.read_float32()
        fields = {"kind": "uniform", "seed": seed, "min": low, "max": high}
        return key, uniform_sampler(low, high, seed), fields
    if sampler_type == 1:
        mean, st_dev = reader.read_float32(), reader.read_float32()
        fields = {"kind": "gaussian", "seed": seed, "mean": mean, "st_dev": st_dev}
        return key, gaussian_sampler(mean, st_dev, seed), fields
    if sampler_type == 2:
        flat = reader.read_float_list()
        intervals = list(zip(flat[0::2], flat[1::2], strict=False))
        fields = {"kind": "multirange_uniform", "seed": seed, "intervals": intervals}
        return key, multirange_sampler(intervals, seed), fields
    # C# stores a sampler that always returns 0 for an unknown sampler type
    return key, lambda: 0.0, {"kind": "unknown_sampler", "sampler_type": sampler_type}


def read_training_analytics(body: bytes) -> dict[str, Any]:
    """A training-analytics message: a protobuf ``Any`` holding one of two event types."""
    try:
        packed = AnyProto.FromString(body)
    except Exception:  # C# ignores a message it cannot parse
        return {"message": "unparseable"}
    for message_type in (TrainingEnvironmentInitialized, TrainingBehaviorInitialized):
        if packed.Is(message_type.DESCRIPTOR):
            message = message_type()
            packed.Unpack(message)
            fields = MessageToDict(message, preserving_proto_field_name=True)
            return {"message": message_type.DESCRIPTOR.name, **fields}
    return {"message": packed.type_url}


class EnvironmentParameters:
    """What the environment-parameters channel received (C#'s EnvironmentParameters)."""

    def __init__(self) -> None:
        self._sources: dict[str, Sampler] = {}
        #: the value each received key returned at its latest read
        self.last_read: dict[str, float] = {}
        #: the keys read since ``reads.clear()``
        self.reads: set[str] = set()

    def received_keys(self) -> list[str]:
        return list(self._sources)

    def set(self, key: str, source: Sampler) -> None:
        self._sources[key] = source

    def get_with_default(self, key: str, default: float) -> float:
        """The key's value (a sampler draws anew at every read), or ``default`` if never sent."""
        source = self._sources.get(key)
        if source is None:
            return default
        value = source()
        self.last_read[key] = value
        self.reads.add(key)
        return value


def process_side_channel_data(
    data: bytes, *, parameters: EnvironmentParameters, log: Callable[..., None]
) -> None:
    """Read the messages of a ``side_channel`` field as C#'s SideChannelManager does: environment
    parameters go to ``parameters``; every message is logged with ``log(event, **fields)``.

    Raises ``SideChannelError`` (before reading any message) if the framing is unreadable.
    """
    for channel, body in split_side_channel_data(data):
        try:
            _process_message(channel, body, parameters=parameters, log=log)
        except SideChannelError as error:
            # C#'s SideChannel.ProcessMessage logs the error and skips the message
            log("side_channel_error", channel_id=str(channel), error=str(error))


def _process_message(
    channel: uuid.UUID,
    body: bytes,
    *,
    parameters: EnvironmentParameters,
    log: Callable[..., None],
) -> None:
    if channel == ENGINE_CONFIGURATION_CHANNEL:
        log("engine_configuration", **read_engine_configuration(MessageReader(body)))
    elif channel == ENVIRONMENT_PARAMETERS_CHANNEL:
        key, source, fields = read_environment_parameter(MessageReader(body))
        if source is not None:
            parameters.set(key, source)
            parameters.last_read.pop(key, None)
        log("environment_parameter", key=key, **fields)
    elif channel == TRAINING_ANALYTICS_CHANNEL:
        log("training_analytics", **read_training_analytics(body))
    else:
        log("unknown_side_channel", channel_id=str(channel), length=len(body))
