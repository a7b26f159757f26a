"""One ``GhostRun`` per ``mlagents-learn`` run: the host kit (controller and cycles) its ghost
trainers share.

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

from mlagents_envs.logging_util import get_logger

from ghost.core.controller import GhostController
from ghost.core.self_play_host import SelfPlayHost
from trainers.run_files.lock import RunLock

logger = get_logger(__name__)


class GhostRun:
    """The host kit of one run, shared by its ghost trainers, and the run folder's lock.

    Args:
        lock: the run folder's lock, held by this process (None: not locked).
    """

    def __init__(self, lock: RunLock | None = None) -> None:
        self.lock = lock
        self.kit = SelfPlayHost(logger=logger)

    @property
    def controller(self) -> GhostController:
        return self.kit.controller

    def take_team_change(self) -> bool:
        """Make a requested team change and tell every trainer; True when the environments must
        be reset (no trajectory may straddle two learners)."""
        if self.lock is not None:
            self.lock.heartbeat()
        return self.kit.take_team_change() is not None


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
