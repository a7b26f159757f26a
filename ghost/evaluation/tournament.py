"""A tournament: every player of a run against every other, rated from all the results at once.

Vocabulary:

- **player**: one policy of the tournament. A run's snapshots (``snapshot``), its final policy
  (``final``), the fixed opponents of its ``self_play`` section (``fixed``: a scripted level or
  another run's policy file), and any extra scripted levels of the game (``scripted``).
- **pair result**: the games of one pair, counted from the first player's side
  (``ghost.evaluation.tournament_ratings.PairResult``); interrupted games are counted apart and left
  out of the ratings, as in ``ghost.evaluation``.
- **round robin**: in a symmetric game (one behavior on both teams: tennis, soccer, the matrix
  games) every pair meets, each player on team 0 for half of the games, so a side's advantage
  cancels. In an asymmetric game (``strikers_vs_goalie``) a player is bound to its behavior's side:
  every player of team 0's behavior meets every player of the other side, and players of one side
  never meet each other. Ratings of one side are still comparable through the common opponents; a
  gap across sides predicts that cross-side match (the side's advantage included).

Every player is rated twice from the same results, by ``ghost.evaluation.tournament_ratings``: Elo
from a Bradley-Terry maximum-likelihood fit to all games at once (with a 95% interval), and
OpenSkill (Plackett-Luce) over the games in a seeded shuffled order.
"""

from __future__ import annotations

import itertools
import logging
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from envs.games import BUILTIN_GAMES
from ghost.core.win_rates import natural_key
from ghost.evaluation.progress import play_all
from ghost.evaluation.tournament_players import TournamentPlayer, tournament_players
from ghost.evaluation.tournament_ratings import (
    ELO_MEAN,
    EloEstimate,
    OpenSkillRating,
    PairResult,
    fit_elo_intervals,
    initial_openskill_rating,
    openskill_ratings,
    pair_matrices,
)
from ghost.exceptions import ConfigError
from ghost.play.arena_venue import ArenaVenue
from ghost.play.game_runner import GameRunner, InlineGames
from ghost.play.matches import check_game
from ghost.play.run_record import RunRecord
from ghost.play.venue import Venue

logger = logging.getLogger(__name__)

#: the score matrix is printed for tournaments up to this many players
MATRIX_MAX_PLAYERS = 12


# -- the table -----------------------------------------------------------------------------------
@attrs.frozen(kw_only=True)
class TournamentRow:
    """One player's games and ratings."""

    player: TournamentPlayer
    wins: int
    draws: int
    losses: int
    interrupted: int
    elo: float
    #: half-width of the 95% interval of ``elo`` against the tournament mean
    elo_ci95: float
    openskill: OpenSkillRating

    @property
    def games(self) -> int:
        """Decided games (interrupted ones are left out)."""
        return self.wins + self.draws + self.losses

    @property
    def score(self) -> float:
        """Mean score per decided game: win 1, draw 0.5, loss 0 (NaN without any)."""
        return (self.wins + 0.5 * self.draws) / self.games if self.games else math.nan

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready values."""
        player = self.player
        return {
            "player": player.name,
            "kind": player.kind,
            "behavior": player.behavior,
            "source": player.source,
            "step": player.step,
            "training_rating": player.training_rating,
            "games": self.games,
            "wins": self.wins,
            "draws": self.draws,
            "losses": self.losses,
            "interrupted": self.interrupted,
            "score": None if math.isnan(self.score) else self.score,
            "elo": self.elo,
            "elo_ci95": None if math.isinf(self.elo_ci95) else self.elo_ci95,
            "openskill_mu": self.openskill.mu,
            "openskill_sigma": self.openskill.sigma,
            "openskill_ordinal": self.openskill.ordinal,
        }


@attrs.frozen(kw_only=True)
class TournamentTable:
    """A tournament's players, best Elo first, and the pair results they were rated from."""

    game: str
    run_dir: str
    symmetric: bool
    games_per_pair: int
    seed: int
    prior_draws: float
    rows: tuple[TournamentRow, ...]
    results: tuple[PairResult, ...]

    def row(self, name: str) -> TournamentRow:
        """The row of player ``name``."""
        for row in self.rows:
            if row.player.name == name:
                return row
        raise KeyError(name)

    def score_matrix(self) -> np.ndarray:
        """``m[i, j]``: row ``i``'s mean score against row ``j`` (NaN where they never met)."""
        return pair_matrices([row.player.name for row in self.rows], self.results)[0]

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready values: the settings, the rows and every pair result."""
        return {
            "game": self.game,
            "run": self.run_dir,
            "symmetric": self.symmetric,
            "games_per_pair": self.games_per_pair,
            "seed": self.seed,
            "elo_method": "bradley-terry-mle",
            "elo_prior_draws": self.prior_draws,
            "elo_mean": ELO_MEAN,
            "players": [row.to_dict() for row in self.rows],
            "results": [r.to_dict() for r in self.results],
        }


def build_table(
    players: Sequence[TournamentPlayer],
    results: Sequence[PairResult],
    *,
    game: str,
    run_dir: str,
    symmetric: bool,
    games_per_pair: int,
    seed: int = 0,
    prior_draws: float = 1.0,
) -> TournamentTable:
    """Rate ``players`` from ``results`` and sort them, best Elo first."""
    fitted = fit_elo_intervals(results, prior_draws=prior_draws)
    unrated = EloEstimate(ELO_MEAN, math.inf)  # a player named in no result
    skills = openskill_ratings(results, seed=seed)
    fresh = initial_openskill_rating()
    counts = {p.name: np.zeros(4, dtype=np.int64) for p in players}
    for r in results:
        counts[r.player] += (r.wins, r.draws, r.losses, r.interrupted)
        counts[r.opponent] += (r.losses, r.draws, r.wins, r.interrupted)
    rows = []
    for player in players:
        estimate = fitted.get(player.name, unrated)
        wins, draws, losses, interrupted = (int(c) for c in counts[player.name])
        rows.append(
            TournamentRow(
                player=player,
                wins=wins,
                draws=draws,
                losses=losses,
                interrupted=interrupted,
                elo=estimate.elo,
                elo_ci95=estimate.ci95,
                openskill=skills.get(player.name, fresh),
            )
        )
    rows.sort(key=lambda row: (-row.elo, natural_key(row.player.name)))
    return TournamentTable(
        game=game,
        run_dir=run_dir,
        symmetric=symmetric,
        games_per_pair=games_per_pair,
        seed=seed,
        prior_draws=prior_draws,
        rows=tuple(rows),
        results=tuple(results),
    )


def tournament_pairs(
    players: Sequence[TournamentPlayer], *, symmetric: bool
) -> list[tuple[TournamentPlayer, TournamentPlayer]]:
    """Who meets whom: every pair in a symmetric game; in an asymmetric one every player of the
    first behavior's side against every player of the other side."""
    if symmetric:
        return list(itertools.combinations(players, 2))
    first = players[0].behavior if players else None
    mine = [p for p in players if p.behavior == first]
    theirs = [p for p in players if p.behavior != first]
    return [(a, b) for a in mine for b in theirs]


# -- playing it ----------------------------------------------------------------------------------
def _play_pair(venue: Venue, a: TournamentPlayer, b: TournamentPlayer, **call: Any) -> PairResult:
    """``venue.play_pair`` of ``a`` and ``b`` as the pair's ``PairResult`` (a module function:
    Ray tasks play it)."""
    counts = venue.play_pair(
        a.target, b.target, a_behavior=a.behavior, b_behavior=b.behavior, **call
    )
    return PairResult(a.name, b.name, *counts)


def _check_games_per_pair(games_per_pair: int) -> None:
    if games_per_pair < 1:
        raise ConfigError(f"--games-per-pair must be >= 1 (got {games_per_pair})")


def _check_players(venue: Venue, run_dirs: Sequence[Path]) -> None:
    """In a venue without scripted levels, every run brings a player (else a ``ConfigError``
    that says what to pass)."""
    if venue.builtin_game is not None:
        return
    for run_dir in run_dirs:
        if not tournament_players([run_dir], behaviors=venue.behaviors):
            raise ConfigError(
                f"run {run_dir} has no policy of {', '.join(venue.behaviors)} (the behaviors of "
                f"{venue.label}) to play in the tournament; pass runs trained on {venue.label}"
            )


def _pairs_to_play(
    venue: Venue, players: Sequence[TournamentPlayer], *, symmetric: bool, runs: str, several: bool
) -> list[tuple[TournamentPlayer, TournamentPlayer]]:
    """``tournament_pairs`` of ``players``; at least one, or a ``ConfigError`` that says what to
    add (scripted levels, or another run where the venue has none)."""
    pairs = tournament_pairs(players, symmetric=symmetric)
    if not pairs:
        names = ", ".join(p.name for p in players) or "none"
        if venue.builtin_game is not None:
            add = "add scripted levels with --include-levels (e.g. medium,strong)"
            has = f"run {runs} has {names}"
        else:
            add = (
                "add another run (ghost-eval tournament RUN OTHER_RUN) or train with self_play, "
                "which leaves snapshots"
            )
            has = f"{runs} {'have' if several else 'has'} {names}"
        raise ConfigError(
            f"a tournament needs two players (one on each side of {venue.label}); {has}: {add}"
        )
    logger.info(
        "%s tournament of %s: %d players, %d pairs", venue.label, runs, len(players), len(pairs)
    )
    return pairs


def hold_tournament(
    venue: Venue,
    run_dirs: Sequence[str | Path],
    *,
    games_per_pair: int = 40,
    include_levels: Sequence[str] = (),
    seed: int = 0,
    deterministic: bool = False,
    prior_draws: float = 1.0,
    progress: Callable[[int, int, PairResult], None] | None = None,
    games: GameRunner | None = None,
) -> TournamentTable:
    """Play a round robin between the players of ``run_dirs`` in ``venue`` and rate them (see
    the module docstring).

    Args:
        venue: where the games are played (``ghost.play.venues.open_venue``).
        run_dirs: the run folders (several: runs of one general ``BaseEnv``).
        games_per_pair: games each pair plays.
        include_levels: scripted levels of a built-in game to add as players
            (``("medium", "strong")``).
        seed: seeds every pair's games (each pair its own stream) and the OpenSkill order.
        deterministic: every player takes its most likely action (scripted levels drop their
            noise).
        prior_draws: virtual draws per pair in the Elo fit (see
            ``ghost.evaluation.tournament_ratings.fit_bradley_terry``).
        progress: called after each pair with ``(pairs done, pairs in all, its result)``.
        games: where the pairs' games are played (``RayGames``: as Ray tasks, all at once);
            default one pair after the other here. Seeds are per pair: the same results.

    Returns:
        The rated table.

    Raises:
        ConfigError: fewer than two players (one per side in an asymmetric game),
            ``games_per_pair`` < 1, or an unknown level.
        RunDirectoryError: a run folder does not exist.
    """
    _check_games_per_pair(games_per_pair)
    paths = [Path(run_dir) for run_dir in run_dirs]
    behaviors = venue.behaviors
    symmetric = len(behaviors) == 1
    _check_players(venue, paths)
    players = tournament_players(
        paths, behaviors=behaviors, game=venue.builtin_game, include_levels=include_levels
    )
    runs = ", ".join(str(path) for path in paths)
    pairs = _pairs_to_play(venue, players, symmetric=symmetric, runs=runs, several=len(paths) > 1)
    calls = [
        {"venue": venue, "a": a, "b": b, "games": games_per_pair, "seed": seed,
         "pair_index": index, "deterministic": deterministic}
        for index, (a, b) in enumerate(pairs)
    ]  # fmt: skip
    results = play_all(games if games is not None else InlineGames(), _play_pair, calls,
                       progress=progress)  # fmt: skip
    return build_table(
        players, results, game=venue.label, run_dir=runs, symmetric=symmetric,
        games_per_pair=games_per_pair, seed=seed, prior_draws=prior_draws,
    )  # fmt: skip


def tournament_game(run_dir: Path, game: str | None) -> str:
    """``game``, or else the built-in game named in the run's configuration.yaml; checked.

    Args:
        run_dir: the run folder.
        game: the built-in game, when given.

    Returns:
        The game.

    Raises:
        ConfigError: no game can be told.
        EnvironmentSourceError: ``game`` is not a built-in game.
    """
    run = RunRecord(run_dir) if run_dir.is_dir() else None
    if game is None and run is not None:
        game = run.builtin_game
    if game is None:
        note = run.host.game_note if run is not None else None
        why = f": {note}" if note else " from its configuration.yaml; pass game= / --game"
        raise ConfigError(
            f"cannot tell the game of run {run_dir}{why} (one of "
            f"{', '.join(sorted(BUILTIN_GAMES))})"
        )
    check_game(game)
    return game


def play_tournament(
    run_dir: str | Path,
    *,
    games_per_pair: int = 40,
    include_levels: Sequence[str] = (),
    seed: int = 0,
    game: str | None = None,
    num_arenas: int | None = None,
    deterministic: bool = False,
    prior_draws: float = 1.0,
    progress: Callable[[int, int, PairResult], None] | None = None,
    games: GameRunner | None = None,
) -> TournamentTable:
    """The tournament of a run on a built-in game (``hold_tournament`` in its arenas).

    Args:
        run_dir: the run folder (``results/<run-id>``).
        games_per_pair: games each pair plays.
        include_levels: scripted levels of the game to add as players.
        seed: seeds every pair's games and the OpenSkill order.
        game: the built-in game; default the run's ``env_settings.env_path``.
        num_arenas: matches played at once per pair; default ``min(games, 32)``.
        deterministic: every player takes its most likely action.
        prior_draws: virtual draws per pair in the Elo fit.
        progress: called after each pair with ``(pairs done, pairs in all, its result)``.
        games: where the pairs' games are played (``RayGames``: as Ray tasks).

    Returns:
        The rated table.

    Raises:
        ConfigError: no game, too few players, ``games_per_pair`` < 1, or an unknown level.
        RunDirectoryError: ``run_dir`` is not a folder.
    """
    run_dir = Path(run_dir)
    _check_games_per_pair(games_per_pair)
    venue = ArenaVenue.of_game(tournament_game(run_dir, game), num_arenas=num_arenas)
    return hold_tournament(
        venue, [run_dir], games_per_pair=games_per_pair, include_levels=include_levels,
        seed=seed, deterministic=deterministic, prior_draws=prior_draws, progress=progress,
        games=games,
    )  # fmt: skip


# -- text ----------------------------------------------------------------------------------------
def _cell(value: float | None, digits: int) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:.{digits}f}"


def _short(name: str, width: int) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"


def format_tournament(table: TournamentTable) -> str:
    """The tournament table, best Elo first, and the score matrix for up to 12 players."""
    interrupted = sum(r.interrupted for r in table.results)
    lines = [
        f"{table.game} tournament of {table.run_dir}: {len(table.rows)} players, "
        f"{len(table.results)} pairs x {table.games_per_pair} games, seed {table.seed}",
        f"Elo: Bradley-Terry maximum-likelihood fit to all games, mean {ELO_MEAN:g} (a draw is "
        f"half a win; {table.prior_draws:g} virtual draw{'' if table.prior_draws == 1 else 's'} "
        "per pair); ±: 95% interval",
        "OpenSkill: Plackett-Luce over the games in shuffled order; ordinal = mu - 3 sigma",
    ]
    if not table.symmetric:
        lines.append(
            "asymmetric game: players met only the other side's players; a gap across sides "
            "includes the side's advantage"
        )
    if interrupted:
        lines.append(f"{interrupted} interrupted games are left out")
    width = min(24, max(6, *(len(row.player.name) for row in table.rows)))
    lines += [
        "",
        f"{'#':>3} {'player':<{width}} {'kind':<8} {'step':>8} {'games':>6} {'score':>6} "
        f"{'Elo':>7} {'±':>5}  {'mu':>6} {'sigma':>6} {'ordinal':>7}",
    ]
    for rank, row in enumerate(table.rows, start=1):
        step = "-" if row.player.step is None else str(row.player.step)
        ci = "-" if math.isinf(row.elo_ci95) else f"{row.elo_ci95:.0f}"
        lines.append(
            f"{rank:>3} {_short(row.player.name, width):<{width}} {row.player.kind:<8} "
            f"{step:>8} {row.games:>6} {_cell(row.score, 3):>6} {row.elo:>7.1f} {ci:>5}  "
            f"{row.openskill.mu:>6.2f} {row.openskill.sigma:>6.2f} {row.openskill.ordinal:>7.2f}"
        )
    if len(table.rows) <= MATRIX_MAX_PLAYERS:
        matrix = table.score_matrix()
        lines += [
            "",
            "score of the row player against the column player (win 1, draw 0.5, loss 0):",
            f"{'':>3} {'':<{width}}" + "".join(f"{j:>6}" for j in range(1, len(table.rows) + 1)),
        ]
        for i, row in enumerate(table.rows):
            cells = "".join(f"{_cell(v, 2):>6}" for v in matrix[i])
            lines.append(f"{i + 1:>3} {_short(row.player.name, width):<{width}}{cells}")
    return "\n".join(lines)
