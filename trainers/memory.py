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
    """

    def __init__(self, memory_size: int) -> None:
        self.memory_size = memory_size
        self._rows: dict[int, np.ndarray] = {}

    def __len__(self) -> int:
        return len(self._rows)

    def recall(self, agent_ids: np.ndarray) -> np.ndarray:
        """The memories of ``agent_ids`` as ``[agents, memory_size]`` float32."""
        zeros = np.zeros(self.memory_size, np.float32)
        if len(agent_ids) == 0:
            return np.zeros((0, self.memory_size), np.float32)
        return np.stack([self._rows.get(a, zeros) for a in np.asarray(agent_ids).tolist()])

    def store(self, agent_ids: np.ndarray, memories: np.ndarray) -> None:
        for agent_id, row in zip(np.asarray(agent_ids).tolist(), memories, strict=True):
            self._rows[agent_id] = np.array(row, np.float32)

    def forget(self, agent_ids: np.ndarray | None = None) -> None:
        """Drop the memories of ``agent_ids`` (all of them when None)."""
        if agent_ids is None:
            self._rows.clear()
            return
        for agent_id in np.asarray(agent_ids).tolist():
            self._rows.pop(agent_id, None)


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
