"""Pictures of a tournament: its payoff heatmap and its ratings with their intervals.

Both are drawn from a tournament's plain form (``TournamentTable.to_dict()``, the ``tournament``
object of ``ghost-eval tournament --json``, the ``run_logs/tournament.json`` a tournament leaves in
its run), so a saved result draws the same pictures as a fresh one:

- **payoffs** (``draw_payoffs``): the score of each row player against each column player (win 1,
  draw 0.5, loss 0) on a diverging colour scale centred at 0.5, rows and columns best Elo first;
  each cell shows its score (up to ``ANNOTATE_MAX_PLAYERS`` players) and its number of decided
  games (up to ``COUNT_MAX_PLAYERS``). In an asymmetric game the rows are one side's players and
  the columns the other side's, since one side's players never meet.
- **ratings** (``draw_ratings``): each player's Elo with its 95% interval and its OpenSkill ``mu``
  with ``± 2 sigma``, the run's own players in order of training step, then the fixed opponents
  and scripted levels best Elo first.

The intervals are the ones the tournament computed (``ghost.evaluation.tournament_ratings``): the
Elo interval comes from the inverse Fisher information of the Bradley-Terry fit to all games, which
is what the maximum-likelihood rating's sampling error is for a fit of this size; a bootstrap over
games would need the fit repeated hundreds of times to say about the same. OpenSkill's ``sigma`` is
its own posterior spread after the games; ``± 2 sigma`` covers about 95% of it, the same coverage.

Drawing needs matplotlib (the ``plots`` extra); it uses the Agg canvas and leaves pyplot alone.
Nothing here imports torch."""

from __future__ import annotations

import itertools
import logging
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from ghost.evaluation.tournament_ratings import ELO_MEAN, PairResult, pair_matrices
from ghost.exceptions import GhostError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

logger = logging.getLogger(__name__)

#: how to get the pictures when matplotlib is missing
PLOTS_HINT = 'pip install matplotlib (or, in the checkout, pip install ".[plots]")'
PAYOFFS_FILE = "tournament_payoffs.png"
RATINGS_FILE = "tournament_ratings.png"
#: cells show their score up to this many players (rows or columns), their games up to
#: ``COUNT_MAX_PLAYERS``; past that the numbers would not fit the cells
ANNOTATE_MAX_PLAYERS = 15
COUNT_MAX_PLAYERS = 8
#: OpenSkill's interval: mu ± this many sigma (about 95%, like Elo's)
OPENSKILL_SIGMAS = 2.0

_KIND_COLOURS = {"snapshot": "C0", "final": "C3", "fixed": "C2", "scripted": "C7"}


def missing_matplotlib() -> str | None:
    """One line saying how to get the pictures when matplotlib cannot be imported, else None."""
    try:
        import matplotlib.figure  # noqa: F401
    except ImportError:
        return f"the tournament pictures need matplotlib: {PLOTS_HINT}"
    return None


# -- what the pictures show ----------------------------------------------------------------------
@attrs.frozen(kw_only=True)
class TournamentPlayerView:
    """One player as the pictures show it."""

    name: str
    kind: str
    behavior: str
    step: int | None
    elo: float
    #: half-width of the 95% interval of ``elo``; NaN for a player without decided games
    elo_ci95: float
    mu: float
    sigma: float


@attrs.frozen(kw_only=True)
class TournamentView:
    """A tournament read from its plain form: players best Elo first and every pair result."""

    title: str
    symmetric: bool
    players: tuple[TournamentPlayerView, ...]
    results: tuple[PairResult, ...]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TournamentView:
        """Read ``TournamentTable.to_dict()`` (or the ``tournament`` object of ``--json`` output).

        Raises:
            GhostError: a key the pictures need is missing (not a tournament result).
        """
        try:
            players = tuple(
                TournamentPlayerView(
                    name=str(p["player"]),
                    kind=str(p["kind"]),
                    behavior=str(p["behavior"]),
                    step=None if p.get("step") is None else int(p["step"]),
                    elo=float(p["elo"]),
                    elo_ci95=math.nan if p.get("elo_ci95") is None else float(p["elo_ci95"]),
                    mu=float(p["openskill_mu"]),
                    sigma=float(p["openskill_sigma"]),
                )
                for p in data["players"]
            )
            results = tuple(PairResult(**r) for r in data["results"])
            title = f"{data['game']} tournament of {data['run']}"
            symmetric = bool(data["symmetric"])
        except (KeyError, TypeError, ValueError) as error:
            raise GhostError(
                f"not a tournament result ({type(error).__name__}: {error}); pass the tournament "
                "object "
                "of ghost-eval tournament --json or TournamentTable.to_dict()"
            ) from error
        return cls(title=title, symmetric=symmetric, players=players, results=results)

    @classmethod
    def from_table(cls, table: Any) -> TournamentView:
        """Read a ``ghost.evaluation.tournament.TournamentTable``."""
        return cls.from_dict(table.to_dict())

    def payoffs(self) -> tuple[list[str], list[str], np.ndarray, np.ndarray]:
        """What the heatmap shows: ``(row names, column names, score, games)``.

        Symmetric game: every player on both axes, best Elo first. Asymmetric: the rows are the
        players of the side that starts each pair result, the columns the other side's.
        """
        names = [p.name for p in self.players]
        score, games = pair_matrices(names, self.results)
        if self.symmetric or not self.results:
            return names, names, score, games
        behavior = {p.name: p.behavior for p in self.players}
        first = behavior[self.results[0].player]
        rows = [i for i, name in enumerate(names) if behavior[name] == first]
        cols = [i for i, name in enumerate(names) if behavior[name] != first]
        block = np.ix_(rows, cols)
        return [names[i] for i in rows], [names[j] for j in cols], score[block], games[block]

    def rating_order(self) -> list[list[TournamentPlayerView]]:
        """The players in the order the ratings picture shows them, in groups: per behavior, the
        players with a training step (snapshots, final) oldest first, then the others (fixed
        opponents, scripted levels) best Elo first; the side that starts each pair result (the
        heatmap's rows) first."""
        side_of = {p.name: p.behavior for p in self.players}
        first = [side_of[r.player] for r in self.results[:1] if r.player in side_of]
        behaviors = list(dict.fromkeys([*first, *(p.behavior for p in self.players)]))
        groups = []
        for behavior in behaviors:
            mine = [p for p in self.players if p.behavior == behavior]
            stepped = sorted(
                (p for p in mine if p.step is not None), key=lambda p: (p.step, p.kind == "final")
            )
            others = sorted((p for p in mine if p.step is None), key=lambda p: -p.elo)
            groups += [group for group in (stepped, others) if group]
        return groups


# -- drawing -------------------------------------------------------------------------------------
def _new_figure(width: float, height: float) -> Figure:
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as error:
        raise GhostError(
            f"drawing the tournament pictures needs matplotlib: {PLOTS_HINT}"
        ) from error
    figure = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)  # its own Agg canvas: pyplot's global backend stays as it is
    return figure


def _label_size(count: int) -> float:
    return 9.0 if count <= 15 else 7.5 if count <= 30 else 6.0


def draw_payoffs(view: TournamentView) -> Figure:
    """The payoff heatmap of ``view`` (see the module docstring)."""
    from matplotlib.colors import TwoSlopeNorm

    row_names, col_names, score, games = view.payoffs()
    rows, cols = len(row_names), len(col_names)
    most = max(rows, cols)
    figure = _new_figure(max(5.5, 2.8 + 0.32 * cols), max(4.5, 2.2 + 0.3 * rows))
    axis = figure.subplots()
    cmap = _colormap("RdBu").with_extremes(bad="#e6e6e6")  # bad: pairs that never met
    image = axis.imshow(
        np.ma.masked_invalid(score),
        cmap=cmap,
        norm=TwoSlopeNorm(vmin=0.0, vcenter=0.5, vmax=1.0),
        aspect="auto",
        interpolation="nearest",
    )
    elo = {p.name: p.elo for p in view.players}
    size = _label_size(most)
    axis.set_xticks(range(cols), col_names, rotation=60, ha="right", fontsize=size)
    axis.set_yticks(range(rows), [f"{n} ({elo[n]:.0f})" for n in row_names], fontsize=size)
    axis.tick_params(length=0)
    if most <= ANNOTATE_MAX_PLAYERS:
        _annotate(axis, score, games, counts=most <= COUNT_MAX_PLAYERS)
    colorbar = figure.colorbar(image, ax=axis, shrink=0.8)
    colorbar.set_label("score of the row player (win 1, draw 0.5, loss 0)")
    axis.set_xlabel("column player (best Elo first)")
    axis.set_ylabel("row player (Elo), best first")
    axis.set_title(f"{view.title}: payoffs", fontsize="medium")
    return figure


def _colormap(name: str) -> Any:
    from matplotlib import colormaps

    return colormaps[name]


def _annotate(axis: Any, score: np.ndarray, games: np.ndarray, *, counts: bool) -> None:
    for (i, j), value in np.ndenumerate(score):
        if math.isnan(value):
            continue
        text = f"{value:.2f}\n{int(games[i, j])}" if counts else f"{value:.2f}"
        colour = "white" if abs(value - 0.5) > 0.3 else "black"  # readable on dark cells
        axis.text(j, i, text, ha="center", va="center", color=colour, fontsize=7.5)


def draw_ratings(view: TournamentView) -> Figure:
    """Each player's Elo (95% interval) and OpenSkill mu (± 2 sigma), in ``rating_order``."""
    groups = view.rating_order()
    order = [p for group in groups for p in group]
    figure = _new_figure(max(7.0, 2.5 + 0.32 * len(order)), 7.0)
    elo_axis, skill_axis = figure.subplots(2, 1, sharex=True)
    xs = list(range(len(order)))
    for kind in dict.fromkeys(p.kind for p in order):
        at = [x for x, p in zip(xs, order, strict=True) if p.kind == kind]
        chosen = [order[x] for x in at]
        colour = _KIND_COLOURS.get(kind, "C4")
        _points(elo_axis, at, [p.elo for p in chosen], [p.elo_ci95 for p in chosen], colour, kind)
        _points(
            skill_axis,
            at,
            [p.mu for p in chosen],
            [OPENSKILL_SIGMAS * p.sigma for p in chosen],
            colour,
            kind,
        )
    elo_axis.axhline(ELO_MEAN, color="grey", linewidth=0.8, linestyle="--")
    elo_axis.set_ylabel("Elo (Bradley-Terry), 95% interval")
    skill_axis.set_ylabel(f"OpenSkill mu ± {OPENSKILL_SIGMAS:g} sigma")
    elo_axis.legend(loc="best", fontsize="small")
    start = 0
    for group, following in itertools.pairwise(groups):
        start += len(group)
        # solid between the sides of an asymmetric game, dotted between step and Elo order
        style = "-" if group[0].behavior != following[0].behavior else ":"
        for axis in (elo_axis, skill_axis):
            axis.axvline(start - 0.5, color="grey", linewidth=0.8, linestyle=style)
    labels = [p.name if p.step is None else f"{p.name} @{p.step:,}" for p in order]
    skill_axis.set_xticks(xs, labels, rotation=60, ha="right", fontsize=_label_size(len(order)))
    skill_axis.set_xlim(-0.6, len(order) - 0.4)
    for axis in (elo_axis, skill_axis):
        axis.grid(True, axis="y", alpha=0.3)
    figure.suptitle(
        f"{view.title}: ratings\nthe run's players by training step, then the others by Elo",
        fontsize="medium",
    )
    return figure


def _points(
    axis: Any,
    xs: Sequence[int],
    values: Sequence[float],
    half_widths: Sequence[float],
    colour: str,
    label: str,
) -> None:
    """``values`` with their intervals; a player without one (no decided games) as a hollow
    marker."""
    widths = np.asarray(half_widths, dtype=float)
    known = np.isfinite(widths)
    if known.any():
        axis.errorbar(
            np.asarray(xs)[known], np.asarray(values)[known], yerr=widths[known], fmt="o",
            color=colour, capsize=3, markersize=5, label=label,
        )  # fmt: skip
    if not known.all():
        axis.plot(
            np.asarray(xs)[~known], np.asarray(values)[~known], "o", markerfacecolor="none",
            color=colour, label=None if known.any() else label,
        )  # fmt: skip


def write_tournament_pictures(
    tournament: TournamentView | Mapping[str, Any] | Any,
    *,
    payoffs_path: str | Path,
    ratings_path: str | Path,
) -> list[Path]:
    """Draw the payoff heatmap and the ratings picture of ``tournament`` into two PNGs.

    Args:
        tournament: a ``TournamentView``, a tournament's plain form (``TournamentTable.to_dict()``)
            or a ``TournamentTable``.

    Returns:
        The two paths written, payoffs first.

    Raises:
        GhostError: matplotlib is missing (the ``plots`` extra), or ``tournament`` is not a
            tournament result.
    """
    if not isinstance(tournament, TournamentView):
        tournament = (
            TournamentView.from_dict(tournament)
            if isinstance(tournament, Mapping)
            else TournamentView.from_table(tournament)
        )
    written = []
    for draw, path in ((draw_payoffs, payoffs_path), (draw_ratings, ratings_path)):
        figure = draw(tournament)
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        figure.savefig(path, format="png")
        written.append(path)
    logger.info("wrote the tournament pictures %s", ", ".join(map(str, written)))
    return written


def write_tournament_pictures_into(tournament: Any, folder: str | Path) -> list[Path]:
    """``write_tournament_pictures`` into ``folder``: ``tournament_payoffs.png`` and
    ``tournament_ratings.png``."""
    folder = Path(folder)
    return write_tournament_pictures(
        tournament, payoffs_path=folder / PAYOFFS_FILE, ratings_path=folder / RATINGS_FILE
    )
