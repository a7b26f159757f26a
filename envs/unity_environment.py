"""``UnityBuildEnvironment``: mlagents_envs' ``UnityEnvironment`` with the side channels a run uses.

Kept apart from ``envs.unity_build`` because importing ``mlagents_envs.environment`` loads grpc,
which only a run that really starts a build (or listens for the Editor) should pay for. Protocol messages load through the
start-up hook of ``envs.protobuf_hook`` (``envs.unity_build`` installs it too before importing this
module, for a checkout used without installing).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from mlagents_envs.base_env import ActionTuple, DecisionSteps, TerminalSteps
from mlagents_envs.communicator_objects.command_pb2 import STEP
from mlagents_envs.communicator_objects.unity_rl_input_pb2 import UnityRLInputProto
from mlagents_envs.environment import UnityEnvironment
from mlagents_envs.exception import UnityCommunicatorStoppedException, UnityEnvironmentException
from mlagents_envs.rpc_communicator import RpcCommunicator
from mlagents_envs.side_channel.engine_configuration_channel import EngineConfigurationChannel
from mlagents_envs.side_channel.environment_parameters_channel import (
    EnvironmentParametersChannel,
)
from mlagents_envs.side_channel.stats_side_channel import StatsSideChannel

from envs.environment_parameters import EnvironmentStats, ParameterValue
from envs.exceptions import EnvironmentWorkerError
from envs.settings import EngineSettings
from envs.unity_messages import agent_actions_wire, steps_from_output

if TYPE_CHECKING:
    from mlagents_envs.communicator_objects.unity_input_pb2 import UnityInputProto
    from mlagents_envs.communicator_objects.unity_rl_output_pb2 import UnityRLOutputProto

logger = logging.getLogger(__name__)

#: what ``mlagents-learn`` says once its port is open for the Editor (``mlagents_envs``' words)
EDITOR_LISTENING = (
    "Listening on port {port}. Start training by pressing the Play button in the Unity Editor."
)


def _not_mlagents_listening_line(record: logging.LogRecord) -> bool:
    return not record.getMessage().startswith("Listening on port")


# mlagents_envs logs the same line on a handler of its own, shown when the root logger is at INFO
logging.getLogger("mlagents_envs.environment").addFilter(_not_mlagents_listening_line)


class UnityBuildEnvironment(UnityEnvironment):
    """A started Unity build that takes environment parameters and reports its stats.

    Each step's messages are converted for all agents at once (``envs.unity_messages``), with the
    same results as ``UnityEnvironment``'s conversions agent by agent.

    With ``file_name`` None it is the Unity Editor's: nothing is started; once the port is open
    the log says so (``EDITOR_LISTENING``) and the Editor connects when Play is pressed. The
    Editor leaving Play mode ends the environment with an ``EnvironmentWorkerError``.

    Args:
        engine: sent through the engine-configuration channel with the first reset.
        **kwargs: ``UnityEnvironment``'s arguments (``side_channels`` is set here).
    """

    def __init__(self, *, engine: EngineSettings, **kwargs: Any) -> None:
        self._editor = kwargs.get("file_name") is None
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
        except OSError:
            # The system refused to run the file: the server opened for it must not keep the port.
            if getattr(self, "_communicator", None) is not None:
                self._close(0)
            raise

    def _close(self, timeout: int | None = None) -> None:
        """``UnityEnvironment._close``; a player still running when closed with ``timeout`` 0 (one
        that failed to start) is killed without mlagents_envs' "Environment timed out shutting
        down. Killing..." warning: nothing was shutting down. One whose port could not be
        opened has nothing to close (mlagents_envs registers this at exit before opening it)."""
        if not hasattr(self, "_communicator"):
            return
        process = getattr(self, "_process", None)
        if timeout == 0 and process is not None and process.poll() is None:
            process.kill()
            process.wait()
        super()._close(timeout)

    def _get_communicator(self, worker_id: int, base_port: int, timeout_wait: int) -> Any:
        """``UnityEnvironment``'s communicator; for the Editor, say that its port is open."""
        communicator = RpcCommunicator(worker_id, base_port, timeout_wait)
        if self._editor:
            logger.info(EDITOR_LISTENING.format(port=communicator.port))
        return communicator

    def reset(self) -> None:
        with self._editor_stops():
            super().reset()

    def step(self) -> None:
        with self._editor_stops():
            super().step()

    @contextlib.contextmanager
    def _editor_stops(self) -> Iterator[None]:
        """The Editor leaving Play mode (Unity's communicator sends status 400) as one line."""
        try:
            yield
        except UnityCommunicatorStoppedException:
            if not self._editor:
                raise
            raise EnvironmentWorkerError(
                "the Unity Editor left Play mode (Play was pressed again, or the Editor closed), "
                "so training stops here; to go on, run the same command with --resume and press "
                "Play"
            ) from None

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
        """``UnityEnvironment``'s, with ``steps_from_output`` for each behavior's agent infos
        (group ids stay lists, as ``mlagents_envs`` gives them: ``envs.stepping.collect_steps``
        turns them into arrays for every environment)."""
        for name, spec in self._env_specs.items():
            if name in output.agentInfos:
                self._env_state[name] = steps_from_output(output.agentInfos[name].value, spec)
            else:
                self._env_state[name] = (DecisionSteps.empty(spec), TerminalSteps.empty(spec))
        self._side_channel_manager.process_side_channel_message(output.side_channel)
