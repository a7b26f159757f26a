"""Scripted (hand-written) policies for the built-in games, and a match runner for them.

A scripted policy has the call shape of a trained one, ``act(obs, action_mask, deterministic)``,
for a whole batch of agents at once, so the self-play layer can use it as a fixed opponent and
tests can grade the games. Each game module defines its levels in a ``SCRIPTED_LEVELS`` table;
``envs.games.scripted_policy(game, level)`` is the registry over all games.

Levels: ``random`` (uniform actions), then ``weak``, ``medium``, ``strong`` (each beats the one
before in most matches). Matrix games have mixed strategies instead (``random``, ``rock``, ...).
"""

from __future__ import annotations

import abc
from collections.abc import Mapping

import attrs
import numpy as np
from mlagents_envs.base_env import ActionSpec, ActionTuple

from envs.vector_game import VectorGame


class ScriptedPolicy(abc.ABC):
    """A fixed policy: observations of a batch of agents → one ``ActionTuple``.

    Args:
        action_spec: the behavior's action spec (continuous *or* discrete).
        seed: seeds the policy's own random draws (noise, random moves).
    """

    def __init__(self, *, action_spec: ActionSpec, seed: int | None = 0) -> None:
        self.action_spec = action_spec
        self.rng = np.random.default_rng(seed)

    def act(
        self,
        obs: list[np.ndarray],
        action_mask: list[np.ndarray] | None = None,
        deterministic: bool = False,
    ) -> ActionTuple:
        """Actions for ``len(obs[0])`` agents (``action_mask`` is accepted and ignored)."""
        batch = np.asarray(obs[0], dtype=np.float32)
        actions = self._act(batch, deterministic)
        if self.action_spec.continuous_size:
            return ActionTuple(continuous=np.clip(actions, -1.0, 1.0).astype(np.float32))
        return ActionTuple(discrete=np.asarray(actions, dtype=np.int32))

    @abc.abstractmethod
    def _act(self, obs: np.ndarray, deterministic: bool) -> np.ndarray:
        """``(n, continuous_size)`` floats or ``(n, discrete_size)`` ints for ``(n, obs)``."""

    def random_actions(self, n: int) -> np.ndarray:
        """Uniform actions for ``n`` agents in this policy's action space."""
        spec = self.action_spec
        if spec.continuous_size:
            return self.rng.uniform(-1.0, 1.0, size=(n, spec.continuous_size))
        high = np.asarray(spec.discrete_branches)
        return (self.rng.random((n, len(high))) * high).astype(np.int32)

    def blend_random(self, actions: np.ndarray, fraction: float) -> np.ndarray:
        """``actions`` with a ``fraction`` of the rows replaced by uniform random actions."""
        swap = self.rng.random(len(actions)) < fraction
        return np.where(swap[:, None], self.random_actions(len(actions)), actions)


class RandomPolicy(ScriptedPolicy):
    """Uniform random actions (the ``random`` level of every game)."""

    def _act(self, obs: np.ndarray, deterministic: bool) -> np.ndarray:
        return self.random_actions(len(obs))


def move_branch(delta: np.ndarray, deadzone: float = 0.05) -> np.ndarray:
    """Discrete move branch (0: stay, 1: plus, 2: minus) that reduces a signed ``delta``."""
    return np.where(delta > deadzone, 1, np.where(delta < -deadzone, 2, 0)).astype(np.int32)


def unit(vectors: np.ndarray) -> np.ndarray:
    """``vectors`` (last axis 2) scaled to length 1 (zero vectors stay zero)."""
    norm = np.sqrt((vectors**2).sum(axis=-1, keepdims=True))
    return vectors / np.maximum(norm, 1e-6)


@attrs.define
class MatchTally:
    """Results of ``play_matches``: per team, episodes won, drawn and lost; plus interruptions.

    ``episodes`` counts every ended episode, interrupted ones included, so ``win_rate`` is a
    conservative share.
    """

    episodes: int = 0
    interrupted: int = 0
    wins: dict[int, int] = attrs.Factory(dict)
    draws: dict[int, int] = attrs.Factory(dict)
    losses: dict[int, int] = attrs.Factory(dict)

    def win_rate(self, team: int) -> float:
        """Share of all ended episodes that ``team`` won."""
        return self.wins.get(team, 0) / max(self.episodes, 1)


def play_matches(
    env: VectorGame,
    policies: Mapping[str, ScriptedPolicy],
    *,
    episodes: int,
    max_steps: int = 100_000,
) -> MatchTally:
    """Play ``env`` with one policy per behavior name until ``episodes`` episodes ended.

    A team's result in an arena is the sign of its first agent's final reward plus group reward.
    """
    missing = set(env.behavior_specs) - set(policies)
    if missing:
        raise ValueError(
            f"play_matches needs a policy for every behavior; missing {sorted(missing)}"
        )
    # one agent per team and arena reports the team's result: the first slot of its first role
    scorers: dict[str, tuple[int, int]] = {}
    first_slot = 0
    for role in env.ROLES:
        if all(team != role.team for _, team in scorers.values()):
            scorers[role.behavior_name] = (first_slot, role.team)
        first_slot += role.slots
    tally = MatchTally()
    for _, team in scorers.values():
        tally.wins[team] = tally.draws[team] = tally.losses[team] = 0
    env.reset()
    for _ in range(max_steps):
        for name, policy in policies.items():
            decision, _ = env.get_steps(name)
            env.set_actions(name, policy.act(decision.obs))
        env.step()
        for name, (slot, team) in scorers.items():
            _, terminal = env.get_steps(name)
            mine = terminal.agent_id % env.agents_per_arena == slot
            result = np.sign(terminal.reward[mine] + terminal.group_reward[mine])
            cut = terminal.interrupted[mine]
            tally.wins[team] += int(((result > 0) & ~cut).sum())
            tally.losses[team] += int(((result < 0) & ~cut).sum())
            tally.draws[team] += int(((result == 0) & ~cut).sum())
            if team == min(t for _, t in scorers.values()):
                tally.episodes += int(mine.sum())
                tally.interrupted += int(cut.sum())
        if tally.episodes >= episodes:
            break
    return tally
