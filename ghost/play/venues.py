"""Opening the venue of an environment (``ghost.play.venue.Venue``): the one place that says which
of the three implementations plays a game, by asking the environment kinds registry
(``envs.env_kinds.describe_env``) what the environment can do.
"""

from __future__ import annotations

from envs.env_kinds import describe_env
from ghost.exceptions import ConfigError
from ghost.play.arena_venue import ArenaVenue
from ghost.play.base_env_matches import EnvGames
from ghost.play.run_environment import EnvOverrides
from ghost.play.run_record import RunRecord
from ghost.play.seated_matches import SeatedVenue
from ghost.play.venue import Venue


def open_venue(
    env_path: str | None,
    *,
    run: RunRecord | None = None,
    overrides: EnvOverrides | None = None,
    num_arenas: int | None = None,
    seed: int = 0,
) -> Venue:
    """The venue of ``env_path``, by what its environment kind can do.

    Args:
        env_path: the environment (``tennis``, ``openspiel:leduc_poker``, a Unity build path,
            ``module:callable``); None with ``run``: the run's ``env_settings.env_path``.
        run: the run whose environment a general ``BaseEnv`` opens again (its recorded
            settings).
        overrides: what replaces the run's recorded settings (``--env``, ``--base-port``...).
        num_arenas: matches played at once in a built-in game (default: ``min(episodes, 32)``).
        seed: the seed a general ``BaseEnv`` is opened with.

    Returns:
        An ``ArenaVenue``, an ``EnvGames`` or a ``SeatedVenue``.

    Raises:
        ConfigError: no environment is named.
        EnvironmentSourceError: the environment cannot be opened.
    """
    text = env_path if env_path is not None else (run.env_path if run is not None else None)
    capabilities = describe_env(text).capabilities
    if capabilities.arenas:
        assert text is not None
        return ArenaVenue.of_game(text, num_arenas=num_arenas)
    if capabilities.seated:
        assert text is not None
        return SeatedVenue(env_path=text)
    if not capabilities.base_env:
        raise ConfigError(f"{text!r} names no environment ghost-eval can play in")
    overrides = overrides or EnvOverrides()
    if env_path is not None and overrides.env_path is None:
        overrides = EnvOverrides(
            env_path=env_path, base_port=overrides.base_port, no_graphics=overrides.no_graphics
        )
    return EnvGames.of_run(run.root if run is not None else None, overrides=overrides, seed=seed)
