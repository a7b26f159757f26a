"""``MaskedPPOTorchRLModule``: RLlib's default PPO module that never picks an illegal action.

``GhostMultiAgentEnv`` with ``action_mask`` on ends every observation with one flag per discrete
action (1: legal now). This module reads those flags from the end of the observation and pushes
the logits of illegal actions far below any legal one, in acting and in training, so sampling,
log-probabilities and entropy all see only legal actions. The network still sees the flags as
inputs, which tells it what is legal without any change to RLlib's encoders.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch
from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import DefaultPPOTorchRLModule
from ray.rllib.core.columns import Columns

#: the logit an illegal action gets: far below any learnt one, finite so nothing turns into NaN
ILLEGAL_LOGIT = -1.0e9


def mask_size(action_space: gym.Space) -> int:
    """How many legal-action flags end each observation for ``action_space``."""
    if isinstance(action_space, gym.spaces.Discrete):
        return int(action_space.n)
    if isinstance(action_space, gym.spaces.MultiDiscrete):
        return int(np.sum(action_space.nvec))
    raise ValueError(f"action masks need discrete actions, not {action_space}")


class MaskedPPOTorchRLModule(DefaultPPOTorchRLModule):
    """PPO's default torch module with the legal-action flags at the end of the observation
    applied to its action logits (see the module docstring)."""

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return self._masked(batch, super()._forward(batch, **kwargs))

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return self._masked(batch, super()._forward_train(batch, **kwargs))

    def _masked(self, batch: dict[str, Any], output: dict[str, Any]) -> dict[str, Any]:
        assert self.action_space is not None
        flags = batch[Columns.OBS][..., -mask_size(self.action_space) :]
        logits = output[Columns.ACTION_DIST_INPUTS]
        illegal = flags < 0.5
        output[Columns.ACTION_DIST_INPUTS] = torch.where(
            illegal, torch.full_like(logits, ILLEGAL_LOGIT), logits
        )
        return output
