"""The kinds of game self-play settings are chosen by, and how an environment declares its own.

The kinds are those the self-play measurements separate (docs/self-play-strength.md):

- ``imperfect_information``: card games and other turn-based games with hidden information or
  simultaneous moves (Leduc poker, goofspiel);
- ``board``: turn-based games where every player sees everything (tic-tac-toe, connect four);
- ``matrix``: one-shot simultaneous-move games (rock-paper-scissors);
- ``control``: real-time games (tennis, soccer, strikers vs goalie, Unity builds);
- ``unknown``: nothing tells the kind.

An environment says what it is in one of two ways, both read before any environment starts:

- ``env_settings.game_kind: imperfect_information`` in the run's configuration;
- a ``game_kind`` attribute on the ``module:callable`` that ``env_path`` names (a class attribute
  of a BaseEnv class, or an attribute set on a factory function)::

      def make_env(worker_id=0, seed=0):
          return MyCardGame(seed=seed)

      make_env.game_kind = "imperfect_information"

  A BaseEnv instance given to ``ghost.train(env=...)`` may carry the same attribute.
"""

from __future__ import annotations

from typing import Any

IMPERFECT_INFORMATION = "imperfect_information"
BOARD = "board"
MATRIX = "matrix"
CONTROL = "control"
UNKNOWN = "unknown"

#: every kind, in the order the docs list them
GAME_KINDS: tuple[str, ...] = (IMPERFECT_INFORMATION, BOARD, MATRIX, CONTROL, UNKNOWN)

#: the attribute an environment, its class or its factory declares its kind with
ATTRIBUTE = "game_kind"


class UnknownGameKindError(ValueError):
    """A declared game kind is not one of ``GAME_KINDS``."""


def checked_kind(kind: Any, *, where: str) -> str:
    """``kind`` if it names a kind, else ``UnknownGameKindError`` naming ``where`` and the kinds."""
    if kind not in GAME_KINDS:
        raise UnknownGameKindError(
            f"{where} = {kind!r} is not a game kind; valid kinds: {', '.join(GAME_KINDS)}"
        )
    return str(kind)


def declared_kind(environment: Any) -> str | None:
    """The kind an environment, its class or its factory declares (``game_kind``), or None.

    Raises:
        UnknownGameKindError: the attribute holds something other than a kind.
    """
    kind = getattr(environment, ATTRIBUTE, None)
    if kind is None:
        return None
    name = getattr(environment, "__qualname__", type(environment).__qualname__)
    return checked_kind(kind, where=f"{name}.{ATTRIBUTE}")
