"""Recording demonstrations from any environment while something else plays it.

``DemoRecorder`` wraps a ``BaseEnv`` (a built-in game, a Unity build, any ``mlagents_envs``
environment) and is one itself: whoever plays calls ``reset``, ``get_steps``, ``set_actions`` and
``step`` on it as on the environment, and it writes the steps of one behavior's agents, with the
actions that were set, into a ``.demo`` file (``envs.demo_writer.DemoWriter``). ``record_demo``
plays a number of episodes with given players and records them.

Each agent's episode is held back until it ends and then written whole, so the rows of an episode
stay together even with many agents; an episode that has not ended when the environment is reset
or the recording closes is left out. Agents that were not given an action act with zeros, as
``mlagents_envs`` environments do, and are recorded so. ``keep_episode`` leaves out the episodes
it rejects (a match past its count); ``start`` records an environment that reset itself when it
was made, whose steps another reset would change.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import NamedTuple, Protocol

import numpy as np
from mlagents_envs.base_env import (
    ActionTuple,
    BaseEnv,
    BehaviorSpec,
    DecisionSteps,
    TerminalSteps,
)

from envs.behavior_id import BehaviorId
from envs.demo_writer import DemoWriter

logger = logging.getLogger(__name__)


class Player(Protocol):
    """What ``record_demo`` needs of a player: a scripted level, a trained policy."""

    def act(
        self, obs: list[np.ndarray], action_mask: list[np.ndarray] | None, deterministic: bool
    ) -> ActionTuple:
        """Actions for a batch of agents."""
        ...


class _Row(NamedTuple):
    """One agent step held until its episode ends (``DemoWriter.add``'s arguments)."""

    obs: list[np.ndarray]
    reward: float
    continuous: np.ndarray | None
    discrete: np.ndarray | None
    mask: np.ndarray | None
    done: bool
    max_step_reached: bool


class _Pending:
    """A behavior's last decision steps (copied) and the actions set for them so far."""

    def __init__(self, decision: DecisionSteps, spec: BehaviorSpec) -> None:
        self.obs = [np.array(o, dtype=np.float32) for o in decision.obs]
        self.reward = np.array(decision.reward, dtype=np.float32)
        self.agent_ids = np.array(decision.agent_id)
        self.index = {int(agent): i for i, agent in enumerate(self.agent_ids)}
        masks = decision.action_mask
        self.mask = np.concatenate(masks, axis=1).astype(bool) if masks else None
        n = len(self.agent_ids)
        self.continuous = np.zeros((n, spec.action_spec.continuous_size), dtype=np.float32)
        self.discrete = np.zeros((n, spec.action_spec.discrete_size), dtype=np.int64)


class DemoRecorder(BaseEnv):
    """``env``, with one behavior's agent steps recorded into the ``.demo`` file ``path``.

    Args:
        env: the environment to wrap; reset it through the recorder (steps before the first
            ``reset`` are not recorded).
        path: the file to write; it appears at ``close`` (or ``finish``).
        behavior_name: the behavior to record, without ``?team=`` (``"Tennis"``).
        team: record only this team's agents; ``None`` records every team of the behavior.
        max_episodes: stop writing after this many episodes (more that end at once are left
            out); ``None`` keeps all.
        keep_episode: asked, when an agent's episode ends, with its behavior name
            (``Name?team=N``) and agent id; ``False`` leaves the episode out. ``None`` keeps all.

    Raises:
        ValueError: ``env`` has no such behavior or team, or its teams' specs differ.
    """

    def __init__(
        self,
        env: BaseEnv,
        *,
        path: str | Path,
        behavior_name: str,
        team: int | None = None,
        max_episodes: int | None = None,
        keep_episode: Callable[[str, int], bool] | None = None,
    ) -> None:
        self.env = env
        self.keep_episode = keep_episode
        self.recorded = _recorded_behaviors(env.behavior_specs, behavior_name, team)
        spec = env.behavior_specs[self.recorded[0]]
        self.max_episodes = max_episodes
        self.writer = DemoWriter(path, behavior_name, spec)
        self.dropped_steps = 0
        self._spec = spec
        self._pending: dict[str, _Pending] = {}
        self._episodes: dict[tuple[str, int], list[_Row]] = {}

    @property
    def episodes(self) -> int:
        """Episodes written so far."""
        return self.writer.episodes

    @property
    def full(self) -> bool:
        """Whether ``max_episodes`` episodes have been written."""
        return self.max_episodes is not None and self.episodes >= self.max_episodes

    # ----------------------------------------------------------------------- BaseEnv API
    @property
    def behavior_specs(self) -> Mapping[str, BehaviorSpec]:
        """The wrapped environment's specs."""
        return self.env.behavior_specs

    def reset(self) -> None:
        """Reset the environment; episodes that had not ended are left out of the file."""
        self._drop_open_episodes("a reset")
        self.env.reset()
        self._capture()

    def start(self) -> None:
        """Record from the steps the environment holds now, without resetting it (one that reset
        itself when it was made); episodes that had not ended are left out of the file."""
        self._drop_open_episodes("a start")
        self._capture()

    def step(self) -> None:
        """Record the pending decisions with the actions set for them, then step."""
        for name, pending in self._pending.items():
            for i, agent in enumerate(pending.agent_ids):
                row = _Row(
                    obs=[o[i] for o in pending.obs],
                    reward=float(pending.reward[i]),
                    continuous=pending.continuous[i],
                    discrete=pending.discrete[i],
                    mask=None if pending.mask is None else pending.mask[i],
                    done=False,
                    max_step_reached=False,
                )
                self._episodes.setdefault((name, int(agent)), []).append(row)
        self._pending.clear()
        self.env.step()
        self._capture()

    def get_steps(self, behavior_name: str) -> tuple[DecisionSteps, TerminalSteps]:
        """The wrapped environment's steps."""
        return self.env.get_steps(behavior_name)

    def set_actions(self, behavior_name: str, action: ActionTuple) -> None:
        """Set (and remember) the actions of every agent of ``behavior_name``."""
        self.env.set_actions(behavior_name, action)
        pending = self._pending.get(behavior_name)
        if pending is not None and len(pending.agent_ids):
            if pending.continuous.shape[1]:
                pending.continuous[:] = np.asarray(action.continuous).reshape(
                    pending.continuous.shape
                )
            if pending.discrete.shape[1]:
                pending.discrete[:] = np.asarray(action.discrete).reshape(pending.discrete.shape)

    def set_action_for_agent(self, behavior_name: str, agent_id: int, action: ActionTuple) -> None:
        """Set (and remember) the action of one agent."""
        self.env.set_action_for_agent(behavior_name, agent_id, action)
        pending = self._pending.get(behavior_name)
        if pending is not None and int(agent_id) in pending.index:
            i = pending.index[int(agent_id)]
            if pending.continuous.shape[1]:
                pending.continuous[i] = np.asarray(action.continuous).ravel()
            if pending.discrete.shape[1]:
                pending.discrete[i] = np.asarray(action.discrete).ravel()

    def finish(self) -> Path:
        """Write the file (episodes not ended are left out) and return its path; the environment
        stays open.

        Raises:
            DemoFileError: no episode ended, so there is nothing to write.
        """
        self._drop_open_episodes("the end of the recording")
        self.writer.close()
        return self.writer.path

    def close(self) -> None:
        """Write the file (see ``finish``), then close the environment."""
        try:
            self.finish()
        finally:
            self.env.close()

    # ----------------------------------------------------------------------- recording
    def _capture(self) -> None:
        """Read the new steps of the recorded behaviors: write the episodes that ended, hold the
        decisions until their actions are set."""
        for name in self.recorded:
            decision, terminal = self.env.get_steps(name)
            for i, agent in enumerate(terminal.agent_id):
                last = _Row(
                    obs=[np.array(o[i], dtype=np.float32) for o in terminal.obs],
                    reward=float(terminal.reward[i]),
                    continuous=None,
                    discrete=None,
                    mask=None,
                    done=True,
                    max_step_reached=bool(terminal.interrupted[i]),
                )
                rows = self._episodes.pop((name, int(agent)), [])
                if self.keep_episode is None or self.keep_episode(name, int(agent)):
                    self._write_episode(rows + [last], int(agent))
            self._pending[name] = _Pending(decision, self._spec)

    def _write_episode(self, rows: list[_Row], agent_id: int) -> None:
        if self.full:
            return
        for row in rows:
            self.writer.add(
                row.obs,
                reward=row.reward,
                done=row.done,
                max_step_reached=row.max_step_reached,
                continuous=row.continuous,
                discrete=row.discrete,
                action_mask=row.mask,
                agent_id=agent_id,
            )

    def _drop_open_episodes(self, when: str) -> None:
        dropped = sum(len(rows) for rows in self._episodes.values())
        if dropped:
            logger.info(
                "%s: %d steps of %d episodes that had not ended at %s are left out",
                self.writer.path, dropped, len(self._episodes), when,
            )  # fmt: skip
        self.dropped_steps += dropped
        self._episodes.clear()
        self._pending.clear()


def _recorded_behaviors(
    specs: Mapping[str, BehaviorSpec], behavior_name: str, team: int | None
) -> tuple[str, ...]:
    """The environment's behavior names of ``behavior_name`` (and ``team``), one spec among them."""
    chosen = tuple(
        name
        for name in specs
        if BehaviorId.parse(name).name == behavior_name
        and (team is None or BehaviorId.parse(name).team == team)
    )
    if not chosen:
        wanted = behavior_name if team is None else f"{behavior_name}?team={team}"
        raise ValueError(f"no behavior {wanted!r} to record; the environment has {sorted(specs)}")
    differing = [name for name in chosen if specs[name] != specs[chosen[0]]]
    if differing:
        raise ValueError(
            f"the teams of {behavior_name!r} have different specs ({chosen[0]} and "
            f"{differing[0]}); record one team with team=N"
        )
    return chosen


def record_demo(
    env: BaseEnv,
    players: Mapping[str, Player],
    *,
    path: str | Path,
    behavior_name: str,
    episodes: int,
    team: int | None = None,
    deterministic: bool = False,
    max_env_steps: int = 1_000_000,
) -> Path:
    """Play ``env`` with ``players`` until ``episodes`` episodes of ``behavior_name`` are recorded.

    Args:
        env: the environment, fresh or not (it is reset first and left open).
        players: behavior name (``Name?team=N``, every one of ``env``) → player.
        path: the ``.demo`` file to write.
        behavior_name: the behavior to record (all its teams, or ``team``'s).
        episodes: agent episodes to record (a two-player match gives two when both teams are
            recorded).
        team: record one team only.
        deterministic: passed to every player's ``act``.
        max_env_steps: give up after this many environment steps.

    Returns:
        The path of the written file.

    Raises:
        ValueError: a behavior of ``env`` has no player, or ``episodes`` < 1.
        RuntimeError: ``max_env_steps`` steps passed before ``episodes`` episodes ended.
    """
    missing = sorted(set(env.behavior_specs) - set(players))
    if missing:
        raise ValueError(
            f"no player for {missing}; players must cover {sorted(env.behavior_specs)}"
        )
    if episodes < 1:
        raise ValueError(f"episodes must be >= 1 (got {episodes})")
    recorder = DemoRecorder(
        env, path=path, behavior_name=behavior_name, team=team, max_episodes=episodes
    )
    try:
        recorder.reset()
        for _ in range(max_env_steps):
            if recorder.full:
                break
            for name, player in players.items():
                decision, _ = recorder.get_steps(name)
                if len(decision):
                    action = player.act(decision.obs, decision.action_mask, deterministic)
                    recorder.set_actions(name, action)
            recorder.step()
        if not recorder.full:
            raise RuntimeError(
                f"{recorder.episodes} of {episodes} episodes of {behavior_name} ended in "
                f"{max_env_steps} steps; raise max_env_steps or use a game whose episodes end"
            )
        return recorder.finish()
    finally:
        recorder.writer.discard()  # nothing left to discard once finished
