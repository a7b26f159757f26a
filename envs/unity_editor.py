"""Training in the Unity Editor: no ``--env``, the user presses Play, as with ``mlagents-learn``.

``UnityEditor`` is the environment factory of a run that names no environment. Calling it opens
ML-Agents' gRPC server on the Editor's port and logs, once, "Listening on port 5004. Start training
by pressing the Play button in the Unity Editor."; the Editor is the gRPC client, as a build is,
and connects when Play is pressed. Nobody connecting within ``timeout_wait`` seconds (60 by
default, ``--timeout-wait``) ends the run with one line.

The port is ML-Agents' ``DEFAULT_EDITOR_PORT`` (5004), which is what the Editor dials unless its
project changes it (Project Settings > ML-Agents > Editor Port); a ``--base-port`` other than the
default 5005 replaces it, for such a project or for a player started by hand with
``--mlagents-port``.

The Editor is one player: the run has one environment (``num_envs`` 1; ``editor_factory`` refuses
more, as ``mlagents-learn`` does), stepped in the training process, so that the "Listening" line
reaches the console the moment the port is open. Leaving Play mode ends the run with a checkpoint
to ``--resume`` from (a build that crashes is restarted instead: nobody has to press Play for it).
"""

from __future__ import annotations

from typing import Any

import attrs

from envs import unity_build
from envs.exceptions import EnvironmentSourceError
from envs.settings import EngineSettings, EnvironmentSettings
from envs.unity_build import DEFAULT_BASE_PORT, quiet_player_console

#: ML-Agents' ``UnityEnvironment.DEFAULT_EDITOR_PORT``: where the Editor connects on Play
DEFAULT_EDITOR_PORT = 5004


@attrs.frozen(kw_only=True)
class UnityEditor:
    """The Unity Editor in Play mode, connecting to ``port``.

    Attributes:
        port: where Python listens (the Editor's Editor Port setting, 5004 by default).
        timeout_wait: seconds to wait for Play to be pressed.
        num_areas: training areas the scene is asked to replicate (``--num-areas``).
        engine: window size, time scale... sent to the Editor with the first reset.
    """

    port: int = DEFAULT_EDITOR_PORT
    timeout_wait: int = 60
    num_areas: int = 1
    engine: EngineSettings = attrs.Factory(EngineSettings)

    def __call__(self, *, worker_id: int = 0, seed: int = 0) -> Any:
        from mlagents_envs.exception import UnityTimeOutException, UnityWorkerInUseException

        if worker_id != 0:
            raise EnvironmentSourceError(
                f"the Unity Editor is one environment, asked for as worker {worker_id}: set "
                "--num-envs 1, or build the scene and pass the build with --env"
            )
        environment_class = unity_build._environment_class()  # loads grpc: only when called
        quiet_player_console()
        try:
            return environment_class(
                engine=self.engine,
                file_name=None,
                worker_id=0,
                base_port=self.port,
                seed=seed,
                timeout_wait=self.timeout_wait,
                num_areas=self.num_areas,
            )
        except UnityTimeOutException:
            raise EnvironmentSourceError(
                f"no Unity Editor connected to port {self.port} within {self.timeout_wait} s "
                "(env_settings.timeout_wait, --timeout-wait): press Play in the Editor while "
                "ghost-learn is listening, or give --env a game or a build to train without the "
                "Editor"
            ) from None
        except UnityWorkerInUseException:
            raise EnvironmentSourceError(
                f"port {self.port} is in use, maybe by another training run waiting for the "
                "Editor: stop that run, or listen on another port with --base-port and set the "
                "same Editor Port in the project's Project Settings > ML-Agents"
            ) from None

    def describe(self) -> str:
        return f"the Unity Editor (port {self.port})"


def editor_factory(
    env_settings: EnvironmentSettings | None, engine_settings: EngineSettings | None
) -> UnityEditor:
    """The factory of a run that names no environment: the Unity Editor, on port 5004 (or
    ``base_port`` when it is not the default 5005).

    Raises:
        EnvironmentSourceError: settings the Editor cannot honour: several environments, Ray.
    """
    env_settings = env_settings or EnvironmentSettings()
    if env_settings.num_envs > 1:
        raise EnvironmentSourceError(
            f"num_envs is {env_settings.num_envs}, but with no --env the run trains in the Unity "
            "Editor, which is one environment: set --num-envs 1, or build the scene and pass the "
            "build with --env to run several copies"
        )
    if env_settings.uses_ray:
        raise EnvironmentSourceError(
            "with no --env the run trains in the Unity Editor, which connects to this machine, "
            "not to a Ray actor: drop --env-backend ray / --ray-address, or pass a build or a "
            "game with --env"
        )
    port = env_settings.base_port
    return UnityEditor(
        port=DEFAULT_EDITOR_PORT if port == DEFAULT_BASE_PORT else port,
        timeout_wait=env_settings.timeout_wait,
        num_areas=env_settings.num_areas,
        engine=engine_settings or EngineSettings(),
    )
