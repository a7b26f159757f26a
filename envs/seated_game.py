"""``SeatedGame``: many copies of a board, card or turn-based game as one ``BaseEnv``.

Vocabulary:

- **table**: one copy of the game (``Table``), an adapter around one PettingZoo or OpenSpiel
  environment. Every ``step()`` advances every table by one move.
- **seat**: a player's place at a table (PettingZoo's agent, OpenSpiel's player), numbered from 0.
  Each seat is played by one behavior (``Seat.behavior``): symmetric games put seat ``i`` on
  ``Game?team=i`` (one behavior name, one team per seat), asymmetric ones give seats their own
  names.
- **agent id**: ``table * num_seats + seat``, the same for every episode at that table, so
  ``arena_of`` (the table) is one integer division.
- **shuffled seats** (``shuffle_seats``): in a symmetric game, every episode of a table deals the
  game's seats to the behavior's teams at random, so each team plays every seat (first and second
  mover alike) while its agent ids and behavior name stay. Team ``t``'s agent is then
  ``table * num_seats + t`` whichever seat it plays; without shuffling team ``t`` is seat ``t``.

Step semantics follow a Unity build whose agents request decisions only on their turn:

- only the seats that must move now are in ``DecisionSteps`` (one seat in turn-based games, every
  seat still playing at a simultaneous move); the others wait, and the rewards they earn meanwhile
  arrive with their next decision;
- when a seat's episode ends, it appears in ``TerminalSteps`` with every reward it has not yet
  received, including the one from the move that ended the game, whoever made it;
  ``interrupted`` only when the game was truncated or ran past ``max_episode_steps``;
- a finished table starts its next episode in the same step, so its first movers appear in
  ``DecisionSteps`` beside their terminal rows (same agent ids), as Unity agents do.

Actions must be set, every step, for every agent of the last ``DecisionSteps``; an illegal action
(blocked by the mask) is an error naming the agent and its legal actions.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence

import attrs
import numpy as np
from mlagents_envs.base_env import (
    ActionSpec,
    ActionTuple,
    BaseEnv,
    BehaviorSpec,
    DecisionSteps,
    TerminalSteps,
)

from envs.behavior_id import BehaviorId
from envs.specs import vector_observation_spec


@attrs.frozen(kw_only=True)
class Seat:
    """How one seat plays: its behavior, what it observes, what it can do."""

    behavior: BehaviorId
    obs_size: int
    action_spec: ActionSpec


class Table(abc.ABC):
    """One copy of a game, stepped by ``SeatedGame``; adapters implement the hooks.

    After ``reset`` and after every ``apply``, ``acting()`` names the seats that must move next
    (empty once every seat has left). Rewards accumulate inside the table until
    ``take_rewards``; seats that finished are reported once by ``take_departed``.
    """

    @abc.abstractmethod
    def reset(self, rng: np.random.Generator) -> None:
        """Start a new episode, drawing any randomness (seeds, chance moves) from ``rng``."""

    @abc.abstractmethod
    def acting(self) -> Sequence[int]:
        """The seats that must choose an action now."""

    @abc.abstractmethod
    def observe(self, seat: int) -> np.ndarray:
        """``seat``'s flat float32 observation (also after it left: its final observation)."""

    def legal(self, seat: int) -> np.ndarray | None:
        """``seat``'s legal actions as a bool array over every branch (True: legal), or None."""
        return None

    @abc.abstractmethod
    def apply(self, actions: Mapping[int, tuple[np.ndarray, np.ndarray]]) -> None:
        """Play one move: ``seat → (continuous row, discrete row)`` for every acting seat."""

    @abc.abstractmethod
    def take_rewards(self) -> np.ndarray:
        """Per seat, the rewards earned since the last call (then forgotten)."""

    @abc.abstractmethod
    def take_departed(self) -> Mapping[int, bool]:
        """Seats whose episode ended since the last call, → whether it was interrupted."""

    def close(self) -> None:  # noqa: B027 (most games hold nothing to release)
        """Release the game's resources."""


@attrs.define
class _Rows:
    """Rows of one behavior's decision or terminal steps, gathered table by table."""

    obs: list[np.ndarray] = attrs.Factory(list)
    reward: list[float] = attrs.Factory(list)
    agent_id: list[int] = attrs.Factory(list)
    legal: list[np.ndarray | None] = attrs.Factory(list)
    interrupted: list[bool] = attrs.Factory(list)

    def add(
        self,
        *,
        obs: np.ndarray,
        reward: float,
        agent_id: int,
        legal: np.ndarray | None = None,
        interrupted: bool = False,
    ) -> None:
        self.obs.append(obs)
        self.reward.append(reward)
        self.agent_id.append(agent_id)
        self.legal.append(legal)
        self.interrupted.append(interrupted)


class SeatedGame(BaseEnv):
    """``tables`` played together under Unity's step semantics (see the module docstring).

    Args:
        tables: the game copies; every table has ``len(seats)`` seats.
        seats: how each seat plays (behavior, observation size, action spec).
        seed: seeds every table's random draws; ``None`` draws fresh entropy.
        max_episode_steps: moves after which an unfinished episode is interrupted (None: no
            limit).
        shuffle_seats: deal the seats to the teams at random every episode (symmetric games:
            every seat on one behavior name).
    """

    #: ML-Agents' env workers read this attribute of a UnityEnvironment
    academy_capabilities = None

    def __init__(
        self,
        *,
        tables: Sequence[Table],
        seats: Sequence[Seat],
        seed: int | None = 0,
        max_episode_steps: int | None = None,
        shuffle_seats: bool = False,
    ) -> None:
        if not tables:
            raise ValueError("a SeatedGame needs at least one table")
        if max_episode_steps is not None and max_episode_steps < 1:
            raise ValueError(f"max_episode_steps must be >= 1 or None (got {max_episode_steps})")
        self.tables = list(tables)
        self.seats = tuple(seats)
        self.num_seats = len(self.seats)
        self.max_episode_steps = max_episode_steps
        self._rngs = [
            np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(len(self.tables))
        ]
        self._specs: dict[str, BehaviorSpec] = {}
        self._seat_behavior: list[str] = []
        for seat in self.seats:
            name = seat.behavior.full_name
            spec = BehaviorSpec(
                observation_specs=[vector_observation_spec(seat.obs_size)],
                action_spec=seat.action_spec,
            )
            known = self._specs.setdefault(name, spec)
            if known != spec:
                raise ValueError(
                    f"seats of behavior {name} must observe and act alike; give them different "
                    "behaviors"
                )
            self._seat_behavior.append(name)
        if shuffle_seats and len({BehaviorId.parse(n).name for n in self._seat_behavior}) != 1:
            raise ValueError(
                "shuffle_seats needs a symmetric game (every seat on one behavior name); this one "
                f"has {sorted(self._specs)}"
            )
        self.shuffle_seats = shuffle_seats
        #: the game seat each team plays this episode, per table (``[table, team]``)
        self.seat_of = np.tile(np.arange(self.num_seats), (len(self.tables), 1))
        self._team_of = self.seat_of.copy()
        self._pending_reward = np.zeros((len(self.tables), self.num_seats), dtype=np.float64)
        #: seats whose current episode has ended (reported in TerminalSteps)
        self._left = np.zeros((len(self.tables), self.num_seats), dtype=bool)
        self.episode_steps = np.zeros(len(self.tables), dtype=np.int64)
        self._steps: dict[str, tuple[DecisionSteps, TerminalSteps]] = {}
        self._deciding: dict[str, list[int]] = {}
        self._actions: dict[str, tuple[np.ndarray, np.ndarray] | None] = {}
        self._closed = False
        self.reset()

    # ----------------------------------------------------------------------- BaseEnv API
    @property
    def behavior_specs(self) -> Mapping[str, BehaviorSpec]:
        """Behavior name (``Name?team=N``) → spec, in seat order."""
        return dict(self._specs)

    def arena_of(self, behavior_name: str, agent_ids: np.ndarray) -> np.ndarray:
        """The table of each of ``agent_ids`` (agents of ``behavior_name``)."""
        self._spec(behavior_name)
        return np.asarray(agent_ids, dtype=np.int64) // self.num_seats

    def reset(self) -> None:
        """Start a new episode at every table; the first movers then await a decision."""
        self._pending_reward[:] = 0.0
        self._left[:] = False
        self.episode_steps[:] = 0
        decisions = {name: _Rows() for name in self._specs}
        for index in range(len(self.tables)):
            self._start_episode(index)
            self._add_decisions(index, decisions)
        self._publish(decisions, {name: _Rows() for name in self._specs})

    def step(self) -> None:
        """Every table plays the move set by ``set_actions``; finished tables restart."""
        if self._closed:
            raise RuntimeError(f"{type(self).__name__} is closed; create a new environment")
        moves = self._moves_by_table()
        decisions = {name: _Rows() for name in self._specs}
        terminals = {name: _Rows() for name in self._specs}
        for index, table in enumerate(self.tables):
            table.apply(moves.get(index, {}))
            self.episode_steps[index] += 1
            self._pending_reward[index] += table.take_rewards()[self.seat_of[index]]
            for seat, interrupted in table.take_departed().items():
                self._add_terminal(index, int(self._team_of[index, seat]), interrupted, terminals)
            still_playing = bool(table.acting())
            limit = self.max_episode_steps
            if still_playing and limit is not None and self.episode_steps[index] >= limit:
                for team in np.flatnonzero(~self._left[index]).tolist():
                    self._add_terminal(index, team, True, terminals)
                still_playing = False
            if not still_playing:
                self._restart(index, terminals)
            self._add_decisions(index, decisions)
        self._publish(decisions, terminals)

    def get_steps(self, behavior_name: str) -> tuple[DecisionSteps, TerminalSteps]:
        """The decision and terminal steps of ``behavior_name`` since the last step or reset."""
        self._spec(behavior_name)
        return self._steps[behavior_name]

    def set_actions(self, behavior_name: str, action: ActionTuple) -> None:
        """Actions for every agent of ``behavior_name``, aligned with its ``DecisionSteps``."""
        spec = self._spec(behavior_name).action_spec
        n = len(self._deciding[behavior_name])
        continuous = np.asarray(action.continuous, dtype=np.float32)
        discrete = np.asarray(action.discrete, dtype=np.int64)
        if continuous.size != n * spec.continuous_size or discrete.size != n * spec.discrete_size:
            raise ValueError(
                f"{behavior_name} needs continuous actions of shape {(n, spec.continuous_size)} "
                f"and discrete actions of shape {(n, spec.discrete_size)} (one row per agent of "
                f"its DecisionSteps); got {continuous.shape} and {discrete.shape}"
            )
        self._actions[behavior_name] = (
            continuous.reshape(n, spec.continuous_size),
            discrete.reshape(n, spec.discrete_size),
        )

    def set_action_for_agent(self, behavior_name: str, agent_id: int, action: ActionTuple) -> None:
        """The action of one agent of ``behavior_name`` (``ActionTuple`` arrays of one row)."""
        spec = self._spec(behavior_name).action_spec
        deciding = self._deciding[behavior_name]
        if agent_id not in deciding:
            raise KeyError(f"agent {agent_id} of {behavior_name} is not awaiting a decision")
        actions = self._actions.get(behavior_name)
        if actions is None:
            n = len(deciding)
            actions = (
                np.zeros((n, spec.continuous_size), np.float32),
                np.full((n, spec.discrete_size), -1, np.int64),
            )
            self._actions[behavior_name] = actions
        row = deciding.index(agent_id)
        actions[0][row] = np.asarray(action.continuous, dtype=np.float32).reshape(-1)
        actions[1][row] = np.asarray(action.discrete, dtype=np.int64).reshape(-1)

    def close(self) -> None:
        """Release every table; later steps raise."""
        if not self._closed:
            for table in self.tables:
                table.close()
        self._closed = True

    # ----------------------------------------------------------------------- helpers
    def _spec(self, behavior_name: str) -> BehaviorSpec:
        try:
            return self._specs[behavior_name]
        except KeyError:
            raise KeyError(
                f"unknown behavior {behavior_name!r}; {type(self).__name__} has {sorted(self._specs)}"
            ) from None

    def _moves_by_table(self) -> dict[int, dict[int, tuple[np.ndarray, np.ndarray]]]:
        """Each table's ``seat → action`` from the actions set since the last step."""
        moves: dict[int, dict[int, tuple[np.ndarray, np.ndarray]]] = {}
        for name, deciding in self._deciding.items():
            if not deciding:
                continue
            actions = self._actions.get(name)
            if actions is None:
                raise ValueError(
                    f"no actions set for {name}: {len(deciding)} agent(s) await a decision; "
                    "call set_actions before step"
                )
            mask = self._steps[name][0].action_mask
            if mask is not None:
                self._check_legal(name, deciding, actions[1], mask)
            for row, agent_id in enumerate(deciding):
                table, team = divmod(agent_id, self.num_seats)
                seat = int(self.seat_of[table, team])
                moves.setdefault(table, {})[seat] = (actions[0][row], actions[1][row])
        self._actions = {}
        return moves

    @staticmethod
    def _check_legal(
        name: str, agent_ids: list[int], discrete: np.ndarray, mask: list[np.ndarray]
    ) -> None:
        """Raise on the first action outside its branch or blocked by the mask."""
        rows = np.arange(len(agent_ids))
        for branch, blocked in enumerate(mask):
            choice = discrete[:, branch]
            outside = (choice < 0) | (choice >= blocked.shape[1])
            illegal = outside | blocked[rows, np.clip(choice, 0, blocked.shape[1] - 1)]
            if illegal.any():
                row = int(np.flatnonzero(illegal)[0])
                legal = np.flatnonzero(~blocked[row]).tolist()
                raise ValueError(
                    f"{name} agent {agent_ids[row]}: action {int(choice[row])} of branch {branch} "
                    f"is not legal now (legal: {legal}); mask actions with "
                    "DecisionSteps.action_mask"
                )

    # ``_pending_reward``, ``_left`` and agent ids are by team; the table speaks of its seats
    def _add_terminal(self, table: int, team: int, interrupted: bool, terminals: dict) -> None:
        terminals[self._seat_behavior[team]].add(
            obs=self.tables[table].observe(int(self.seat_of[table, team])),
            reward=float(self._pending_reward[table, team]),
            agent_id=table * self.num_seats + team,
            interrupted=interrupted,
        )
        self._pending_reward[table, team] = 0.0
        self._left[table, team] = True

    def _restart(self, table: int, terminals: dict[str, _Rows]) -> None:
        """End the episode of teams the table did not report as gone, then start the next one."""
        for team in np.flatnonzero(~self._left[table]).tolist():
            self._add_terminal(table, team, False, terminals)
        self._start_episode(table)
        self._pending_reward[table] = 0.0
        self._left[table] = False
        self.episode_steps[table] = 0

    def _start_episode(self, table: int) -> None:
        """Deal the seats (when shuffled) and reset the table."""
        rng = self._rngs[table]
        if self.shuffle_seats:
            self.seat_of[table] = rng.permutation(self.num_seats)
            self._team_of[table, self.seat_of[table]] = np.arange(self.num_seats)
        game = self.tables[table]
        game.reset(rng)
        game.take_rewards()
        game.take_departed()

    def _add_decisions(self, table: int, decisions: dict[str, _Rows]) -> None:
        game = self.tables[table]
        for seat in game.acting():
            team = int(self._team_of[table, seat])
            decisions[self._seat_behavior[team]].add(
                obs=game.observe(seat),
                reward=float(self._pending_reward[table, team]),
                agent_id=table * self.num_seats + team,
                legal=game.legal(seat),
            )
            self._pending_reward[table, team] = 0.0

    def _publish(self, decisions: dict[str, _Rows], terminals: dict[str, _Rows]) -> None:
        self._deciding = {}
        for name, spec in self._specs.items():
            rows = decisions[name]
            n = len(rows.agent_id)
            self._deciding[name] = rows.agent_id
            decision = DecisionSteps(
                obs=[_stack(rows.obs, spec)],
                reward=np.asarray(rows.reward, dtype=np.float32),
                agent_id=np.asarray(rows.agent_id, dtype=np.int32),
                action_mask=_masks(rows.legal, spec.action_spec, n),
                group_id=np.zeros(n, dtype=np.int32),
                group_reward=np.zeros(n, dtype=np.float32),
            )
            ended = terminals[name]
            if ended.agent_id:
                terminal = TerminalSteps(
                    obs=[_stack(ended.obs, spec)],
                    reward=np.asarray(ended.reward, dtype=np.float32),
                    interrupted=np.asarray(ended.interrupted, dtype=bool),
                    agent_id=np.asarray(ended.agent_id, dtype=np.int32),
                    group_id=np.zeros(len(ended.agent_id), dtype=np.int32),
                    group_reward=np.zeros(len(ended.agent_id), dtype=np.float32),
                )
            else:
                terminal = TerminalSteps.empty(spec)
            self._steps[name] = (decision, terminal)


def _stack(rows: list[np.ndarray], spec: BehaviorSpec) -> np.ndarray:
    shape = spec.observation_specs[0].shape
    if not rows:
        return np.zeros((0, *shape), dtype=np.float32)
    return np.stack(rows).astype(np.float32, copy=False).reshape(len(rows), *shape)


def _masks(
    legal: list[np.ndarray | None], action_spec: ActionSpec, n: int
) -> list[np.ndarray] | None:
    """BaseEnv masks (True: blocked) per branch from per-agent legal arrays (True: legal)."""
    branches = action_spec.discrete_branches
    if not branches:
        return None
    blocked = np.zeros((n, sum(branches)), dtype=bool)
    for row, allowed in enumerate(legal):
        if allowed is not None:
            blocked[row] = ~np.asarray(allowed, dtype=bool)
    edges = np.cumsum(branches)[:-1]
    return np.split(blocked, edges, axis=1)
