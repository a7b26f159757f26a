"""Our self-play cycle inside RLlib's PPO (new API stack): ``pip install 'ghost-trainer[rllib]'``.

- ``ghost_self_play(config, env=..., self_play=...)``: wires a ``PPOConfig`` (environment,
  learner and ghost modules, policy mapping, callback); see docs/rllib.md.
- ``GhostMultiAgentEnv``: any of our games (OpenSpiel, PettingZoo, built-in, any BaseEnv) as an
  RLlib ``MultiAgentEnv``; ``MaskedPPOTorchRLModule`` plays turn-based games' legal actions only.
- ``GhostPPO``: what the config builds; RLlib's own checkpoints (``save_to_path``, ``save``,
  ``restore``, ``from_checkpoint``, Tune) carry the self-play state (``SelfPlayCheckpoints``),
  as do ``save_checkpoint`` / ``restore_checkpoint``;
  ``self_play_of(algorithm)``: the running self-play (window, Elo, controller).
"""

from __future__ import annotations

try:
    import ray.rllib  # noqa: F401
    import torch  # noqa: F401
except ModuleNotFoundError as error:
    raise ModuleNotFoundError(
        f"ghost.integrations.rllib needs RLlib ({error.name} is not installed): "
        "pip install 'ghost-trainer[rllib]'",
        name=error.name,
    ) from None

from ghost.integrations.rllib.algorithm import GhostPPO
from ghost.integrations.rllib.callback import GhostSelfPlayCallback
from ghost.integrations.rllib.checkpoints import (
    SelfPlayCheckpoints,
    restore_checkpoint,
    save_checkpoint,
    self_play_of,
)
from ghost.integrations.rllib.configure import ghost_self_play
from ghost.integrations.rllib.env import GhostMultiAgentEnv, agent_id, team_of
from ghost.integrations.rllib.host import RLlibSelfPlay
from ghost.integrations.rllib.modules import MaskedPPOTorchRLModule
from ghost.integrations.rllib.routing import LEARNER_MODULE, ghost_module
from ghost.integrations.rllib.settings import self_play_settings

__all__ = [
    "LEARNER_MODULE",
    "GhostMultiAgentEnv",
    "GhostPPO",
    "GhostSelfPlayCallback",
    "MaskedPPOTorchRLModule",
    "RLlibSelfPlay",
    "SelfPlayCheckpoints",
    "agent_id",
    "ghost_module",
    "ghost_self_play",
    "restore_checkpoint",
    "save_checkpoint",
    "self_play_of",
    "self_play_settings",
    "team_of",
]
