"""``hallway``: a sparse-reward corridor with a near, small exit, the yardstick of the
exploration bonuses.

One agent per arena starts in cell 1 of a corridor of ``LENGTH`` cells and moves one cell left or
right each step (discrete branch of 2). Its observation is its cell as a one-hot vector. Stepping
into cell 0, the near exit, pays ``NEAR_REWARD`` and ends the episode; reaching the far end pays
+1 and ends it; nothing else pays, and after ``DEFAULT_MAX_EPISODE_STEPS`` steps the episode is
interrupted. The far end is worth more (``0.99 ** LENGTH`` > ``NEAR_REWARD``), but an untrained
policy walks into the near exit within a few steps and almost never reaches the far end, so a
learner on the extrinsic reward alone settles for the near exit; one driven to unfamiliar cells
(``reward_signals.curiosity`` or ``rnd``) walks the corridor.
"""

from __future__ import annotations

import numpy as np
from mlagents_envs.base_env import ActionSpec

from envs.vector_game import Role, RoleActions, VectorGame, mix_seed

LENGTH = 40
NEAR_REWARD = 0.1


class Hallway(VectorGame):
    """The corridor (see the module docstring)."""

    ROLES = (
        Role(
            name="Hallway",
            team=0,
            slots=1,
            obs_size=LENGTH,
            action_spec=ActionSpec.create_discrete((2,)),
        ),
    )
    DEFAULT_MAX_EPISODE_STEPS = 2 * LENGTH

    def _allocate_state(self) -> None:
        self.position = np.zeros(self.num_arenas, dtype=np.int64)

    def _reset_arenas(self, arenas: np.ndarray) -> None:
        self.position[arenas] = 1

    def _advance(self, actions: list[RoleActions]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        move = np.where(actions[0].discrete[:, 0, 0] == 1, 1, -1)
        self.position = np.clip(self.position + move, 0, LENGTH - 1)
        far, near = self.position == LENGTH - 1, self.position == 0
        reward = (far + NEAR_REWARD * near).astype(np.float32)[:, None]
        return reward, np.zeros_like(reward), far | near

    def _observe(self, arenas: np.ndarray) -> list[np.ndarray]:
        cells = np.zeros((len(arenas), 1, LENGTH), dtype=np.float32)
        cells[np.arange(len(arenas)), 0, self.position[arenas]] = 1.0
        return [cells]

    def render_arena(self, arena: int) -> dict:
        return {"game": "Hallway", "position": int(self.position[arena]), "length": LENGTH}


def make_env(worker_id: int = 0, seed: int = 0, **kwargs) -> Hallway:
    """A ``Hallway`` for env worker ``worker_id``; ``kwargs`` go to ``VectorGame``."""
    return Hallway(seed=mix_seed(seed, worker_id), **kwargs)
