"""Trainers: PPO and SAC on the ML-Agents BaseEnv API, and the trainer plugin interface.

``load_policy(path)`` loads a saved policy (final ``<Behavior>.pt``, checkpoint or snapshot) and
returns an object with ``act(obs, action_mask=None, deterministic=False) -> ActionTuple`` and
``action_probabilities(obs, action_mask=None)``.
"""

from trainers.policy_file import load_policy

__all__ = ["load_policy"]
