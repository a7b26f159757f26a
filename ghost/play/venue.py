"""One match interface: a ``Venue`` is where two players meet, whatever the game.

Vocabulary (the families a venue stands for, one implementation each):

- **arenas** (``ghost.play.arena_venue.ArenaVenue``): a built-in game, many matches at once in its
  arenas, scripted levels as players;
- **base env** (``ghost.play.base_env_matches.EnvGames``): any ``BaseEnv`` (a Unity build, a
  ``module:callable`` environment), one open environment played match after match;
- **seated** (``ghost.play.seated_matches.SeatedVenue``): a turn-based OpenSpiel or PettingZoo
  game, the policy in every seat in turn.

A venue plays ``play``: one player (the *policy*) against another (the *opponent*) for a number of
episodes with a seed, counted from the policy's side (and, asked, one side's demonstrations
recorded into a ``.demo`` file); ``play_pair``: the games of one tournament
pair, sides dealt as the venue deals them; ``snapshot_sides``: which behaviors' snapshots a
snapshot evaluation plays, and on what side. ``ghost.evaluation`` writes ``ghost-eval match``,
``snapshots`` and the tournament once over this interface.

``ghost.play.venues.open_venue`` opens the venue of an environment: it asks the environment kinds
registry (``envs.env_kinds.describe_env``) what the text names, never the text itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from ghost.play.demo_recording import DemoRequest

#: which part a run's snapshots play in a snapshot evaluation
SnapshotsPlay = Literal["policy", "opponent"]
#: the games of a tournament pair from its first player's side: wins, draws, losses, interrupted
PairCounts = tuple[int, int, int, int]


class Venue(Protocol):
    """Where two players meet: a game with a seed, played for a number of episodes."""

    @property
    def label(self) -> str:
        """The game's name in tables and messages (``tennis``, ``FakePong``)."""

    @property
    def builtin_game(self) -> str | None:
        """The built-in game played (its scripted levels can play), or None."""

    @property
    def behaviors(self) -> list[str]:
        """The behavior names (``Name``, no team) of the game, team 0's first."""

    def play(
        self,
        *,
        policy: Any,
        opponent: Any,
        episodes: int,
        seed: int = 0,
        side: Any = None,
        deterministic: bool = False,
        opponent_deterministic: bool = False,
        progress: Callable[[int, int], None] | None = None,
        record_demo: DemoRequest | None = None,
    ) -> Any:
        """Play ``policy`` against ``opponent`` and count the results from the policy's side.

        Args:
            policy: the evaluated player (a policy file, a run folder, a scripted level where
                the venue has them, or an object with ``act``).
            opponent: the player of every other side, of the same kinds.
            episodes: episodes to play.
            seed: seeds the game, the scripted players and the sampling (-1: unseeded).
            side: the behavior the policy plays (``Goalie``, ``Tennis?team=1``), or a side
                ``snapshot_sides`` returned; None: the venue's default.
            deterministic: the policy takes its most likely action.
            opponent_deterministic: the same for the opponent.
            progress: told ``(episodes played, episodes)`` as they end.
            record_demo: also record one side's steps into a ``.demo`` file
                (``ghost.play.demo_recording``); the result's ``demo`` says what it holds.

        Returns:
            The venue's result: ``EvaluationResult`` (W/D/L with intervals), or ``BothSeats``
            for a seated game (per seat).

        Raises:
            ConfigError: ``record_demo`` where the venue records none (a seated game).
        """

    def play_pair(
        self,
        a: Any,
        b: Any,
        *,
        a_behavior: str,
        b_behavior: str,
        games: int,
        seed: int,
        pair_index: int,
        deterministic: bool,
    ) -> PairCounts:
        """Play the games of one tournament pair; both players take their most likely action
        when ``deterministic``.

        Args:
            a: the first player (a policy file or a scripted level).
            b: the second player.
            a_behavior: the behavior name ``a`` plays; the same as ``b_behavior`` in a symmetric
                game, where the venue deals the sides.
            b_behavior: the behavior name ``b`` plays.
            games: games to play.
            seed: the tournament's seed (-1: unseeded).
            pair_index: the pair's place in the tournament: each pair draws its own stream.
            deterministic: every player takes its most likely action.

        Returns:
            Wins, draws, losses and interrupted games from ``a``'s side.
        """

    def snapshot_sides(
        self, *, snapshots_play: SnapshotsPlay, side: str | None
    ) -> list[tuple[str, Any]]:
        """Which behaviors' snapshots a snapshot evaluation plays, and the ``side`` argument of
        ``play`` for each.

        Args:
            snapshots_play: ``"policy"``: the snapshots are the evaluated player; ``"opponent"``:
                they are its opponent.
            side: the behavior the evaluated player plays, as given (None: the default).

        Returns:
            ``(behavior name, side)`` pairs.
        """

    def close(self) -> None:
        """Close what the venue holds open (an environment, a Unity build's process)."""
