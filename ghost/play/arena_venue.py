"""The venue of a built-in game: many matches at once in its arenas, scripted levels as players.

Every game is ``ghost.play.head_to_head.evaluate`` (a fresh game per call, so a venue holds
nothing open and travels to Ray tasks as it is). A tournament pair in a symmetric game plays half
of its games with each player on team 0, so a side's advantage cancels; in an asymmetric game
each player keeps its behavior's side.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from ghost.play.demo_recording import DemoRequest
from ghost.play.head_to_head import EvaluationResult, evaluate
from ghost.play.matches import check_game, opponent_behavior, policy_behavior
from ghost.play.venue import PairCounts, SnapshotsPlay


def _pair_seed(seed: int, pair: int, half: int) -> int:
    if seed < 0:
        return -1  # evaluate() draws fresh entropy
    return int(np.random.SeedSequence([seed, pair, half]).generate_state(1)[0])


@attrs.frozen(kw_only=True)
class ArenaVenue:
    """A built-in game as a ``ghost.play.venue.Venue``.

    Attributes:
        game: the built-in game (``envs.games.BUILTIN_GAMES``).
        behaviors: its behavior names, team 0's first.
        num_arenas: matches played at once (default: ``min(episodes, 32)``).
    """

    game: str
    behaviors: list[str]
    num_arenas: int | None = None

    @classmethod
    def of_game(cls, game: str, *, num_arenas: int | None = None) -> ArenaVenue:
        """The venue of ``game``, checked.

        Args:
            game: a built-in game name.
            num_arenas: matches played at once.

        Returns:
            The venue.

        Raises:
            EnvironmentSourceError: ``game`` is not a built-in game.
        """
        check_game(game)
        behaviors = [policy_behavior(game, None), opponent_behavior(game, None)]
        return cls(game=game, behaviors=list(dict.fromkeys(behaviors)), num_arenas=num_arenas)

    @property
    def label(self) -> str:
        """The game's name."""
        return self.game

    @property
    def builtin_game(self) -> str:
        """The game's name: scripted levels play here."""
        return self.game

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
    ) -> EvaluationResult:
        """``evaluate`` in this game (see ``ghost.play.venue.Venue.play``).

        Args:
            policy: the evaluated player; it plays ``side`` (default: team 0's behaviors).
            opponent: the player of the other behaviors.
            episodes: matches to play.
            seed: seeds the game, the scripted players and the sampling.
            side: the behavior the policy plays.
            deterministic: the policy takes its most likely action.
            opponent_deterministic: the same for the opponent.
            progress: told ``(episodes played, episodes)`` as matches end.
            record_demo: also record one side's steps of the counted matches.

        Returns:
            The counts with their intervals (and the recorded ``demo``).
        """
        return evaluate(
            game=self.game, policy=policy, opponent=opponent, episodes=episodes, seed=seed,
            num_arenas=self.num_arenas, side=side, deterministic=deterministic,
            opponent_deterministic=opponent_deterministic, progress=progress,
            record_demo=record_demo,
        )  # fmt: skip

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
        """One tournament pair (see ``ghost.play.venue.Venue.play_pair``): in a symmetric game
        ``a`` plays team 0 in the first ``ceil(games / 2)`` games and ``b`` in the rest.

        Args:
            a: the first player.
            b: the second player.
            a_behavior: the behavior ``a`` plays.
            b_behavior: the behavior ``b`` plays (``a_behavior`` in a symmetric game).
            games: games to play.
            seed: the tournament's seed.
            pair_index: the pair's place in the tournament.
            deterministic: every player takes its most likely action.

        Returns:
            Wins, draws, losses and interrupted games from ``a``'s side.
        """
        symmetric = a_behavior == b_behavior
        halves = [(a, b, (games + 1) // 2), (b, a, games // 2)] if symmetric else [(a, b, games)]
        counts = np.zeros(4, dtype=np.int64)
        for half, (policy, opponent, episodes) in enumerate(halves):
            if episodes == 0:
                continue
            result = self.play(
                policy=policy, opponent=opponent, episodes=episodes,
                seed=_pair_seed(seed, pair_index, half),
                side=None if symmetric else a_behavior, deterministic=deterministic,
                opponent_deterministic=deterministic,
            )  # fmt: skip
            mine = (result.wins, result.draws, result.losses)
            counts += (*(mine if half == 0 else mine[::-1]), result.interrupted)
        wins, draws, losses, interrupted = (int(c) for c in counts)
        return wins, draws, losses, interrupted

    def snapshot_sides(
        self, *, snapshots_play: SnapshotsPlay, side: str | None
    ) -> list[tuple[str, Any]]:
        """The one behavior whose snapshots play: the evaluated player's (``side``'s) when they
        are the policy, the other side's when they are its opponent.

        Args:
            snapshots_play: the part the snapshots play.
            side: the behavior the evaluated player plays.

        Returns:
            One ``(behavior name, side)`` pair.
        """
        if snapshots_play == "policy":
            behavior = policy_behavior(self.game, side)
            return [(behavior, side if side is not None else behavior)]
        return [(opponent_behavior(self.game, side), side)]

    def close(self) -> None:
        """Nothing to close: every game is opened and closed by ``play``."""
