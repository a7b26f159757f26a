"""One ``GhostRun`` per ``mlagents-learn`` run: the controller its ghost trainers share.

ML-Agents creates trainers one behavior name at a time through a factory that knows nothing of the
others, so the run is found by its results folder (the parent of every behavior's artifact
folder). ML-Agents' trainer controller resets the environments when its own ghost controller says
so; ``registration`` makes that question also ask every ``GhostRun`` here (``take_team_change``).

mlagents-learn does not lock its results folder, so the first ghost trainer of a run takes the run
folder's lock (``trainers.run_files.lock``, as ghost-learn does) for every ghost trainer of the process:
a second mlagents-learn on the same run id stops before it reads or writes any self-play state.
The lock is released when the process exits; its heartbeat is refreshed as ML-Agents asks about
team changes, which it does every step.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mlagents_envs.logging_util import get_logger

from ghost.core.controller import GhostController, TeamChangeListener
from trainers.run_files.lock import RunLock

logger = get_logger(__name__)


class GhostRun:
    """The controller of one run and the ghost trainers that share it.

    Args:
        lock: the run folder's lock, held by this process (None: not locked).
    """

    def __init__(self, lock: RunLock | None = None) -> None:
        self.lock = lock
        self.controller = GhostController()
        self.trainers: list[TeamChangeListener] = []
        self._controller_restored = False

    def restore_controller(self, state: dict[str, Any]) -> None:
        """Continue the saved rotation (the first behavior restored brings it; all saved it)."""
        if not self._controller_restored:
            self.controller.load_state_dict(state)
            self._controller_restored = True

    def take_team_change(self) -> bool:
        """Make a requested team change and tell every trainer; True when the environments must
        be reset (no trajectory may straddle two learners)."""
        if self.lock is not None:
            self.lock.heartbeat()
        change = self.controller.hand_over(self.trainers)
        if change is None:
            return False
        logger.info(
            "Self-play: team %s learns now (team change %d)", change.learning_team, change.count
        )
        return True


_RUNS: dict[Path, GhostRun] = {}


def run_for(artifact_path: str | Path) -> GhostRun:
    """The run a behavior's artifact folder (``<results>/<run-id>/<Behavior>``) belongs to; the
    first behavior of a run locks the run folder.

    Raises:
        RunLockedError: another live process trains this run (the message names it).
    """
    root = Path(artifact_path).parent
    key = root.resolve()
    run = _RUNS.get(key)
    if run is None:
        root.mkdir(parents=True, exist_ok=True)
        run = _RUNS[key] = GhostRun(lock=RunLock(root).acquire())
    return run


def take_team_changes() -> bool:
    """Every run's pending team change; True when any needs an environment reset."""
    return any([run.take_team_change() for run in _RUNS.values()])
