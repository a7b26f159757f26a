"""The games a fake Unity build plays: small numpy simulations, vectorised over training areas.

Each area is an independent match, stepped in lockstep with the others; every random draw comes
from one generator seeded with the trainer's seed, so a run is reproducible. The player
(``fake_player``) owns the protocol: agent ids, rewards since the last decision, terminal infos;
a game only knows positions, actions, rewards and which areas ended.

A game class offers:

- ``name`` and ``behaviors`` (one ``BehaviorLayout`` per behavior name, agents per area, sizes);
- ``Game(num_areas=..., seed=...)``;
- ``reset(areas, parameters)``: start a new episode in ``areas``, reading environment parameters
  with ``parameters.get_with_default(key, default)`` once per area (C#'s
  ``Academy.Instance.EnvironmentParameters.GetWithDefault``, where a sampler draws anew per read);
- ``observations()`` and ``action_masks()``: per behavior, arrays ``(areas, agents, size)``;
  masks are ``True`` where an action is forbidden (as C#'s ``SetActionEnabled(..., false)``
  writes them), or ``None`` for a behavior that never masks;
- ``step(actions)``: ``actions[b] = (continuous, discrete)``, arrays ``(areas, agents, size)``;
  returns a ``StepOutcome``. ``episode_steps`` counts each area's steps since its reset.

``pong`` (symmetric): ``Pong?team=0`` and ``Pong?team=1``, one paddle each per area, one discrete
branch of 3 (0 down, 1 stay, 2 up); "up" is masked at the top wall and "down" at the bottom.
Observation (6), in the paddle's own frame (team 1 sees x mirrored, so both teams share one
spec): own paddle y, other paddle y, ball x, ball y, ball velocity x and y (in units of the base
ball speed). A point scored ends the episode for both: scorer +1, the other -1. After
``Pong.MAX_STEP`` (300) steps both are interrupted (max step reached) with reward 0. Parameter
``ball_speed`` (default 1) scales the ball's speed. A paddle that follows the ball beats one that
moves at random (``test_fake_player`` checks).

``strikers`` (asymmetric): per area two ``Striker?team=0`` in one multi-agent group against one
``Goalie?team=1`` guarding the goal at ``x = +1`` (mouth ``|y| < goal_width / 2``, parameter
``goal_width``, default 0.8). Strikers: 2 continuous actions (velocity), observation (10): own
x, y, teammate x, y, ball x, y, ball velocity x, y, goalie y, share of time left. Goalie: hybrid
actions, 1 continuous (velocity along y) and one discrete branch of 2 (1 = dive: longer reach,
half speed); observation (6): own y, ball x, y, ball velocity x, y, share of time left. Results:

- goal: strikers win: group reward +1 to each striker, goalie reward -1;
- ``Strikers.MAX_STEP`` (200) steps without a goal: the goalie wins (a real result, not an
  interruption): goalie +1, group reward -1 to each striker.

Strikers also get an individual existential reward of ``-1 / MAX_STEP`` every step (the ML-Agents
soccer convention), so an episode's individual sum stays above -1 and the sign of the group reward
says who won.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np


@dataclass(frozen=True)
class BehaviorLayout:
    """One behavior name of a game: how many agents each area holds and what they see and do."""

    name: str
    agents_per_area: int
    observation_size: int
    continuous_size: int = 0
    discrete_branches: tuple[int, ...] = ()
    #: the behavior's agents in one area form one multi-agent group (a SimpleMultiAgentGroup)
    grouped: bool = False


@dataclass(frozen=True)
class StepOutcome:
    """What one step did: rewards per behavior ``(areas, agents)`` and the areas that ended."""

    rewards: list[np.ndarray]
    group_rewards: list[np.ndarray]
    ended: np.ndarray
    #: ended by the step limit rather than by a result (C#'s EpisodeInterrupted)
    interrupted: np.ndarray


class ParameterSource(Protocol):
    def get_with_default(self, key: str, default: float) -> float: ...


Actions = Sequence[tuple[np.ndarray, np.ndarray]]


class Pong:
    """Two paddles per area; the ball bounces off the top and bottom walls and the paddles."""

    name = "pong"
    MAX_STEP = 300
    PADDLE_X = 0.9
    PADDLE_HALF = 0.2
    PADDLE_SPEED = 0.06
    BALL_SPEED = 0.03
    behaviors = (
        BehaviorLayout("Pong?team=0", 1, 6, discrete_branches=(3,)),
        BehaviorLayout("Pong?team=1", 1, 6, discrete_branches=(3,)),
    )

    def __init__(self, *, num_areas: int, seed: int) -> None:
        self.num_areas = num_areas
        self._rng = np.random.default_rng(seed)
        self.paddle_y = np.zeros((num_areas, 2))
        self.ball = np.zeros((num_areas, 2))
        self.ball_velocity = np.zeros((num_areas, 2))
        self.speed = np.full(num_areas, self.BALL_SPEED)
        self.episode_steps = np.zeros(num_areas, np.int64)

    def reset(self, areas: np.ndarray, parameters: ParameterSource) -> None:
        for area in areas:
            speed = self.BALL_SPEED * parameters.get_with_default("ball_speed", 1.0)
            angle = self._rng.uniform(-np.pi / 4, np.pi / 4)
            side = self._rng.choice((-1.0, 1.0))
            self.speed[area] = speed
            self.ball[area] = (0.0, self._rng.uniform(-0.5, 0.5))
            self.ball_velocity[area] = (side * speed * np.cos(angle), speed * np.sin(angle))
        self.paddle_y[areas] = 0.0
        self.episode_steps[areas] = 0

    def observations(self) -> list[np.ndarray]:
        scale = 1.0 / self.BALL_SPEED
        views = []
        for team, mirror in ((0, 1.0), (1, -1.0)):
            view = np.stack(
                [
                    self.paddle_y[:, team],
                    self.paddle_y[:, 1 - team],
                    mirror * self.ball[:, 0],
                    self.ball[:, 1],
                    mirror * self.ball_velocity[:, 0] * scale,
                    self.ball_velocity[:, 1] * scale,
                ],
                axis=1,
            )
            views.append(view[:, None, :].astype(np.float32))
        return views

    def action_masks(self) -> list[np.ndarray | None]:
        at_top = self.paddle_y + self.PADDLE_HALF >= 1.0 - 1e-6
        at_bottom = self.paddle_y - self.PADDLE_HALF <= -1.0 + 1e-6
        masks = []
        for team in (0, 1):
            mask = np.zeros((self.num_areas, 1, 3), bool)
            mask[:, 0, 0] = at_bottom[:, team]
            mask[:, 0, 2] = at_top[:, team]
            masks.append(mask)
        return masks

    def step(self, actions: Actions) -> StepOutcome:
        moves = np.stack([actions[team][1][:, 0, 0] for team in (0, 1)], axis=1) - 1
        limit = 1.0 - self.PADDLE_HALF
        self.paddle_y = np.clip(self.paddle_y + self.PADDLE_SPEED * moves, -limit, limit)
        previous_x = self.ball[:, 0].copy()
        self.ball += self.ball_velocity
        self._bounce_off_walls()
        self._bounce_off_paddle(0, previous_x)
        self._bounce_off_paddle(1, previous_x)
        self.episode_steps += 1
        scored_by_0 = self.ball[:, 0] > 1.0
        scored_by_1 = self.ball[:, 0] < -1.0
        scored = scored_by_0 | scored_by_1
        timeout = ~scored & (self.episode_steps >= self.MAX_STEP)
        points = scored_by_0.astype(np.float64) - scored_by_1
        rewards = [points[:, None].astype(np.float32), -points[:, None].astype(np.float32)]
        no_group = np.zeros((self.num_areas, 1), np.float32)
        return StepOutcome(rewards, [no_group, no_group], scored | timeout, timeout)

    def _bounce_off_walls(self) -> None:
        y = self.ball[:, 1]
        over = np.abs(y) > 1.0
        self.ball[over, 1] = np.sign(y[over]) * 2.0 - y[over]
        self.ball_velocity[over, 1] *= -1.0

    def _bounce_off_paddle(self, team: int, previous_x: np.ndarray) -> None:
        # team 0 defends x = -PADDLE_X, team 1 defends x = +PADDLE_X
        side = -1.0 if team == 0 else 1.0
        line = side * self.PADDLE_X
        crossed = (side * previous_x < self.PADDLE_X) & (side * self.ball[:, 0] >= self.PADDLE_X)
        offset = (self.ball[:, 1] - self.paddle_y[:, team]) / self.PADDLE_HALF
        hit = crossed & (np.abs(offset) <= 1.0)
        if not hit.any():
            return
        self.ball[hit, 0] = 2.0 * line - self.ball[hit, 0]
        # the further from the paddle's centre, the steeper the return
        angle = offset[hit] * np.pi / 4
        speed = self.speed[hit]
        self.ball_velocity[hit, 0] = -side * speed * np.cos(angle)
        self.ball_velocity[hit, 1] = speed * np.sin(angle)


class Strikers:
    """Two strikers (one group) shoot at the goal of one goalie, in every area."""

    name = "strikers"
    MAX_STEP = 200
    STRIKER_SPEED = 0.05
    GOALIE_X = 0.9
    GOALIE_SPEED = 0.05
    REACH = 0.12
    DIVE_REACH = 0.25
    KICK_RADIUS = 0.1
    KICK_SPEED = 0.1
    FRICTION = 0.95
    behaviors = (
        BehaviorLayout("Striker?team=0", 2, 10, continuous_size=2, grouped=True),
        BehaviorLayout("Goalie?team=1", 1, 6, continuous_size=1, discrete_branches=(2,)),
    )

    def __init__(self, *, num_areas: int, seed: int) -> None:
        self.num_areas = num_areas
        self._rng = np.random.default_rng(seed)
        self.strikers = np.zeros((num_areas, 2, 2))
        self.goalie_y = np.zeros(num_areas)
        self.ball = np.zeros((num_areas, 2))
        self.ball_velocity = np.zeros((num_areas, 2))
        self.goal_half_width = np.full(num_areas, 0.4)
        self.episode_steps = np.zeros(num_areas, np.int64)

    def reset(self, areas: np.ndarray, parameters: ParameterSource) -> None:
        for area in areas:
            self.goal_half_width[area] = 0.5 * parameters.get_with_default("goal_width", 0.8)
            self.strikers[area] = ((-0.6, -0.4), (-0.6, 0.4)) + self._rng.normal(0, 0.05, (2, 2))
            self.ball[area] = (-0.2, self._rng.uniform(-0.3, 0.3))
        self.goalie_y[areas] = 0.0
        self.ball_velocity[areas] = 0.0
        self.episode_steps[areas] = 0

    def observations(self) -> list[np.ndarray]:
        time_left = 1.0 - self.episode_steps / self.MAX_STEP
        velocity = self.ball_velocity / self.KICK_SPEED
        own = self.strikers
        mate = self.strikers[:, ::-1]
        shared = np.concatenate(
            [self.ball, velocity, self.goalie_y[:, None], time_left[:, None]], 1
        )
        striker_view = np.concatenate([own, mate, np.repeat(shared[:, None], 2, axis=1)], axis=2)
        goalie_view = np.concatenate(
            [self.goalie_y[:, None], self.ball, velocity, time_left[:, None]], 1
        )
        return [striker_view.astype(np.float32), goalie_view[:, None].astype(np.float32)]

    def action_masks(self) -> list[np.ndarray | None]:
        return [None, None]

    def step(self, actions: Actions) -> StepOutcome:
        striker_moves = np.clip(actions[0][0], -1.0, 1.0)
        self.strikers = np.clip(self.strikers + self.STRIKER_SPEED * striker_moves, -1.0, 1.0)
        dive = actions[1][1][:, 0, 0] == 1
        goalie_move = np.clip(actions[1][0][:, 0, 0], -1.0, 1.0) * np.where(dive, 0.5, 1.0)
        self.goalie_y = np.clip(self.goalie_y + self.GOALIE_SPEED * goalie_move, -1.0, 1.0)
        self._kick()
        self.ball += self.ball_velocity
        self.ball_velocity *= self.FRICTION
        self._save(np.where(dive, self.DIVE_REACH, self.REACH))
        goal = (self.ball[:, 0] >= 1.0) & (np.abs(self.ball[:, 1]) < self.goal_half_width)
        self._bounce_off_walls(goal)
        self.episode_steps += 1
        timeout = ~goal & (self.episode_steps >= self.MAX_STEP)
        result = goal.astype(np.float32) - timeout
        existential = np.full((self.num_areas, 2), -1.0 / self.MAX_STEP, np.float32)
        rewards = [existential, -result[:, None]]
        group_rewards = [
            np.repeat(result[:, None], 2, axis=1),
            np.zeros((self.num_areas, 1), np.float32),
        ]
        return StepOutcome(rewards, group_rewards, goal | timeout, np.zeros(self.num_areas, bool))

    def _kick(self) -> None:
        for striker in (0, 1):
            away = self.ball - self.strikers[:, striker]
            distance = np.linalg.norm(away, axis=1)
            kicked = distance < self.KICK_RADIUS
            if kicked.any():
                direction = away[kicked] / np.maximum(distance[kicked], 1e-6)[:, None]
                self.ball_velocity[kicked] = self.KICK_SPEED * direction

    def _save(self, reach: np.ndarray) -> None:
        goalie = np.stack([np.full(self.num_areas, self.GOALIE_X), self.goalie_y], axis=1)
        distance = np.linalg.norm(self.ball - goalie, axis=1)
        saved = (distance < reach) & (self.ball_velocity[:, 0] > 0)
        if saved.any():
            self.ball_velocity[saved, 0] = -self.KICK_SPEED
            self.ball_velocity[saved, 1] = self._rng.uniform(-0.05, 0.05, saved.sum())

    def _bounce_off_walls(self, goal: np.ndarray) -> None:
        for axis in (0, 1):
            value = self.ball[:, axis]
            over = (np.abs(value) > 1.0) & ~goal
            self.ball[over, axis] = np.sign(value[over]) * 2.0 - value[over]
            self.ball_velocity[over, axis] *= -1.0
