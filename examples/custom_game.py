"""A game of your own trained with self-play: a BaseEnv written here, named as ``module:callable``.

Quick draw: a light comes on at a random step; the first to shoot once it is on wins, shooting
before it loses, shooting together is a draw. Behaviors ``QuickDraw?team=0`` and ``?team=1`` make
two teams, one agent each per arena; a policy that waits for the light, then shoots, wins.

Run: ``python examples/custom_game.py`` (seconds); ``--steps 60000`` for a real run. From this
folder the command line trains the same game: ``ghost-learn --env custom_game:make_env``.
"""

import argparse

import numpy as np
from mlagents_envs.base_env import (
    ActionSpec,
    BaseEnv,
    BehaviorMapping,
    BehaviorSpec,
    DecisionSteps,
    TerminalSteps,
)

import ghost
from envs.specs import vector_observation_spec
from trainers import load_policy

ARENAS, LIMIT, NAMES = 16, 12, ("QuickDraw?team=0", "QuickDraw?team=1")
# one observation vector (light on, time) and one discrete branch of two actions (wait, shoot)
SPEC = BehaviorSpec([vector_observation_spec(2)], ActionSpec.create_discrete((2,)))


class QuickDraw(BaseEnv):
    """``ARENAS`` matches at once, each with one agent per team."""

    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)
        self.ids = np.arange(2 * ARENAS).reshape(2, ARENAS)  # [team, arena], as Unity's agents
        self.reset()

    @property
    def behavior_specs(self) -> BehaviorMapping:
        return BehaviorMapping(dict.fromkeys(NAMES, SPEC))

    def reset(self) -> None:
        self.t, self.light = np.zeros(ARENAS), self.rng.integers(1, LIMIT, ARENAS)
        self.shots, self.ended = np.zeros((2, ARENAS), bool), np.zeros(ARENAS, bool)
        self.score = np.zeros(ARENAS, np.float32)

    def set_actions(self, behavior_name: str, action) -> None:
        self.shots[NAMES.index(behavior_name)] = action.discrete[:, 0] == 1

    def step(self) -> None:
        lit = self.t >= self.light
        hit, early = (self.shots & lit).astype(int), (self.shots & ~lit).astype(int)
        self.score = (hit[0] - hit[1] + early[1] - early[0]).astype(np.float32)  # team 0's
        self.ended = self.shots.any(0) | (self.t + 1 >= LIMIT)
        self.t = np.where(self.ended, 0, self.t + 1)
        self.light[self.ended] = self.rng.integers(1, LIMIT, self.ended.sum())

    def get_steps(self, behavior_name: str) -> tuple[DecisionSteps, TerminalSteps]:
        team, ended, n = NAMES.index(behavior_name), self.ended, int(self.ended.sum())
        obs = np.stack([self.t >= self.light, self.t / LIMIT], 1).astype(np.float32)
        zeros, none = np.zeros(ARENAS, np.float32), np.zeros(n, np.float32)
        decision = DecisionSteps([obs], zeros, self.ids[team], None, zeros.astype(np.int32), zeros)
        reward = self.score[ended] * (1 - 2 * team)  # +1 win, -1 loss, 0 draw
        ids = self.ids[team, ended]  # an agent ends its episode and starts the next at once
        terminal = TerminalSteps(
            [obs[ended]], reward, none.astype(bool), ids, none.astype(np.int32), none
        )
        return decision, terminal

    def set_action_for_agent(self, behavior_name: str, agent_id: int, action) -> None:
        raise NotImplementedError("ghost-trainer sets every agent's actions at once")

    def close(self) -> None:
        pass


def make_env(worker_id: int = 0, seed: int = 0) -> QuickDraw:
    """The factory ``--env custom_game:make_env`` names (one per environment worker)."""
    return QuickDraw(seed=seed + 1000 * worker_id)


# a real-time game (every agent acts every step): preset auto picks the settings measured best
make_env.game_kind = "control"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=6000, help="training steps (default 6000)")
    steps = parser.parse_args().steps
    behavior = {
        "hyperparameters": {"batch_size": 128, "buffer_size": 1024, "learning_rate": 0.003},
        "network_settings": {"hidden_units": 32},
        "summary_freq": 2000,
        "self_play": {"save_steps": 1000, "swap_steps": 500, "team_change": 4000},
    }
    result = ghost.train(
        {"behaviors": {"QuickDraw": behavior}},
        env="custom_game:make_env",
        run_id="quick-draw",
        max_steps=steps,
        seed=0,
        force=True,
    )
    policy = load_policy(result.policies["QuickDraw"])
    shoot = policy.action_probabilities([np.array([[0, 0.5], [1, 0.5]], np.float32)])[0][:, 1]
    print(
        f"Elo {result.ratings['QuickDraw']:.0f} after {result.steps['QuickDraw']} steps; "
        f"P(shoot) before the light {shoot[0]:.2f}, after it {shoot[1]:.2f}"
    )
