"""``GhostController``: which team learns now, and the ratings of every match.

One controller per run. Team ids subscribe as their behaviors appear (the first is the learning
team); ``change_training_team`` hands learning to the next team, round-robin over every team ever
subscribed, for any number of teams. A team change asks the run loop to reset the environments so
that no trajectory straddles two learners.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ghost.ratings import MultiTeamRating, elo_change

#: key of a learner's own multi-team rating (opponents are keyed by ``Opponent.key``)
LEARNER = "learner"

if TYPE_CHECKING:
    from ghost.ghost_trainer import GhostTrainer


class GhostController:
    """Rotates the learning team and turns match results into rating changes."""

    def __init__(self) -> None:
        self._teams: list[int] = []
        self._trainers: dict[int, GhostTrainer] = {}
        self.learning_team: int | None = None
        self.team_changes = 0
        self._reset_pending = False
        self._multi_team: MultiTeamRating | None = None
        self._openskill: dict[tuple[str, str], Any] = {}

    @property
    def teams(self) -> list[int]:
        return list(self._teams)

    def subscribe_team_id(self, team_id: int, trainer: GhostTrainer) -> None:
        """Register a team and the ghost trainer that owns it."""
        if team_id not in self._trainers:
            self._teams.append(team_id)
            self._trainers[team_id] = trainer
            if self.learning_team is None:
                self.learning_team = team_id

    def trainer_of(self, team_id: int) -> GhostTrainer:
        return self._trainers[team_id]

    def change_training_team(self) -> None:
        """Ask to hand learning to the next team in subscription order.

        The change takes effect when the run loop resets the environments (``should_reset``):
        until then every step batch still in flight was collected under the current learning
        team and is routed as such.
        """
        if not self._teams or self._reset_pending:
            return
        self._reset_pending = True

    def should_reset(self) -> bool:
        """True once per team change: the change happens now and the environments must reset."""
        if not self._reset_pending:
            return False
        self._reset_pending = False
        position = (
            self._teams.index(self.learning_team) if self.learning_team in self._teams else -1
        )
        self.learning_team = self._teams[(position + 1) % len(self._teams)]
        self.team_changes += 1
        # every ghost trainer swaps now, so no acting policy is one step behind the change
        for trainer in {id(t): t for t in self._trainers.values()}.values():
            trainer.on_team_change()
        return True

    def report_match(self, *, learner: GhostTrainer, arena: int, score: float) -> None:
        """Update ratings after a match the learning team finished in ``arena`` with ``score``."""
        opponents = [
            (self._trainers[team].behavior_name, self._trainers[team].opponent_in(team, arena))
            for team in self._teams
            if team != self.learning_team
        ]
        opponents = [(name, o) for name, o in opponents if o is not None]
        if not opponents:
            return
        for _, opponent in opponents:
            learner.record_result(opponent, score)
        if len(opponents) == 1:
            opponent = opponents[0][1]
            change = elo_change(learner.rating, opponent.rating, score, learner.self_play.elo_k)
            learner.rating += change
            opponent.adjust_rating(-change)
            return
        self._report_multi_team(learner, opponents, score)

    def _report_multi_team(
        self, learner: GhostTrainer, opponents: list[tuple[str, Any]], score: float
    ) -> None:
        if self._multi_team is None:
            self._multi_team = MultiTeamRating(learner.self_play.initial_elo)
        learner_key = (learner.behavior_name, LEARNER)
        keys = [(name, o.key) for name, o in opponents]
        fresh = self._multi_team.new
        current = self._openskill.setdefault(learner_key, fresh())
        others = [self._openskill.setdefault(key, fresh()) for key in keys]
        new_learner, new_others = self._multi_team.update(current, others, score)
        self._openskill[learner_key] = new_learner
        learner.rating = self._multi_team.as_elo(new_learner)
        for key, (_, opponent), rating in zip(keys, opponents, new_others, strict=True):
            self._openskill[key] = rating
            opponent.adjust_rating(self._multi_team.as_elo(rating) - opponent.rating)

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
        self._reset_pending = False
        saved_ratings = state.get("multi_team_ratings", [])
        if saved_ratings:
            initial = next(iter(self._trainers.values())).self_play.initial_elo
            self._multi_team = self._multi_team or MultiTeamRating(initial)
            self._openskill = {
                (name, str(key)): self._multi_team.model.rating(mu=mu, sigma=sigma)
                for name, key, mu, sigma in saved_ratings
            }
