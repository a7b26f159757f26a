"""The environment a run configuration names, as a factory of BaseEnvs."""

from __future__ import annotations

from envs.sources import BuiltinGame, CallableEnv, resolve_env
from envs.unity_build import UnityBuild
from envs.unity_editor import UnityEditor, editor_factory
from ghost.config.settings import RunOptions


def env_factory_for(options: RunOptions) -> BuiltinGame | CallableEnv | UnityBuild | UnityEditor:
    """``resolve_env`` for a whole configuration (``env_settings.env_path`` and its settings);
    with no ``env_path``, the Unity Editor, as ``mlagents-learn`` trains without ``--env``.

    Nothing starts here: the Editor's port opens when the factory is called, after the run folder
    is prepared (a ``--resume`` of a run that does not exist fails first).

    Raises:
        EnvironmentSourceError: ``env_path`` names nothing usable, or settings the Editor cannot
            honour (``num_envs`` > 1, Ray).
    """
    settings = options.env_settings
    if settings.env_path is None:
        return editor_factory(settings, options.engine_settings)
    return resolve_env(
        settings.env_path, env_settings=settings, engine_settings=options.engine_settings
    )
