"""Tournament ratings: Elo and OpenSkill fitted to pair results, pure maths without I/O.

Vocabulary:

- **pair result**: the games of one pair, counted from the first player's side
  (``PairResult``); interrupted games are counted apart and left out of the ratings.

Two ratings come from the same results:

- **Elo**: the Bradley-Terry model ``P(i beats j) = 1 / (1 + 10 ** ((R_j - R_i) / 400))`` fitted
  by maximum likelihood (Newton's method; a draw counts as half a win and half a loss), then
  shifted so the mean rating is 1200. ``prior_draws`` virtual draws per pair that met keep the
  fit finite when a player won (or lost) every game, the way BayesElo's prior does. Unlike online
  Elo the fit does not depend on the order of the games. Each rating comes with the half-width of
  its 95% interval against the tournament mean, from the inverse Fisher information.
- **OpenSkill**: Plackett-Luce ratings (``mu``, ``sigma``, ``ordinal = mu - 3 sigma``) updated
  game by game in a seeded shuffled order; ``sigma`` says how sure it is.

``ghost.tournament`` plays the games and builds the table from these.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np

#: Elo points per natural-log unit of odds: 400 / ln(10)
ELO_PER_NAT = 400.0 / math.log(10.0)
ELO_MEAN = 1200.0
Z95 = 1.959963984540054


# -- pair results --------------------------------------------------------------------------------
class PairResult(NamedTuple):
    """Games of ``player`` against ``opponent``, counted from ``player``'s side."""

    player: str
    opponent: str
    wins: int
    draws: int
    losses: int
    interrupted: int = 0

    @property
    def decided(self) -> int:
        """Games with a result: wins + draws + losses."""
        return self.wins + self.draws + self.losses

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready values."""
        return self._asdict()


def pair_matrices(
    names: Sequence[str], results: Iterable[PairResult]
) -> tuple[np.ndarray, np.ndarray]:
    """The payoff matrix of ``names`` and the games behind each cell.

    Returns:
        ``(score, games)``: ``score[i, j]`` is ``names[i]``'s mean score against ``names[j]`` (win
        1, draw 0.5, loss 0; NaN where they never finished a game) and ``games[i, j]`` the decided
        games between them. Results of players not in ``names`` are left out.
    """
    index = {name: i for i, name in enumerate(names)}
    points = np.zeros((len(index), len(index)))
    games = np.zeros_like(points)
    for r in results:
        if r.player not in index or r.opponent not in index:
            continue
        i, j = index[r.player], index[r.opponent]
        points[i, j] += r.wins + 0.5 * r.draws
        points[j, i] += r.losses + 0.5 * r.draws
        games[i, j] += r.decided
        games[j, i] += r.decided
    score = np.full_like(points, np.nan)
    np.divide(points, games, out=score, where=games > 0)
    return score, games


# -- Elo: Bradley-Terry maximum likelihood --------------------------------------------------------
def _tally(
    results: Iterable[PairResult], prior_draws: float
) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Players in order of appearance, ``score[i, j]`` (i's points against j) and
    ``games[i, j]`` (decided games between them), virtual draws included."""
    results = list(results)
    names = list(dict.fromkeys(name for r in results for name in (r.player, r.opponent)))
    index = {name: i for i, name in enumerate(names)}
    score = np.zeros((len(names), len(names)))
    games = np.zeros_like(score)
    met = np.zeros(score.shape, dtype=bool)
    for r in results:
        i, j = index[r.player], index[r.opponent]
        if i == j:
            raise ValueError(f"{r.player!r} cannot play itself in a rating fit")
        score[i, j] += r.wins + 0.5 * r.draws
        score[j, i] += r.losses + 0.5 * r.draws
        games[i, j] += r.decided
        games[j, i] += r.decided
        met[i, j] = met[j, i] = True
    score += 0.5 * prior_draws * met
    games += prior_draws * met
    return names, score, games


def _log_likelihood(r: np.ndarray, score: np.ndarray) -> float:
    # log sigmoid(d) = -log(1 + exp(-d)), stable for either sign of d
    return float(-(score * np.logaddexp(0.0, -(r[:, None] - r[None, :]))).sum())


def _laplacian(r: np.ndarray, games: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Win probabilities ``p[i, j]`` and the negative Hessian of the log-likelihood."""
    p = 0.5 + 0.5 * np.tanh(0.5 * (r[:, None] - r[None, :]))  # the logistic, no overflow
    weights = games * p * p.T
    return p, np.diag(weights.sum(axis=1)) - weights


def _closure(edges: np.ndarray) -> np.ndarray:
    """``reach[i, j]``: ``j`` can be reached from ``i`` along ``edges`` (or is ``i``)."""
    reach = edges | np.eye(len(edges), dtype=bool)
    for _ in range(max(1, int(np.ceil(np.log2(max(len(edges), 2)))))):
        reach = (reach.astype(np.int64) @ reach.astype(np.int64)) > 0
    return reach


def _check_finite_maximum(names: list[str], score: np.ndarray, games: np.ndarray) -> None:
    """The likelihood has a finite maximum iff, within every group of players linked by games,
    each player scored points (directly or through others) against every other (Zermelo)."""
    met = _closure(games > 0)
    scored = _closure(score > 0)
    stuck = np.argwhere(met & ~scored)
    if len(stuck):
        i, j = stuck[0]
        raise ValueError(
            f"the Bradley-Terry fit has no finite maximum: {names[i]!r} and the players it scored "
            f"against never scored a point against {names[j]!r}; pass prior_draws > 0"
        )


def fit_bradley_terry(
    results: Iterable[PairResult], *, prior_draws: float = 1.0, max_iterations: int = 200
) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Maximum-likelihood Bradley-Terry strengths in natural-log odds units, mean 0.

    Args:
        results: pair results; a draw counts as half a win.
        prior_draws: virtual draws added to every pair that met (0: the plain MLE, which exists only
            when no player won or lost all its games).

    Returns:
        ``(players, strengths, standard errors)``; the errors are of each strength against the
        tournament mean, from the inverse Fisher information. Groups of players never linked by
        games cannot be compared: each group averages 0 on its own.

    Raises:
        ValueError: ``prior_draws`` < 0, a player listed against itself, or no finite maximum (only
            possible with ``prior_draws=0``: a player or group that lost every game to another).
    """
    if prior_draws < 0:
        raise ValueError(f"prior_draws must be >= 0 (got {prior_draws})")
    names, score, games = _tally(results, prior_draws)
    _check_finite_maximum(names, score, games)
    r = np.zeros(len(names))
    likelihood = _log_likelihood(r, score)
    for _ in range(max_iterations):
        p, hessian = _laplacian(r, games)
        gradient = (score - games * p).sum(axis=1)
        # the likelihood ignores a common shift: least squares takes the step orthogonal to it
        step = np.linalg.lstsq(hessian, gradient, rcond=None)[0]
        if np.abs(step).max(initial=0.0) < 1e-9:
            break
        scale = 1.0
        while scale > 1e-6:  # Newton's full step can overshoot far from the maximum
            trial = r + scale * step
            trial_likelihood = _log_likelihood(trial, score)
            if trial_likelihood >= likelihood:
                r, likelihood = trial, trial_likelihood
                break
            scale /= 2.0
        else:
            break  # no step improves the likelihood in floating point: this is the maximum
    else:
        raise RuntimeError(f"the Bradley-Terry fit did not converge in {max_iterations} steps")
    r -= r.mean()
    _, hessian = _laplacian(r, games)
    errors = np.sqrt(np.clip(np.diag(np.linalg.pinv(hessian)), 0.0, None))
    return names, r, errors


class EloEstimate(NamedTuple):
    """A fitted Elo rating and the half-width of its 95% interval against the tournament mean."""

    elo: float
    ci95: float


def fit_elo_intervals(
    results: Iterable[PairResult], *, prior_draws: float = 1.0, mean: float = ELO_MEAN
) -> dict[str, EloEstimate]:
    """Elo ratings with 95% intervals, fitted to all ``results`` at once, averaging ``mean``.

    A player rated 200 above another is expected to score ``1 / (1 + 10 ** (-200 / 400))``
    = 0.76 against it.

    Args:
        results: pair results; a draw counts as half a win.
        prior_draws: virtual draws per pair that met (see ``fit_bradley_terry``).
        mean: the mean rating of the tournament.

    Returns:
        Player → ``EloEstimate``, for every player named in ``results``.
    """
    names, strengths, errors = fit_bradley_terry(results, prior_draws=prior_draws)
    return {
        name: EloEstimate(mean + ELO_PER_NAT * float(strength), Z95 * ELO_PER_NAT * float(error))
        for name, strength, error in zip(names, strengths, errors, strict=True)
    }


# -- OpenSkill -----------------------------------------------------------------------------------
class OpenSkillRating(NamedTuple):
    """A Plackett-Luce rating: ``mu``, ``sigma`` and the conservative ``mu - 3 sigma``."""

    mu: float
    sigma: float

    @property
    def ordinal(self) -> float:
        """``mu - 3 sigma``: the rating the player is 99.7% sure to exceed."""
        return self.mu - 3.0 * self.sigma


def openskill_ratings(
    results: Iterable[PairResult], *, seed: int = 0
) -> dict[str, OpenSkillRating]:
    """OpenSkill (Plackett-Luce) ratings after every decided game of ``results``, one by one in
    an order shuffled with ``seed`` (online ratings depend on the order; shuffling keeps one
    pair's games from arriving in a block)."""
    from openskill.models import PlackettLuce

    model = PlackettLuce()
    games: list[tuple[str, str, float]] = []
    for r in results:
        games += [(r.player, r.opponent, 1.0)] * r.wins
        games += [(r.player, r.opponent, 0.5)] * r.draws
        games += [(r.player, r.opponent, 0.0)] * r.losses
    names = dict.fromkeys(name for game in games for name in game[:2])
    ratings = {name: model.rating(name=name) for name in names}
    rng = np.random.default_rng(None if seed < 0 else seed)
    for k in rng.permutation(len(games)):
        a, b, score = games[k]
        ranks = [1.0, 2.0] if score == 1.0 else [2.0, 1.0] if score == 0.0 else [1.0, 1.0]
        [[ratings[a]], [ratings[b]]] = model.rate([[ratings[a]], [ratings[b]]], ranks=ranks)
    return {name: OpenSkillRating(float(r.mu), float(r.sigma)) for name, r in ratings.items()}


def initial_openskill_rating() -> OpenSkillRating:
    """The rating of a player without any decided game."""
    from openskill.models import PlackettLuce

    rating = PlackettLuce().rating()
    return OpenSkillRating(float(rating.mu), float(rating.sigma))
