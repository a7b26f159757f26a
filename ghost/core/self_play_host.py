"""``SelfPlayHost``: the host kit. One object runs the controller and the cycles of a run for
whatever hosts the learners (ghost-learn, the ``mlagents-learn`` plugin, Stable-Baselines3, RLlib,
a loop of your own).

A host builds one ``SelfPlayHost`` per run and, for each behavior learning by self-play, adds it
with its ``SelfPlayState`` and ``LearnerHandle`` (``add_behavior``). The kit then owns what every
host used to write for itself:

- **subscribe before restore**: ``subscribe`` registers a behavior's teams with the controller
  before a saved rotation is loaded, so the rotation keeps its saved order and the teams that
  appeared since are added after it;
- **restore**: ``restore`` continues a behavior from its saved record (the controller from the
  first behavior restored, since every behavior saved the same one), fields the saved opponents
  again and says so in one log line;
- **the step after an update**: ``after_update`` (a snapshot, a team change request or a swap,
  when due) and ``take_team_change``, which makes a requested change, tells every listener and
  logs it; ``update_done`` is both, for hosts with one learner whose update ends a step;
- **fielded opponents**: ``fielded_opponents`` (the controller's, for every behavior);
- **one persistence format**: ``save``/``load`` through a ``SelfPlayFolder``, whose weight writing
  and reading the host passes in.

See ``docs/writing-a-host.md`` for the contract item by item.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ghost.core.controller import GhostController, TeamChange, TeamChangeListener
from ghost.core.ghost_cycle import ExperienceObserver, GhostCycle, LeagueTurns, LearnerHandle
from ghost.core.opponents import Opponent
from ghost.core.self_play import SelfPlayState
from ghost.core.snapshots import Snapshot
from ghost.core.state_folder import SelfPlayFolder

#: where the kit says what it does, unless a host hands it its own logger
LOGGER = logging.getLogger(__name__)


class SelfPlayHost:
    """The controller and the cycles of one run (see the module docstring).

    Args:
        controller: the run's controller (default a new one).
        logger: where restores and team changes are logged (a host with its own console, such
            as ``mlagents-learn``, passes its logger).
        team_change_level: the level team changes are logged at (a host that reports them its
            own way, as ghost-learn's callbacks do, keeps them at ``DEBUG``).
    """

    def __init__(
        self,
        *,
        controller: GhostController | None = None,
        logger: logging.Logger | None = None,
        team_change_level: int = logging.INFO,
    ) -> None:
        self.controller = controller if controller is not None else GhostController()
        self.logger = logger or LOGGER
        self.team_change_level = team_change_level
        self.cycles: dict[str, GhostCycle] = {}
        self.listeners: list[TeamChangeListener] = []
        self._controller_restored = False

    # -- behaviors ---------------------------------------------------------------------------
    def add_behavior(
        self,
        *,
        state: SelfPlayState,
        learner: LearnerHandle,
        training: bool = True,
        league: LeagueTurns | None = None,
        observer: ExperienceObserver | None = None,
        on_snapshot: Callable[[Snapshot], None] | None = None,
        report: Callable[[str, float], None] | None = None,
        listener: TeamChangeListener | None = None,
    ) -> GhostCycle:
        """Run ``state``'s behavior through a new cycle; ``listener`` hears team changes in its
        stead (a host's trainer that has something of its own to do first), else the cycle."""
        cycle = GhostCycle(
            state=state, controller=self.controller, learner=learner, training=training,
            league=league, observer=observer, on_snapshot=on_snapshot, report=report,
        )  # fmt: skip
        self.cycles[state.behavior_name] = cycle
        self.listeners.append(listener if listener is not None else cycle)
        return cycle

    def cycle(self, behavior_name: str) -> GhostCycle:
        return self.cycles[behavior_name]

    def subscribe(self, behavior_name: str, teams: Iterable[int]) -> None:
        """Register ``teams`` of a behavior with the controller (before ``restore``)."""
        state = self.cycles[behavior_name].state
        for team in teams:
            self.controller.subscribe_team(team, state)

    def connect(self, behavior_name: str, teams: Iterable[int]) -> None:
        """``teams`` of a behavior have acting policies: subscribe and field each."""
        cycle = self.cycles[behavior_name]
        for team in teams:
            cycle.connect_team(team)

    # -- the step after an update ------------------------------------------------------------
    def after_update(self, behavior_name: str) -> None:
        """After a behavior's trainer update: a snapshot, a team change request or a swap."""
        self.cycles[behavior_name].after_update()

    def take_team_change(self) -> TeamChange | None:
        """Make a requested team change, tell every listener and log it; the host then resets
        its environments (no trajectory may straddle two learners). None: no change."""
        change = self.controller.hand_over(self.listeners)
        if change is not None:
            self.logger.log(
                self.team_change_level, "Self-play: team %s learns now (team change %d)",
                change.learning_team, change.count,
            )  # fmt: skip
        return change

    def update_done(self, behavior_name: str) -> TeamChange | None:
        """``after_update`` then ``take_team_change``: a host whose one update ends a step."""
        self.after_update(behavior_name)
        return self.take_team_change()

    def fielded_opponents(self, arena: int) -> list[tuple[str, Opponent]]:
        """``(owning behavior, opponent)`` of every ghosted team in arena key ``arena``."""
        return self.controller.fielded_opponents(arena)

    # -- persistence -------------------------------------------------------------------------
    def record(self, **host_entries: Any) -> dict[str, Any]:
        """What a saved state holds beside the self-play state: the controller and the host's
        own entries (its step, league turns...)."""
        return {**host_entries, "controller": self.controller.state_dict()}

    def save(self, behavior_name: str, folder: SelfPlayFolder, **host_entries: Any) -> None:
        """Write a behavior's snapshots, state (with ``record(**host_entries)``) and payoff
        table into ``folder``, in the order that survives a kill."""
        folder.save(self.cycles[behavior_name].state, self.record(**host_entries))

    def restore(
        self,
        behavior_name: str,
        folder: SelfPlayFolder,
        saved: Mapping[str, Any],
        *,
        step: int | None = None,
    ) -> None:
        """Continue a behavior from ``saved`` (``SelfPlayFolder.load``'s record; its snapshots
        in ``folder``), then field its saved opponents again. ``step`` is the step of the model
        the host just loaded: a record of another step is used, with a warning."""
        cycle = self.cycles[behavior_name]
        saved_step = saved.get("step")
        if step is not None and saved_step is not None and int(saved_step) != int(step):
            self.logger.warning(
                "%s: the self-play state on disk is from step %d, the model from step %d (the "
                "run stopped between the two writes); continuing with that state",
                behavior_name, saved_step, step,
            )  # fmt: skip
        folder.restore_state(saved["self_play"], cycle.state)
        if "controller" in saved:
            self.restore_controller(saved["controller"])
        cycle.restore()
        # a host that keeps the controller elsewhere (ghost-learn: in the run state) restores it
        # after this, so the learning team is named only when it came with the record
        team = f", learning team {self.controller.learning_team}" if "controller" in saved else ""
        self.logger.info(
            "%s: resumed self-play at step %s: window %s, Elo %.1f%s",
            behavior_name, step if step is not None else saved_step,
            [s.snapshot_id for s in cycle.state.window], cycle.state.rating, team,
        )  # fmt: skip

    def restore_controller(self, saved: Mapping[str, Any]) -> None:
        """Continue the saved rotation, once per run: every behavior saved the same one."""
        if not self._controller_restored:
            self.controller.load_state_dict(dict(saved))
            self._controller_restored = True
