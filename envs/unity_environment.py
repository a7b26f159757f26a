"""``UnityBuildEnvironment``: mlagents_envs' ``UnityEnvironment`` with the side channels a run uses.

Kept apart from ``envs.unity_build`` because importing ``mlagents_envs.environment`` loads grpc,
which only a run that really starts a build should pay for.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from envs import protobuf_hook

# before mlagents_envs.environment imports the protocol modules (a no-op once the .pth file ran)
protobuf_hook.install()

# isort: split
from mlagents_envs.environment import UnityEnvironment
from mlagents_envs.side_channel.engine_configuration_channel import EngineConfigurationChannel
from mlagents_envs.side_channel.environment_parameters_channel import (
    EnvironmentParametersChannel,
)
from mlagents_envs.side_channel.stats_side_channel import StatsSideChannel

from envs.environment_parameters import EnvironmentStats, ParameterValue
from envs.settings import EngineSettings


class UnityBuildEnvironment(UnityEnvironment):
    """A started Unity build that takes environment parameters and reports its stats.

    Args:
        engine: sent through the engine-configuration channel with the first reset.
        **kwargs: ``UnityEnvironment``'s arguments (``side_channels`` is set here).
    """

    def __init__(self, *, engine: EngineSettings, **kwargs: Any) -> None:
        engine_channel = EngineConfigurationChannel()
        engine_channel.set_configuration_parameters(
            width=engine.width,
            height=engine.height,
            quality_level=engine.quality_level,
            time_scale=engine.time_scale,
            target_frame_rate=engine.target_frame_rate,
            capture_frame_rate=engine.capture_frame_rate,
        )
        self._parameters_channel = EnvironmentParametersChannel()
        self._stats_channel = StatsSideChannel()
        super().__init__(
            side_channels=[engine_channel, self._parameters_channel, self._stats_channel],
            **kwargs,
        )

    def set_environment_parameters(self, values: Mapping[str, ParameterValue]) -> None:
        """Send ``values`` with the next reset or step (the build applies them at its resets)."""
        for key, value in values.items():
            value.send(self._parameters_channel, key)

    def environment_stats(self) -> EnvironmentStats:
        """What the build recorded with its StatsRecorder since the last call."""
        stats = self._stats_channel.get_and_reset_stats()
        return {key: list(values) for key, values in stats.items()}
