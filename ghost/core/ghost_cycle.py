"""``GhostCycle``: the self-play cycle of one behavior name, the same for every host.

A *host* is whatever runs the learner: this project's training loop (``ghost.running``),
ML-Agents' ``mlagents-learn`` (``ghost.mlagents_plugin``), and later others. The cycle decides, the
host acts; what is due comes from the behavior's ``SelfPlayState`` and the run's
``GhostController``:

- *first turn*: before any experience the untrained learner becomes the first snapshot and the
  first turn starts (``begin``);
- *routing*: each finished piece of experience of a team is learning experience (the learning
  team's, for the learner or for the exploiter whose turn it is) or ghost experience (any other
  team's: it only counts ghost steps, which pace the swaps) (``route``);
- *results*: finished matches of the learning team are rated by the controller and booked in the
  state, one result per match (``finished_matches``; an exploiter's go to its own tally) (``book``);
- *after each update*, in ML-Agents' order: a snapshot if due, then a team change request if the
  turn is over, else a swap if due (``after_update``); a team change starts a turn and swaps
  (``on_team_change``);
- *restore*: after ``SelfPlayState.load_state_dict`` the saved opponents are fielded again.

A host runs its cycles through the host kit (``ghost.core.self_play_host.SelfPlayHost``), which
owns the controller, subscribes before restoring, takes and broadcasts team changes and saves and
restores the state; ``docs/writing-a-host.md`` gives the contract item by item. What a host
provides:

1. a ``LearnerHandle`` (the protocol below): the learner's trainer step, whether it still trains,
   a copy of its current weights, ``field`` (a team's opponents), ``act_as_learner`` (the
   learning team acts with the learner) and ``publish`` (hand every team's acting policy to the
   environments);
2. for every team of the behavior, ``connect_team`` once its acting policy exists;
3. in its update step: ``begin()``, then ``route(...)`` for each finished piece of experience
   (giving experience routed ``LEARNER`` to its trainer), ``book(finished_matches(...))`` with
   the terminal rows of the learning team's experience (agent ids, group ids, rewards,
   interrupted flags and arena keys as arrays), the trainer's update, and ``after_update()``;
4. ``on_team_change`` when the controller hands learning over (after the host reset its
   environments), and ``restore()`` after loading a saved state.

Optional collaborators: a ``LeagueTurns`` runs ``self_play.league`` exploiter turns (it trains the
exploiters, so it is host-specific), an ``ExperienceObserver`` sees the learner's experience (the
average policy's observation sample), ``on_snapshot`` hears of each snapshot, and ``report`` takes
each booked result as a statistic.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from ghost.core.controller import GhostController, TeamChange
from ghost.core.league import Exploiter
from ghost.core.opponents import Opponent
from ghost.core.ratings import result_from_reward
from ghost.core.self_play import SelfPlayState
from ghost.core.snapshots import Snapshot
from ghost.core.win_rates import result_stat_keys

#: ``(arena, score)`` of one finished match
MatchResult = tuple[int, float]


class LearnerHandle(Protocol):
    """What the cycle needs of a host's learner and its teams' acting policies."""

    @property
    def step(self) -> int:
        """The learner's trainer step (snapshots and turns count these)."""
        ...

    @property
    def still_training(self) -> bool:
        """False once the learner has reached its step budget (its turn then ends at once)."""
        ...

    def weights(self) -> Any:
        """A copy of the learner's current weights (opaque to the cycle)."""
        ...

    def field(self, team: int, opponents: list[Opponent]) -> None:
        """Load ``opponents`` (spread over arenas) into what ``team`` acts with while ghosted."""
        ...

    def act_as_learner(self, team: int) -> None:
        """``team`` learns now: it acts with the learner's current weights."""
        ...

    def publish(self) -> None:
        """Hand every team's acting policy to the environments."""
        ...


class LeagueTurns(Protocol):
    """Runs the turns of ``self_play.league`` exploiters (``ghost.running.league``)."""

    active: Exploiter | None

    def begin_turn(self, turn: int) -> None: ...
    def put(self, experience: Any) -> None: ...
    def record(self, results: list[MatchResult], controller: GhostController) -> None: ...
    def advance(self) -> None: ...
    def turn_over(self, *, still_training: bool) -> bool: ...
    def end_turn(self) -> Any: ...


class ExperienceObserver(Protocol):
    """Sees every piece of the learner's experience while training (the average policy's sample)."""

    def add(self, experience: Any) -> None: ...


class Route(enum.Enum):
    """Where a piece of experience goes."""

    LEARNER = "learner"  #: the host's trainer learns from it
    EXPLOITER = "exploiter"  #: the active exploiter's trainer (already handed over)
    GHOST = "ghost"  #: nobody; it counted ghost steps


def learning_exploiter(controller: GhostController) -> Exploiter | None:
    """The exploiter playing the current learning turn (None: a main learner's turn)."""
    team = controller.learning_team
    if team is None or team not in controller.teams:
        return None
    try:
        owner = controller.owner_of(team)
    except KeyError:  # a restored rotation names a team not connected yet
        return None
    return owner.league.role_for(controller.team_changes)


def finished_matches(
    *,
    agent_ids: np.ndarray,
    group_ids: np.ndarray,
    rewards: np.ndarray,
    interrupted: np.ndarray,
    arenas: np.ndarray,
) -> list[MatchResult]:
    """``(arena, score)`` of every match finished in one set of terminal rows.

    One result per match: rows of one group (``group_ids`` not 0) count once, by the first row;
    rows outside a group (group id 0) count one each, by agent id. Interrupted rows are no result.

    Args:
        agent_ids: the agent of each terminal row (distinct agents, distinct ids).
        group_ids: each row's group, 0 for none (distinct groups, distinct ids).
        rewards: each row's final reward, the group reward included.
        interrupted: whether the row's episode was cut off rather than finished.
        arenas: the arena key of each row (where the learner's opponent is looked up).
    """
    finished = ~np.asarray(interrupted, dtype=bool)
    if not finished.any():
        return []
    groups = np.asarray(group_ids).astype(np.int64)
    keys = np.where(groups != 0, -groups, np.asarray(agent_ids).astype(np.int64))
    _, first = np.unique(keys[finished], return_index=True)
    rows = np.flatnonzero(finished)[first]
    scores = [result_from_reward(r) for r in np.asarray(rewards)[rows].tolist()]
    return list(zip(np.asarray(arenas)[rows].tolist(), scores, strict=True))


class GhostCycle:
    """The self-play cycle of one behavior (see the module docstring).

    Args:
        state: this behavior's self-play bookkeeping.
        controller: the run's controller, shared by every behavior.
        learner: the host's learner and acting policies.
        training: False when only watching a trained policy (nothing is rated or snapshotted).
        league: runs exploiter turns (``self_play.league``), if any.
        observer: sees the learner's experience (``self_play.average_policy``), if any.
        on_snapshot: called with each snapshot as it is taken.
        report: called with ``(statistic, score)`` for each booked result.
    """

    def __init__(
        self,
        *,
        state: SelfPlayState,
        controller: GhostController,
        learner: LearnerHandle,
        training: bool,
        league: LeagueTurns | None = None,
        observer: ExperienceObserver | None = None,
        on_snapshot: Callable[[Snapshot], None] | None = None,
        report: Callable[[str, float], None] | None = None,
    ) -> None:
        self.state = state
        self.controller = controller
        self.learner = learner
        self.training = training
        self.league = league
        self.observer = observer
        self.on_snapshot = on_snapshot
        self.report = report
        #: this behavior's teams, in the order they connected
        self.teams: list[int] = []

    @property
    def is_learning(self) -> bool:
        """Whether a team of this behavior learns now."""
        return self.controller.learning_team in self.teams

    @property
    def exploiting(self) -> bool:
        """Whether an exploiter of this behavior plays the current learning turn."""
        return self.league is not None and self.league.active is not None

    def connect_team(self, team: int) -> None:
        """Team ``team`` of this behavior has an acting policy: subscribe it and field it
        (restored opponents, or a fresh draw)."""
        if team not in self.teams:
            self.teams.append(team)
        self.controller.subscribe_team(team, self.state)
        if not self.state.opponents.get(team):
            self._draw(team)
        self.learner.field(team, self.state.opponents[team])
        if team == self.controller.learning_team:
            self.learner.act_as_learner(team)

    # -- one update --------------------------------------------------------------------------
    def begin(self) -> None:
        """Set up the first turn (once, before any experience): the learner as it starts is the
        first snapshot."""
        if self.state.known_learning_team is not None:
            return
        if len(self.state.window) == 0:
            self.take_snapshot()
        self.start_turn()

    def route(self, *, team: int, agent_steps: int, experience: Any = None) -> Route:
        """Where a finished piece of ``team``'s experience goes; ghost steps are counted here,
        an exploiter's experience is handed to the league, the learner's shown to the observer."""
        if team != self.controller.learning_team:
            self.state.count_ghost_steps(agent_steps)
            return Route.GHOST
        if self.exploiting:
            assert self.league is not None
            self.league.put(experience)
            return Route.EXPLOITER
        if self.training and self.observer is not None:
            self.observer.add(experience)
        return Route.LEARNER

    def book(self, results: list[MatchResult]) -> None:
        """Book the learning team's finished matches (``finished_matches``): the active
        exploiter's tally, else the learner's rating (when training)."""
        if not results:
            return
        if self.exploiting:
            assert self.league is not None
            self.league.record(results, self.controller)
            return
        if not self.training:
            return
        for arena, score in results:
            rating = self.controller.book_match(learner=self.state, arena=arena, score=score)
            if rating is None or self.report is None:
                continue
            for opponent in rating.opponents:
                for key in result_stat_keys(opponent):
                    self.report(key, score)

    def after_update(self) -> None:
        """After the host's trainer update: advance the active exploiter, then a snapshot if
        due, a team change request if the turn is over, else a swap if due."""
        exploiting = self.exploiting
        if exploiting:
            assert self.league is not None
            self.league.advance()
        learning = self.is_learning
        if (
            self.training
            and learning
            and not exploiting
            and self.state.snapshot_due(self.learner.step)
        ):
            self.take_snapshot()
        if learning and self._turn_over(exploiting):
            self.controller.request_team_change()
        elif self.state.swap_due():
            self.swap()

    def _turn_over(self, exploiting: bool) -> bool:
        still_training = self.learner.still_training
        if exploiting:
            assert self.league is not None
            return self.league.turn_over(still_training=still_training)
        return self.state.turn_over(self.learner.step, still_training=still_training)

    # -- turns, snapshots and opponents ------------------------------------------------------
    def on_team_change(self, change: TeamChange) -> None:
        """Learning passed to ``change.learning_team``: end an exploiter's turn, start a turn."""
        if self.league is not None:
            self.league.end_turn()
        self.start_turn()

    def start_turn(self) -> None:
        """Restart the turn count (if this behavior learns), begin an exploiter's turn if it is
        one, and swap."""
        learning = self.is_learning
        self.state.start_turn(self.controller.learning_team, self.learner.step, learning=learning)
        if self.league is not None and learning:
            self.league.begin_turn(self.controller.team_changes)
        self.swap()

    def take_snapshot(self) -> Snapshot:
        """Add the learner's current weights to the window."""
        snapshot = self.state.take_snapshot(self.learner.weights(), self.learner.step)
        if self.on_snapshot is not None:
            self.on_snapshot(snapshot)
        return snapshot

    def swap(self) -> None:
        """Redraw the opponents of every ghosted team of this behavior and publish them."""
        self.state.mark_swap()
        for team in self.teams:
            if team == self.controller.learning_team:
                self.learner.act_as_learner(team)
            else:
                self.learner.field(team, self._draw(team))
        self.learner.publish()

    def _draw(self, team: int) -> list[Opponent]:
        pool = self.state.pool(self.learner.weights(), self.learner.step)
        exploiter = learning_exploiter(self.controller)
        return self.state.draw_opponents(team, pool, exploiter=exploiter)

    def restore(self) -> None:
        """After ``SelfPlayState.load_state_dict``: field the saved opponents again."""
        for team in self.teams:
            if self.state.opponents.get(team):
                self.learner.field(team, self.state.opponents[team])
            if team == self.controller.learning_team:
                self.learner.act_as_learner(team)
