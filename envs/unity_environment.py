"""``UnityBuildEnvironment``: mlagents_envs' ``UnityEnvironment`` with the side channels a run uses.

Kept apart from ``envs.unity_build`` because importing ``mlagents_envs.environment`` loads grpc,
which only a run that really starts a build should pay for. Protocol messages load through the
start-up hook of ``envs.protobuf_hook`` (``envs.unity_build`` installs it too before importing this
module, for a checkout used without installing).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mlagents_envs.base_env import ActionTuple, DecisionSteps, TerminalSteps
from mlagents_envs.communicator_objects.command_pb2 import STEP
from mlagents_envs.communicator_objects.unity_rl_input_pb2 import UnityRLInputProto
from mlagents_envs.environment import UnityEnvironment
from mlagents_envs.exception import UnityEnvironmentException
from mlagents_envs.side_channel.engine_configuration_channel import EngineConfigurationChannel
from mlagents_envs.side_channel.environment_parameters_channel import (
    EnvironmentParametersChannel,
)
from mlagents_envs.side_channel.stats_side_channel import StatsSideChannel

from envs.environment_parameters import EnvironmentStats, ParameterValue
from envs.settings import EngineSettings
from envs.unity_messages import agent_actions_wire, steps_from_output

if TYPE_CHECKING:
    from mlagents_envs.communicator_objects.unity_input_pb2 import UnityInputProto
    from mlagents_envs.communicator_objects.unity_rl_output_pb2 import UnityRLOutputProto


class UnityBuildEnvironment(UnityEnvironment):
    """A started Unity build that takes environment parameters and reports its stats.

    Each step's messages are converted for all agents at once (``envs.unity_messages``), with the
    same results as ``UnityEnvironment``'s conversions agent by agent.

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
        try:
            super().__init__(
                side_channels=[engine_channel, self._parameters_channel, self._stats_channel],
                **kwargs,
            )
        except UnityEnvironmentException:
            # A player that exits before the handshake leaves mlagents_envs' gRPC server holding
            # the port (it closes only on a timeout or a version mismatch, which unload it).
            if self._loaded:
                self._close(0)
            raise

    def set_environment_parameters(self, values: Mapping[str, ParameterValue]) -> None:
        """Send ``values`` with the next reset or step (the build applies them at its resets)."""
        for key, value in values.items():
            value.send(self._parameters_channel, key)

    def environment_stats(self) -> EnvironmentStats:
        """What the build recorded with its StatsRecorder since the last call."""
        stats = self._stats_channel.get_and_reset_stats()
        return {key: list(values) for key, values in stats.items()}

    def _generate_step_input(self, vector_action: dict[str, ActionTuple]) -> UnityInputProto:
        """``UnityEnvironment``'s step message, each behavior's actions parsed from wire bytes."""
        rl_in = UnityRLInputProto()
        for name, action in vector_action.items():
            n_agents = len(self._env_state[name][0])
            if n_agents == 0:
                continue
            rl_in.agent_actions[name].MergeFromString(agent_actions_wire(action, n_agents))
            rl_in.command = STEP
        rl_in.side_channel = bytes(self._side_channel_manager.generate_side_channel_messages())
        return self._wrap_unity_input(rl_in)

    def _update_state(self, output: UnityRLOutputProto) -> None:
        """``UnityEnvironment``'s, with ``steps_from_output`` for each behavior's agent infos."""
        for name, spec in self._env_specs.items():
            if name in output.agentInfos:
                self._env_state[name] = steps_from_output(output.agentInfos[name].value, spec)
            else:
                self._env_state[name] = (DecisionSteps.empty(spec), TerminalSteps.empty(spec))
        self._side_channel_manager.process_side_channel_message(output.side_channel)
