"""The acting policy of a ghosted team: one or several frozen opponents, spread over arenas."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import attrs
import numpy as np
from mlagents_envs.base_env import ActionTuple

from envs.stepping import ARENA_STRIDE
from ghost.snapshots import Snapshot
from trainers.base import ActionOutput, ArenaPolicy, Policy, Weights

LATEST = -1


@attrs.define
class Opponent:
    """A drawn opponent. ``snapshot_id == LATEST``: a frozen copy of the learner at swap time."""

    snapshot: Snapshot

    @property
    def is_latest(self) -> bool:
        return self.snapshot.snapshot_id == LATEST


def opponent_slots(arenas: np.ndarray, count: int) -> np.ndarray:
    """Which of ``count`` opponents plays in each arena (worker and arena both spread it)."""
    return (arenas + arenas // ARENA_STRIDE) % count


class OpponentPolicy(ArenaPolicy):
    """Acts for a ghosted team with a different opponent per arena (``opponents_per_swap``)."""

    def __init__(self, *, make_policy: Callable[[], Policy]) -> None:
        self._make_policy = make_policy
        self._policies: list[Policy] = [make_policy()]
        self.behavior_spec = self._policies[0].behavior_spec
        self.opponents: list[Opponent] = []

    def assign(self, opponents: list[Opponent]) -> None:
        """Play ``opponents`` from now on (loads their weights)."""
        while len(self._policies) < len(opponents):
            self._policies.append(self._make_policy())
        for policy, opponent in zip(self._policies, opponents, strict=False):
            policy.load_weights(opponent.snapshot.weights)
        self.opponents = list(opponents)

    def opponent_in(self, arena: int) -> Opponent:
        """The opponent playing in arena key ``arena``."""
        slot = int(opponent_slots(np.asarray([arena]), len(self.opponents))[0])
        return self.opponents[slot]

    def sample_in_arenas(
        self, obs: list[np.ndarray], action_mask: list[np.ndarray] | None, arenas: np.ndarray
    ) -> ActionOutput:
        count = len(self.opponents)
        if count <= 1:
            return self._policies[0].sample(obs, action_mask)
        slots = opponent_slots(arenas, count)
        outputs, rows = [], []
        for slot in np.unique(slots):
            chosen = np.flatnonzero(slots == slot)
            masks = None if action_mask is None else [m[chosen] for m in action_mask]
            outputs.append(self._policies[slot].sample([o[chosen] for o in obs], masks))
            rows.append(chosen)
        order = np.argsort(np.concatenate(rows), kind="stable")
        spec = self.behavior_spec.action_spec

        def merge(parts: list[np.ndarray]) -> np.ndarray:
            return np.concatenate(parts)[order]

        return ActionOutput(
            actions=ActionTuple(
                continuous=merge([o.actions.continuous for o in outputs])
                if spec.continuous_size
                else None,
                discrete=merge([o.actions.discrete for o in outputs])
                if spec.discrete_size
                else None,
            ),
            log_probs=merge([o.log_probs for o in outputs]),
            continuous_raw=merge([o.continuous_raw for o in outputs]),
        )

    def sample(
        self, obs: list[np.ndarray], action_mask: list[np.ndarray] | None = None
    ) -> ActionOutput:
        return self._policies[0].sample(obs, action_mask)

    def act(self, obs: list[np.ndarray], action_mask: list[np.ndarray] | None = None,
            deterministic: bool = False) -> ActionTuple:  # fmt: skip
        return self._policies[0].act(obs, action_mask, deterministic)

    def get_weights(self) -> Weights:
        return self._policies[0].get_weights()

    def load_weights(self, weights: Weights) -> None:
        for policy in self._policies:
            policy.load_weights(weights)

    def save(self, path: Path, weights: Weights | None = None) -> None:
        self._policies[0].save(path, weights)
