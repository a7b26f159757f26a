"""Strikers vs Goalie: an asymmetric game, two strikers (team 0) against one goalie (team 1).

The field and ball physics are SoccerTwos' (``envs.soccer``), with one goal, at ``+x``, of mouth
``|y| < GOAL_Y``; every other stretch of wall bounces the ball. An episode ends when

- the ball enters the goal: strikers win (+1 each, goalie -1);
- the goalie saves: it touched the ball last and the ball crossed ``SAVE_LINE`` (deep in the
  strikers' half) before a striker touched it again: goalie wins (+1, strikers -1 each);
- ``max_episode_steps`` (default 200) pass: the goalie held out, so the goalie wins. This is a
  real result, not an interruption: running the clock out is a goalie's way to win.

Rewards are individual (no groups). As in soccer, small potential-based shapings help PPO start:
every player earns ``approach_reward`` (default 0.2) × its approach to the ball (capped at
``soccer.APPROACH_RANGE``, ±0.2 per episode at most), and the ball's progress toward the goal pays
``ball_progress_reward`` (default 0.1) × progress / (``FIELD_X - SAVE_LINE``) to each striker and
costs the goalie as much. One step's shaping stays below 0.1, so the last step's sign is the result.

Behaviors differ in observations and actions:

``Striker?team=0`` (2 per arena): two discrete branches of 3 (move along x and y, as in soccer).
Observation (15): own position (2), own velocity (2), ball position (2), ball velocity (2), ball
minus own position (2), teammate position (2), goalie position (2), share of time left (1).

``Goalie?team=1`` (1 per arena): branches (3, 3, 2): move along own x and y, and *dive* (1: reach
``DIVE_CONTACT`` instead of ``soccer.CONTACT`` this step, at ``DIVE_SPEED_SHARE`` of its speed
``GOALIE_SPEED``).
Observation (13), in its own frame (its goal at ``-x``): own position (2), ball position (2),
ball velocity (2), ball minus own position (2), the strikers' positions (4), share of time
left (1).
"""

from __future__ import annotations

import numpy as np
from mlagents_envs.base_env import ActionSpec

from envs.scripted import RandomPolicy, ScriptedPolicy, move_branch
from envs.soccer import (
    APPROACH_RANGE,
    CONTACT,
    FIELD_X,
    FIELD_Y,
    KICK_SPEED,
    PLAYER_SPEED,
    approach_distance,
    attack_target,
    bounce,
    kick_and_roll,
    move_players,
    steer_to,
)
from envs.vector_game import Role, RoleActions, VectorGame, mix_seed

GOAL_Y = 2.2
SAVE_LINE = -FIELD_X / 2
GOALIE_SPEED = 0.8 * PLAYER_SPEED
DIVE_CONTACT = 0.7
DIVE_SPEED_SHARE = 0.5
STRIKER_OBS = 15
GOALIE_OBS = 13
#: strikers see the world as is; the goalie sees it rotated by 180 degrees
FRAME = np.array([1.0, 1.0, -1.0])
#: final rewards per slot when the strikers score; a goalie win is the negation
STRIKERS_SCORE = np.array([1.0, 1.0, -1.0])


class StrikersVsGoalie(VectorGame):
    """Two strikers try to score past one goalie before time runs out; see the module docstring.

    Args:
        approach_reward: scale of the approach-the-ball shaping (0 turns it off).
        ball_progress_reward: scale of the ball-progress shaping (0 turns it off).
    """

    ROLES = (
        Role(
            name="Striker",
            team=0,
            slots=2,
            obs_size=STRIKER_OBS,
            action_spec=ActionSpec.create_discrete((3, 3)),
        ),
        Role(
            name="Goalie",
            team=1,
            slots=1,
            obs_size=GOALIE_OBS,
            action_spec=ActionSpec.create_discrete((3, 3, 2)),
        ),
    )
    DEFAULT_MAX_EPISODE_STEPS = 200

    def __init__(
        self, *, approach_reward: float = 0.2, ball_progress_reward: float = 0.1, **kwargs
    ) -> None:
        self.approach_reward = approach_reward
        self.ball_progress_reward = ball_progress_reward
        super().__init__(**kwargs)

    def _allocate_state(self) -> None:
        n = self.num_arenas
        self.pos = np.zeros((n, 3, 2))
        self.vel = np.zeros((n, 3, 2))
        self.diving = np.zeros(n, dtype=bool)
        self.goalie_touched_last = np.zeros(n, dtype=bool)
        self.ball = np.zeros((n, 2))
        self.ball_v = np.zeros((n, 2))

    def _reset_arenas(self, arenas: np.ndarray) -> None:
        k = len(arenas)
        start = np.array([[-3.0, 1.5], [-3.0, -1.5], [FIELD_X - 0.7, 0.0]])
        self.pos[arenas] = start + self.rng.uniform(-0.5, 0.5, size=(k, 3, 2))
        self.vel[arenas] = 0.0
        self.diving[arenas] = False
        self.goalie_touched_last[arenas] = False
        self.ball[arenas] = np.stack(
            [self.rng.uniform(-2.5, -1.5, size=k), self.rng.uniform(-1.5, 1.5, size=k)], axis=1
        )
        self.ball_v[arenas] = 0.0

    def _advance(self, actions: list[RoleActions]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        strikers, goalie = actions[0].discrete, actions[1].discrete
        near = approach_distance(self.pos, self.ball)
        ball_x = np.clip(self.ball[:, 0], SAVE_LINE, FIELD_X)
        self.diving = goalie[:, 0, 2] == 1
        moves = np.concatenate([strikers, goalie[:, :, :2]], axis=1)
        speed = np.full((self.num_arenas, 3), PLAYER_SPEED)
        speed[:, 2] = np.where(self.diving, DIVE_SPEED_SHARE, 1.0) * GOALIE_SPEED
        self.vel = move_players(self.pos, moves, FRAME, speed)
        reach = np.full((self.num_arenas, 3), CONTACT)
        reach[:, 2] = np.where(self.diving, DIVE_CONTACT, CONTACT)
        touched = kick_and_roll(self.pos, self.vel, self.ball, self.ball_v, contact=reach)
        striker_touch = touched[:, :2].any(axis=1)
        self.goalie_touched_last = ~striker_touch & (touched[:, 2] | self.goalie_touched_last)
        goal = (self.ball[:, 0] > FIELD_X) & (np.abs(self.ball[:, 1]) < GOAL_Y)
        saved = ~goal & self.goalie_touched_last & (self.ball[:, 0] < SAVE_LINE)
        done = goal | saved
        bounce(self.ball, self.ball_v, through_x=goal)
        reward = (goal.astype(np.float64) - saved)[:, None] * STRIKERS_SCORE
        progress = np.clip(self.ball[:, 0], SAVE_LINE, FIELD_X) - ball_x
        reward += (
            self.ball_progress_reward * progress[:, None] / (FIELD_X - SAVE_LINE) * STRIKERS_SCORE
        )
        closer = near - approach_distance(self.pos, self.ball)
        reward += self.approach_reward * closer / APPROACH_RANGE
        return reward, np.zeros_like(reward), done

    def _timeout_outcome(self, arenas: np.ndarray) -> np.ndarray:
        return np.tile(-STRIKERS_SCORE, (len(arenas), 1))

    def _observe(self, arenas: np.ndarray) -> list[np.ndarray]:
        pos, ball = self.pos[arenas] / FIELD_X, self.ball[arenas] / FIELD_X
        ball_v = self.ball_v[arenas] / KICK_SPEED
        time_left = (1.0 - self.episode_steps[arenas] / self.max_episode_steps)[:, None]
        strikers = np.concatenate(
            [
                pos[:, :2],
                self.vel[arenas][:, :2] / PLAYER_SPEED,
                np.repeat(ball[:, None], 2, axis=1),
                np.repeat(ball_v[:, None], 2, axis=1),
                ball[:, None] - pos[:, :2],
                pos[:, [1, 0]],
                np.repeat(pos[:, None, 2], 2, axis=1),
                np.repeat(time_left[:, None], 2, axis=1),
            ],
            axis=-1,
        )
        goalie = np.concatenate(
            [-pos[:, 2], -ball, -ball_v, pos[:, 2] - ball, -pos[:, :2].reshape(-1, 4), time_left],
            axis=-1,
        )
        return [strikers.astype(np.float32), goalie[:, None].astype(np.float32)]

    def render_arena(self, arena: int) -> dict:
        """Field size, strikers (team 0), goalie (team 1, with its dive flag) and the ball."""
        players = [
            {
                "team": 0 if s < 2 else 1,
                "role": "striker" if s < 2 else "goalie",
                "x": float(self.pos[arena, s, 0]),
                "y": float(self.pos[arena, s, 1]),
            }
            for s in range(3)
        ]
        players[2]["diving"] = bool(self.diving[arena])
        return {
            "game": "strikers_vs_goalie",
            "field": {"half_x": FIELD_X, "half_y": FIELD_Y, "goal_half_width": GOAL_Y},
            "step": int(self.episode_steps[arena]),
            "players": players,
            "ball": {"x": float(self.ball[arena, 0]), "y": float(self.ball[arena, 1])},
        }


def make_env(worker_id: int = 0, seed: int = 0, **kwargs) -> StrikersVsGoalie:
    """A ``StrikersVsGoalie`` environment for worker ``worker_id`` (kwargs go to ``VectorGame``)."""
    return StrikersVsGoalie(seed=mix_seed(seed, worker_id), **kwargs)


# ------------------------------------------------------------------------- scripted players
def _striker_view(obs: np.ndarray) -> tuple[np.ndarray, ...]:
    return (
        obs[:, 0:2] * FIELD_X,
        obs[:, 4:6] * FIELD_X,
        obs[:, 10:12] * FIELD_X,
        obs[:, 12:14] * FIELD_X,
    )


def _goalie_view(obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return obs[:, 0:2] * FIELD_X, obs[:, 2:4] * FIELD_X


def _guard_line(own: np.ndarray, ball: np.ndarray) -> np.ndarray:
    """Move branches toward the goal-line spot level with the ball (goalie's own frame)."""
    spot = np.stack(
        [np.full(len(own), -FIELD_X + 0.5), np.clip(ball[:, 1], -GOAL_Y, GOAL_Y)], axis=1
    )
    return move_branch(spot - own, 0.1)


class StrongStrikers(ScriptedPolicy):
    """The striker nearer the ball shoots away from the goalie's side; the other sweeps behind the
    ball to stop clearances."""

    def _act(self, obs: np.ndarray, deterministic: bool) -> np.ndarray:
        own, ball, mate, keeper = _striker_view(obs)
        aim_y = -np.clip(keeper[:, 1], -0.5 * GOAL_Y, 0.5 * GOAL_Y)
        goal = np.stack([np.full(len(obs), FIELD_X + 0.5), aim_y], axis=1)
        nearer = ((ball - own) ** 2).sum(axis=1) <= ((ball - mate) ** 2).sum(axis=1)
        sweep = np.stack([np.maximum(ball[:, 0] - 2.5, SAVE_LINE + 0.5), ball[:, 1]], axis=1)
        target = np.where(nearer[:, None], attack_target(own, ball, goal), sweep)
        return steer_to(own, target)


class MediumStrikers(ScriptedPolicy):
    """Both strikers push the ball from behind toward the middle of the goal."""

    def _act(self, obs: np.ndarray, deterministic: bool) -> np.ndarray:
        own, ball, _, _ = _striker_view(obs)
        goal = np.tile([FIELD_X + 0.5, 0.0], (len(obs), 1))
        return steer_to(own, attack_target(own, ball, goal))


class WeakStrikers(ScriptedPolicy):
    """Run straight at the ball, now and then moving at random."""

    def _act(self, obs: np.ndarray, deterministic: bool) -> np.ndarray:
        own, ball, _, _ = _striker_view(obs)
        actions = steer_to(own, ball)
        return actions if deterministic else self.blend_random(actions, 0.2)


class StrongGoalie(ScriptedPolicy):
    """Stays on its goal line level with the ball and dives when the ball comes within reach."""

    def _act(self, obs: np.ndarray, deterministic: bool) -> np.ndarray:
        own, ball = _goalie_view(obs)
        moves = _guard_line(own, ball)
        dive = np.sqrt(((ball - own) ** 2).sum(axis=1)) < DIVE_CONTACT
        return np.concatenate([moves, dive[:, None].astype(np.int32)], axis=1)


class MediumGoalie(ScriptedPolicy):
    """Stays on its goal line, level with the ball; never dives."""

    def _act(self, obs: np.ndarray, deterministic: bool) -> np.ndarray:
        own, ball = _goalie_view(obs)
        return np.concatenate([_guard_line(own, ball), np.zeros((len(obs), 1))], axis=1)


class WeakGoalie(ScriptedPolicy):
    """Drifts level with the ball, often moving at random."""

    def _act(self, obs: np.ndarray, deterministic: bool) -> np.ndarray:
        own, ball = _goalie_view(obs)
        target = np.stack([own[:, 0], ball[:, 1]], axis=1)
        actions = np.concatenate([move_branch(target - own, 0.3), np.zeros((len(obs), 1))], axis=1)
        return actions if deterministic else self.blend_random(actions, 0.4)


#: level → (striker policy, goalie policy)
SCRIPTED_LEVELS: dict[str, dict[str, type[ScriptedPolicy]]] = {
    "random": {"Striker": RandomPolicy, "Goalie": RandomPolicy},
    "weak": {"Striker": WeakStrikers, "Goalie": WeakGoalie},
    "medium": {"Striker": MediumStrikers, "Goalie": MediumGoalie},
    "strong": {"Striker": StrongStrikers, "Goalie": StrongGoalie},
}
