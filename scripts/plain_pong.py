"""A Pong written as a plain ``BaseEnv``, as a user would write one, for speed benchmarks.

Unlike the built-in games (``envs.vector_game``) it builds its ``DecisionSteps`` and
``TerminalSteps`` itself every step, so the trainer's per-step costs with a user's environment
show: two paddles (``Pong?team=0`` and ``Pong?team=1``), discrete actions (down, stay, up), eight
observations, a point won or lost ends the episode (rewards +1 and -1), 500 steps end it
interrupted. Factories for ``--env``: ``scripts.plain_pong:four_arenas`` and
``scripts.plain_pong:sixteen_arenas``.
"""

from __future__ import annotations

import numpy as np
from mlagents_envs.base_env import (
    ActionSpec,
    ActionTuple,
    BaseEnv,
    BehaviorSpec,
    DecisionSteps,
    TerminalSteps,
)

from envs.specs import vector_observation_spec

NAMES = ("Pong?team=0", "Pong?team=1")
MAX_STEPS = 500
PADDLE_SPEED = 0.04
PADDLE_HALF_WIDTH = 0.25
BALL_SPEED = 0.03


class PlainPong(BaseEnv):
    """``arenas`` independent Pong tables; agent ``2 * arena + team`` is team ``team``'s paddle."""

    def __init__(self, arenas: int, seed: int = 0) -> None:
        self.arenas = arenas
        self.rng = np.random.default_rng(seed)
        spec = BehaviorSpec([vector_observation_spec(8)], ActionSpec.create_discrete((3,)))
        self.specs = {name: spec for name in NAMES}
        self.moves = {name: np.ones(arenas, np.int64) for name in NAMES}
        self.ball = np.zeros((arenas, 2))
        self.velocity = np.zeros((arenas, 2))
        self.paddles = np.zeros((arenas, 2))
        self.clock = np.zeros(arenas, np.int64)
        self.steps: dict[str, tuple[DecisionSteps, TerminalSteps]] = {}

    @property
    def behavior_specs(self) -> dict[str, BehaviorSpec]:  # type: ignore[override]
        return self.specs

    def reset(self) -> None:
        self._serve(np.arange(self.arenas))
        self._publish(np.zeros((self.arenas, 2)), np.zeros(0, np.int64), np.zeros(0, bool), None)

    def step(self) -> None:
        for team, name in enumerate(NAMES):
            moved = self.paddles[:, team] + PADDLE_SPEED * (self.moves[name] - 1)
            self.paddles[:, team] = np.clip(moved, -1.0, 1.0)
            self.moves[name][:] = 1
        self.ball += self.velocity
        self.clock += 1
        self.velocity[np.abs(self.ball[:, 1]) > 1.0, 1] *= -1.0
        reward = np.zeros((self.arenas, 2))
        scored = np.zeros(self.arenas, bool)
        for team, goal_line in ((0, -1.0), (1, 1.0)):
            at_line = self.ball[:, 0] * goal_line >= 1.0
            offset = self.ball[:, 1] - self.paddles[:, team]
            hit = at_line & (np.abs(offset) < PADDLE_HALF_WIDTH)
            self.velocity[hit, 0] *= -1.05
            self.velocity[hit, 1] += 0.02 * offset[hit]
            missed = at_line & ~hit
            reward[missed, team] = -1.0
            reward[missed, 1 - team] = 1.0
            scored |= missed
        timed_out = self.clock >= MAX_STEPS
        ended = np.flatnonzero(scored | timed_out)
        interrupted = timed_out[ended] & ~scored[ended]
        final = [self._observe(team, ended) for team in (0, 1)]
        self._serve(ended)
        self._publish(reward, ended, interrupted, final)

    def _serve(self, arenas: np.ndarray) -> None:
        angle = self.rng.uniform(-0.6, 0.6, len(arenas))
        side = self.rng.choice([-1.0, 1.0], len(arenas))
        self.ball[arenas] = 0.0
        self.velocity[arenas, 0] = side * BALL_SPEED * np.cos(angle)
        self.velocity[arenas, 1] = BALL_SPEED * np.sin(angle)
        self.paddles[arenas] = 0.0
        self.clock[arenas] = 0

    def _observe(self, team: int, arenas: np.ndarray) -> np.ndarray:
        facing = 1.0 if team == 0 else -1.0
        ball, velocity = self.ball[arenas], self.velocity[arenas]
        columns = [
            facing * ball[:, 0], ball[:, 1], facing * velocity[:, 0] / BALL_SPEED,
            velocity[:, 1] / BALL_SPEED, self.paddles[arenas, team],
            self.paddles[arenas, 1 - team], self.clock[arenas] / MAX_STEPS, np.ones(len(arenas)),
        ]  # fmt: skip
        return np.stack(columns, axis=1).astype(np.float32)

    def _publish(
        self,
        reward: np.ndarray,
        ended: np.ndarray,
        interrupted: np.ndarray,
        final: list[np.ndarray] | None,
    ) -> None:
        everyone = np.arange(self.arenas)
        for team, name in enumerate(NAMES):
            agent_ids = (everyone * 2 + team).astype(np.int32)
            step_reward = reward[:, team].astype(np.float32)
            step_reward[ended] = 0.0  # an ending episode's reward goes with its terminal step
            decision = DecisionSteps(
                [self._observe(team, everyone)], step_reward, agent_ids, None,
                np.zeros(self.arenas, np.int32), np.zeros(self.arenas, np.float32),
            )  # fmt: skip
            if final is None or not len(ended):
                terminal = TerminalSteps.empty(self.specs[name])
            else:
                terminal = TerminalSteps(
                    [final[team]], reward[ended, team].astype(np.float32), interrupted,
                    agent_ids[ended], np.zeros(len(ended), np.int32),
                    np.zeros(len(ended), np.float32),
                )  # fmt: skip
            self.steps[name] = (decision, terminal)

    def get_steps(self, behavior_name: str) -> tuple[DecisionSteps, TerminalSteps]:
        return self.steps[behavior_name]

    def set_actions(self, behavior_name: str, action: ActionTuple) -> None:
        self.moves[behavior_name][:] = action.discrete[:, 0]

    def set_action_for_agent(self, behavior_name: str, agent_id: int, action: ActionTuple) -> None:
        self.moves[behavior_name][agent_id // 2] = action.discrete[0, 0]

    def close(self) -> None:
        pass


def make_env(worker_id: int = 0, seed: int = 0, *, arenas: int = 16, **_: object) -> PlainPong:
    """``arenas`` tables, seeded by ``seed + worker_id`` (a worker process's environment)."""
    return PlainPong(arenas, seed=seed + worker_id)


def four_arenas(worker_id: int = 0, seed: int = 0, **_: object) -> PlainPong:
    """Four tables: eight agents a step."""
    return make_env(worker_id, seed, arenas=4)


def sixteen_arenas(worker_id: int = 0, seed: int = 0, **_: object) -> PlainPong:
    """Sixteen tables: thirty-two agents a step."""
    return make_env(worker_id, seed, arenas=16)
