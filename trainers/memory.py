"""Recurrent memory (``network_settings.memory``): the LSTM core and each agent's carried state.

ML-Agents packs an LSTM's state into one vector of ``memory_size`` floats: the hidden state in the
first half, the cell state in the second. Networks here take and return memories in that packing,
``[agents, memory_size]``, so a stored memory is one row per transition and the ONNX export can
give it to Unity as ``recurrent_in`` unchanged.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from mlagents_envs.base_env import ActionTuple, DecisionSteps, TerminalSteps
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from trainers.sequence_grid import SequenceGrid


class MemoryCore(nn.Module):
    """An LSTM over features, ``memory_size // 2`` wide, fed and read in the packed layout."""

    def __init__(self, input_size: int, memory_size: int) -> None:
        super().__init__()
        if memory_size % 2:
            raise ValueError(
                f"memory_size must be even (hidden and cell halves), got {memory_size}"
            )
        self.memory_size = memory_size
        self.output_size = memory_size // 2
        self.lstm = nn.LSTM(input_size, self.output_size, batch_first=True)

    def forward(
        self,
        features: torch.Tensor,
        memory: torch.Tensor,
        sequence_length: int = 1,
        lengths: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Features of ``[sequences * sequence_length]`` rows (each sequence's steps in order) and
        each sequence's starting memory ``[sequences, memory_size]`` → one output row per input
        row and each sequence's memory after its last step (its ``lengths``-th when given: rows
        past it are padding, and do not touch the memory)."""
        batch = memory.shape[0]
        steps = features.reshape(batch, sequence_length, features.shape[-1])
        half = self.output_size
        state = (
            memory[:, :half].unsqueeze(0).contiguous(),
            memory[:, half:].unsqueeze(0).contiguous(),
        )
        if lengths is None:
            output, (hidden, cell) = self.lstm(steps, state)
        else:
            packed = pack_padded_sequence(
                steps, lengths.cpu(), batch_first=True, enforce_sorted=False
            )
            packed_output, (hidden, cell) = self.lstm(packed, state)
            output, _ = pad_packed_sequence(
                packed_output, batch_first=True, total_length=sequence_length
            )
        return output.reshape(batch * sequence_length, half), torch.cat([hidden[0], cell[0]], 1)

    def over_grid(
        self, features: torch.Tensor, memory: torch.Tensor, grid: SequenceGrid
    ) -> torch.Tensor:
        """Features of a minibatch's real steps only (``grid.rows``' order) and each sequence's
        starting memory → one output row per real step. Each of ``grid.parts`` is one LSTM
        call over its ``[sequences, steps]`` grid, zeros at the padding."""
        parts = grid.parts
        if len(parts) == 1:
            return self._over_part(features, memory, parts[0].positions, grid.sequences,
                                   grid.steps)  # fmt: skip
        device = features.device
        outputs = []
        for part in parts:
            taken = torch.as_tensor(part.steps_taken, device=device)
            chosen = torch.as_tensor(part.sequences, device=device)
            outputs.append(self._over_part(features[taken], memory[chosen], part.positions,
                                           len(part.sequences), part.steps))  # fmt: skip
        order = torch.as_tensor(np.concatenate([part.steps_taken for part in parts]), device=device)
        joined = torch.cat(outputs)
        return joined.new_zeros(joined.shape).index_copy(0, order, joined)

    def _over_part(
        self,
        features: torch.Tensor,
        memory: torch.Tensor,
        positions: np.ndarray,
        sequences: int,
        steps: int,
    ) -> torch.Tensor:
        """One LSTM call over ``sequences`` × ``steps``, ``features`` laid at ``positions``."""
        where = torch.as_tensor(positions, device=features.device)
        laid = features.new_zeros(sequences * steps, features.shape[-1])
        output, _ = self.forward(laid.index_copy(0, where, features), memory, steps)
        return output[where]


def masked_mean(values: torch.Tensor, valid: torch.Tensor | None) -> torch.Tensor:
    """Mean of ``values`` (``[rows]`` or ``[rows, columns]``) over the rows where ``valid``."""
    if valid is None:
        return values.mean()
    weights = valid.to(values.dtype)
    if values.dim() == 2:
        return (values * weights.unsqueeze(1)).sum() / (weights.sum() * values.shape[1]).clamp(
            min=1.0
        )
    return (values * weights).sum() / weights.sum().clamp(min=1.0)


class AgentMemories:
    """The memory each acting agent carries from one decision to its next, by agent id.

    An agent seen for the first time, or whose episode ended (``forget``), starts from zeros.
    Memories are rows of one array, the agent ids kept sorted beside them, so that a batch of
    agents is looked up with one ``searchsorted`` rather than one lookup per agent. A forgotten
    agent's row is zeroed and kept for its next episode (environments mostly reuse an agent's
    id); rows of forgotten agents are dropped once they are most of the array, so that ids that
    are never seen again do not pile up.
    """

    #: forgotten rows kept at least up to this many, before dropping them is worth its copy
    KEPT_FORGOTTEN = 64

    def __init__(self, memory_size: int) -> None:
        self.memory_size = memory_size
        self._ids = np.zeros(0, np.int64)
        self._rows = np.zeros((0, memory_size), np.float32)
        self._live = np.zeros(0, np.bool_)  # False: forgotten (its row is zeros)

    def __len__(self) -> int:
        """How many agents have a memory now (stored and not forgotten since)."""
        return int(np.count_nonzero(self._live))

    def _find(self, agent_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each id's position in ``_ids`` and whether it is there."""
        where = np.searchsorted(self._ids, agent_ids)
        known = where < len(self._ids)
        known[known] = self._ids[where[known]] == agent_ids[known]
        return where, known

    def recall(self, agent_ids: np.ndarray) -> np.ndarray:
        """The memories of ``agent_ids`` as ``[agents, memory_size]`` float32."""
        agent_ids = np.asarray(agent_ids, np.int64).reshape(-1)
        memories = np.zeros((len(agent_ids), self.memory_size), np.float32)
        where, known = self._find(agent_ids)
        memories[known] = self._rows[where[known]]
        return memories

    def store(self, agent_ids: np.ndarray, memories: np.ndarray) -> None:
        """Keep ``memories`` (one row per id) as the agents' memories; where an id appears more
        than once, its last row is kept."""
        agent_ids = np.asarray(agent_ids, np.int64).reshape(-1)
        memories = np.asarray(memories, np.float32).reshape(len(agent_ids), self.memory_size)
        where, known = self._find(agent_ids)
        if known.all():  # the usual decision: every agent has a row, each comes once
            taken = np.zeros(len(self._ids), np.bool_)
            taken[where] = True
            if np.count_nonzero(taken) == len(where):
                self._rows[where] = memories
                self._live[where] = True
                return
        # np.unique on the reversed ids finds each id's last row
        agent_ids, last = np.unique(agent_ids[::-1], return_index=True)
        memories = memories[::-1][last]
        where, known = self._find(agent_ids)
        self._rows[where[known]] = memories[known]
        self._live[where[known]] = True
        if not known.all():
            new, at = ~known, where[~known]
            self._ids = np.insert(self._ids, at, agent_ids[new])
            self._rows = np.insert(self._rows, at, memories[new], axis=0)
            self._live = np.insert(self._live, at, True)

    def forget(self, agent_ids: np.ndarray | None = None) -> None:
        """Drop the memories of ``agent_ids`` (all of them when None)."""
        if agent_ids is None:
            self._ids = np.zeros(0, np.int64)
            self._rows = np.zeros((0, self.memory_size), np.float32)
            self._live = np.zeros(0, np.bool_)
            return
        where, known = self._find(np.asarray(agent_ids, np.int64).reshape(-1))
        where = where[known]
        self._rows[where] = 0.0
        self._live[where] = False
        forgotten = len(self._live) - np.count_nonzero(self._live)
        if forgotten > max(self.KEPT_FORGOTTEN, len(self._live) // 2):
            self._ids, self._rows = self._ids[self._live], self._rows[self._live]
            self._live = np.ones(len(self._ids), np.bool_)


def forget_ended(actor: Any, terminal: TerminalSteps) -> None:
    """An actor with memory forgets the agents whose episode ended in ``terminal``."""
    if len(terminal) and getattr(actor, "memory_size", 0):
        actor.forget(terminal.agent_id)


def act_on_steps(
    actor: Any,
    decision: DecisionSteps,
    terminal: TerminalSteps | None = None,
    *,
    deterministic: bool = False,
    rows: np.ndarray | None = None,
) -> ActionTuple:
    """``actor``'s actions for the agents of ``decision`` (only its ``rows`` when given).

    An actor with memory (``memory_size`` > 0) first forgets the agents whose episode ended in
    ``terminal``, then acts with each row's agent id, so that its memories follow the agents;
    any other actor is called as ``act(obs, action_mask=, deterministic=)``.
    """
    obs, mask, agent_ids = decision.obs, decision.action_mask, decision.agent_id
    if rows is not None:
        obs = [o[rows] for o in obs]
        mask = None if mask is None else [m[rows] for m in mask]
        agent_ids = agent_ids[rows]
    if not getattr(actor, "memory_size", 0):
        return actor.act(obs, action_mask=mask, deterministic=deterministic)
    if terminal is not None:
        forget_ended(actor, terminal)
    return actor.act(obs, action_mask=mask, deterministic=deterministic, agent_ids=agent_ids)
