"""PPO's pieces for networks with memory: the critic's value pass over sequences, masked means.

The actor's memory at each step was stored while acting, so its sequences start from the stored
memory of their first step. The critic never acted, so its memories are made here, as ML-Agents
does: one no-grad pass runs the critic along each agent's trajectories in time order, starting
from the memory it had at the end of that agent's previous rollout (zeros once an episode ended),
and records the memory each sequence starts from, for training.
"""

from __future__ import annotations

import attrs
import numpy as np
import torch

from trainers.networks import ValueNetwork
from trainers.policy import to_tensors
from trainers.sequences import Sequences


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


@attrs.frozen
class CriticPass:
    """What the critic's value pass gives: the value of every row, of the observation after each
    row that ends a trajectory without ending its episode (0 elsewhere), and the memory each
    sequence starts from."""

    values: np.ndarray
    next_values: np.ndarray
    start_memories: torch.Tensor


class CriticMemories:
    """The critic's memory per agent slot, carried from one rollout to the next."""

    def __init__(self, memory_size: int) -> None:
        self.memory = torch.zeros(0, memory_size)

    def reserve(self, slots: int) -> None:
        if slots > len(self.memory):
            grown = torch.zeros(slots, self.memory.shape[1])
            grown[: len(self.memory)] = self.memory
            self.memory = grown

    def clear(self) -> None:
        """The environments were reset: every agent's critic starts again from zeros."""
        self.memory.zero_()

    def state_dict(self) -> dict[str, torch.Tensor]:
        return {"memory": self.memory.clone()}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        self.memory = state["memory"].clone()


@torch.no_grad()
def critic_pass(
    critic: ValueNetwork,
    *,
    obs: list[torch.Tensor],
    next_obs: list[np.ndarray],
    sequences: Sequences,
    needs_next: np.ndarray,
    ended: np.ndarray,
    carried: CriticMemories,
) -> CriticPass:
    """Run ``critic`` along the rollout's ``sequences``, one depth at a time, carrying each
    slot's memory; ``needs_next``: rows whose next observation must be valued (a trajectory stops
    there, its episode goes on); ``ended``: rows where the agent's episode ended (its memory is
    cleared after them)."""
    device = obs[0].device
    values = np.zeros(len(ended), np.float32)
    next_values = np.zeros(len(ended), np.float32)
    start_memories = torch.zeros(len(sequences), carried.memory.shape[1], device=device)
    carried.reserve(int(sequences.slots.max(initial=-1)) + 1)
    length = sequences.sequence_length
    for depth in range(int(sequences.depth.max(initial=-1)) + 1):
        chosen = np.flatnonzero(sequences.depth == depth)
        slots = torch.as_tensor(sequences.slots[chosen])
        memory = carried.memory[slots].to(device)
        start_memories[chosen] = memory
        part = Sequences(
            rows=sequences.rows[chosen],
            slots=sequences.slots[chosen],
            depth=sequences.depth[chosen],
        )
        gather = torch.as_tensor(part.gather_rows(), device=device)
        estimates, after = critic.recurrent(
            [o[gather] for o in obs], memory, length, torch.as_tensor(part.lengths)
        )
        valid = part.valid.reshape(-1)
        values[part.rows.reshape(-1)[valid]] = estimates.cpu().numpy()[valid]
        last = part.last_rows
        bootstrap = needs_next[last]
        if bootstrap.any():
            tail = to_tensors([o[last[bootstrap]] for o in next_obs], str(device))
            tail_values, _ = critic.recurrent(tail, after[torch.as_tensor(bootstrap)], 1)
            next_values[last[bootstrap]] = tail_values.cpu().numpy()
        after[torch.as_tensor(ended[last])] = 0.0
        carried.memory[slots] = after.cpu()
    return CriticPass(values=values, next_values=next_values, start_memories=start_memories)
