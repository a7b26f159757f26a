"""``recall``: a cue seen once and needed later, the yardstick of ``network_settings.memory``.

One agent per arena. At an episode's first step its observation shows one of ``CUES`` cues (a
one-hot part); for the next ``DELAY`` steps that part is blank; at the last step a flag asks for
the answer. The agent's action (one discrete branch of ``CUES`` choices) is ignored until then;
at the last step it pays +1 when it names the cue and 0 otherwise, and the episode ends. Nothing
in the last observation tells the cue, so a policy without memory answers at chance
(``1 / CUES``); one that remembers the first observation answers every time.

Observation: ``CUES`` floats (the cue, first step only), then the answer flag, then the step's
fraction of the episode (so that no step looks like another to a network without memory).
"""

from __future__ import annotations

import numpy as np
from mlagents_envs.base_env import ActionSpec

from envs.vector_game import Role, RoleActions, VectorGame, mix_seed

CUES = 3
#: blank steps between the cue and the question
DELAY = 3
EPISODE_LENGTH = DELAY + 2


class Recall(VectorGame):
    """The recall task (see the module docstring)."""

    ROLES = (
        Role(
            name="Recall",
            team=0,
            slots=1,
            obs_size=CUES + 2,
            action_spec=ActionSpec.create_discrete((CUES,)),
        ),
    )
    DEFAULT_MAX_EPISODE_STEPS = EPISODE_LENGTH + 1

    def _allocate_state(self) -> None:
        self.cue = np.zeros(self.num_arenas, dtype=np.int64)
        self.elapsed = np.zeros(self.num_arenas, dtype=np.int64)

    def _reset_arenas(self, arenas: np.ndarray) -> None:
        self.cue[arenas] = self.rng.integers(0, CUES, size=len(arenas))
        self.elapsed[arenas] = 0

    def _advance(self, actions: list[RoleActions]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        answering = self.elapsed == EPISODE_LENGTH - 1
        correct = actions[0].discrete[:, 0, 0] == self.cue
        reward = (answering & correct).astype(np.float32)[:, None]
        self.elapsed += 1
        return reward, np.zeros_like(reward), answering

    def _observe(self, arenas: np.ndarray) -> list[np.ndarray]:
        obs = np.zeros((len(arenas), 1, CUES + 2), dtype=np.float32)
        elapsed = self.elapsed[arenas]
        first = np.flatnonzero(elapsed == 0)
        obs[first, 0, self.cue[arenas[first]]] = 1.0
        obs[:, 0, CUES] = elapsed == EPISODE_LENGTH - 1
        obs[:, 0, CUES + 1] = elapsed / (EPISODE_LENGTH - 1)
        return [obs]

    def render_arena(self, arena: int) -> dict:
        return {"game": "Recall", "cue": int(self.cue[arena]), "step": int(self.elapsed[arena])}


def make_env(worker_id: int = 0, seed: int = 0, **kwargs) -> Recall:
    """A ``Recall`` for env worker ``worker_id``; ``kwargs`` go to ``VectorGame``."""
    return Recall(seed=mix_seed(seed, worker_id), **kwargs)
