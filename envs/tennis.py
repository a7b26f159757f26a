"""Tennis: a symmetric 1v1 rally game on a 2D court, continuous actions.

The court runs along ``x`` from ``-HALF_COURT`` to ``HALF_COURT`` with a net of ``NET_HEIGHT`` at
``x = 0``; team 0 plays the left half, team 1 the right half. The ball flies ballistically. A
player hits it automatically when it is on the player's side, within ``REACH_X`` horizontally and
no higher than ``REACH_HEIGHT``, and the other player (or the serve) touched it last. An episode is
one point: it starts with a serve from a random side and ends when the ball

- lands in a half of the court: that half's player loses the point;
- lands beyond a baseline: the last hitter loses (hit out);
- hits the net: the player whose side it came from loses.

Rewards: +1 to the winner and -1 to the loser on the last step; each hit earns ``HIT_BONUS``
(at most ``MAX_BONUS`` per episode), so the last reward's sign is the result. A rally still going
after ``max_episode_steps`` (default 300) is interrupted.

Actions (2 continuous, in [-1, 1]): 0 moves the player (+1 = toward the net, full speed);
1 sets the strength of the player's next shot (-1: ``SHOT_SPEED[0]``, +1: ``SHOT_SPEED[1]``).

Observation (10 floats, seen from the player's own side: its half is negative ``x``, so one policy
plays both teams): own x, opponent x, ball x, ball y, ball vx, ball vy, own velocity, ball x minus
own x, 1 if the ball is the player's to return, 1 if the ball is over the player's half.
"""

from __future__ import annotations

import numpy as np
from mlagents_envs.base_env import ActionSpec

from envs.scripted import RandomPolicy, ScriptedPolicy
from envs.vector_game import RoleActions, VectorGame, mirrored_roles, mix_seed

HALF_COURT = 8.0
NET_HEIGHT = 0.5
GRAVITY = 10.0
DT = 0.1
PLAYER_SPEED = 5.0
NET_GAP = 0.5
BACK_LIMIT = HALF_COURT + 1.5
REACH_X = 0.75
REACH_HEIGHT = 2.2
SHOT_VY = 6.0
SHOT_SPEED = (2.0, 12.0)
HIT_BONUS = 0.02
MAX_BONUS = 0.1
OBS_SIZE = 10
#: world x of a player's own frame: team 0 sees the world as is, team 1 mirrored
FRAME = np.array([1.0, -1.0])


class Tennis(VectorGame):
    """Two players rally a ball over a net; see the module docstring for the rules."""

    ROLES = mirrored_roles("Tennis", obs_size=OBS_SIZE, action_spec=ActionSpec.create_continuous(2))
    DEFAULT_MAX_EPISODE_STEPS = 300

    def _allocate_state(self) -> None:
        n = self.num_arenas
        self.player_x = np.zeros((n, 2))
        self.player_v = np.zeros((n, 2))
        self.ball = np.zeros((n, 2))
        self.ball_v = np.zeros((n, 2))
        self.last_hitter = np.zeros(n, dtype=np.int64)
        self.bonus = np.zeros((n, 2))

    def _reset_arenas(self, arenas: np.ndarray) -> None:
        k = len(arenas)
        self.player_x[arenas] = FRAME * -self.rng.uniform(2.0, 7.0, size=(k, 2))
        self.player_v[arenas] = 0.0
        server = self.rng.integers(0, 2, size=k)
        self.ball[arenas, 0] = -4.0 * FRAME[server]
        self.ball[arenas, 1] = 1.0
        self.ball_v[arenas, 0] = FRAME[server] * self.rng.uniform(4.5, 7.5, size=k)
        self.ball_v[arenas, 1] = self.rng.uniform(4.5, 6.5, size=k)
        self.last_hitter[arenas] = server
        self.bonus[arenas] = 0.0

    def _advance(self, actions: list[RoleActions]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        act = self.clipped(np.concatenate([a.continuous for a in actions], axis=1))
        self._move_players(act[:, :, 0])
        done, loser = self._fly_ball()
        hit = self._hit(act[:, :, 1], ~done)
        reward = np.zeros((self.num_arenas, 2))
        bonus = hit & (self.bonus < MAX_BONUS - 1e-9)
        reward[bonus] += HIT_BONUS
        self.bonus[bonus] += HIT_BONUS
        reward[done, loser[done]] = -1.0
        reward[done, 1 - loser[done]] = 1.0
        return reward, np.zeros_like(reward), done

    def _move_players(self, move: np.ndarray) -> None:
        old_x = self.player_x.copy()
        self.player_x += move * FRAME * PLAYER_SPEED * DT
        self.player_x[:, 0] = np.clip(self.player_x[:, 0], -BACK_LIMIT, -NET_GAP)
        self.player_x[:, 1] = np.clip(self.player_x[:, 1], NET_GAP, BACK_LIMIT)
        self.player_v = (self.player_x - old_x) / DT

    def _fly_ball(self) -> tuple[np.ndarray, np.ndarray]:
        """One ballistic step; returns which points ended (net or landing) and who lost them."""
        prev = self.ball.copy()
        self.ball[:, 0] += self.ball_v[:, 0] * DT
        self.ball[:, 1] += self.ball_v[:, 1] * DT - 0.5 * GRAVITY * DT * DT
        self.ball_v[:, 1] -= GRAVITY * DT
        x, y = self.ball[:, 0], self.ball[:, 1]
        # where within the step the ball crossed the net plane / the ground, by interpolation
        crossed = (prev[:, 0] < 0) != (x < 0)
        along = prev[:, 0] / np.where(crossed, prev[:, 0] - x, 1.0)
        net_fault = crossed & (prev[:, 1] + along * (y - prev[:, 1]) < NET_HEIGHT)
        landed = ~net_fault & (y <= 0.0)
        drop = prev[:, 1] / np.where(landed, prev[:, 1] - y, 1.0)
        land_x = prev[:, 0] + drop * (x - prev[:, 0])
        land_side = (land_x > 0).astype(np.int64)
        land_loser = np.where(np.abs(land_x) > HALF_COURT, 1 - land_side, land_side)
        loser = np.where(net_fault, (prev[:, 0] > 0).astype(np.int64), land_loser)
        return net_fault | landed, loser

    def _hit(self, strength: np.ndarray, live: np.ndarray) -> np.ndarray:
        """Return the ball for every player who can; ``(arenas, 2)`` bool of who hit it."""
        x, y = self.ball[:, 0], self.ball[:, 1]
        own_side = x[:, None] * FRAME < 0
        in_reach = np.abs(x[:, None] - self.player_x) <= REACH_X
        low_enough = ((y > 0.0) & (y <= REACH_HEIGHT))[:, None]
        fresh = self.last_hitter[:, None] != np.arange(2)
        hit = live[:, None] & own_side & in_reach & low_enough & fresh
        hitting = hit.any(axis=1)
        hitter = hit.argmax(axis=1)
        share = (strength[np.arange(self.num_arenas), hitter] + 1.0) / 2.0
        speed = SHOT_SPEED[0] + share * (SHOT_SPEED[1] - SHOT_SPEED[0])
        self.ball_v[hitting, 0] = (FRAME[hitter] * speed)[hitting]
        self.ball_v[hitting, 1] = SHOT_VY
        self.last_hitter[hitting] = hitter[hitting]
        return hit

    def _observe(self, arenas: np.ndarray) -> list[np.ndarray]:
        px, pv = self.player_x[arenas], self.player_v[arenas]
        bx, by = self.ball[arenas, 0:1], self.ball[arenas, 1:2]
        vx, vy = self.ball_v[arenas, 0:1], self.ball_v[arenas, 1:2]
        ones = np.ones_like(px)
        obs = np.stack(
            [
                px * FRAME / HALF_COURT,
                px[:, ::-1] * FRAME / HALF_COURT,
                bx * FRAME / HALF_COURT,
                by * ones / 4.0,
                vx * FRAME / 10.0,
                vy * ones / 10.0,
                pv * FRAME / PLAYER_SPEED,
                (bx - px) * FRAME / HALF_COURT,
                (self.last_hitter[arenas, None] != np.arange(2)).astype(np.float64),
                (bx * FRAME < 0).astype(np.float64),
            ],
            axis=-1,
        ).astype(np.float32)
        return [obs[:, 0:1], obs[:, 1:2]]

    def render_arena(self, arena: int) -> dict:
        """Court size, both players (on the ground) and the ball, in world coordinates."""
        return {
            "game": "tennis",
            "half_court": HALF_COURT,
            "net_height": NET_HEIGHT,
            "step": int(self.episode_steps[arena]),
            "players": [
                {
                    "team": team,
                    "x": float(self.player_x[arena, team]),
                    "y": 0.0,
                    "reach_height": REACH_HEIGHT,
                }
                for team in (0, 1)
            ],
            "ball": {"x": float(self.ball[arena, 0]), "y": float(self.ball[arena, 1])},
            "last_hitter": int(self.last_hitter[arena]),
        }


def make_env(worker_id: int = 0, seed: int = 0, **kwargs) -> Tennis:
    """A ``Tennis`` environment for worker ``worker_id`` (kwargs go to ``VectorGame``)."""
    return Tennis(seed=mix_seed(seed, worker_id), **kwargs)


# ------------------------------------------------------------------------- scripted players
def _decode(obs: np.ndarray) -> dict[str, np.ndarray]:
    return {
        "own_x": obs[:, 0] * HALF_COURT,
        "opp_x": obs[:, 1] * HALF_COURT,
        "ball_x": obs[:, 2] * HALF_COURT,
        "ball_y": obs[:, 3] * 4.0,
        "ball_vx": obs[:, 4] * 10.0,
        "ball_vy": obs[:, 5] * 10.0,
        "mine": obs[:, 8] > 0.5,
    }


def _fall_time(height: np.ndarray, vy: np.ndarray | float, level: float) -> np.ndarray:
    """Seconds until a ball at ``height`` rising at ``vy`` falls through ``level``."""
    return (vy + np.sqrt(np.maximum(vy * vy + 2.0 * GRAVITY * (height - level), 0.0))) / GRAVITY


def _shot_for(own_x: np.ndarray, aim_x: np.ndarray | float, hit_height: float = 1.3) -> np.ndarray:
    """The strength action that lands a shot hit from ``own_x`` at ``aim_x`` (own frame)."""
    speed = (aim_x - own_x) / _fall_time(np.full_like(own_x, hit_height), SHOT_VY, 0.0)
    return 2.0 * (speed - SHOT_SPEED[0]) / (SHOT_SPEED[1] - SHOT_SPEED[0]) - 1.0


def _steer(own_x: np.ndarray, target: np.ndarray) -> np.ndarray:
    return np.clip((target - own_x) / (PLAYER_SPEED * DT), -1.0, 1.0)


class StrongTennis(ScriptedPolicy):
    """Runs to where the ball will come down, lets balls going out pass, aims away from the
    opponent."""

    def _act(self, obs: np.ndarray, deterministic: bool) -> np.ndarray:
        s = _decode(obs)
        meet_x = s["ball_x"] + s["ball_vx"] * _fall_time(s["ball_y"], s["ball_vy"], 1.2)
        land_x = s["ball_x"] + s["ball_vx"] * _fall_time(s["ball_y"], s["ball_vy"], 0.0)
        going_out = land_x < -HALF_COURT - 0.2
        target = np.where(s["mine"] & ~going_out, meet_x, -4.0)
        target = np.where(s["mine"] & going_out, -2.0, target)
        aim = np.where(s["opp_x"] < 4.0, 6.5, 2.5)
        return np.stack([_steer(s["own_x"], target), _shot_for(s["own_x"], aim)], axis=1)


class MediumTennis(ScriptedPolicy):
    """Follows the ball's current position (no prediction) and aims mid-court, a little noisy."""

    def _act(self, obs: np.ndarray, deterministic: bool) -> np.ndarray:
        s = _decode(obs)
        target = np.where(s["mine"], s["ball_x"], -4.0)
        shot = _shot_for(s["own_x"], 4.5)
        if not deterministic:
            shot = shot + self.rng.normal(0.0, 0.25, size=len(obs))
        return np.stack([_steer(s["own_x"], target), shot], axis=1)


class WeakTennis(ScriptedPolicy):
    """Drifts toward the ball at part speed, now and then moves at random; very noisy aim."""

    def _act(self, obs: np.ndarray, deterministic: bool) -> np.ndarray:
        s = _decode(obs)
        move = 0.7 * _steer(s["own_x"], np.where(s["mine"], s["ball_x"], -4.0))
        shot = _shot_for(s["own_x"], 4.5) + self.rng.normal(0.0, 0.6, size=len(obs))
        actions = np.stack([move, shot], axis=1)
        return actions if deterministic else self.blend_random(actions, 0.2)


SCRIPTED_LEVELS: dict[str, type[ScriptedPolicy]] = {
    "random": RandomPolicy,
    "weak": WeakTennis,
    "medium": MediumTennis,
    "strong": StrongTennis,
}
