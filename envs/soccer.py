"""SoccerTwos: 2v2 soccer on a small walled 2D field, discrete actions, group rewards.

The field spans ``|x| <= FIELD_X``, ``|y| <= FIELD_Y``; each end has a goal mouth ``|y| < GOAL_Y``.
Team 0 attacks the goal at ``+x``, team 1 the goal at ``-x``. Players move at ``PLAYER_SPEED``; a
player touching the ball kicks it away from its body (nudged along its move direction) at
``KICK_SPEED``; the ball slows by ``BALL_DRAG`` per step and bounces off the walls. There are no
player-player collisions.

An episode ends with a goal: every agent of the scoring team gets a *group* reward of +1, every
agent of the other team -1 (with ``individual_reward=True`` the same ±1 also goes to the individual
reward, for trainers that ignore group rewards, like ML-Agents' PPO). The individual reward carries
two small potential-based shapings, without which PPO barely learns in a few hundred thousand
steps (episodes are long, goals rare at first):

- *approach*: ``approach_reward`` (default 0.2) times the decrease of the player's distance to the
  ball, capped at ``APPROACH_RANGE``, as a share of ``APPROACH_RANGE``: at most ±0.2 per episode;
- *ball progress*: ``ball_progress_reward`` (default 0.1) times the ball's progress toward the
  opponent goal as a share of ``FIELD_X``: about ±0.1 per episode.

One step's shaping is below 0.1, so on the last step the sign of reward + group reward is the
result.
Each team is one group per arena (``group_id`` nonzero). No goal within ``max_episode_steps``
(default 400) interrupts the episode.

Actions: two discrete branches of 3: move along own x and own y (0: stay, 1: +, 2: -), in the
player's own frame (+x is toward the goal it attacks). All-zero actions (Unity's default for an
agent without an action) stand still.

Observation (16 floats, own frame: the team attacks ``+x``, so one policy plays both teams):
own position (2), own velocity (2), ball position (2), ball velocity (2), ball minus own
position (2), teammate position (2), the two opponents' positions (4).
"""

from __future__ import annotations

import numpy as np
from mlagents_envs.base_env import ActionSpec

from envs.scripted import RandomPolicy, ScriptedPolicy, move_branch, unit
from envs.vector_game import Role, RoleActions, VectorGame, mix_seed

FIELD_X = 6.0
FIELD_Y = 4.0
GOAL_Y = 1.5
PLAYER_SPEED = 2.5
KICK_SPEED = 6.0
BALL_DRAG = 0.96
BOUNCE = 0.8
CONTACT = 0.45
APPROACH_RANGE = 3.0
DT = 0.1
OBS_SIZE = 16
#: own frame of each slot: team 1 sees the field rotated by 180 degrees
FRAME = np.array([1.0, 1.0, -1.0, -1.0])
TEAM = np.array([0, 0, 1, 1])
MATE = np.array([1, 0, 3, 2])
OPPONENTS = np.array([[2, 3], [2, 3], [0, 1], [0, 1]])


def approach_distance(pos: np.ndarray, ball: np.ndarray) -> np.ndarray:
    """Each player's distance to the ball, capped at ``APPROACH_RANGE`` (the approach potential)."""
    return np.minimum(np.sqrt(((pos - ball[:, None, :]) ** 2).sum(axis=-1)), APPROACH_RANGE)


def move_players(
    pos: np.ndarray, discrete: np.ndarray, frame: np.ndarray, speed: float | np.ndarray
) -> np.ndarray:
    """Move players by their move branches (0 stay, 1 plus, 2 minus; own frame); returns velocities.

    ``pos`` is updated in place and kept on the field; diagonal moves are as fast as straight ones.
    """
    branch = discrete[..., :2]
    direction = np.where(branch == 1, 1.0, np.where(branch == 2, -1.0, 0.0)) * frame[None, :, None]
    norm = np.sqrt((direction**2).sum(axis=-1, keepdims=True))
    velocity = direction / np.maximum(norm, 1.0) * np.asarray(speed)[..., None]
    old = pos.copy()
    pos += velocity * DT
    np.clip(pos[..., 0], -FIELD_X, FIELD_X, out=pos[..., 0])
    np.clip(pos[..., 1], -FIELD_Y, FIELD_Y, out=pos[..., 1])
    return (pos - old) / DT


def kick_and_roll(
    pos: np.ndarray,
    velocity: np.ndarray,
    ball: np.ndarray,
    ball_v: np.ndarray,
    contact: float | np.ndarray = CONTACT,
) -> np.ndarray:
    """Kick the ball away from every player touching it, then roll it one step (in place).

    Returns:
        ``(arenas, players)`` bool array of the players that touched the ball.
    """
    offset = ball[:, None, :] - pos
    touching = np.sqrt((offset**2).sum(axis=-1)) < contact
    push = (unit(offset) + 0.5 * velocity / PLAYER_SPEED) * touching[..., None]
    kicked = touching.any(axis=1)
    ball_v[kicked] = unit(push.sum(axis=1))[kicked] * KICK_SPEED
    ball += ball_v * DT
    ball_v *= BALL_DRAG
    return touching


def bounce(ball: np.ndarray, ball_v: np.ndarray, through_x: np.ndarray) -> None:
    """Reflect the ball off the side walls, and off the end walls where ``through_x`` is False."""
    for axis, limit, keep in ((0, FIELD_X, through_x), (1, FIELD_Y, None)):
        outside = np.abs(ball[:, axis]) > limit
        if keep is not None:
            outside &= ~keep
        side = np.sign(ball[:, axis])
        ball[:, axis] = np.where(outside, 2.0 * side * limit - ball[:, axis], ball[:, axis])
        ball_v[:, axis] = np.where(outside, -BOUNCE * ball_v[:, axis], ball_v[:, axis])


class SoccerTwos(VectorGame):
    """2v2 soccer with group rewards; see the module docstring for the rules.

    Args:
        individual_reward: also give the goal's ±1 as individual reward.
        approach_reward: scale of the approach-the-ball shaping (0 turns it off).
        ball_progress_reward: scale of the ball-progress shaping (0 turns it off).
    """

    ROLES = (
        Role(
            name="SoccerTwos",
            team=0,
            slots=2,
            obs_size=OBS_SIZE,
            action_spec=ActionSpec.create_discrete((3, 3)),
            grouped=True,
        ),
        Role(
            name="SoccerTwos",
            team=1,
            slots=2,
            obs_size=OBS_SIZE,
            action_spec=ActionSpec.create_discrete((3, 3)),
            grouped=True,
        ),
    )
    DEFAULT_MAX_EPISODE_STEPS = 400

    def __init__(
        self,
        *,
        individual_reward: bool = False,
        approach_reward: float = 0.2,
        ball_progress_reward: float = 0.1,
        **kwargs,
    ) -> None:
        self.individual_reward = individual_reward
        self.approach_reward = approach_reward
        self.ball_progress_reward = ball_progress_reward
        super().__init__(**kwargs)

    def _allocate_state(self) -> None:
        n = self.num_arenas
        self.pos = np.zeros((n, 4, 2))
        self.vel = np.zeros((n, 4, 2))
        self.ball = np.zeros((n, 2))
        self.ball_v = np.zeros((n, 2))

    def _reset_arenas(self, arenas: np.ndarray) -> None:
        k = len(arenas)
        start = np.array([[-2.5, 1.2], [-2.5, -1.2], [2.5, -1.2], [2.5, 1.2]])
        self.pos[arenas] = start + self.rng.uniform(-0.4, 0.4, size=(k, 4, 2))
        self.vel[arenas] = 0.0
        self.ball[arenas] = np.stack(
            [self.rng.uniform(-0.5, 0.5, size=k), self.rng.uniform(-1.0, 1.0, size=k)], axis=1
        )
        self.ball_v[arenas] = 0.0

    def _advance(self, actions: list[RoleActions]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        discrete = np.concatenate([a.discrete for a in actions], axis=1)
        near = approach_distance(self.pos, self.ball)
        ball_x = np.clip(self.ball[:, 0], -FIELD_X, FIELD_X)
        self.vel = move_players(self.pos, discrete, FRAME, PLAYER_SPEED)
        kick_and_roll(self.pos, self.vel, self.ball, self.ball_v)
        in_mouth = np.abs(self.ball[:, 1]) < GOAL_Y
        scored_by_0 = (self.ball[:, 0] > FIELD_X) & in_mouth
        scored_by_1 = (self.ball[:, 0] < -FIELD_X) & in_mouth
        done = scored_by_0 | scored_by_1
        bounce(self.ball, self.ball_v, through_x=done)
        sign = np.where(TEAM == 0, 1.0, -1.0)
        result = (scored_by_0.astype(np.float64) - scored_by_1)[:, None] * sign
        progress = np.clip(self.ball[:, 0], -FIELD_X, FIELD_X) - ball_x
        closer = near - approach_distance(self.pos, self.ball)
        individual = (
            self.ball_progress_reward * progress[:, None] / FIELD_X * sign
            + self.approach_reward * closer / APPROACH_RANGE
        )
        if self.individual_reward:
            individual = individual + result
        return individual, result, done

    def _observe(self, arenas: np.ndarray) -> list[np.ndarray]:
        f = FRAME[None, :, None]
        pos = self.pos[arenas] * f / FIELD_X
        ball = self.ball[arenas][:, None, :] * f / FIELD_X
        obs = np.concatenate(
            [
                pos,
                self.vel[arenas] * f / PLAYER_SPEED,
                ball,
                self.ball_v[arenas][:, None, :] * f / KICK_SPEED,
                ball - pos,
                self.pos[arenas][:, MATE] * f / FIELD_X,
                (self.pos[arenas][:, OPPONENTS] * f[..., None] / FIELD_X).reshape(-1, 4, 4),
            ],
            axis=-1,
        ).astype(np.float32)
        return [obs[:, 0:2], obs[:, 2:4]]

    def render_arena(self, arena: int) -> dict:
        """Field size, the four players (team, position) and the ball, in world coordinates."""
        return {
            "game": "soccer",
            "field": {"half_x": FIELD_X, "half_y": FIELD_Y, "goal_half_width": GOAL_Y},
            "step": int(self.episode_steps[arena]),
            "players": [
                {
                    "team": int(TEAM[s]),
                    "x": float(self.pos[arena, s, 0]),
                    "y": float(self.pos[arena, s, 1]),
                }
                for s in range(4)
            ],
            "ball": {"x": float(self.ball[arena, 0]), "y": float(self.ball[arena, 1])},
        }


def make_env(worker_id: int = 0, seed: int = 0, **kwargs) -> SoccerTwos:
    """A ``SoccerTwos`` environment for worker ``worker_id`` (kwargs go to the constructor)."""
    return SoccerTwos(seed=mix_seed(seed, worker_id), **kwargs)


# ------------------------------------------------------------------------- scripted players
def steer_to(own: np.ndarray, target: np.ndarray, deadzone: float = 0.1) -> np.ndarray:
    """Move branches ``(n, 2)`` that bring a player at ``own`` toward ``target`` (own frame)."""
    return move_branch(target - own, deadzone)


def attack_target(own: np.ndarray, ball: np.ndarray, goal: np.ndarray) -> np.ndarray:
    """Where to run to push the ball toward ``goal``: behind it, going around it if needed."""
    aim = unit(goal - ball)
    behind = ball - 0.6 * aim
    rel = own - ball
    along = (rel * aim).sum(axis=1)
    across = rel - along[:, None] * aim
    lined_up = (along < -0.2) & (np.sqrt((across**2).sum(axis=1)) < 0.35)
    # beside or in front of the ball: go around it on the side we are on, not through it
    detour = behind + 0.9 * unit(across)
    return np.where(
        lined_up[:, None], ball + 0.5 * aim, np.where((along > -0.3)[:, None], detour, behind)
    )


def _decode(obs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return obs[:, 0:2] * FIELD_X, obs[:, 4:6] * FIELD_X, obs[:, 10:12] * FIELD_X


class StrongSoccer(ScriptedPolicy):
    """The player nearer the ball attacks from behind it; the other guards the own goal."""

    def _act(self, obs: np.ndarray, deterministic: bool) -> np.ndarray:
        own, ball, mate = _decode(obs)
        goal = np.tile([FIELD_X + 0.5, 0.0], (len(obs), 1))
        own_goal = np.array([-FIELD_X, 0.0])
        nearer = ((ball - own) ** 2).sum(axis=1) <= ((ball - mate) ** 2).sum(axis=1)
        guard = own_goal + 0.35 * (ball - own_goal)
        target = np.where(nearer[:, None], attack_target(own, ball, goal), guard)
        return steer_to(own, target)


class MediumSoccer(ScriptedPolicy):
    """Both players attack from behind the ball; nobody defends."""

    def _act(self, obs: np.ndarray, deterministic: bool) -> np.ndarray:
        own, ball, _ = _decode(obs)
        goal = np.tile([FIELD_X + 0.5, 0.0], (len(obs), 1))
        return steer_to(own, attack_target(own, ball, goal))


class WeakSoccer(ScriptedPolicy):
    """Runs straight at the ball (kicking it wherever), now and then moving at random."""

    def _act(self, obs: np.ndarray, deterministic: bool) -> np.ndarray:
        own, ball, _ = _decode(obs)
        actions = steer_to(own, ball)
        return actions if deterministic else self.blend_random(actions, 0.2)


SCRIPTED_LEVELS: dict[str, type[ScriptedPolicy]] = {
    "random": RandomPolicy,
    "weak": WeakSoccer,
    "medium": MediumSoccer,
    "strong": StrongSoccer,
}
