"""A tournament: every player of a run against every other, rated from all the results at once.

Vocabulary:

- **player**: one policy of the tournament. A run's snapshots (``snapshot``), its final policy
  (``final``), the fixed opponents of its ``self_play`` section (``fixed``: a scripted level or
  another run's policy file), and any extra scripted levels of the game (``scripted``).
- **pair result**: the games of one pair, counted from the first player's side
  (``ghost.evaluation.tournament_ratings.PairResult``); interrupted games are counted apart and left out of the
  ratings, as in ``ghost.evaluation``.
- **round robin**: in a symmetric game (one behavior on both teams: tennis, soccer, the matrix
  games) every pair meets, each player on team 0 for half of the games, so a side's advantage
  cancels. In an asymmetric game (``strikers_vs_goalie``) a player is bound to its behavior's
  side: every player of team 0's behavior meets every player of the other side, and players of
  one side never meet each other. Ratings of one side are still comparable through the common
  opponents; a gap across sides predicts that cross-side match (the side's advantage included).

Every player is rated twice from the same results, by ``ghost.evaluation.tournament_ratings``: Elo from a
Bradley-Terry maximum-likelihood fit to all games at once (with a 95% interval), and OpenSkill
(Plackett-Luce) over the games in a seeded shuffled order.
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

from ghost.core.win_rates import natural_key
from ghost.evaluation.progress import play_all
from ghost.evaluation.tournament_players import (
    TournamentPlayer,
    tournament_players,
)
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
from ghost.play import matches
from ghost.play.game_runner import GameRunner, InlineGames
from ghost.play.head_to_head import evaluate
from ghost.play.run_record import RunRecord

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
def _pair_seed(seed: int, pair: int, half: int) -> int:
    if seed < 0:
        return -1  # evaluate() draws fresh entropy
    return int(np.random.SeedSequence([seed, pair, half]).generate_state(1)[0])


def play_pair(
    a: TournamentPlayer,
    b: TournamentPlayer,
    *,
    game: str,
    games: int,
    symmetric: bool,
    seed: int = 0,
    pair_index: int = 0,
    num_arenas: int | None = None,
    deterministic: bool = False,
) -> PairResult:
    """Play ``games`` games of ``a`` against ``b``, counted from ``a``'s side.

    In a symmetric game ``a`` plays team 0 in the first ``ceil(games / 2)`` games and ``b`` in
    the rest; in an asymmetric one ``a`` plays its behavior's side throughout.
    """
    halves = [(a, b, (games + 1) // 2), (b, a, games // 2)] if symmetric else [(a, b, games)]
    counts = np.zeros(4, dtype=np.int64)
    for half, (policy, opponent, episodes) in enumerate(halves):
        if episodes == 0:
            continue
        result = evaluate(
            game=game,
            policy=policy.target,
            opponent=opponent.target,
            episodes=episodes,
            seed=_pair_seed(seed, pair_index, half),
            side=None if symmetric else policy.behavior,
            num_arenas=num_arenas,
            deterministic=deterministic,
            opponent_deterministic=deterministic,
        )
        mine = (result.wins, result.draws, result.losses)
        counts += (*(mine if policy is a else mine[::-1]), result.interrupted)
    wins, draws, losses, interrupted = (int(c) for c in counts)
    return PairResult(a.name, b.name, wins, draws, losses, interrupted)


def _tournament_game(run_dir: Path, game: str | None) -> str:
    """``game``, or else the built-in game named in the run's configuration.yaml; checked."""
    run = RunRecord(run_dir) if run_dir.is_dir() else None
    if game is None and run is not None:
        game = run.builtin_game
    if game is None:
        note = run.host.game_note if run is not None else None
        why = f": {note}" if note else " from its configuration.yaml; pass game= / --game"
        raise ConfigError(
            f"cannot tell the game of run {run_dir}{why} (one of "
            f"{', '.join(sorted(matches.BUILTIN_GAMES))})"
        )
    matches.check_game(game)
    return game


def _pairs_to_play(
    players: Sequence[TournamentPlayer], *, symmetric: bool, game: str, run_dir: Path
) -> list[tuple[TournamentPlayer, TournamentPlayer]]:
    """``tournament_pairs`` of ``players``; at least one, or a ``ConfigError`` that says what to add."""
    pairs = tournament_pairs(players, symmetric=symmetric)
    if not pairs:
        raise ConfigError(
            f"a tournament needs two players (one on each side of {game}); run {run_dir} has "
            f"{', '.join(p.name for p in players) or 'none'}: add scripted levels with "
            "--include-levels (e.g. medium,strong)"
        )
    logger.info(
        "%s tournament of %s: %d players, %d pairs", game, run_dir, len(players), len(pairs)
    )
    return pairs


def _play_pairs(
    pairs: Sequence[tuple[TournamentPlayer, TournamentPlayer]],
    *,
    runner: GameRunner,
    progress: Callable[[int, int, PairResult], None] | None,
    game: str,
    games_per_pair: int,
    symmetric: bool,
    seed: int,
    num_arenas: int | None,
    deterministic: bool,
) -> list[PairResult]:
    """Every pair's ``play_pair`` result, in pair order, played on ``runner``."""
    calls = [
        {"a": a, "b": b, "game": game, "games": games_per_pair, "symmetric": symmetric,
         "seed": seed, "pair_index": index, "num_arenas": num_arenas,
         "deterministic": deterministic}
        for index, (a, b) in enumerate(pairs)
    ]  # fmt: skip
    return play_all(runner, play_pair, calls, progress=progress)


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
    """Play a round robin between a run's players and rate them (see the module docstring).

    :param run_dir: the run folder (``results/<run-id>``).
    :param games_per_pair: games each pair plays.
    :param include_levels: scripted levels of the game to add as players (``("medium",
        "strong")``).
    :param seed: seeds every pair's games (each pair its own stream) and the OpenSkill order.
    :param game: the built-in game; default the run's ``env_settings.env_path``.
    :param num_arenas: matches played at once per pair; default ``min(games, 32)``.
    :param deterministic: every player takes its most likely action (scripted levels drop their
        noise).
    :param prior_draws: virtual draws per pair in the Elo fit (see ``ghost.evaluation.tournament_ratings.fit_bradley_terry``).
    :param progress: called after each pair with ``(pairs done, pairs in all, its result)``.
    :param games: where the pairs' games are played (``RayGames``: as Ray tasks, all pairs at
        once); default one pair after the other in this process. Seeds are per pair, so the
        results are the same either way.
    :raises ConfigError: no game, fewer than two players (one per side in an asymmetric game),
        ``games_per_pair`` < 1, or an unknown level.
    :raises RunDirectoryError: ``run_dir`` is not a folder.
    """
    run_dir = Path(run_dir)
    if games_per_pair < 1:
        raise ConfigError(f"--games-per-pair must be >= 1 (got {games_per_pair})")
    game = _tournament_game(run_dir, game)
    players, symmetric = tournament_players(run_dir, game=game, include_levels=include_levels)
    pairs = _pairs_to_play(players, symmetric=symmetric, game=game, run_dir=run_dir)
    results = _play_pairs(
        pairs,
        runner=games if games is not None else InlineGames(),
        progress=progress,
        game=game,
        games_per_pair=games_per_pair,
        symmetric=symmetric,
        seed=seed,
        num_arenas=num_arenas,
        deterministic=deterministic,
    )
    return build_table(
        players,
        results,
        game=game,
        run_dir=str(run_dir),
        symmetric=symmetric,
        games_per_pair=games_per_pair,
        seed=seed,
        prior_draws=prior_draws,
    )


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
