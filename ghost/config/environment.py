"""The environment a run configuration names, as a factory of BaseEnvs."""

from __future__ import annotations

from envs.sources import BuiltinGame, CallableEnv, resolve_env
from envs.unity_build import UnityBuild
from ghost.config.settings import RunOptions


def env_factory_for(options: RunOptions) -> BuiltinGame | CallableEnv | UnityBuild:
    """``resolve_env`` for a whole configuration (``env_settings.env_path`` and its settings)."""
    return resolve_env(
        options.env_settings.env_path,
        env_settings=options.env_settings,
        engine_settings=options.engine_settings,
    )
