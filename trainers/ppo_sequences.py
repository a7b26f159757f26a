"""The critic's value pass over sequences, for networks with memory trained on rollouts.

The actor's memory at each step was stored while acting, so its sequences start from the stored
memory of their first step. The critic never acted, so its memories are made here, as ML-Agents
does: one no-grad pass runs the critic along each agent's trajectories in time order, starting
from the memory it had at the end of that agent's previous rollout (zeros once an episode ended),
and records the memory each sequence starts from, for training.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs
import numpy as np
import torch

from trainers.networks import ValueNetwork
from trainers.policy import to_tensors
from trainers.sequences import Sequences


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


#: a critic with memory on sequences: (flat row indices, sequence by sequence; each sequence's
#: starting memory; sequence_length; real steps per sequence) -> (one estimate per row, each
#: sequence's memory after its last real step)
SequenceEstimate = Callable[
    [np.ndarray, torch.Tensor, int, torch.Tensor], tuple[torch.Tensor, torch.Tensor]
]
#: the critic's value of the observations after the given rows, each from its memory after it
TailEstimate = Callable[[np.ndarray, torch.Tensor], torch.Tensor]


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
    """``sequence_pass`` of a ``ValueNetwork`` over rows of observations ``obs``, valuing the
    ``next_obs`` of the ``needs_next`` rows."""
    device = obs[0].device

    def estimate(
        rows: np.ndarray, memory: torch.Tensor, length: int, lengths: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        gather = torch.as_tensor(rows, device=device)
        return critic.recurrent([o[gather] for o in obs], memory, length, lengths)

    def tail(rows: np.ndarray, memory: torch.Tensor) -> torch.Tensor:
        return critic.recurrent(to_tensors([o[rows] for o in next_obs], str(device)), memory)[0]

    return sequence_pass(
        estimate, tail, sequences=sequences, needs_next=needs_next, ended=ended,
        carried=carried, device=device,
    )  # fmt: skip


@torch.no_grad()
def sequence_pass(
    estimate: SequenceEstimate,
    tail: TailEstimate | None,
    *,
    sequences: Sequences,
    needs_next: np.ndarray,
    ended: np.ndarray,
    carried: CriticMemories,
    device: torch.device | str = "cpu",
) -> CriticPass:
    """Run a critic (``estimate``) along the rollout's ``sequences``, one depth at a time,
    carrying each slot's memory; ``needs_next``: rows whose next observation must be valued by
    ``tail`` (a trajectory stops there, its episode goes on; no ``tail``: nothing is);
    ``ended``: rows where the agent's episode ended (its memory is cleared after them)."""
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
        estimates, after = estimate(
            part.gather_rows(), memory, length, torch.as_tensor(part.lengths)
        )
        valid = part.valid.reshape(-1)
        values[part.rows.reshape(-1)[valid]] = estimates.cpu().numpy()[valid]
        last = part.last_rows
        bootstrap = needs_next[last]
        if tail is not None and bootstrap.any():
            tail_values = tail(last[bootstrap], after[torch.as_tensor(bootstrap)])
            next_values[last[bootstrap]] = tail_values.cpu().numpy()
        after[torch.as_tensor(ended[last])] = 0.0
        carried.memory[slots] = after.cpu()
    return CriticPass(values=values, next_values=next_values, start_memories=start_memories)
