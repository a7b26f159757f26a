"""SAC's replay buffer for networks with memory: whole sequences of one agent's steps.

As ML-Agents' SAC does with ``network_settings.memory``, the buffer keeps each agent's
trajectories as sequences of ``sequence_length`` consecutive steps, and a minibatch is whole
sequences, each to be started from the memory the acting policy had at its first step. An
agent's steps gather in a staging row until ``sequence_length`` of them are in or its trajectory
stops (its episode ends, a ``time_horizon`` cut, an environment reset: ``flush``); the sequence
then enters the ring with its unfilled tail marked as padding (padded at the end, as
``trainers.sequences`` pads PPO's). Padding takes room in the ring, as in ML-Agents: a buffer of
``capacity`` steps holds ``capacity // sequence_length`` sequences.
"""

from __future__ import annotations

import numpy as np

from trainers.buffers import ReplayBatch
from trainers.rollout import Transitions


def _columns(t: Transitions) -> dict[str, np.ndarray]:
    """The per-step arrays of ``t`` a sequence keeps, by name."""
    columns = {f"obs.{i}": o for i, o in enumerate(t.obs)}
    columns.update({f"next_obs.{i}": o for i, o in enumerate(t.next_obs)})
    columns.update(
        continuous_raw=t.continuous_raw, discrete=t.discrete, rewards=t.rewards, dones=t.dones
    )
    if t.action_mask is not None:
        assert t.next_action_mask is not None
        columns.update(action_mask=t.action_mask, next_action_mask=t.next_action_mask)
    return columns


def _rounds(slots: np.ndarray) -> list[np.ndarray]:
    """Row indices in rounds in which no slot repeats, each slot's rows in their order."""
    if len(np.unique(slots)) == len(slots):
        return [np.arange(len(slots))]
    rank = np.zeros(len(slots), dtype=np.int64)
    seen: dict[int, int] = {}
    for row, slot in enumerate(slots.tolist()):
        rank[row] = seen.get(slot, 0)
        seen[slot] = int(rank[row]) + 1
    return [np.flatnonzero(rank == r) for r in range(int(rank.max()) + 1)]


class SequenceReplayBuffer:
    """A ring of ``capacity // sequence_length`` sequences of ``sequence_length`` steps (see the
    module docstring); ``len`` is the number of real steps the ring holds."""

    def __init__(self, capacity: int, sequence_length: int) -> None:
        self.sequence_length = sequence_length
        self.capacity = max(capacity // sequence_length, 1)
        self._ring: dict[str, np.ndarray] = {}
        self._valid = np.zeros((self.capacity, sequence_length), dtype=bool)
        self._start_memory = np.zeros((self.capacity, 0), dtype=np.float32)
        self._stage: dict[str, np.ndarray] = {}
        self._stage_memory = np.zeros((0, 0), dtype=np.float32)
        self._filled = np.zeros(0, dtype=np.int64)
        self._cursor = 0
        self._size = 0
        self._steps = 0

    def __len__(self) -> int:
        return self._steps

    @property
    def sequences(self) -> int:
        """Sequences in the ring."""
        return self._size

    def _allocate(self, columns: dict[str, np.ndarray], memory_size: int) -> None:
        length = self.sequence_length
        self._ring = {
            name: np.zeros((self.capacity, length, *c.shape[1:]), dtype=c.dtype)
            for name, c in columns.items()
        }
        self._start_memory = np.zeros((self.capacity, memory_size), dtype=np.float32)
        self._stage = {name: ring[:0].copy() for name, ring in self._ring.items()}
        self._stage_memory = np.zeros((0, memory_size), dtype=np.float32)

    def _reserve(self, slots: int) -> None:
        """Staging rows for agent slots ``0 .. slots - 1``."""
        have = len(self._filled)
        if slots <= have:
            return
        grown = max(slots, 2 * have)

        def grow(old: np.ndarray) -> np.ndarray:
            fresh = np.zeros((grown, *old.shape[1:]), dtype=old.dtype)
            fresh[:have] = old
            return fresh

        self._stage = {name: grow(stage) for name, stage in self._stage.items()}
        self._stage_memory = grow(self._stage_memory)
        self._filled = grow(self._filled)

    def add(self, t: Transitions) -> None:
        """Stage completed transitions (with the acting policy's ``memories``) by agent slot, and
        move every sequence that is full or whose trajectory stopped into the ring."""
        assert t.memories is not None, "a policy with memory stores its memories"
        columns = _columns(t)
        if not self._ring:
            self._allocate(columns, t.memories.shape[1])
        self._reserve(int(t.slots.max(initial=-1)) + 1)
        for rows in _rounds(t.slots):
            slots = t.slots[rows]
            position = self._filled[slots]
            for name, column in columns.items():
                self._stage[name][slots, position] = column[rows]
            starting = position == 0
            self._stage_memory[slots[starting]] = t.memories[rows[starting]]
            self._filled[slots] += 1
            ends = (self._filled[slots] == self.sequence_length) | ~t.continues[rows]
            self._commit(slots[ends])

    def flush(self) -> None:
        """End every staged sequence where it is (the environments reset: no trajectory goes
        on)."""
        self._commit(np.flatnonzero(self._filled > 0))

    def _commit(self, slots: np.ndarray) -> None:
        """Move the staged sequences of ``slots`` into the ring, over its oldest ones."""
        if len(slots) == 0:
            return
        slots = slots[-self.capacity :]
        targets = (self._cursor + np.arange(len(slots))) % self.capacity
        valid = np.arange(self.sequence_length)[None, :] < self._filled[slots][:, None]
        self._steps += int(valid.sum()) - int(self._valid[targets].sum())
        self._valid[targets] = valid
        for name, ring in self._ring.items():
            ring[targets] = self._stage[name][slots]
        self._start_memory[targets] = self._stage_memory[slots]
        self._filled[slots] = 0
        self._cursor = int((self._cursor + len(slots)) % self.capacity)
        self._size = min(self._size + len(slots), self.capacity)

    def sample(self, batch_size: int, rng: np.random.Generator) -> ReplayBatch:
        """``batch_size // sequence_length`` sequences (at least one), drawn uniformly with
        replacement, as rows one sequence after the other."""
        assert self._size > 0, "add whole sequences before sampling"
        count = max(batch_size // self.sequence_length, 1)
        chosen = rng.integers(0, self._size, size=count)

        def rows(name: str) -> np.ndarray:
            picked = self._ring[name][chosen]
            return picked.reshape(count * self.sequence_length, *picked.shape[2:])

        observations = sum(name.startswith("obs.") for name in self._ring)
        masked = "action_mask" in self._ring
        return ReplayBatch(
            obs=[rows(f"obs.{i}") for i in range(observations)],
            next_obs=[rows(f"next_obs.{i}") for i in range(observations)],
            continuous_raw=rows("continuous_raw"),
            discrete=rows("discrete"),
            action_mask=rows("action_mask") if masked else None,
            next_action_mask=rows("next_action_mask") if masked else None,
            rewards=rows("rewards"),
            dones=rows("dones"),
            valid=self._valid[chosen].reshape(-1),
            start_memories=self._start_memory[chosen],
            sequence_length=self.sequence_length,
        )

    def state_dict(self) -> dict[str, object]:
        return {
            "ring": self._ring,
            "valid": self._valid,
            "start_memory": self._start_memory,
            "stage": self._stage,
            "stage_memory": self._stage_memory,
            "filled": self._filled,
            "cursor": self._cursor,
            "size": self._size,
            "steps": self._steps,
        }

    def load_state_dict(self, state: dict) -> None:
        # copies, so that the state never aliases live arrays
        self._ring = {name: ring.copy() for name, ring in state["ring"].items()}
        self._stage = {name: stage.copy() for name, stage in state["stage"].items()}
        for name in ("valid", "start_memory", "stage_memory", "filled"):
            setattr(self, f"_{name}", np.array(state[name]))
        self._cursor = int(state["cursor"])
        self._size = int(state["size"])
        self._steps = int(state["steps"])
