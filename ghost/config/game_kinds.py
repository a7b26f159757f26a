"""What kind of game an ``env_settings.env_path`` names, for ``self_play.preset: auto``.

The kinds are those the self-play measurements separate (docs/self-play-strength.md):

- ``imperfect_information``: card games and other turn-based games with hidden information or
  simultaneous moves (Leduc poker, goofspiel);
- ``board``: turn-based games where every player sees everything (tic-tac-toe, connect four);
- ``matrix``: one-shot simultaneous-move games (rock-paper-scissors);
- ``control``: real-time games (the built-in tennis, soccer and strikers vs goalie, Unity builds);
- ``unknown``: a Python ``module:callable`` or no ``env_path``: nothing tells the kind.

Only the ``env_path`` string is read, and OpenSpiel's own game type where it names an OpenSpiel
game, so the kind is known before any environment starts.
"""

from __future__ import annotations

import re

import attrs

IMPERFECT_INFORMATION = "imperfect_information"
BOARD = "board"
MATRIX = "matrix"
CONTROL = "control"
UNKNOWN = "unknown"

_BUILTIN_KINDS = {
    "tennis": CONTROL,
    "soccer": CONTROL,
    "strikers_vs_goalie": CONTROL,
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

_CALLABLE = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")


@attrs.frozen
class GameKind:
    """A game's kind and how it was told (``why``: for the log line of ``preset: auto``)."""

    kind: str
    why: str


def game_kind(env_path: str | None) -> GameKind:
    """The kind of the game ``env_path`` names (see the module docstring for the kinds)."""
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
        return GameKind(UNKNOWN, f"{env_path!r} is a Python environment of unknown kind")
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
