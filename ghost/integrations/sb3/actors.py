"""What a ghosted team acts with: an *actor* turns a batch of observations into actions.

``GhostVecEnv`` calls each distinct actor once per step with every row it plays (all arenas or
tables it is seated at), never once per agent. Actors:

- ``PolicyActor``: an SB3 policy (a frozen copy of the learner loaded with snapshot weights, or
  the live learner itself for naive self-play), through its public ``predict``;
- ``PlayerActor``: anything with our ``act(obs, action_mask=, deterministic=)`` contract
  (scripted levels, ``trainers.policy.TorchPolicy`` files, ``envs.board_players``);
- ``RandomActor``: uniform legal actions (before any opponent is fielded).
"""

from __future__ import annotations

import inspect
from typing import Any, Protocol

import numpy as np
from mlagents_envs.base_env import ActionSpec, ActionTuple

from ghost.integrations.sb3.spaces import blocked_from_allowed, to_action_tuple


class Actor(Protocol):
    def act(self, obs: np.ndarray, allowed: np.ndarray | None) -> ActionTuple:
        """Actions for ``(n, obs_size)`` observations; ``allowed``: ``(n, actions)`` SB3 masks
        (True: allowed) or None when the game has no masks."""
        ...


class PolicyActor:
    """An SB3 policy acting through ``predict`` (sampled unless ``deterministic``)."""

    def __init__(self, policy: Any, spec: ActionSpec, *, deterministic: bool = False) -> None:
        self.policy = policy
        self.spec = spec
        self.deterministic = deterministic
        self._takes_masks = "action_masks" in inspect.signature(policy.predict).parameters

    def act(self, obs: np.ndarray, allowed: np.ndarray | None) -> ActionTuple:
        extra = {"action_masks": allowed} if self._takes_masks and allowed is not None else {}
        actions, _ = self.policy.predict(obs, deterministic=self.deterministic, **extra)
        return to_action_tuple(actions, self.spec)


class PlayerActor:
    """A player with our ``act(obs, action_mask=, deterministic=)`` contract."""

    def __init__(self, player: Any, spec: ActionSpec, *, deterministic: bool = False) -> None:
        self.player = player
        self.spec = spec
        self.deterministic = deterministic

    def act(self, obs: np.ndarray, allowed: np.ndarray | None) -> ActionTuple:
        mask = blocked_from_allowed(allowed, self.spec) if allowed is not None else None
        return self.player.act([obs], action_mask=mask, deterministic=self.deterministic)


class RandomActor:
    """Uniformly random legal actions, drawn from ``rng``."""

    def __init__(self, spec: ActionSpec, rng: np.random.Generator) -> None:
        self.spec = spec
        self.rng = rng

    def act(self, obs: np.ndarray, allowed: np.ndarray | None) -> ActionTuple:
        n = len(obs)
        if self.spec.continuous_size:
            size = (n, self.spec.continuous_size)
            return ActionTuple(continuous=self.rng.uniform(-1, 1, size).astype(np.float32))
        columns = []
        start = 0
        for branch in self.spec.discrete_branches:
            legal = (
                np.ones((n, branch), dtype=bool)
                if allowed is None
                else allowed[:, start : start + branch]
            )
            # a random key per action; illegal ones can never win the arg-max
            keys = np.where(legal, self.rng.random((n, branch)), -1.0)
            columns.append(keys.argmax(axis=1))
            start += branch
        return ActionTuple(discrete=np.stack(columns, axis=1).astype(np.int32))


def act_in_batches(
    actors: list[Actor], slots: np.ndarray, obs: np.ndarray, allowed: np.ndarray | None
) -> ActionTuple:
    """Every row's action, each actor called once with the rows of its slot (``slots[i]``: the
    index in ``actors`` that plays row ``i``)."""
    n = len(obs)
    continuous: np.ndarray | None = None
    discrete: np.ndarray | None = None
    for slot in np.unique(slots).tolist():
        rows = np.flatnonzero(slots == slot)
        part = actors[slot].act(obs[rows], None if allowed is None else allowed[rows])
        if part.continuous.size:
            if continuous is None:
                continuous = np.zeros((n, part.continuous.shape[1]), dtype=np.float32)
            continuous[rows] = part.continuous
        if part.discrete.size:
            if discrete is None:
                discrete = np.zeros((n, part.discrete.shape[1]), dtype=np.int32)
            discrete[rows] = part.discrete
    return ActionTuple(continuous=continuous, discrete=discrete)
