"""Match ratings: per-match Elo for two sides, OpenSkill for three or more teams.

Elo: the expected score of A against B is ``1 / (1 + 10 ** ((R_B - R_A) / 400))``; after a match
with score ``S`` (1 win, 0.5 draw, 0 loss) A gains ``K (S - E)`` and B loses the same.
"""

from __future__ import annotations

import math
from typing import Any

import attrs

WIN, DRAW, LOSS = 1.0, 0.5, 0.0


@attrs.frozen(kw_only=True)
class MatchRating:
    """The outcome of one rated match: the learner's score and every new rating.

    ``opponents`` are the pool members the ghosted teams fielded (``ghost.core.opponents.Opponent``),
    ``opponent_ratings`` their new ratings in the same order.
    """

    score: float
    learner_rating: float
    opponents: list[Any]
    opponent_ratings: list[float]


def result_from_reward(final_reward: float) -> float:
    """The learning side's score from the sign of its final reward (plus group reward)."""
    if final_reward > 0:
        return WIN
    if final_reward < 0:
        return LOSS
    return DRAW


def elo_expected(rating: float, opponent_rating: float) -> float:
    """Expected score of a player rated ``rating`` against one rated ``opponent_rating``."""
    return 1.0 / (1.0 + math.pow(10.0, (opponent_rating - rating) / 400.0))


def elo_change(rating: float, opponent_rating: float, score: float, k: float) -> float:
    """How much ``rating`` moves after scoring ``score`` (the opponent moves by the negative)."""
    return k * (score - elo_expected(rating, opponent_rating))


class MultiTeamRating:
    """OpenSkill (Plackett-Luce) ratings for matches of three or more teams.

    The learner's score ranks the field: a win puts it first and the ghosted teams tied behind,
    a loss puts it last, a draw ties everyone. Ratings are reported on the Elo scale through the
    conservative estimate ``mu - 3 sigma`` mapped so that a fresh player sits at ``initial``.
    """

    def __init__(self, initial: float) -> None:
        from openskill.models import PlackettLuce

        self.model = PlackettLuce()
        self.initial = initial

    def new(self):  # type: ignore[no-untyped-def]
        return self.model.rating()

    def update(self, learner, opponents: list, score: float):  # type: ignore[no-untyped-def]
        """New ratings of the learner and every opponent after one match."""
        if score == WIN:
            ranks = [1] + [2] * len(opponents)
        elif score == LOSS:
            ranks = [2] + [1] * len(opponents)
        else:
            ranks = [1] * (len(opponents) + 1)
        teams = self.model.rate([[learner]] + [[o] for o in opponents], ranks=ranks)
        return teams[0][0], [team[0] for team in teams[1:]]

    def as_elo(self, rating) -> float:  # type: ignore[no-untyped-def]
        fresh = self.new()
        # a fresh player's mu (25) spans 400 Elo points
        return self.initial + (rating.ordinal() - fresh.ordinal()) * 400.0 / fresh.mu
