"""Network building blocks: observation encoders, the MLP body and value heads.

Observations arrive as ML-Agents gives them: a list with one array per observation spec, rank 1
(vectors, concatenated and optionally normalized) or rank 3 (images: channels × height × width
when the dimension properties say so, as ML-Agents 1.x builds report them, else height × width ×
channels).
"""

from __future__ import annotations

import torch
from mlagents_envs.base_env import DimensionProperty, ObservationSpec, ObservationType
from torch import nn

from trainers.exceptions import UnsupportedFeatureError
from trainers.memory import MemoryCore
from trainers.normalizer import RunningNormalizer
from trainers.sequence_grid import SequenceGrid
from trainers.settings import SUPPORTED_ENCODERS, ConditioningType, EncoderType, NetworkSettings

#: smallest image side each encoder accepts (its kernels and strides need it)
MIN_IMAGE_SIDE = {
    EncoderType.SIMPLE: 20,
    EncoderType.NATURE_CNN: 36,
    EncoderType.FULLY_CONNECTED: 1,
}


def linear_layer(inputs: int, outputs: int, *, gain: float = 1.0) -> nn.Linear:
    """A linear layer initialized as ML-Agents' bodies and heads are: He-normal weights with the
    gain of a linear layer (std ``1/sqrt(inputs)``) times ``gain``, zero bias. Starting from the
    same scales is what lets a run learn as fast per step as ML-Agents' does."""
    layer = nn.Linear(inputs, outputs)
    nn.init.kaiming_normal_(layer.weight, nonlinearity="linear")
    layer.weight.data.mul_(gain)
    nn.init.zeros_(layer.bias)
    return layer


def value_head(inputs: int) -> nn.Linear:
    """A critic's output layer: Xavier-uniform weights and zero bias, as ML-Agents' value heads."""
    layer = nn.Linear(inputs, 1)
    nn.init.xavier_uniform_(layer.weight)
    nn.init.zeros_(layer.bias)
    return layer


def mlp(input_size: int, hidden_units: int, num_layers: int, *, gain: float = 1.0) -> nn.Sequential:
    """``num_layers`` fully connected layers of ``hidden_units`` with SiLU (Swish) activations,
    initialized by ``linear_layer``."""
    layers: list[nn.Module] = []
    size = input_size
    for _ in range(num_layers):
        layers += [linear_layer(size, hidden_units, gain=gain), nn.SiLU()]
        size = hidden_units
    return nn.Sequential(*layers)


#: the dimension properties of a channel-first image, as ML-Agents 1.x and its Unity package
#: describe camera and render-texture observations (channels, height, width)
CHANNELS_FIRST = (
    DimensionProperty.NONE,
    DimensionProperty.TRANSLATIONAL_EQUIVARIANCE,
    DimensionProperty.TRANSLATIONAL_EQUIVARIANCE,
)


def is_channels_first(spec: ObservationSpec) -> bool:
    """Whether an image observation is laid out (channels, height, width); otherwise it is
    (height, width, channels), the layout of the built-in games and older builds."""
    return tuple(spec.dimension_property) == CHANNELS_FIRST


def _image_size(spec: ObservationSpec) -> tuple[int, int, int]:
    """``(channels, height, width)`` of an image observation, whatever its layout."""
    if is_channels_first(spec):
        channels, height, width = spec.shape
    else:
        height, width, channels = spec.shape
    return channels, height, width


def check_observations(obs_specs: list[ObservationSpec], settings: NetworkSettings) -> None:
    """Refuse observations ``ObservationEncoder`` cannot encode under ``settings``: shapes other
    than vectors and images, images too small for ``vis_encode_type``, goal signals with
    ``goal_conditioning_type: hyper``. Called before any network is built too (``ghost-learn
    --check``).

    Raises:
        UnsupportedFeatureError: the message names the setting and the fix.
    """
    other = [s.shape for s in obs_specs if len(s.shape) not in (1, 3)]
    if other:
        raise UnsupportedFeatureError(f"observations of shape {other} are not supported yet")
    _check_goal_conditioning(obs_specs, settings)
    for spec in obs_specs:
        if len(spec.shape) == 3:
            _check_visual_encoder(spec, settings.vis_encode_type)


def _check_visual_encoder(spec: ObservationSpec, kind: EncoderType) -> None:
    _, height, width = _image_size(spec)
    if kind not in SUPPORTED_ENCODERS:
        raise UnsupportedFeatureError(
            f"vis_encode_type '{kind.value}' is not supported yet; use one of "
            f"{', '.join(e.value for e in SUPPORTED_ENCODERS)}"
        )
    if min(height, width) < MIN_IMAGE_SIDE[kind]:
        raise UnsupportedFeatureError(
            f"vis_encode_type '{kind.value}' needs images of at least {MIN_IMAGE_SIDE[kind]}x"
            f"{MIN_IMAGE_SIDE[kind]} pixels, the environment gives {height}x{width}"
        )


def _visual_encoder(spec: ObservationSpec, kind: EncoderType, output_size: int) -> nn.Module:
    _check_visual_encoder(spec, kind)
    channels, height, width = _image_size(spec)
    if kind is EncoderType.SIMPLE:
        conv = nn.Sequential(
            nn.Conv2d(channels, 16, 8, stride=4), nn.LeakyReLU(),
            nn.Conv2d(16, 32, 4, stride=2), nn.LeakyReLU(),
        )  # fmt: skip
    elif kind is EncoderType.NATURE_CNN:
        conv = nn.Sequential(
            nn.Conv2d(channels, 32, 8, stride=4), nn.LeakyReLU(),
            nn.Conv2d(32, 64, 4, stride=2), nn.LeakyReLU(),
            nn.Conv2d(64, 64, 3, stride=1), nn.LeakyReLU(),
        )  # fmt: skip
    else:
        conv = nn.Identity()
    with torch.no_grad():
        flat = conv(torch.zeros(1, channels, height, width)).numel()
    return nn.Sequential(conv, nn.Flatten(), nn.Linear(flat, output_size), nn.LeakyReLU())


def _check_goal_conditioning(obs_specs: list[ObservationSpec], settings: NetworkSettings) -> None:
    """Refuse ML-Agents' hypernetwork goal conditioning rather than silently feeding the goal as
    an ordinary input (which is what ``none`` asks for, and what the encoder does)."""
    goals = [s.name for s in obs_specs if s.observation_type == ObservationType.GOAL_SIGNAL]
    if goals and settings.goal_conditioning_type == ConditioningType.HYPER:
        raise UnsupportedFeatureError(
            f"network_settings.goal_conditioning_type = 'hyper' (the default) is not supported "
            f"yet, and the environment has goal-signal observations ({', '.join(goals)}); set "
            "`goal_conditioning_type: none` to feed them to the network as ordinary inputs"
        )


class ObservationEncoder(nn.Module):
    """All observations of an agent → one feature vector of size ``output_size``."""

    def __init__(self, obs_specs: list[ObservationSpec], settings: NetworkSettings) -> None:
        super().__init__()
        self.vector_indices = [i for i, spec in enumerate(obs_specs) if len(spec.shape) == 1]
        self.visual_indices = [i for i, spec in enumerate(obs_specs) if len(spec.shape) == 3]
        check_observations(obs_specs, settings)
        vector_size = sum(obs_specs[i].shape[0] for i in self.vector_indices)
        self.normalizer = (
            RunningNormalizer(vector_size) if settings.normalize and vector_size else None
        )
        self.visual_encoders = nn.ModuleList(
            _visual_encoder(obs_specs[i], settings.vis_encode_type, settings.hidden_units)
            for i in self.visual_indices
        )
        self.channels_last = [not is_channels_first(obs_specs[i]) for i in self.visual_indices]
        self.output_size = vector_size + settings.hidden_units * len(self.visual_indices)

    def vector_part(self, obs: list[torch.Tensor]) -> torch.Tensor:
        """The concatenated vector observations (before normalization)."""
        if len(self.vector_indices) == 1:
            return obs[self.vector_indices[0]]
        return torch.cat([obs[i] for i in self.vector_indices], dim=1)

    def update_normalizer(self, obs: list[torch.Tensor]) -> None:
        if self.normalizer is not None:
            self.normalizer.update(self.vector_part(obs))

    def forward(self, obs: list[torch.Tensor]) -> torch.Tensor:
        parts = []
        if self.vector_indices:
            vector = self.vector_part(obs)
            parts.append(self.normalizer(vector) if self.normalizer is not None else vector)
        visual = zip(self.visual_indices, self.visual_encoders, self.channels_last, strict=True)
        for index, encoder, channels_last in visual:
            image = obs[index].permute(0, 3, 1, 2) if channels_last else obs[index]
            parts.append(encoder(image))
        return parts[0] if len(parts) == 1 else torch.cat(parts, dim=1)


class ValueNetwork(nn.Module):
    """Observations → one value estimate per agent (PPO's critic).

    With ``settings.memory`` the critic has an LSTM of its own (``trainers.memory``) before its
    head, like the actor; call ``recurrent`` then.
    """

    def __init__(self, obs_specs: list[ObservationSpec], settings: NetworkSettings) -> None:
        super().__init__()
        self.encoder = ObservationEncoder(obs_specs, settings)
        self.body = mlp(self.encoder.output_size, settings.hidden_units, settings.num_layers)
        self.memory_size = settings.memory.memory_size if settings.memory is not None else 0
        self.memory = (
            MemoryCore(settings.hidden_units, self.memory_size) if self.memory_size else None
        )
        head_input = self.memory.output_size if self.memory is not None else settings.hidden_units
        self.head = value_head(head_input)

    def forward(self, obs: list[torch.Tensor]) -> torch.Tensor:
        if self.memory is not None:
            raise TypeError("a critic with memory is called through recurrent(...)")
        return self.head(self.body(self.encoder(obs))).squeeze(-1)

    def recurrent(
        self,
        obs: list[torch.Tensor],
        memory: torch.Tensor,
        sequence_length: int = 1,
        lengths: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Values of sequences of ``sequence_length`` consecutive rows of ``obs``, each started
        from its row of ``memory``, and each sequence's memory after its last real step
        (``MemoryCore.forward``)."""
        assert self.memory is not None
        hidden, memory = self.memory(self.body(self.encoder(obs)), memory, sequence_length, lengths)
        return self.head(hidden).squeeze(-1), memory

    def over_grid(
        self, obs: list[torch.Tensor], memory: torch.Tensor, grid: SequenceGrid
    ) -> torch.Tensor:
        """Values of the real steps of ``grid``'s sequences (``obs`` holds only those steps),
        each sequence started from its row of ``memory`` (``MemoryCore.over_grid``)."""
        assert self.memory is not None
        hidden = self.memory.over_grid(self.body(self.encoder(obs)), memory, grid)
        return self.head(hidden).squeeze(-1)
