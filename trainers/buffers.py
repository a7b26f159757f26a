"""Experience storage: PPO's rollout buffer (linked, in time order) and SAC's replay buffer."""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from trainers.rollout import Transitions


class RolloutBuffer:
    """Transitions in arrival order, each linked to the same agent's next one (``next_index``).

    Chunks are ``Transitions`` or anything shaped like them (``slots``, ``continues``, ``len`` and a
    ``concatenate`` static method), such as ``trainers.group_rollout.GroupTransitions``. A
    checkpoint holds them as one batch with each chunk's bounds: a handful of arrays however many
    steps the buffer holds, so writing one costs the bytes, not an object per step.
    """

    def __init__(self) -> None:
        self._chunks: list[Any] = []
        #: rows of each chunk added (a loaded buffer's first chunk holds several)
        self._bounds: list[tuple[int, int]] = []
        self._size = 0
        self._last_row_of_slot = np.full(64, -1, dtype=np.int64)
        self._links: list[tuple[np.ndarray, np.ndarray]] = []

    def __len__(self) -> int:
        return self._size

    def add(self, transitions: Any) -> None:
        slots = transitions.slots
        if slots.max(initial=-1) >= len(self._last_row_of_slot):
            grown = np.full(2 * int(slots.max()) + 1, -1, dtype=np.int64)
            grown[: len(self._last_row_of_slot)] = self._last_row_of_slot
            self._last_row_of_slot = grown
        rows = np.arange(self._size, self._size + len(transitions))
        previous = self._last_row_of_slot[slots]
        linked = previous >= 0
        self._links.append((previous[linked], rows[linked]))
        self._last_row_of_slot[slots] = np.where(transitions.continues, rows, -1)
        self._chunks.append(transitions)
        self._bounds.append((self._size, self._size + len(transitions)))
        self._size += len(transitions)

    def contents(self) -> tuple[Any, np.ndarray, list[tuple[int, int]]]:
        """All transitions as one batch, their ``next_index`` and the bounds of the chunks they
        were added in (``trainers.gae`` walks them backwards)."""
        data = type(self._chunks[0]).concatenate(self._chunks)
        next_index = np.full(self._size, -1, dtype=np.int64)
        for source, target in self._links:
            next_index[source] = target
        return data, next_index, list(self._bounds)

    def cut_links(self, slots: np.ndarray | None = None) -> None:
        """No transition added from now on continues one already stored (environments reset);
        only for the agents in ``slots`` when given."""
        if slots is None:
            self._last_row_of_slot[:] = -1
            return
        slots = slots[slots < len(self._last_row_of_slot)]
        self._last_row_of_slot[slots] = -1

    def clear(self) -> None:
        self._chunks.clear()
        self._bounds.clear()
        self._links.clear()
        self._size = 0
        self.cut_links()

    def state_dict(self) -> dict[str, object]:
        """The buffer as a checkpoint keeps it: one batch, its chunks' bounds, and the links
        as two arrays."""
        empty = np.zeros(0, dtype=np.int64)
        sources = [source for source, _ in self._links]
        targets = [target for _, target in self._links]
        return {
            "data": type(self._chunks[0]).concatenate(self._chunks) if self._chunks else None,
            "bounds": np.asarray(self._bounds, dtype=np.int64).reshape(-1, 2),
            "links": (np.concatenate([empty, *sources]), np.concatenate([empty, *targets])),
            "size": self._size,
            "last_row_of_slot": self._last_row_of_slot.copy(),
        }

    def load_state_dict(self, state: dict) -> None:
        """Continue from ``state_dict``'s form, or from the older one that listed every chunk."""
        if "chunks" in state:  # written before checkpoints held the buffer as one batch
            self._chunks = list(state["chunks"])
            self._links = list(state["links"])
            self._bounds, start = [], 0
            for chunk in self._chunks:
                self._bounds.append((start, start + len(chunk)))
                start += len(chunk)
        else:
            self._chunks = [] if state["data"] is None else [state["data"]]
            self._links = [tuple(np.asarray(part, dtype=np.int64) for part in state["links"])]
            self._bounds = [(int(start), int(end)) for start, end in state["bounds"]]
        self._size = int(state["size"])
        self._last_row_of_slot = np.asarray(state["last_row_of_slot"])


@attrs.frozen
class ReplayBatch:
    """A minibatch drawn from a ``ReplayBuffer`` (one row per transition).

    ``next_action_mask`` is the mask that came with ``next_obs`` (all False where unknown). Drawn
    from a ``trainers.sequence_replay.SequenceReplayBuffer``, the rows are whole sequences of
    ``sequence_length`` steps one after the other, ``valid`` False at their padding, and
    ``start_memories`` the acting policy's memory at each sequence's first step.
    """

    obs: list[np.ndarray]
    next_obs: list[np.ndarray]
    continuous_raw: np.ndarray
    discrete: np.ndarray
    action_mask: np.ndarray | None
    next_action_mask: np.ndarray | None
    rewards: np.ndarray
    dones: np.ndarray
    valid: np.ndarray | None = None
    start_memories: np.ndarray | None = None
    sequence_length: int = 1


class ReplayBuffer:
    """A ring of the last ``capacity`` transitions for off-policy sampling."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._arrays: dict[str, np.ndarray] | None = None
        self._obs: list[np.ndarray] = []
        self._next_obs: list[np.ndarray] = []
        self._cursor = 0
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def _allocate(self, t: Transitions) -> None:
        def ring(example: np.ndarray) -> np.ndarray:
            return np.zeros((self.capacity, *example.shape[1:]), dtype=example.dtype)

        self._obs = [ring(o) for o in t.obs]
        self._next_obs = [ring(o) for o in t.next_obs]
        self._arrays = {
            "continuous_raw": ring(t.continuous_raw),
            "discrete": ring(t.discrete),
            "rewards": ring(t.rewards),
            "dones": ring(t.dones),
        }
        if t.action_mask is not None:
            self._arrays["action_mask"] = ring(t.action_mask)
            self._arrays["next_action_mask"] = ring(t.next_action_mask)

    def add(self, t: Transitions) -> None:
        """Append transitions, overwriting the oldest rows once ``capacity`` is reached."""
        if self._arrays is None:
            self._allocate(t)
        assert self._arrays is not None
        n = min(len(t), self.capacity)
        rows = (self._cursor + np.arange(n)) % self.capacity
        for ring, new in zip(self._obs, t.obs, strict=True):
            ring[rows] = new[-n:]
        for ring, new in zip(self._next_obs, t.next_obs, strict=True):
            ring[rows] = new[-n:]
        for name, ring in self._arrays.items():
            ring[rows] = getattr(t, name)[-n:]
        self._cursor = int((self._cursor + n) % self.capacity)
        self._size = min(self._size + n, self.capacity)

    def sample(self, batch_size: int, rng: np.random.Generator) -> ReplayBatch:
        """``batch_size`` rows drawn uniformly with replacement."""
        assert self._arrays is not None and self._size > 0, "add transitions before sampling"
        rows = rng.integers(0, self._size, size=batch_size)
        arrays = self._arrays
        return ReplayBatch(
            obs=[ring[rows] for ring in self._obs],
            next_obs=[ring[rows] for ring in self._next_obs],
            continuous_raw=arrays["continuous_raw"][rows],
            discrete=arrays["discrete"][rows],
            action_mask=arrays["action_mask"][rows] if "action_mask" in arrays else None,
            next_action_mask=(
                arrays["next_action_mask"][rows] if "next_action_mask" in arrays else None
            ),
            rewards=arrays["rewards"][rows],
            dones=arrays["dones"][rows],
        )

    def state_dict(self) -> dict[str, object]:
        return {
            "arrays": self._arrays,
            "obs": self._obs,
            "next_obs": self._next_obs,
            "cursor": self._cursor,
            "size": self._size,
        }

    def load_state_dict(self, state: dict) -> None:
        # copies, so that the state (and other trainers loading it) never aliases live rings
        arrays = state["arrays"]
        self._arrays = None if arrays is None else {k: v.copy() for k, v in arrays.items()}
        self._obs = [o.copy() for o in state["obs"]]
        self._next_obs = [o.copy() for o in state["next_obs"]]
        self._cursor = int(state["cursor"])
        self._size = int(state["size"])
