"""``GhostController``: which team learns now, and how each match moves the ratings.

One controller per run. Teams subscribe with the ``SelfPlayState`` of the behavior that owns them
(the first team subscribed learns first). Decisions flow one way: the controller answers, the
session applies.

- ``request_team_change()`` asks to hand learning to the next team (round-robin over every team
  ever subscribed, any number of teams); ``take_team_change()`` makes the change and returns a
  ``TeamChange`` once, so the session resets the environments and no trajectory straddles two
  learners.
- ``rate_match(...)`` turns a finished match into a ``MatchRating`` (Elo for two teams, OpenSkill
  for more); the learner's ``SelfPlayState.apply_match`` books it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

import attrs

from ghost.core.opponents import Opponent
from ghost.core.ratings import MatchRating, MultiTeamRating, elo_change
from ghost.core.self_play import SelfPlayState

#: key of a learner's own multi-team rating (opponents are keyed by ``Opponent.key``)
LEARNER = "learner"


@attrs.frozen(kw_only=True)
class TeamChange:
    """Learning passed from ``previous_team`` to ``learning_team`` (the ``count``-th change)."""

    previous_team: int | None
    learning_team: int
    count: int


class TeamChangeListener(Protocol):
    """What hears a team change: a behavior's cycle, or a host's ghost trainer."""

    def on_team_change(self, change: TeamChange) -> None: ...


class GhostController:
    """Rotates the learning team and rates matches (see the module docstring)."""

    def __init__(self) -> None:
        self._teams: list[int] = []
        self._owners: dict[int, SelfPlayState] = {}
        self.learning_team: int | None = None
        self.team_changes = 0
        self._change_requested = False
        self._multi_team: MultiTeamRating | None = None
        self._openskill: dict[tuple[str, str], Any] = {}

    @property
    def teams(self) -> list[int]:
        return list(self._teams)

    def subscribe_team(self, team_id: int, owner: SelfPlayState) -> None:
        """Register a team and the self-play state of the behavior that owns it."""
        if team_id not in self._owners:
            if team_id not in self._teams:  # a restored rotation already lists it
                self._teams.append(team_id)
            self._owners[team_id] = owner
            if self.learning_team is None:
                self.learning_team = team_id

    def owner_of(self, team_id: int) -> SelfPlayState:
        return self._owners[team_id]

    def request_team_change(self) -> None:
        """Ask to hand learning to the next team in subscription order.

        The change happens at ``take_team_change``: until then every step batch in flight was
        collected under the current learning team and is routed as such.
        """
        if len(self._teams) > 1:  # one team has nobody to hand over to: no reset, no turn
            self._change_requested = True

    def take_team_change(self) -> TeamChange | None:
        """Make a requested change and return it (once); None when none was requested."""
        if not self._change_requested:
            return None
        self._change_requested = False
        previous = self.learning_team
        position = self._teams.index(previous) if previous in self._teams else -1
        self.learning_team = self._teams[(position + 1) % len(self._teams)]
        self.team_changes += 1
        return TeamChange(
            previous_team=previous, learning_team=self.learning_team, count=self.team_changes
        )

    def hand_over(self, listeners: Iterable[TeamChangeListener]) -> TeamChange | None:
        """Take a requested change and tell every listener (each cycle or ghost trainer of the
        run); the host then says so on its own console and resets its environments (no
        trajectory may straddle two learners). None when no change was requested."""
        change = self.take_team_change()
        if change is not None:
            for listener in listeners:
                listener.on_team_change(change)
        return change

    def fielded_opponents(self, arena: int) -> list[tuple[str, Opponent]]:
        """``(owning behavior, opponent)`` of every ghosted team in arena key ``arena`` (teams
        that fielded nobody there yet left out)."""
        fielded = []
        for team in self._teams:
            if team == self.learning_team:
                continue
            owner = self._owners[team]
            opponent = owner.opponent_in(team, arena)
            if opponent is not None:
                fielded.append((owner.behavior_name, opponent))
        return fielded

    def rate_match(self, *, learner: SelfPlayState, arena: int, score: float) -> MatchRating | None:
        """How ratings move after a match the learning team finished in ``arena`` with ``score``
        (None when no ghosted team fielded an opponent there yet)."""
        opponents = self.fielded_opponents(arena)
        if not opponents:
            return None
        if len(opponents) == 1:
            opponent = opponents[0][1]
            change = elo_change(learner.rating, opponent.rating, score, learner.settings.elo_k)
            return MatchRating(
                score=score, learner_rating=learner.rating + change,
                opponents=[opponent], opponent_ratings=[opponent.rating - change],
            )  # fmt: skip
        return self._rate_multi_team(learner, opponents, score)

    def book_match(self, *, learner: SelfPlayState, arena: int, score: float) -> MatchRating | None:
        """``rate_match`` and book the result in ``learner`` (None when nobody was fielded)."""
        rating = self.rate_match(learner=learner, arena=arena, score=score)
        if rating is not None:
            learner.apply_match(rating)
        return rating

    def _rate_multi_team(
        self, learner: SelfPlayState, opponents: list[tuple[str, Opponent]], score: float
    ) -> MatchRating:
        if self._multi_team is None:
            self._multi_team = MultiTeamRating(learner.settings.initial_elo)
        learner_key = (learner.behavior_name, LEARNER)
        keys = [(name, o.key) for name, o in opponents]
        fresh = self._multi_team.new
        current = self._openskill.setdefault(learner_key, fresh())
        others = [self._openskill.setdefault(key, fresh()) for key in keys]
        new_learner, new_others = self._multi_team.update(current, others, score)
        self._openskill[learner_key] = new_learner
        for key, rating in zip(keys, new_others, strict=True):
            self._openskill[key] = rating
        return MatchRating(
            score=score,
            learner_rating=self._multi_team.as_elo(new_learner),
            opponents=[opponent for _, opponent in opponents],
            opponent_ratings=[self._multi_team.as_elo(rating) for rating in new_others],
        )

    def state_dict(self) -> dict[str, Any]:
        """JSON-safe: it goes into the run's checkpoint index."""
        return {
            "teams": self._teams,
            "learning_team": self.learning_team,
            "team_changes": self.team_changes,
            "multi_team_ratings": [
                [name, key, rating.mu, rating.sigma]
                for (name, key), rating in self._openskill.items()
            ],
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        saved = [int(t) for t in state["teams"]]
        # keep the saved rotation order, then any team that appeared only now
        self._teams = saved + [t for t in self._teams if t not in saved]
        self.learning_team = state["learning_team"]
        self.team_changes = int(state["team_changes"])
        self._change_requested = False
        saved_ratings = state.get("multi_team_ratings", [])
        if saved_ratings:
            initial = next(iter(self._owners.values())).settings.initial_elo
            self._multi_team = self._multi_team or MultiTeamRating(initial)
            self._openskill = {
                (name, str(key)): self._multi_team.model.rating(mu=mu, sigma=sigma)
                for name, key, mu, sigma in saved_ratings
            }
