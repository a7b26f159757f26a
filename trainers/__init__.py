"""Trainers: PPO and SAC on the ML-Agents BaseEnv API, the trainer plugin interface and a plain
training loop (``trainers.training_loop.TrainingLoop``). Nothing here knows of self-play.

``load_policy(path)`` loads a saved policy (final ``<Behavior>.pt``, checkpoint or snapshot) and
returns an object with ``act(obs, action_mask=None, deterministic=False) -> ActionTuple`` and
``action_probabilities(obs, action_mask=None)``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["load_policy"]


def __getattr__(name: str) -> Any:
    # on first use: settings and errors are read without importing torch
    if name == "load_policy":
        from trainers.policy import load_policy

        return load_policy
    raise AttributeError(f"module 'trainers' has no attribute {name!r}")
