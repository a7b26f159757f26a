"""The acting policy of a ghosted team: one or several frozen opponents, spread over arenas."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from mlagents_envs.base_env import ActionSpec, ActionTuple

from ghost.core.opponents import Opponent, opponent_slots
from trainers.base import ActionOutput, ArenaPolicy, Policy, Weights, action_components
from trainers.policy_stack import PolicyStack, stackable


class _ActingAdapter:
    """Gives a fixed opponent that only has ``act`` (a scripted policy) the ``sample`` call."""

    def __init__(self, policy: Any, components: int) -> None:
        self.policy = policy
        self.components = components

    def sample(self, obs: list[np.ndarray], action_mask: list[np.ndarray] | None) -> ActionOutput:
        actions = self.policy.act(obs, action_mask)
        n = obs[0].shape[0]
        continuous = actions.continuous if actions.continuous is not None else np.zeros((n, 0))
        return ActionOutput(actions=actions, log_probs=np.zeros((n, self.components), np.float32),
                            continuous_raw=np.asarray(continuous, np.float32))  # fmt: skip

    def act(self, obs: list[np.ndarray], action_mask: list[np.ndarray] | None = None,
            deterministic: bool = False) -> ActionTuple:  # fmt: skip
        return self.policy.act(obs, action_mask, deterministic)


def acting_form(policy: Any, components: int) -> Any:
    """``policy`` with a ``sample`` method (trained policies have one, scripted ones get one)."""
    return policy if hasattr(policy, "sample") else _ActingAdapter(policy, components)


def _masks(masks: list[np.ndarray] | None, rows: np.ndarray) -> list[np.ndarray] | None:
    return None if masks is None else [m[rows] for m in masks]


def _merge(groups: list[tuple[np.ndarray, ActionOutput]], spec: ActionSpec) -> ActionOutput:
    """One ``ActionOutput`` in row order from outputs for disjoint groups of rows."""
    order = np.argsort(np.concatenate([rows for rows, _ in groups]), kind="stable")
    outputs = [output for _, output in groups]

    def merge(parts: list[np.ndarray]) -> np.ndarray:
        return np.concatenate(parts)[order]

    return ActionOutput(
        actions=ActionTuple(
            continuous=merge([o.actions.continuous for o in outputs])
            if spec.continuous_size
            else None,
            discrete=merge([o.actions.discrete for o in outputs]) if spec.discrete_size else None,
        ),
        log_probs=merge([o.log_probs for o in outputs]),
        continuous_raw=merge([o.continuous_raw for o in outputs]),
    )


#: snapshot networks from which one stacked pass beats a pass per network: a stacked pass costs
#: about five plain ones of 32 rows however many it holds (docs/benchmarks.md, "Cost curve")
STACK_FROM = 4


class OpponentPolicy(ArenaPolicy):
    """Acts for a ghosted team with a different opponent per arena (``opponents_per_swap``).

    With memory, each opponent's network keeps the memories of the agents it plays, and forgets
    them all when opponents are assigned (a swap): a new opponent starts from no memory.
    """

    def __init__(self, *, make_policy: Callable[[], Policy]) -> None:
        self._make_policy = make_policy
        self._networks: list[Policy] = [make_policy()]
        self._policies: list[Any] = list(self._networks)
        self.behavior_spec = self._networks[0].behavior_spec
        self.opponents: list[Opponent] = []
        self._stack: PolicyStack | None = None
        self._stack_member = np.full(1, -1)

    def assign(self, opponents: list[Opponent]) -> None:
        """Play ``opponents`` from now on (loads snapshot weights; fixed ones act themselves)."""
        while len(self._networks) < len(opponents):
            self._networks.append(self._make_policy())
        self._policies = []
        self.forget()
        for network, opponent in zip(self._networks, opponents, strict=False):
            if opponent.fixed is not None:
                components = action_components(self.behavior_spec.action_spec)
                self._policies.append(acting_form(opponent.fixed.policy, components))
            else:
                assert opponent.snapshot is not None
                network.load_weights(opponent.snapshot.weights)
                self._policies.append(network)
        self.opponents = list(opponents)
        self._restack()

    def opponent_in(self, arena: int) -> Opponent:
        """The opponent playing in arena key ``arena``."""
        slot = int(opponent_slots(np.asarray([arena]), len(self.opponents))[0])
        return self.opponents[slot]

    @property
    def memory_size(self) -> int:  # type: ignore[override]
        """The largest memory of the networks and opponents acting (0: none carries memory)."""
        return max(getattr(p, "memory_size", 0) for p in [*self._networks, *self._policies])

    def forget(self, agent_ids: np.ndarray | None = None) -> None:
        for policy in [*self._networks, *self._policies]:
            if getattr(policy, "memory_size", 0):
                policy.forget(agent_ids)

    def _sample_with(
        self,
        policy: Any,
        obs: list[np.ndarray],
        action_mask: list[np.ndarray] | None,
        agent_ids: np.ndarray | None,
    ) -> ActionOutput:
        if getattr(policy, "memory_size", 0):
            return policy.sample(obs, action_mask, agent_ids=agent_ids)
        return policy.sample(obs, action_mask)

    def sample_in_arenas(
        self,
        obs: list[np.ndarray],
        action_mask: list[np.ndarray] | None,
        arenas: np.ndarray,
        agent_ids: np.ndarray | None = None,
    ) -> ActionOutput:
        """Each agent's action from the opponent of its arena (``agent_ids``: with memory)."""
        count = len(self.opponents)
        if count <= 1:
            return self._sample_with(self._policies[0], obs, action_mask, agent_ids)
        slots = opponent_slots(arenas, count)
        groups: list[tuple[np.ndarray, ActionOutput]] = []
        loose = np.ones(len(slots), dtype=bool)
        if self._stack is not None:
            members = self._stack_member[slots]
            stacked = np.flatnonzero(members >= 0)
            if len(stacked) == len(slots):
                return self._stack.sample(obs, action_mask, members)
            if len(stacked):
                rows_obs = [o[stacked] for o in obs]
                output = self._stack.sample(
                    rows_obs, _masks(action_mask, stacked), members[stacked]
                )
                groups.append((stacked, output))
                loose[stacked] = False
        for slot in np.unique(slots[loose]):
            chosen = np.flatnonzero(loose & (slots == slot))
            output = self._sample_with(
                self._policies[slot],
                [o[chosen] for o in obs],
                _masks(action_mask, chosen),
                None if agent_ids is None else agent_ids[chosen],
            )
            groups.append((chosen, output))
        return _merge(groups, self.behavior_spec.action_spec)

    def _restack(self) -> None:
        """Batch the snapshot opponents' networks into one ``PolicyStack`` when they allow it and
        are at least ``STACK_FROM``."""
        self._stack, self._stack_member = None, np.full(len(self._policies), -1)
        networks = [
            i for i, policy in enumerate(self._policies) if any(policy is n for n in self._networks)
        ]
        if len(networks) >= STACK_FROM and stackable([self._policies[i] for i in networks]):
            self._stack = PolicyStack([self._policies[i] for i in networks])
            self._stack_member[networks] = np.arange(len(networks))

    def sample(
        self,
        obs: list[np.ndarray],
        action_mask: list[np.ndarray] | None = None,
        agent_ids: np.ndarray | None = None,
    ) -> ActionOutput:
        return self._sample_with(self._policies[0], obs, action_mask, agent_ids)

    def act(self, obs: list[np.ndarray], action_mask: list[np.ndarray] | None = None,
            deterministic: bool = False, agent_ids: np.ndarray | None = None) -> ActionTuple:  # fmt: skip
        if getattr(self._policies[0], "memory_size", 0):
            return self._policies[0].act(obs, action_mask, deterministic, agent_ids=agent_ids)
        return self._policies[0].act(obs, action_mask, deterministic)

    def get_weights(self) -> Weights:
        return self._networks[0].get_weights()

    def load_weights(self, weights: Weights) -> None:
        self.forget()
        for network in self._networks:
            network.load_weights(weights)
        self._policies = list(self._networks[: max(len(self.opponents), 1)])
        self._restack()

    def save(self, path: Path, weights: Weights | None = None) -> None:
        self._networks[0].save(path, weights)
