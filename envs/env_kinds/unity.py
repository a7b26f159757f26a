"""Unity: a build's path (``--env builds/Tennis``, with or without its ``.x86_64``/``.app``/``.exe``
extension), started with ``mlagents_envs``' ``UnityEnvironment``; and no ``env_path`` at all, which
trains in the Unity Editor (``envs.unity_editor``).

A build path is the catch-all kind: any text no other kind claims is read as one, and names no
environment when no such file exists.
"""

from __future__ import annotations

import os
from pathlib import Path

from envs.env_kinds.builtin import builtin_games
from envs.env_kinds.registry import (
    Capabilities,
    EnvironmentKind,
    EnvPath,
    GameKind,
    accepted_forms,
)
from envs.exceptions import EnvironmentSourceError, did_you_mean
from envs.game_kind import CONTROL, UNKNOWN
from envs.settings import EngineSettings, EnvironmentSettings
from envs.unity_build import UNITY_SUFFIXES, UnityBuild, check_executable
from envs.unity_editor import UnityEditor, editor_factory


def _candidates(path: str) -> list[Path]:
    return [Path(path), *(Path(path + suffix) for suffix in UNITY_SUFFIXES)]


class UnityBuildPath(EnvironmentKind):
    """A Unity build, launched as the settings (or their defaults) say: an opaque BaseEnv."""

    name = "unity_build"
    catch_all = True
    capabilities = Capabilities(base_env=True)

    def recognises(self, text: str | None) -> bool:
        return bool(text)

    def form(self) -> str:
        return "the path of a Unity build"

    def factory(
        self,
        env: EnvPath,
        *,
        env_settings: EnvironmentSettings | None,
        engine_settings: EngineSettings | None,
    ) -> UnityBuild:
        path = env.target
        if any(candidate.exists() for candidate in _candidates(path)):
            check_executable(path)
            env_settings = env_settings or EnvironmentSettings()
            return UnityBuild(
                file_name=path,
                base_port=env_settings.base_port,
                timeout_wait=env_settings.timeout_wait,
                num_areas=env_settings.num_areas,
                env_args=tuple(env_settings.env_args or ()),
                engine=engine_settings or EngineSettings(),
            )
        if "/" in path or os.sep in path or path.endswith(UNITY_SUFFIXES):
            folder = Path(path).parent
            tried = (
                "" if path.endswith(UNITY_SUFFIXES) else f" (nor with {'/'.join(UNITY_SUFFIXES)})"
            )
            where = "" if folder.is_dir() else f", and there is no folder {str(folder)!r}"
            raise EnvironmentSourceError(
                f"--env/env_path {path!r}: Unity build not found: no such file{tried}{where}; check "
                f"the path (a relative one starts from {os.getcwd()})"
            )
        hint = did_you_mean(path, builtin_games()).replace("mean ", "mean the built-in game ")
        raise EnvironmentSourceError(
            f"--env/env_path {path!r} names no environment"
            + (f"; {hint}" if hint else "")
            + f" (it is not a built-in game, not module:callable, and no file or folder {path!r} "
            f"exists); give {accepted_forms()}"
        )

    def game_kind(self, env: EnvPath) -> GameKind:
        return GameKind(CONTROL, f"{env.target!r} is a Unity build")


class UnityInEditor(EnvironmentKind):
    """No ``env_path``: the scene open in the Unity Editor, on port 5004 (an opaque BaseEnv)."""

    name = "unity_editor"
    capabilities = Capabilities(base_env=True)

    def recognises(self, text: str | None) -> bool:
        return not text

    def factory(
        self,
        env: EnvPath,
        *,
        env_settings: EnvironmentSettings | None,
        engine_settings: EngineSettings | None,
    ) -> UnityEditor:
        return editor_factory(env_settings, engine_settings)

    def game_kind(self, env: EnvPath) -> GameKind:
        return GameKind(UNKNOWN, "no env_path names the game")
