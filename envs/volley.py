"""Volley: a sparse-reward 1v1 keep-the-ball-up game on a 2D court, continuous actions.

The court runs along ``x`` from ``-HALF_COURT`` to ``HALF_COURT``, walled at both ends, with a net
of ``NET_HEIGHT`` at ``x = 0``; team 0 plays the left half, team 1 the right half. Each player is a
half disc of radius ``PLAYER_RADIUS`` standing on the ground (slime-volleyball style) that runs and
jumps. The ball flies under gravity, bounces off the end walls and off the net. When it touches a
player it leaves along the line from the player's centre through the ball at ``HIT_SPEED``: where
the ball meets the player decides the shot. A ball met slightly on the net side of the top flies
over the net; met dead on top, it goes straight up; met on the far side, it flies backwards.

An episode is one point. A serve is tossed from a random side into the other player's half; the
point ends when the ball touches the ground, and that is the only reward: +1 to the side where it
did not land, -1 to the side where it did. Nothing rewards a touch, a return or being near the
ball. A point still going after ``max_episode_steps`` (default 400, 20 seconds) is interrupted
with no reward.

Why it is sparse: a return needs the player under the falling ball *and* a little behind it, so a
uniformly random player almost never returns a serve (it loses nearly every point against a
scripted player that returns everything), and between two random players the result is mostly
decided by where the serve fell, whatever they did.

Actions (2 continuous, in [-1, 1]): 0 moves the player (+1 = toward the net, full speed);
1 jumps when above 0 and the player stands on the ground.

Observation (12 floats, seen from the player's own side: its half is negative ``x``, so one policy
plays both teams): own x, own height, own vertical speed, opponent x, opponent height, ball x,
ball y, ball vx, ball vy, ball x minus own x, ball y minus own height, 1 if the ball is over the
player's half.
"""

from __future__ import annotations

import numpy as np
from mlagents_envs.base_env import ActionSpec

from envs.scripted import RandomPolicy, ScriptedPolicy
from envs.vector_game import RoleActions, VectorGame, mirrored_roles, mix_seed

HALF_COURT = 4.0
NET_HEIGHT = 1.0
GRAVITY = 10.0
DT = 0.05
PLAYER_SPEED = 3.0
PLAYER_RADIUS = 0.5
JUMP_SPEED = 4.5
BALL_RADIUS = 0.15
HIT_SPEED = 9.0
CONTACT = PLAYER_RADIUS + BALL_RADIUS
SERVE_HEIGHT = 2.5
OBS_SIZE = 12
#: world x of a player's own frame: team 0 sees the world as is, team 1 mirrored
FRAME = np.array([1.0, -1.0])


class Volley(VectorGame):
    """Two players keep a ball off their own ground; see the module docstring for the rules."""

    ROLES = mirrored_roles("Volley", obs_size=OBS_SIZE, action_spec=ActionSpec.create_continuous(2))
    DEFAULT_MAX_EPISODE_STEPS = 400

    def _allocate_state(self) -> None:
        n = self.num_arenas
        self.player_x = np.zeros((n, 2))
        self.player_y = np.zeros((n, 2))
        self.player_vx = np.zeros((n, 2))
        self.player_vy = np.zeros((n, 2))
        self.ball = np.zeros((n, 2))
        self.ball_v = np.zeros((n, 2))

    def _reset_arenas(self, arenas: np.ndarray) -> None:
        k = len(arenas)
        self.player_x[arenas] = FRAME * -self.rng.uniform(1.0, 3.4, size=(k, 2))
        self.player_y[arenas] = 0.0
        self.player_vx[arenas] = 0.0
        self.player_vy[arenas] = 0.0
        server = self.rng.integers(0, 2, size=k)
        # tossed from the server's half to land anywhere in the receiver's
        start = -FRAME[server] * self.rng.uniform(1.5, 2.5, size=k)
        land = FRAME[server] * self.rng.uniform(0.8, HALF_COURT - 0.4, size=k)
        rise = self.rng.uniform(2.0, 4.0, size=k)
        flight = (rise + np.sqrt(rise**2 + 2.0 * GRAVITY * (SERVE_HEIGHT - BALL_RADIUS))) / GRAVITY
        self.ball[arenas, 0] = start
        self.ball[arenas, 1] = SERVE_HEIGHT
        self.ball_v[arenas, 0] = (land - start) / flight
        self.ball_v[arenas, 1] = rise

    def _advance(self, actions: list[RoleActions]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        act = self.clipped(np.concatenate([a.continuous for a in actions], axis=1))
        start = self._relative_ball()
        self._move_players(act[:, :, 0], act[:, :, 1])
        self._fly_ball()
        self._touch(start)
        done = self.ball[:, 1] <= BALL_RADIUS
        loser = (self.ball[:, 0] > 0).astype(np.int64)
        reward = np.zeros((self.num_arenas, 2))
        reward[done, loser[done]] = -1.0
        reward[done, 1 - loser[done]] = 1.0
        return reward, np.zeros_like(reward), done

    def _move_players(self, move: np.ndarray, jump: np.ndarray) -> None:
        old_x = self.player_x.copy()
        self.player_x += move * FRAME * PLAYER_SPEED * DT
        low, high = PLAYER_RADIUS, HALF_COURT - PLAYER_RADIUS
        self.player_x[:, 0] = np.clip(self.player_x[:, 0], -high, -low)
        self.player_x[:, 1] = np.clip(self.player_x[:, 1], low, high)
        self.player_vx = (self.player_x - old_x) / DT
        grounded = self.player_y <= 0.0
        self.player_vy = np.where(grounded & (jump > 0.0), JUMP_SPEED, self.player_vy)
        self.player_y += self.player_vy * DT - 0.5 * GRAVITY * DT * DT
        self.player_vy -= GRAVITY * DT
        landed = self.player_y <= 0.0
        self.player_y[landed] = 0.0
        self.player_vy[landed] = 0.0

    def _fly_ball(self) -> None:
        """One ballistic step, bouncing off the end walls and the net."""
        prev_x, prev_y = self.ball[:, 0].copy(), self.ball[:, 1].copy()
        self.ball[:, 0] += self.ball_v[:, 0] * DT
        self.ball[:, 1] += self.ball_v[:, 1] * DT - 0.5 * GRAVITY * DT * DT
        self.ball_v[:, 1] -= GRAVITY * DT
        x, vx = self.ball[:, 0], self.ball_v[:, 0]
        wall = HALF_COURT - BALL_RADIUS
        out = np.abs(x) > wall
        x[out] = np.sign(x[out]) * (2.0 * wall - np.abs(x[out]))
        vx[out] = -np.sign(x[out]) * np.abs(vx[out])
        # a ball crossing the net plane below its top goes back where it came from
        crossed = (prev_x < 0) != (x < 0)
        along = prev_x / np.where(crossed, prev_x - x, 1.0)
        height = prev_y + along * (self.ball[:, 1] - prev_y)
        into_net = crossed & (height < NET_HEIGHT + BALL_RADIUS)
        x[into_net] = np.where(prev_x[into_net] < 0, -BALL_RADIUS, BALL_RADIUS)
        vx[into_net] = -vx[into_net]

    def _relative_ball(self) -> np.ndarray:
        """The ball's position relative to each player: ``(arenas, 2 players, 2)``."""
        return np.stack([self.ball[:, 0:1] - self.player_x, self.ball[:, 1:2] - self.player_y], -1)

    def _touch(self, start: np.ndarray) -> None:
        """Send the ball away from the first point where it touched a player on that player's
        half during the step (``start``: the ball relative to each player when it began)."""
        end = self._relative_ball()
        path = end - start
        # swept: the first s in [0, 1] with |start + s * path| = CONTACT, so a fast ball cannot
        # pass through a player and the contact point, hence the shot, is exact
        a = np.maximum((path**2).sum(-1), 1e-12)
        b = 2.0 * (start * path).sum(-1)
        c = (start**2).sum(-1) - CONTACT**2
        disc = b * b - 4.0 * a * c
        s = np.where(c <= 0.0, 0.0, (-b - np.sqrt(np.maximum(disc, 0.0))) / (2.0 * a))
        at = start + np.clip(s, 0.0, 1.0)[..., None] * path
        player_v = np.stack([self.player_vx, self.player_vy], -1)
        closing = (at * (self.ball_v[:, None, :] - player_v)).sum(-1) < 0.0
        own_half = self.ball[:, 0:1] * FRAME < 0
        touch = (disc >= 0.0) & (s >= 0.0) & (s <= 1.0) & closing & own_half
        rows = np.flatnonzero(touch.any(axis=1))
        who = touch.argmax(axis=1)[rows]
        normal = at[rows, who] / np.maximum(np.sqrt((at[rows, who] ** 2).sum(-1)), 1e-9)[:, None]
        self.ball[rows, 0] = self.player_x[rows, who] + normal[:, 0] * CONTACT
        self.ball[rows, 1] = np.maximum(
            self.player_y[rows, who] + normal[:, 1] * CONTACT, BALL_RADIUS + 1e-3
        )
        self.ball_v[rows] = normal * HIT_SPEED

    def _observe(self, arenas: np.ndarray) -> list[np.ndarray]:
        px, py, pvy = self.player_x[arenas], self.player_y[arenas], self.player_vy[arenas]
        bx, by = self.ball[arenas, 0:1], self.ball[arenas, 1:2]
        vx, vy = self.ball_v[arenas, 0:1], self.ball_v[arenas, 1:2]
        ones = np.ones_like(px)
        obs = np.stack(
            [
                px * FRAME / HALF_COURT,
                py / 2.0,
                pvy / JUMP_SPEED,
                px[:, ::-1] * FRAME / HALF_COURT,
                py[:, ::-1] / 2.0,
                bx * FRAME / HALF_COURT,
                by * ones / 4.0,
                vx * FRAME / 10.0,
                vy * ones / 10.0,
                (bx - px) * FRAME / HALF_COURT,
                (by - py) / 4.0,
                (bx * FRAME < 0).astype(np.float64),
            ],
            axis=-1,
        ).astype(np.float32)
        return [obs[:, 0:1], obs[:, 1:2]]

    def render_arena(self, arena: int) -> dict:
        """Court size, both players and the ball, in world coordinates."""
        return {
            "game": "volley",
            "half_court": HALF_COURT,
            "net_height": NET_HEIGHT,
            "step": int(self.episode_steps[arena]),
            "players": [
                {
                    "team": team,
                    "x": float(self.player_x[arena, team]),
                    "y": float(self.player_y[arena, team]),
                    "radius": PLAYER_RADIUS,
                }
                for team in (0, 1)
            ],
            "ball": {
                "x": float(self.ball[arena, 0]),
                "y": float(self.ball[arena, 1]),
                "radius": BALL_RADIUS,
            },
        }


def make_env(worker_id: int = 0, seed: int = 0, **kwargs) -> Volley:
    """A ``Volley`` environment for worker ``worker_id`` (kwargs go to ``VectorGame``)."""
    return Volley(seed=mix_seed(seed, worker_id), **kwargs)


# ------------------------------------------------------------------------- scripted players
def _decode(obs: np.ndarray) -> dict[str, np.ndarray]:
    return {
        "own_x": obs[:, 0] * HALF_COURT,
        "opp_x": obs[:, 3] * HALF_COURT,
        "ball_x": obs[:, 5] * HALF_COURT,
        "ball_y": obs[:, 6] * 4.0,
        "ball_vx": obs[:, 7] * 10.0,
        "ball_vy": obs[:, 8] * 10.0,
    }


def _fall_time(height: np.ndarray, vy: np.ndarray, level: float | np.ndarray) -> np.ndarray:
    """Seconds until a ball at ``height`` rising at ``vy`` falls through ``level``."""
    return (vy + np.sqrt(np.maximum(vy * vy + 2.0 * GRAVITY * (height - level), 0.0))) / GRAVITY


def _fold(x: np.ndarray) -> np.ndarray:
    """Where a ball travelling ``x`` along an unwalled court is on the walled one."""
    wall = HALF_COURT - BALL_RADIUS
    return wall - np.abs(np.mod(x + wall, 4.0 * wall) - 2.0 * wall)


def _meet_x(s: dict[str, np.ndarray], angle: float | np.ndarray, walls: bool) -> np.ndarray:
    """Where the ball comes down to the height at which a grounded player meets it at ``angle``
    (radians from straight up) on its net side."""
    height = CONTACT * np.cos(angle)
    x = s["ball_x"] + s["ball_vx"] * _fall_time(s["ball_y"], s["ball_vy"], height)
    return _fold(x) if walls else x


def _steer(own_x: np.ndarray, target: np.ndarray) -> np.ndarray:
    return np.clip((target - own_x) / (PLAYER_SPEED * DT), -1.0, 1.0)


def _receive(s: dict[str, np.ndarray], angle: float | np.ndarray, walls: bool) -> np.ndarray:
    """The x to stand at: behind where the ball comes down when it is coming to this side,
    mid-half otherwise."""
    meet = _meet_x(s, angle, walls)
    incoming = (meet < 0) & ((s["ball_x"] < 0) | (s["ball_vx"] < 0))
    return np.where(incoming, meet - CONTACT * np.sin(angle), -2.0)


#: the contact angles (radians from straight up) the strong player chooses among
_ANGLES = np.linspace(0.1, 1.1, 11)


def _best_shot(s: dict[str, np.ndarray]) -> np.ndarray:
    """Per agent, the angle to meet the ball at: of the shots it can reach that clear the net,
    the one landing farthest beyond the opponent's reach."""
    angle = _ANGLES[None, :]
    d = {key: value[:, None] for key, value in s.items()}
    height = CONTACT * np.cos(angle)
    fall = _fall_time(d["ball_y"], d["ball_vy"], height)
    meet = _fold(d["ball_x"] + d["ball_vx"] * fall)
    stand = meet - CONTACT * np.sin(angle)
    reachable = (np.abs(stand - d["own_x"]) <= PLAYER_SPEED * fall + 0.1) & (
        (stand >= PLAYER_RADIUS - HALF_COURT) & (stand <= -PLAYER_RADIUS)
    )
    vx, vy = HIT_SPEED * np.sin(angle), HIT_SPEED * np.cos(angle)
    to_net = -meet / vx
    clears = height + vy * to_net - 0.5 * GRAVITY * to_net**2 >= NET_HEIGHT + BALL_RADIUS + 0.2
    flight = _fall_time(height, vy, BALL_RADIUS)
    land = _fold(meet + vx * flight)
    margin = np.abs(land - d["opp_x"]) - PLAYER_SPEED * flight
    margin = np.where(reachable & clears & (land > 0), margin, -np.inf)
    return _ANGLES[margin.argmax(axis=1)]


class StrongVolley(ScriptedPolicy):
    """Predicts where the ball comes down (walls included) and meets it at the angle whose shot
    clears the net and lands farthest beyond the opponent's reach."""

    def _act(self, obs: np.ndarray, deterministic: bool) -> np.ndarray:
        s = _decode(obs)
        move = _steer(s["own_x"], _receive(s, _best_shot(s), walls=True))
        return np.stack([move, -np.ones(len(obs))], axis=1)


class MediumVolley(ScriptedPolicy):
    """Predicts the fall without the walls, always the same shot, a little noisy footwork."""

    def _act(self, obs: np.ndarray, deterministic: bool) -> np.ndarray:
        s = _decode(obs)
        target = _receive(s, 0.75, walls=False)
        if not deterministic:
            target = target + self.rng.normal(0.0, 0.12, size=len(obs))
        return np.stack([_steer(s["own_x"], target), -np.ones(len(obs))], axis=1)


class WeakVolley(ScriptedPolicy):
    """Runs at part speed to stand under the ball where it is now; now and then moves at random."""

    def _act(self, obs: np.ndarray, deterministic: bool) -> np.ndarray:
        s = _decode(obs)
        target = np.where(s["ball_x"] < 0, s["ball_x"] - 0.3, -2.0)
        move = 0.6 * _steer(s["own_x"], target)
        actions = np.stack([move, -np.ones(len(obs))], axis=1)
        return actions if deterministic else self.blend_random(actions, 0.2)


SCRIPTED_LEVELS: dict[str, type[ScriptedPolicy]] = {
    "random": RandomPolicy,
    "weak": WeakVolley,
    "medium": MediumVolley,
    "strong": StrongVolley,
}
