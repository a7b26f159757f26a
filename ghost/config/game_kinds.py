"""What kind of game a run trains, for ``self_play.preset: auto``.

The kinds and how an environment declares its own: ``envs.game_kind``. Without a declaration the
kind is told by the environment kind of ``env_settings.env_path`` (``envs.env_kinds``): a
built-in game's own, OpenSpiel's game type, PettingZoo's classic games, the ``game_kind``
attribute of a ``module:callable`` (imported, not called), control for a Unity build; so it is
known before any environment starts.
"""

from __future__ import annotations

from envs.env_kinds import GameKind, describe_env
from envs.game_kind import (
    BOARD,
    CONTROL,
    IMPERFECT_INFORMATION,
    MATRIX,
    UNKNOWN,
    UnknownGameKindError,
)
from envs.settings import EnvironmentSettings
from ghost.exceptions import ConfigError

__all__ = [
    "BOARD",
    "CONTROL",
    "IMPERFECT_INFORMATION",
    "MATRIX",
    "UNKNOWN",
    "GameKind",
    "game_kind",
    "kind_of",
]


def game_kind(env_path: str | None, declared: str | None = None) -> GameKind:
    """The kind of the game ``env_path`` names, or ``declared`` (``env_settings.game_kind``).

    Raises:
        ConfigError: a ``module:callable`` declares a kind that does not exist.
    """
    if declared is not None:
        return GameKind(declared, "env_settings.game_kind says so")
    try:
        return describe_env(env_path).game_kind()
    except UnknownGameKindError as error:
        raise ConfigError(f"env_path {env_path!r}: {error}") from None


def kind_of(game: EnvironmentSettings | str | None) -> GameKind:
    """The kind of a run's game: its ``env_settings`` (a declared ``game_kind`` first), or an
    ``env_path`` alone."""
    if isinstance(game, EnvironmentSettings):
        return game_kind(game.env_path, game.game_kind)
    return game_kind(game)
