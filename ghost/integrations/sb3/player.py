"""``SB3Player``: a trained SB3 model as a player of ``ghost.evaluation`` (``act(obs,
action_mask=, deterministic=)``), to judge it against scripted levels in every seat."""

from __future__ import annotations

from typing import Any

import numpy as np
from mlagents_envs.base_env import ActionSpec, ActionTuple

from ghost.integrations.sb3.actors import PolicyActor
from ghost.integrations.sb3.spaces import allowed_from_blocked


class SB3Player:
    """Plays with ``model.policy`` (an SB3 model or policy) in a game of action spec ``spec``."""

    def __init__(self, model: Any, spec: ActionSpec) -> None:
        self.spec = spec
        self._policy = getattr(model, "policy", model)

    def act(
        self,
        obs: list[np.ndarray],
        action_mask: list[np.ndarray] | None = None,
        deterministic: bool = False,
    ) -> ActionTuple:
        batch = np.asarray(obs[0], dtype=np.float32).reshape(len(obs[0]), -1)
        allowed = (
            allowed_from_blocked(action_mask, len(batch), self.spec)
            if action_mask is not None
            else None
        )
        actor = PolicyActor(self._policy, self.spec, deterministic=deterministic)
        return actor.act(batch, allowed)
