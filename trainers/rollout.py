"""From step batches to complete transitions, with Unity's agent semantics, vectorised.

An agent's reward for an action arrives with its *next* step (a decision or its episode's end), so
each agent keeps one pending action until then. An agent id may appear in ``TerminalSteps`` and
``DecisionSteps`` in the same step: the episode ends first (the pending action is completed with
the terminal observation), then the next episode's first decision becomes pending. Agents that
vanish (a crashed environment worker) simply leave their pending action behind.

Every completed transition carries ``continues``: whether the same agent's next transition follows
it in the same trajectory. A trajectory ends with the episode or after ``time_horizon`` steps (the
transition is then bootstrapped from its next observation's value, as ML-Agents does).
"""

from __future__ import annotations

import copy

import attrs
import numpy as np
from mlagents_envs.base_env import BehaviorSpec, DecisionSteps, TerminalSteps

from envs.stepping import AGENT_ID_STRIDE
from trainers.base import ActionOutput, StepBatch


def group_keys(agent_ids: np.ndarray, group_ids: np.ndarray) -> np.ndarray:
    """Each agent's group as a key unique across environments (0 for agents in no group).

    Group ids are numbered per environment; agent ids carry their environment in their high bits
    (``envs.stepping.AGENT_ID_STRIDE``), so the two together name one group of one environment.
    """
    group_ids = np.asarray(group_ids, dtype=np.int64)
    environment = np.asarray(agent_ids, dtype=np.int64) // AGENT_ID_STRIDE
    return np.where(group_ids > 0, environment * AGENT_ID_STRIDE + group_ids, 0)


@attrs.frozen
class Transitions:
    """Completed transitions of many agents (one row each)."""

    obs: list[np.ndarray]
    next_obs: list[np.ndarray]
    continuous_raw: np.ndarray
    discrete: np.ndarray
    action_mask: np.ndarray | None
    #: mask of the next observation (all False at an episode's end: nothing is chosen there)
    next_action_mask: np.ndarray | None
    log_probs: np.ndarray
    rewards: np.ndarray
    dones: np.ndarray
    continues: np.ndarray
    slots: np.ndarray
    #: whether the agent's episode ended here (interrupted or not)
    ended: np.ndarray | None = None
    #: the group part of ``rewards`` (``group_reward``)
    group_rewards: np.ndarray | None = None
    #: the agent's group, unique across environments (0: in no group)
    groups: np.ndarray | None = None
    #: with memory: the acting policy's memory before each action (``[n, memory_size]``)
    memories: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.rewards)

    @staticmethod
    def concatenate(parts: list[Transitions]) -> Transitions:
        if len(parts) == 1:
            return parts[0]
        fields = {}
        for field in attrs.fields(Transitions):
            values = [getattr(p, field.name) for p in parts]
            if field.name in ("obs", "next_obs"):
                fields[field.name] = [np.concatenate(group) for group in zip(*values, strict=True)]
            elif values[0] is None:
                fields[field.name] = None
            else:
                fields[field.name] = np.concatenate(values)
        return Transitions(**fields)


@attrs.frozen
class FinishedEpisodes:
    """Cumulative reward and length of the episodes that ended in one step batch."""

    rewards: np.ndarray
    lengths: np.ndarray
    #: the group rewards within ``rewards``
    group_rewards: np.ndarray


class TransitionAssembler:
    """Keeps each agent's pending action and emits transitions once their outcome is known."""

    def __init__(
        self,
        *,
        behavior_spec: BehaviorSpec,
        time_horizon: int,
        slot_table: dict[tuple[int, int], int] | None = None,
        table_key: int = 0,
        memory_size: int = 0,
    ) -> None:
        """``slot_table`` may be shared by the assemblers of one trainer (each with its own
        ``table_key``) so that slot numbers, which key trajectories downstream, never collide.
        ``memory_size``: the acting policy's memory, kept with each transition (0: none)."""
        self.time_horizon = time_horizon
        self._memory_size = memory_size
        self._table_key = table_key
        self._obs_shapes = [tuple(o.shape) for o in behavior_spec.observation_specs]
        self._continuous = behavior_spec.action_spec.continuous_size
        self._branches = tuple(behavior_spec.action_spec.discrete_branches)
        self._slot_of: dict[tuple[int, int], int] = slot_table if slot_table is not None else {}
        self._capacity = 0
        self._grow(64)
        self._id_cache: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def _grow(self, capacity: int) -> None:
        def resize(old: np.ndarray | None, shape: tuple[int, ...], dtype: type) -> np.ndarray:
            fresh = np.zeros((capacity, *shape), dtype=dtype)
            if old is not None:
                fresh[: len(old)] = old
            return fresh

        old_obs = getattr(self, "_pending_obs", [None] * len(self._obs_shapes))
        self._pending_obs = [
            resize(old, shape, np.float32)
            for old, shape in zip(old_obs, self._obs_shapes, strict=True)
        ]
        for name, shape, dtype in (
            ("_pending_raw", (self._continuous,), np.float32),
            ("_pending_discrete", (len(self._branches),), np.int32),
            ("_pending_mask", (sum(self._branches),), bool),
            ("_pending_log_probs", (self._continuous + len(self._branches),), np.float32),
            ("_pending_memory", (self._memory_size,), np.float32),
            ("_pending", (), bool),
            ("_since_cut", (), np.int64),
            ("_episode_reward", (), np.float64),
            ("_episode_group_reward", (), np.float64),
            ("_episode_length", (), np.int64),
        ):
            setattr(self, name, resize(getattr(self, name, None), shape, dtype))
        self._capacity = capacity

    def _slots(self, kind: str, agent_ids: np.ndarray) -> np.ndarray:
        cached = self._id_cache.get(kind)
        if cached is not None and np.array_equal(cached[0], agent_ids):
            return cached[1]
        slot_of, key = self._slot_of, self._table_key
        for agent_id in agent_ids.tolist():
            if (key, agent_id) not in slot_of:
                slot_of[(key, agent_id)] = len(slot_of)
        if len(slot_of) > self._capacity:
            self._grow(max(2 * self._capacity, len(slot_of)))
        slots = np.fromiter(
            (slot_of[(key, a)] for a in agent_ids.tolist()), np.int64, len(agent_ids)
        )
        self._id_cache[kind] = (agent_ids.copy(), slots)
        return slots

    def slots(self) -> np.ndarray:
        """The slots of every agent this assembler has seen."""
        key = self._table_key
        return np.asarray([s for (k, _), s in self._slot_of.items() if k == key], dtype=np.int64)

    def reset(self) -> None:
        """Forget every pending action and running episode (environments are being reset)."""
        self._pending[:] = False
        self._since_cut[:] = 0
        self._episode_reward[:] = 0.0
        self._episode_group_reward[:] = 0.0
        self._episode_length[:] = 0

    def _complete(
        self,
        slots: np.ndarray,
        *,
        rewards: np.ndarray,
        next_obs: list[np.ndarray],
        next_mask: np.ndarray | None,
        dones: np.ndarray,
        continues: np.ndarray,
        steps: DecisionSteps | TerminalSteps,
        rows: np.ndarray,
    ) -> Transitions:
        return Transitions(
            obs=[o[slots] for o in self._pending_obs],
            next_obs=[np.asarray(o, dtype=np.float32) for o in next_obs],
            continuous_raw=self._pending_raw[slots],
            discrete=self._pending_discrete[slots],
            action_mask=self._pending_mask[slots] if self._branches else None,
            next_action_mask=(
                None
                if not self._branches
                else np.zeros((len(slots), sum(self._branches)), bool)
                if next_mask is None
                else next_mask
            ),
            log_probs=self._pending_log_probs[slots],
            rewards=rewards.astype(np.float32),
            dones=dones,
            continues=continues,
            slots=slots,
            ended=np.full(len(slots), isinstance(steps, TerminalSteps)),
            group_rewards=steps.group_reward[rows].astype(np.float32),
            groups=group_keys(steps.agent_id[rows], steps.group_id[rows]),
            memories=self._pending_memory[slots] if self._memory_size else None,
        )

    def add(self, batch: StepBatch) -> tuple[Transitions | None, FinishedEpisodes | None]:
        """Fold one step batch in; return the transitions and episodes it completed."""
        parts: list[Transitions] = []
        episodes = None
        terminal, decision = batch.steps.terminal, batch.steps.decision
        if len(terminal):
            ended, episodes = self._end_episodes(terminal)
            if ended is not None:
                parts.append(ended)
        if len(decision):
            ongoing = self._decide(decision, batch.output)
            if ongoing is not None:
                parts.append(ongoing)
        return (Transitions.concatenate(parts) if parts else None), episodes

    def _end_episodes(
        self, terminal: TerminalSteps
    ) -> tuple[Transitions | None, FinishedEpisodes | None]:
        """Complete the pending actions of the agents whose episode ended, and forget them."""
        slots = self._slots("terminal", terminal.agent_id)
        known = self._pending[slots]
        rewards = terminal.reward + terminal.group_reward
        completed = episodes = None
        if known.any():
            done_slots = slots[known]
            completed = self._complete(
                done_slots,
                rewards=rewards[known],
                next_obs=[o[known] for o in terminal.obs],
                next_mask=None,
                dones=~terminal.interrupted[known],
                continues=np.zeros(len(done_slots), bool),
                steps=terminal,
                rows=known,
            )
            episodes = FinishedEpisodes(
                rewards=self._episode_reward[done_slots] + rewards[known],
                lengths=self._episode_length[done_slots].copy(),
                group_rewards=self._episode_group_reward[done_slots] + terminal.group_reward[known],
            )
        self._pending[slots] = False
        self._since_cut[slots] = 0
        self._episode_reward[slots] = 0.0
        self._episode_group_reward[slots] = 0.0
        self._episode_length[slots] = 0
        return completed, episodes

    def _decide(self, decision: DecisionSteps, output: ActionOutput) -> Transitions | None:
        """Complete the pending actions of the deciding agents (cutting trajectories at
        ``time_horizon``), then hold their new actions pending."""
        slots = self._slots("decision", decision.agent_id)
        rewards = decision.reward + decision.group_reward
        masks = decision.action_mask
        flat_mask = None
        if self._branches and masks is not None:
            flat_mask = masks[0] if len(masks) == 1 else np.concatenate(masks, axis=1)
        completed = None
        known = self._pending[slots]
        if known.any():
            ongoing = slots[known]
            self._since_cut[ongoing] += 1
            cut = self._since_cut[ongoing] >= self.time_horizon
            self._since_cut[ongoing[cut]] = 0
            completed = self._complete(
                ongoing,
                rewards=rewards[known],
                next_obs=[o[known] for o in decision.obs],
                next_mask=None if flat_mask is None else flat_mask[known],
                dones=np.zeros(len(ongoing), bool),
                continues=~cut,
                steps=decision,
                rows=known,
            )
        self._episode_reward[slots] += rewards
        self._episode_group_reward[slots] += decision.group_reward
        self._episode_length[slots] += 1
        self._hold(slots, decision, output, flat_mask)
        return completed

    def _hold(
        self,
        slots: np.ndarray,
        decision: DecisionSteps,
        output: ActionOutput,
        flat_mask: np.ndarray | None,
    ) -> None:
        """Keep the deciding agents' observations and chosen actions until their outcome."""
        for pending, observed in zip(self._pending_obs, decision.obs, strict=True):
            pending[slots] = observed
        self._pending_raw[slots] = output.continuous_raw
        if self._branches:
            self._pending_discrete[slots] = output.actions.discrete
            self._pending_mask[slots] = flat_mask if flat_mask is not None else False
        self._pending_log_probs[slots] = output.log_probs
        if self._memory_size:
            assert output.memories is not None, "a policy with memory returns its memories"
            self._pending_memory[slots] = output.memories
        self._pending[slots] = True

    def state_dict(self) -> dict[str, object]:
        """Pending actions and running episodes (copies; the shared slot table is the trainer's)."""
        return {
            key: copy.deepcopy(value)
            for key, value in vars(self).items()
            if key.startswith("_") and key != "_slot_of"
        }

    def load_state_dict(self, state: dict[str, object]) -> None:
        for key, value in state.items():
            setattr(self, key, copy.deepcopy(value))
