"""Match results of ML-Agents trajectories: which agent group each finished agent belonged to.

ML-Agents' ``Trajectory`` carries the agent id and its teammates' statuses but not the group id,
so teammates' trajectories cannot be told apart from two single agents' by themselves. The agent
processor sees every terminal step with its group id; ``install_group_hook`` makes it note
``global agent id -> global group id`` here, and the ghost trainer takes the note when the agent's
last trajectory arrives, so a group finishing together is one match result.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from mlagents.trainers.agent_processor import AgentProcessor
from mlagents.trainers.behavior_id_utils import get_global_agent_id, get_global_group_id
from mlagents_envs.base_env import TerminalStep

from ghost.core.ghost_cycle import MatchResult, finished_matches
from ghost.mlagents_plugin.team_policy import worker_arena, worker_of

#: notes kept at most; agents of behaviors no ghost trainer reads would otherwise pile up
LIMIT = 1 << 16

_finished: dict[str, str] = {}


def note(global_agent_id: str, global_group_id: str) -> None:
    """Agent ``global_agent_id`` finished its episode as a member of ``global_group_id``."""
    _finished[global_agent_id] = global_group_id
    if len(_finished) > LIMIT:
        del _finished[next(iter(_finished))]  # the oldest note


def take(global_agent_id: str) -> str | None:
    """The group ``global_agent_id`` finished in (None: no group, or not noted), forgetting it."""
    return _finished.pop(global_agent_id, None)


def install_group_hook() -> None:
    """Make ML-Agents' agent processor note the group of every agent's terminal step."""
    original = AgentProcessor._process_step
    if getattr(original, "notes_groups", False):
        return

    def process_step(self: Any, step: Any, worker_id: int, index: int) -> None:
        if isinstance(step, TerminalStep) and step.group_id > 0:
            note(
                get_global_agent_id(worker_id, step.agent_id),
                get_global_group_id(worker_id, step.group_id),
            )
        original(self, step, worker_id, index)

    process_step.notes_groups = True  # type: ignore[attr-defined]
    AgentProcessor._process_step = process_step


def match_results(trajectories: list[Any]) -> list[MatchResult]:
    """``(arena, score)`` of the matches these trajectories of the learning team finished
    (``finished_matches``); a trajectory ending while teammates still play finishes nothing."""
    rows = []
    for trajectory in trajectories:
        if trajectory.done_reached:
            group = take(trajectory.agent_id)
            if trajectory.all_group_dones_reached:
                rows.append((trajectory, group))
    if not rows:
        return []
    numbers: dict[str, int] = {}
    group_ids = [0 if g is None else numbers.setdefault(g, len(numbers) + 1) for _, g in rows]
    last = [trajectory.steps[-1] for trajectory, _ in rows]
    return finished_matches(
        agent_ids=np.arange(len(rows)), group_ids=np.asarray(group_ids),
        rewards=np.asarray([step.reward + step.group_reward for step in last]),
        interrupted=np.asarray([trajectory.interrupted for trajectory, _ in rows]),
        arenas=np.asarray([worker_arena(worker_of(t.agent_id)) for t, _ in rows]),
    )  # fmt: skip
