"""What kind of game a run trains, for ``self_play.preset: auto``.

The kinds and how an environment declares its own: ``envs.game_kind``. Without a declaration the
kind is told from the ``env_settings.env_path`` string, and from OpenSpiel's own game type where
it names an OpenSpiel game, so it is known before any environment starts. A ``module:callable``
is imported (not called) to read its ``game_kind`` attribute.
"""

from __future__ import annotations

import functools
import os
import re

import attrs

from envs.exceptions import EnvironmentSourceError
from envs.game_kind import (
    BOARD,
    CONTROL,
    IMPERFECT_INFORMATION,
    MATRIX,
    UNKNOWN,
    UnknownGameKindError,
    declared_kind,
)
from envs.settings import EnvironmentSettings
from envs.sources import CallableEnv
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

_BUILTIN_KINDS = {
    "tennis": CONTROL,
    "soccer": CONTROL,
    "strikers_vs_goalie": CONTROL,
    "volley": CONTROL,
    "rock_paper_scissors": MATRIX,
    "biased_rps": MATRIX,
}

#: PettingZoo's classic games by module name (without the ``_v<N>`` version)
_PETTINGZOO_KINDS = {
    "chess": BOARD,
    "connect_four": BOARD,
    "go": BOARD,
    "tictactoe": BOARD,
    "gin_rummy": IMPERFECT_INFORMATION,
    "hanabi": IMPERFECT_INFORMATION,
    "leduc_holdem": IMPERFECT_INFORMATION,
    "texas_holdem": IMPERFECT_INFORMATION,
    "texas_holdem_no_limit": IMPERFECT_INFORMATION,
    "rps": MATRIX,
}

_CALLABLE = re.compile(r"(?P<module>[A-Za-z_][\w.]*):(?P<attribute>[A-Za-z_][\w.]*)")


@attrs.frozen
class GameKind:
    """A game's kind and how it was told (``why``: for the log line of ``preset: auto``)."""

    kind: str
    why: str


def game_kind(env_path: str | None, declared: str | None = None) -> GameKind:
    """The kind of the game ``env_path`` names, or ``declared`` (``env_settings.game_kind``)."""
    if declared is not None:
        return GameKind(declared, "env_settings.game_kind says so")
    if not env_path:
        return GameKind(UNKNOWN, "no env_path names the game")
    if env_path in _BUILTIN_KINDS:
        return GameKind(_BUILTIN_KINDS[env_path], f"built-in game {env_path!r}")
    if env_path.startswith("openspiel:"):
        return _openspiel_kind(env_path.removeprefix("openspiel:"))
    if env_path.startswith("pettingzoo:"):
        module = env_path.removeprefix("pettingzoo:").rsplit(".", 1)[-1]
        name = re.sub(r"_v\d+$", "", module)
        kind = _PETTINGZOO_KINDS.get(name, UNKNOWN)
        why = f"PettingZoo game {module!r}" if kind != UNKNOWN else f"{module!r} is not known here"
        return GameKind(kind, why)
    if _CALLABLE.fullmatch(env_path):
        return _callable_kind(env_path, os.getcwd())
    return GameKind(CONTROL, f"{env_path!r} is a Unity build")


def _openspiel_kind(game_string: str) -> GameKind:
    from envs.openspiel import load_game

    try:
        game = load_game(game_string)
    except Exception:  # the environment's own resolution reports a bad game string
        return GameKind(UNKNOWN, f"OpenSpiel cannot load {game_string!r}")
    game_type = game.get_type()
    information = game_type.information.name
    if information == "ONE_SHOT":
        return GameKind(MATRIX, f"OpenSpiel says {game_string!r} is one-shot")
    if game_type.dynamics.name == "SIMULTANEOUS":
        # each player picks without seeing the others' picks: information is hidden every turn
        return GameKind(
            IMPERFECT_INFORMATION, f"OpenSpiel says {game_string!r} has simultaneous moves"
        )
    if information == "PERFECT_INFORMATION":
        return GameKind(BOARD, f"OpenSpiel says {game_string!r} has perfect information")
    return GameKind(
        IMPERFECT_INFORMATION, f"OpenSpiel says {game_string!r} has imperfect information"
    )


def kind_of(game: EnvironmentSettings | str | None) -> GameKind:
    """The kind of a run's game: its ``env_settings`` (a declared ``game_kind`` first), or an
    ``env_path`` alone."""
    if isinstance(game, EnvironmentSettings):
        return game_kind(game.env_path, game.game_kind)
    return game_kind(game)


@functools.lru_cache(maxsize=32)
def _callable_kind(env_path: str, folder: str) -> GameKind:
    """The kind a ``module:callable`` declares with its ``game_kind`` attribute, else unknown
    (imported from ``folder``, the current folder, as the environment itself will be)."""
    match = _CALLABLE.fullmatch(env_path)
    assert match is not None
    source = CallableEnv(**match.groupdict(), search_path=folder)
    try:
        kind = declared_kind(source.load())
    except EnvironmentSourceError:
        kind = None  # resolving the environment reports a bad path with its own message
    except UnknownGameKindError as error:
        raise ConfigError(f"env_path {env_path!r}: {error}") from None
    if kind is None:
        return GameKind(
            UNKNOWN,
            f"{env_path!r} is a Python environment that declares no game_kind",
        )
    return GameKind(kind, f"{env_path!r} declares game_kind {kind!r}")
