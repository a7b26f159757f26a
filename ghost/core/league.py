"""League bookkeeping of one behavior (AlphaStar's exploiters), independent of any trainer.

Vocabulary:

- **main learner**: the behavior's learner, the one the run trains and exports.
- **exploiter**: a second learner that takes some of the behavior's turns
  (``self_play.league``). A *main exploiter* plays only the main learner's current weights, a
  *league exploiter* the whole pool, picked by PFSP (hard weighting) on its own win rates.
- **role schedule**: which learner plays each turn of this behavior's learning team: after
  every ``main_turns`` turns of the main learner one exploiter turn, round-robin over the main
  exploiters, then the league exploiters.
- **league member**: a frozen copy of an exploiter that reached ``promote_win_rate`` over one of
  its turns; it joins the pool for good (``Pool.league``; the oldest of ``max_members`` leaves).

Exploiter matches are tallied here and never touch the main learner's rating or win rates.
Weights are opaque; the running layer (``ghost.running.league``) trains the exploiters.
"""

from __future__ import annotations

import enum
import math
from typing import Any

import attrs
import numpy as np

from ghost.core.opponents import Opponent, Pool
from ghost.core.sampling import pfsp_weights
from ghost.core.settings import LeagueSettings, PFSPWeighting
from ghost.core.snapshots import Snapshot
from ghost.core.win_rates import WinRates

#: an unbeaten (or never winning) exploiter is rated as if it scored this (or 1 - this)
_RATING_CERTAINTY = 0.95


class ExploiterKind(enum.Enum):
    MAIN = "main"
    LEAGUE = "league"


def scheduled_exploiter(position: int, *, main_turns: int, exploiters: int) -> int | None:
    """The exploiter playing this behavior's ``position``-th learning turn (None: the main
    learner): ``main_turns`` main turns, then one exploiter turn, round-robin."""
    cycle = main_turns + 1
    if exploiters == 0 or position % cycle < main_turns:
        return None
    return (position // cycle) % exploiters


def exploiter_seed(run_seed: int, exploiter: Exploiter) -> int:
    """The seed of ``exploiter``'s current generation: its fresh weights differ from the main
    learner's, from the other exploiters' and from its own earlier generations."""
    return run_seed + 7919 * (exploiter.index + 1) + 104729 * exploiter.generation


def performance_rating(opponent_rating: float, score: float) -> float:
    """The Elo rating that expects ``score`` against an opponent rated ``opponent_rating``."""
    score = min(max(score, 1.0 - _RATING_CERTAINTY), _RATING_CERTAINTY)
    return opponent_rating + 400.0 * math.log10(score / (1.0 - score))


@attrs.define
class LeagueMember:
    """A promoted exploiter's frozen weights (``snapshot``), in the pool as ``name``."""

    name: str
    snapshot: Snapshot

    def opponent(self) -> Opponent:
        return Opponent(snapshot=self.snapshot, member=self.name)


@attrs.define(eq=False)
class Exploiter:
    """One exploiter's bookkeeping: its generation (restarts), its turns and its results."""

    index: int
    kind: ExploiterKind
    #: its position among exploiters of its kind (names it)
    rank: int
    win_rates: WinRates
    generation: int = 0
    #: its turns since it (re)started
    turns: int = 0
    promotions: int = 0
    # the running turn: finished matches, their summed score and summed opponent rating
    matches: int = 0
    score_total: float = 0.0
    opponent_rating_total: float = 0.0

    @property
    def name(self) -> str:
        return f"{self.kind.value}-exploiter-{self.rank}"

    @property
    def win_rate(self) -> float | None:
        """Mean score over the running turn's finished matches (None before the first)."""
        return self.score_total / self.matches if self.matches else None

    def record(self, score: float, opponents: list[tuple[str, Opponent]]) -> None:
        """One finished match against ``opponents`` (``(owning behavior, opponent)`` pairs)."""
        self.matches += 1
        self.score_total += score
        if opponents:
            ratings = [opponent.rating for _, opponent in opponents]
            self.opponent_rating_total += sum(ratings) / len(ratings)
        for behavior_name, opponent in opponents:
            self.win_rates.record(member_key(behavior_name, opponent), self.generation, score)

    def start_turn(self) -> None:
        self.matches, self.score_total, self.opponent_rating_total = 0, 0.0, 0.0

    def state_dict(self) -> dict[str, Any]:
        return {
            "generation": self.generation, "turns": self.turns, "promotions": self.promotions,
            "matches": self.matches, "score_total": self.score_total,
            "opponent_rating_total": self.opponent_rating_total,
            "win_rates": self.win_rates.state_dict(),
        }  # fmt: skip

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.generation = int(state["generation"])
        self.turns = int(state["turns"])
        self.promotions = int(state["promotions"])
        self.matches = int(state["matches"])
        self.score_total = float(state["score_total"])
        self.opponent_rating_total = float(state["opponent_rating_total"])
        self.win_rates.load_state_dict(state["win_rates"])


def member_key(behavior_name: str, opponent: Opponent) -> str:
    """An exploiter's win-rate key of ``opponent`` from the pool of ``behavior_name`` (the pools
    of an asymmetric game's behaviors name their members alike)."""
    return f"{behavior_name}/{opponent.key}"


@attrs.frozen(kw_only=True)
class TurnOutcome:
    """How an exploiter's turn ended: its results, the member it became, whether it restarts."""

    exploiter: str
    generation: int
    matches: int
    win_rate: float | None
    member: LeagueMember | None
    restarts: bool


class LeagueState:
    """The exploiters, the role schedule and the league members of one behavior.

    Args:
        settings: ``self_play.league``.
        win_rate_window: matches per opponent in an exploiter's rolling win rates.
        initial_elo: rating of a member promoted without a rated opponent.
    """

    def __init__(self, settings: LeagueSettings, *, win_rate_window: int, initial_elo: float):
        self.settings = settings
        self.initial_elo = initial_elo
        kinds = [ExploiterKind.MAIN] * settings.main_exploiters + [
            ExploiterKind.LEAGUE
        ] * settings.league_exploiters
        self.exploiters = [
            Exploiter(index=i, kind=kind, rank=kinds[:i].count(kind),
                      win_rates=WinRates(win_rate_window))
            for i, kind in enumerate(kinds)
        ]  # fmt: skip
        self._win_rate_window = win_rate_window
        self.members: list[LeagueMember] = []
        #: this behavior's learning turns so far
        self.position = 0
        self._turn: int | None = None
        self._role: Exploiter | None = None
        self._next_member_id = 0

    @property
    def enabled(self) -> bool:
        return bool(self.exploiters)

    def role_for(self, turn: int) -> Exploiter | None:
        """Who plays the learning turn numbered ``turn`` (the controller's team-change count)
        of this behavior: an exploiter, or None for the main learner.

        The first call for a turn advances the schedule; later calls (from the ghost of any
        behavior) give the same answer.
        """
        if not self.enabled:
            return None
        if turn != self._turn:
            self._turn = turn
            index = scheduled_exploiter(
                self.position,
                main_turns=self.settings.main_turns,
                exploiters=len(self.exploiters),
            )
            self.position += 1
            self._role = None if index is None else self.exploiters[index]
            if self._role is not None:
                self._role.start_turn()
        return self._role

    def restart_schedule(self) -> None:
        """Forget which turns were scheduled: the next turn asked about is the first (a main
        learner's turn), as in a new run."""
        self.position, self._turn, self._role = 0, None, None

    def finish_turn(self, exploiter: Exploiter, *, weights: Any, step: int) -> TurnOutcome:
        """End ``exploiter``'s turn: promote it (a member with a copy of ``weights``, taken at its
        trainer step ``step``) if its win rate reached ``promote_win_rate``; a main exploiter
        restarts when promoted or after ``reset_turns`` turns without promotion."""
        win_rate = exploiter.win_rate
        exploiter.turns += 1
        member = None
        if win_rate is not None and win_rate >= self.settings.promote_win_rate:
            exploiter.promotions += 1
            member = self._add_member(exploiter, weights, step)
        restarts = exploiter.kind is ExploiterKind.MAIN and (
            member is not None or exploiter.turns >= self.settings.reset_turns
        )
        outcome = TurnOutcome(
            exploiter=exploiter.name, generation=exploiter.generation, matches=exploiter.matches,
            win_rate=win_rate, member=member, restarts=restarts,
        )  # fmt: skip
        if restarts:
            exploiter.generation += 1
            exploiter.turns = 0
            exploiter.win_rates = WinRates(self._win_rate_window)
        exploiter.start_turn()
        return outcome

    def _add_member(self, exploiter: Exploiter, weights: Any, step: int) -> LeagueMember:
        if exploiter.matches and exploiter.opponent_rating_total:
            faced = exploiter.opponent_rating_total / exploiter.matches
            rating = performance_rating(faced, exploiter.score_total / exploiter.matches)
        else:
            rating = self.initial_elo
        snapshot = Snapshot(
            snapshot_id=self._next_member_id, step=step, rating=rating, weights=weights
        )
        self._next_member_id += 1
        member = LeagueMember(
            name=f"exploiter-{exploiter.index}-{exploiter.promotions}", snapshot=snapshot
        )
        self.members.append(member)
        del self.members[: -self.settings.max_members]
        return member

    def member(self, name: str) -> LeagueMember | None:
        return next((m for m in self.members if m.name == name), None)

    def opponents(self) -> list[Opponent]:
        """Every member as a pool entry."""
        return [member.opponent() for member in self.members]

    # -- persistence -------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Everything, members' weights included."""
        return {
            "position": self.position,
            "turn": self._turn,
            "role": None if self._role is None else self._role.index,
            "next_member_id": self._next_member_id,
            "exploiters": [exploiter.state_dict() for exploiter in self.exploiters],
            "members": [
                {"name": m.name, "snapshot": m.snapshot.metadata(), "weights": m.snapshot.weights}
                for m in self.members
            ],
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from ``state_dict()``; exploiters added or removed since are started fresh
        or dropped."""
        self.position = int(state["position"])
        self._turn = state["turn"]
        role = state["role"]
        self._role = (
            self.exploiters[role] if role is not None and role < len(self.exploiters) else None
        )
        self._next_member_id = int(state["next_member_id"])
        for exploiter, saved in zip(self.exploiters, state["exploiters"], strict=False):
            exploiter.load_state_dict(saved)
        self.members = [
            LeagueMember(name=entry["name"], snapshot=Snapshot(
                snapshot_id=entry["snapshot"]["snapshot_id"], step=entry["snapshot"]["step"],
                rating=entry["snapshot"]["rating"], weights=entry["weights"]))
            for entry in state["members"]
        ][-self.settings.max_members :]  # fmt: skip


def draw_for_exploiter(
    exploiter: Exploiter,
    pool: Pool,
    *,
    behavior_name: str,
    count: int,
    exponent: float,
    rng: np.random.Generator,
) -> list[Opponent]:
    """The opponents ``behavior_name``'s ghosted team fields against ``exploiter``: the main
    learner's latest weights for a main exploiter; for a league exploiter ``count`` PFSP (hard)
    draws from the whole pool on the exploiter's own win rates."""
    if exploiter.kind is ExploiterKind.MAIN:
        return [pool.latest]
    members = [pool.latest, *pool.past]
    rates = np.array(
        [exploiter.win_rates.rate(member_key(behavior_name, m), default=0.5) for m in members]
    )
    probabilities = pfsp_weights(rates, PFSPWeighting.HARD, exponent)
    return [members[int(rng.choice(len(members), p=probabilities))] for _ in range(count)]
