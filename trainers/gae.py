"""Generalized advantage estimation over linked transitions of many agents."""

from __future__ import annotations

import numpy as np


def compute_gae(
    *,
    rewards: np.ndarray,
    values: np.ndarray,
    next_values: np.ndarray,
    dones: np.ndarray,
    next_index: np.ndarray,
    chunk_bounds: list[tuple[int, int]],
    gamma: float,
    lambd: float,
) -> np.ndarray:
    """Advantages ``A_t = δ_t + γλ A_{next(t)}`` with ``δ_t = r_t + γ V(s'_t)(1 - done_t) - V(s_t)``.

    ``next_index[t]`` is the row of the same agent's next transition in the same trajectory, or -1
    where the trajectory stops (episode end, ``time_horizon`` cut, end of the buffer): there the sum
    stops and ``next_values`` bootstraps. Rows come in chunks appended in time order, and a
    ``next_index`` always points into a later chunk, so one reverse pass over chunks is exact.
    """
    n = len(rewards)
    deltas = rewards + gamma * next_values * (~dones) - values
    advantages = np.zeros(n + 1, dtype=np.float64)  # row n: the zero behind every chain end
    follow = np.where(next_index >= 0, next_index, n)
    decay = gamma * lambd
    for start, end in reversed(chunk_bounds):
        advantages[start:end] = deltas[start:end] + decay * advantages[follow[start:end]]
    return advantages[:n].astype(np.float32)
