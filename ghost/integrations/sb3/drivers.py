"""How ``GhostVecEnv`` plays a game: one *driver* per kind of game.

Both drivers expose one VecEnv index per learning-team agent and step the other teams with their
fielded actors, each distinct actor once per step over every row it plays (``act_in_batches``).

- ``RealTimeDriver``: a ``BaseEnv`` whose agents all decide every step (the built-in games, most
  Unity builds): index ``i`` is the ``i``-th agent of the learning team.
- ``TurnDriver``: a ``SeatedGame`` (tic-tac-toe, connect four, OpenSpiel): index ``i`` is table
  ``i``, driven directly through its ``Table``. After the learner's move the opponents move,
  batched over the tables where they are to move, until the learner is to move again or the game
  is over, so SB3 always acts for the side to move. Rewards earned meanwhile belong to the
  learner's last move.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import attrs
import numpy as np
from mlagents_envs.base_env import ActionTuple, BaseEnv, BehaviorSpec, DecisionSteps

from envs.behavior_id import BehaviorId
from envs.seated_game import SeatedGame
from envs.stepping import arenas_of
from ghost.core.ghost_cycle import MatchResult, finished_matches
from ghost.core.opponents import opponent_slots
from ghost.exceptions import EnvironmentOutputError, EnvironmentSpecError
from ghost.integrations.sb3.actors import Actor, RandomActor, act_in_batches
from ghost.integrations.sb3.spaces import allowed_from_blocked, flat_observations, to_action_tuple

#: restarts of a table whose game ends before the learner's first move, before giving up
_MAX_RESTARTS = 100


@attrs.define
class StepOutcome:
    """What one step of every index gave the learner."""

    obs: np.ndarray  #: next observations (a finished episode's index: its next episode's first)
    rewards: np.ndarray
    dones: np.ndarray
    truncated: np.ndarray  #: done because the episode was cut off, not finished
    final_obs: dict[int, np.ndarray]  #: index → last observation of its finished episode
    results: list[MatchResult]  #: the learner's finished matches, one per match


def _one_behavior(names: list[BehaviorId]) -> str:
    distinct = sorted({behavior.name for behavior in names})
    if len(distinct) != 1:
        raise EnvironmentSpecError(
            f"GhostVecEnv trains one SB3 policy, so every team must be one behavior name; this "
            f"game has {', '.join(distinct)} (asymmetric games need one learner per behavior: "
            "use ghost-learn)"
        )
    if len(names) < 2:
        raise EnvironmentSpecError(
            f"behavior {distinct[0]} has a single team; self-play needs at least two "
            "(Name?team=0 and Name?team=1)"
        )
    return distinct[0]


class _Driver:
    """What both drivers share: teams, spec, fielded actors and the ghost step count."""

    def __init__(self, *, teams: list[int], name: str, spec: BehaviorSpec, seed: int) -> None:
        self.teams = teams
        self.behavior_name = name
        self.spec = spec
        self.learning_team = teams[0]
        self.num_envs = 0
        fallback = RandomActor(spec.action_spec, np.random.default_rng(seed + 104729))
        #: team → its actors while ghosted (random legal moves until the cycle fields some)
        self.actors: dict[int, list[Actor]] = {team: [fallback] for team in teams}
        #: team → agent decisions made by ghosted agents since the last ``take_ghost_steps``
        self.ghost_steps: Counter[int] = Counter()

    def take_ghost_steps(self) -> dict[int, int]:
        steps, self.ghost_steps = dict(self.ghost_steps), Counter()
        return steps

    def _act(self, team: int, obs: np.ndarray, allowed: Any, arenas: np.ndarray) -> ActionTuple:
        actors = self.actors[team]
        self.ghost_steps[team] += len(obs)
        return act_in_batches(actors, opponent_slots(arenas, len(actors)), obs, allowed)


class RealTimeDriver(_Driver):
    """A ``BaseEnv`` in lockstep: every agent decides every step (see the module docstring)."""

    def __init__(self, env: BaseEnv, *, seed: int) -> None:
        ids = [BehaviorId.parse(name) for name in env.behavior_specs]
        name = _one_behavior(ids)
        self.env = env
        self.raw_names = {
            behavior.team: str(raw) for behavior, raw in zip(ids, env.behavior_specs, strict=True)
        }
        specs = {team: env.behavior_specs[raw] for team, raw in self.raw_names.items()}
        super().__init__(teams=sorted(self.raw_names), name=name, spec=specs[min(specs)], seed=seed)
        self._decisions: dict[int, DecisionSteps] = {}
        self._index: dict[int, int] = {}

    def reset(self) -> np.ndarray:
        self.env.reset()
        self._read_decisions()
        decision = self._decisions[self.learning_team]
        if self.num_envs and len(decision) != self.num_envs:
            raise EnvironmentSpecError(
                f"team {self.learning_team} has {len(decision)} agents but the VecEnv has "
                f"{self.num_envs} indices; every team needs as many agents"
            )
        self.num_envs = len(decision)
        self._index = {agent: i for i, agent in enumerate(decision.agent_id.tolist())}
        return flat_observations(decision.obs)

    def allowed(self) -> np.ndarray:
        decision = self._decisions[self.learning_team]
        masks = allowed_from_blocked(decision.action_mask, len(decision), self.spec.action_spec)
        out = np.ones_like(masks)
        out[self._rows(decision)] = masks
        return out

    def step(self, actions: np.ndarray) -> StepOutcome:
        learner = self._decisions[self.learning_team]
        order = self._rows(learner)
        raw = self.raw_names
        self.env.set_actions(
            raw[self.learning_team],
            to_action_tuple(np.asarray(actions)[order], self.spec.action_spec),
        )
        for team in self.teams:
            decision = self._decisions[team]
            if team == self.learning_team or not len(decision):
                continue
            arenas = arenas_of(self.env, raw[team], decision.agent_id, 0)
            allowed = (
                allowed_from_blocked(decision.action_mask, len(decision), self.spec.action_spec)
                if decision.action_mask is not None
                else None
            )
            obs = flat_observations(decision.obs)
            self.env.set_actions(raw[team], self._act(team, obs, allowed, arenas))
        self.env.step()
        terminal = self.env.get_steps(raw[self.learning_team])[1]
        self._read_decisions()
        return self._outcome(terminal)

    def _outcome(self, terminal: Any) -> StepOutcome:
        n = self.num_envs
        rewards = np.zeros(n, dtype=np.float32)
        dones = np.zeros(n, dtype=bool)
        truncated = np.zeros(n, dtype=bool)
        final_obs: dict[int, np.ndarray] = {}
        results: list[MatchResult] = []
        if len(terminal):
            rows = self._rows(terminal)
            final_rewards = terminal.reward + terminal.group_reward
            rewards[rows] = final_rewards
            dones[rows] = True
            truncated[rows] = terminal.interrupted
            for index, obs in zip(rows.tolist(), flat_observations(terminal.obs), strict=True):
                final_obs[index] = obs
            results = finished_matches(
                agent_ids=terminal.agent_id, group_ids=terminal.group_id, rewards=final_rewards,
                interrupted=terminal.interrupted,
                arenas=arenas_of(self.env, self.raw_names[self.learning_team], terminal.agent_id, 0),
            )  # fmt: skip
        decision = self._decisions[self.learning_team]
        rows = self._rows(decision)
        if len(rows) != n:
            raise EnvironmentOutputError(
                f"{self.raw_names[self.learning_team]}: {len(rows)} of {n} agents requested a "
                "decision this step; GhostVecEnv needs every agent to decide every step (a "
                "turn-based game must be a SeatedGame)"
            )
        ongoing = ~dones[rows]
        rewards[rows[ongoing]] += (decision.reward + decision.group_reward)[ongoing]
        decided = flat_observations(decision.obs)
        obs = np.zeros((n, decided.shape[1]), dtype=np.float32)
        obs[rows] = decided
        return StepOutcome(obs=obs, rewards=rewards, dones=dones, truncated=truncated,
                           final_obs=final_obs, results=results)  # fmt: skip

    def _rows(self, steps: Any) -> np.ndarray:
        """The VecEnv index of each row of ``steps`` (learning-team agents)."""
        try:
            return np.asarray([self._index[a] for a in steps.agent_id.tolist()], dtype=np.int64)
        except KeyError as error:
            raise EnvironmentOutputError(
                f"{self.raw_names[self.learning_team]}: agent {error.args[0]} appeared after the "
                "reset; GhostVecEnv needs a fixed set of agents (one VecEnv index each)"
            ) from None

    def _read_decisions(self) -> None:
        self._decisions = {team: self.env.get_steps(raw)[0] for team, raw in self.raw_names.items()}

    def close(self) -> None:
        self.env.close()


class TurnDriver(_Driver):
    """A ``SeatedGame`` played table by table (see the module docstring)."""

    def __init__(self, game: SeatedGame, *, seed: int) -> None:
        seats = [seat.behavior for seat in game.seats]
        name = _one_behavior(seats)
        teams = [behavior.team for behavior in seats]
        if len(set(teams)) != len(teams):
            raise EnvironmentSpecError(
                f"{name}: two seats play for one team ({teams}); GhostVecEnv needs one seat per "
                "team"
            )
        spec = game.behavior_specs[seats[0].full_name]
        super().__init__(teams=sorted(teams), name=name, spec=spec, seed=seed)
        self.game = game
        self.tables = game.tables
        self.seat_of = {team: seat for seat, team in enumerate(teams)}
        self.team_of = dict(enumerate(teams))
        self.max_moves = game.max_episode_steps
        self.num_envs = len(self.tables)
        self._rngs = [
            np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(self.num_envs)
        ]
        self._moves = np.zeros(self.num_envs, dtype=np.int64)
        self._reward = np.zeros(self.num_envs, dtype=np.float64)
        self._ended = np.zeros(self.num_envs, dtype=bool)
        self._interrupted = np.zeros(self.num_envs, dtype=bool)
        self._width = sum(spec.action_spec.discrete_branches)

    @property
    def learner_seat(self) -> int:
        return self.seat_of[self.learning_team]

    def reset(self) -> np.ndarray:
        for index in range(self.num_envs):
            self._restart(index)
        self._play_until_learner(None)
        return self._observations()

    def allowed(self) -> np.ndarray:
        seat = self.learner_seat
        rows = [self.tables[i].legal(seat) for i in range(self.num_envs)]
        return np.stack([
            np.ones(self._width, dtype=bool) if row is None else np.asarray(row, dtype=bool)
            for row in rows
        ])  # fmt: skip

    def step(self, actions: np.ndarray) -> StepOutcome:
        seat = self.learner_seat
        n = self.num_envs
        mine = to_action_tuple(actions, self.spec.action_spec)
        # at simultaneous moves the others choose alongside the learner
        together = self._opponent_moves(list(range(n)))
        for index in range(n):
            move = together.get(index, {})
            move[seat] = (mine.continuous[index], mine.discrete[index])
            self._apply(index, move)
        outcome = StepOutcome(
            obs=np.zeros(0), rewards=np.zeros(n, dtype=np.float32), dones=np.zeros(n, dtype=bool),
            truncated=np.zeros(n, dtype=bool), final_obs={}, results=[],
        )  # fmt: skip
        self._play_until_learner(outcome)
        ongoing = ~outcome.dones
        outcome.rewards[ongoing] = self._reward[ongoing]
        # a new game's rewards before the learner's first move belong to no transition
        self._reward[:] = 0.0
        done = np.flatnonzero(outcome.dones)
        outcome.results = finished_matches(
            agent_ids=done * len(self.seat_of) + seat, group_ids=np.zeros(len(done)),
            rewards=outcome.rewards[done], interrupted=outcome.truncated[done], arenas=done,
        )  # fmt: skip
        outcome.obs = self._observations()
        return outcome

    def _play_until_learner(self, outcome: StepOutcome | None) -> None:
        """Opponents move, one batch per team and actor each round, until the learner is to
        move at every table. A finished game is restarted at once, so its opening moves share
        the round's batch; the first game to finish at a table in a step is the learner's and
        goes into ``outcome``."""
        seat = self.learner_seat
        restarts = np.zeros(self.num_envs, dtype=np.int64)
        while True:
            for index in np.flatnonzero(self._ended).tolist():
                if outcome is not None and not outcome.dones[index]:
                    outcome.dones[index] = True
                    outcome.rewards[index] = self._reward[index]
                    outcome.truncated[index] = self._interrupted[index]
                    outcome.final_obs[index] = self.tables[index].observe(seat)
                restarts[index] += 1
                if restarts[index] > _MAX_RESTARTS:
                    raise EnvironmentOutputError(
                        f"{self.behavior_name}: {_MAX_RESTARTS} games in a row ended before "
                        f"team {self.learning_team} (seat {seat}) had a move"
                    )
                self._restart(index)
            waiting = [i for i, table in enumerate(self.tables) if seat not in table.acting()]
            if not waiting:
                return
            moves = self._opponent_moves(waiting)
            for index in waiting:
                self._apply(index, moves.get(index, {}))

    def _restart(self, index: int) -> None:
        table = self.tables[index]
        table.reset(self._rngs[index])
        table.take_rewards()
        table.take_departed()
        self._moves[index] = 0
        self._reward[index] = 0.0
        self._ended[index] = self._interrupted[index] = False

    def _opponent_moves(self, tables: list[int]) -> dict[int, dict[int, tuple[Any, Any]]]:
        """The ghosted seats' moves at ``tables``, one batch per team (and actor)."""
        learner = self.learner_seat
        by_team: dict[int, list[tuple[int, int]]] = {}
        for index in tables:
            for seat in self.tables[index].acting():
                if seat != learner:
                    by_team.setdefault(self.team_of[seat], []).append((index, seat))
        moves: dict[int, dict[int, tuple[Any, Any]]] = {}
        for team, rows in by_team.items():
            obs = np.stack([self.tables[i].observe(s) for i, s in rows]).astype(np.float32)
            allowed = None
            if self._width:
                legal = [self.tables[i].legal(s) for i, s in rows]
                allowed = np.stack([
                    np.ones(self._width, dtype=bool) if row is None else np.asarray(row, bool)
                    for row in legal
                ])  # fmt: skip
            arenas = np.asarray([i for i, _ in rows], dtype=np.int64)
            actions = self._act(team, obs, allowed, arenas)
            for row, (index, seat) in enumerate(rows):
                moves.setdefault(index, {})[seat] = (actions.continuous[row], actions.discrete[row])
        return moves

    def _apply(self, index: int, move: dict[int, tuple[Any, Any]]) -> None:
        table = self.tables[index]
        seat = self.learner_seat
        table.apply(move)
        self._moves[index] += 1
        self._reward[index] += table.take_rewards()[seat]
        departed = table.take_departed()
        if seat in departed:
            self._ended[index] = True
            self._interrupted[index] = departed[seat]
        elif not table.acting():
            self._ended[index] = True
        elif self.max_moves is not None and self._moves[index] >= self.max_moves:
            self._ended[index] = self._interrupted[index] = True

    def _observations(self) -> np.ndarray:
        seat = self.learner_seat
        return np.stack([table.observe(seat) for table in self.tables]).astype(np.float32)

    def close(self) -> None:
        self.game.close()
