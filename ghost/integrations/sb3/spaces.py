"""Between ML-Agents' specs and Gymnasium's spaces: observation and action spaces, actions, masks.

SB3 sees one flat float observation and one action per VecEnv index: ``Discrete`` for one
discrete branch, ``MultiDiscrete`` for several, ``Box(-1, 1)`` for continuous actions. Masks in
SB3's convention are True where an action is *allowed* (ML-Agents' are True where it is blocked).
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces
from mlagents_envs.base_env import ActionSpec, ActionTuple, BehaviorSpec

from ghost.exceptions import EnvironmentSpecError


def observation_size(spec: BehaviorSpec) -> int:
    """Floats in one agent's observations, all flattened and joined."""
    return int(sum(np.prod(obs.shape) for obs in spec.observation_specs))


def observation_space(spec: BehaviorSpec) -> spaces.Box:
    return spaces.Box(-np.inf, np.inf, shape=(observation_size(spec),), dtype=np.float32)


def flat_observations(obs: list[np.ndarray]) -> np.ndarray:
    """``(n, size)`` float32 rows from a ``DecisionSteps``/``TerminalSteps`` observation list."""
    rows = [np.asarray(o, dtype=np.float32).reshape(len(o), -1) for o in obs]
    return rows[0] if len(rows) == 1 else np.concatenate(rows, axis=1)


def action_space(name: str, spec: ActionSpec) -> spaces.Space:
    """The Gymnasium action space of behavior ``name``.

    Raises:
        EnvironmentSpecError: the behavior has both continuous and discrete actions.
    """
    if spec.continuous_size and spec.discrete_size:
        raise EnvironmentSpecError(
            f"{name} has both continuous and discrete actions, which no SB3 algorithm takes; "
            "give the game one kind of action"
        )
    if spec.continuous_size:
        return spaces.Box(-1.0, 1.0, shape=(spec.continuous_size,), dtype=np.float32)
    branches = spec.discrete_branches
    if len(branches) == 1:
        return spaces.Discrete(branches[0])
    return spaces.MultiDiscrete(list(branches))


def to_action_tuple(actions: np.ndarray, spec: ActionSpec) -> ActionTuple:
    """SB3 actions of ``n`` agents as the environment takes them."""
    actions = np.asarray(actions)
    n = len(actions)
    if spec.continuous_size:
        continuous = actions.reshape(n, spec.continuous_size).astype(np.float32)
        return ActionTuple(continuous=continuous)
    return ActionTuple(discrete=actions.reshape(n, spec.discrete_size).astype(np.int32))


def from_action_tuple(actions: ActionTuple, spec: ActionSpec) -> np.ndarray:
    """``to_action_tuple`` undone: one SB3 action per row."""
    if spec.continuous_size:
        return np.asarray(actions.continuous, dtype=np.float32)
    discrete = np.asarray(actions.discrete, dtype=np.int64)
    return discrete[:, 0] if spec.discrete_size == 1 else discrete


def allowed_from_blocked(blocked: list[np.ndarray] | None, n: int, spec: ActionSpec) -> np.ndarray:
    """SB3 masks ``(n, sum(branches))`` (True: allowed) from ML-Agents' per-branch masks."""
    width = sum(spec.discrete_branches)
    if blocked is None:
        return np.ones((n, width), dtype=bool)
    return ~np.concatenate([np.asarray(b, dtype=bool).reshape(n, -1) for b in blocked], axis=1)


def blocked_from_allowed(allowed: np.ndarray, spec: ActionSpec) -> list[np.ndarray]:
    """ML-Agents' per-branch masks (True: blocked) from SB3 masks."""
    edges = np.cumsum(spec.discrete_branches)[:-1]
    return np.split(~np.asarray(allowed, dtype=bool), edges, axis=1)
