"""Snapshots of RLlib runs (``<checkpoint>/ghost_self_play/snapshot-<id>.pt``) as players.

A snapshot is the state of the learner module ``"main"``: RLlib's default PPO module
(``DefaultPPOTorchRLModule``) as ``ghost.integrations.rllib.ghost_self_play`` configures it. The
module's spec (spaces, ``model_config``) lives only in RLlib's pickle files, which are not loaded,
so the module is rebuilt from what can be read safely:

- the layers from the weights' names and shapes: ``fcnet_hiddens`` (the encoder's layers),
  ``head_fcnet_hiddens`` (the policy head's), ``vf_share_layers``, ``fcnet_use_layernorm``,
  ``free_log_std``; every other ``model_config`` key keeps RLlib's default (the activations:
  ``tanh`` in the body, ``relu`` in the heads);
- the spaces from the game's behavior spec, as ``GhostMultiAgentEnv`` makes them: every
  observation flattened and joined, then, for a turn-based game, one flag per discrete action
  (1: legal); ``Box(-1, 1)`` for continuous actions, ``Discrete``/``MultiDiscrete`` otherwise.

The weights must fit that module exactly (``load_state_dict(strict=True)``), so a snapshot of
another architecture is refused rather than played wrongly. ``RLlibModulePlayer`` acts as the
learner did: masked logits pushed to -1e9, the Gaussian's mean (deterministic) or a draw, clipped
to [-1, 1] as the environment clips.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
from mlagents_envs.base_env import ActionTuple

from ghost.exceptions import CheckpointError
from trainers.run_files.safe_load import load_pt

#: the logit an illegal action gets (``ghost.integrations.rllib.modules.ILLEGAL_LOGIT``)
ILLEGAL_LOGIT = -1.0e9
#: where RLlib's deprecation warnings come from (newer Ray, then Ray 2.44)
_DEPRECATION_LOGGERS = ("ray._common.deprecation", "ray.rllib.utils.deprecation")
_LAYER = re.compile(r"(encoder\.(?:encoder|actor_encoder)|pi)\.net\.mlp\.(\d+)\.weight")


@contextlib.contextmanager
def _quiet(names: tuple[str, ...]) -> Iterator[None]:
    """The loggers ``names`` say only errors while the block runs."""
    loggers = [logging.getLogger(name) for name in names]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


def _rllib_installed() -> None:
    try:
        import ray.rllib  # noqa: F401
    except ImportError as error:
        raise CheckpointError(
            f"playing an RLlib snapshot needs RLlib ({error}): pip install 'ghost-trainer[rllib]'"
        ) from None


def _layers(weights: Mapping[str, Any], prefix: str) -> list[tuple[int, int]]:
    """``(in, out)`` of each linear layer under ``prefix``, in order."""
    found = []
    for key, value in weights.items():
        match = _LAYER.fullmatch(key)
        if match and match[1] == prefix and len(value.shape) == 2:
            found.append((int(match[2]), (int(value.shape[1]), int(value.shape[0]))))
    return [shape for _, shape in sorted(found)]


def _model_config(weights: Mapping[str, Any], path: Path) -> tuple[dict[str, Any], int, int]:
    """RLlib's ``model_config`` that builds these weights, the observation width and the width
    of the policy head's output."""
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

    shared = any(key.startswith("encoder.encoder.") for key in weights)
    encoder = _layers(weights, "encoder.encoder" if shared else "encoder.actor_encoder")
    head = _layers(weights, "pi")
    if not encoder or not head:
        raise CheckpointError(
            f"{path} is not the state of RLlib's default PPO module (no encoder or pi layers); "
            "ghost-eval plays snapshots of the modules ghost_self_play configures"
        )
    layernorm = any(
        key.startswith("encoder.") and key.endswith(".weight") and len(value.shape) == 1
        for key, value in weights.items()
    )
    config = DefaultModelConfig(
        fcnet_hiddens=[out for _, out in encoder],
        fcnet_use_layernorm=layernorm,
        head_fcnet_hiddens=[out for _, out in head[:-1]],
        vf_share_layers=shared,
        free_log_std="pi.log_std" in weights,
    )
    return dataclasses.asdict(config), encoder[0][0], head[-1][1]


def _action_space(spec: Any) -> Any:
    from gymnasium import spaces

    action = spec.action_spec
    if action.continuous_size and action.discrete_size:
        raise CheckpointError("RLlib has no space for actions both continuous and discrete")
    if action.continuous_size:
        return spaces.Box(-1.0, 1.0, (action.continuous_size,), np.float32)
    branches = list(action.discrete_branches)
    return spaces.Discrete(branches[0]) if len(branches) == 1 else spaces.MultiDiscrete(branches)


def load_rllib_policy(path: Path, *, behavior_spec: Any) -> RLlibModulePlayer:
    """The RLlib snapshot in ``path`` for the behavior ``behavior_spec`` (see the module
    docstring).

    Raises:
        CheckpointError: no spec (the game is needed), RLlib missing, or weights that are not
            RLlib's default PPO module for this game.
    """
    if behavior_spec is None:
        raise CheckpointError(
            f"{path}: an RLlib snapshot plays in a built-in game (--game), whose behavior says "
            "whether its actions are continuous or discrete; its weights do not"
        )
    _rllib_installed()
    import torch
    from gymnasium import spaces
    from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import (
        DefaultPPOTorchRLModule,
    )

    weights = load_pt(path)
    if not isinstance(weights, Mapping):
        raise CheckpointError(f"{path} is not a module state (a dict of tensors)")
    model_config, width, outputs = _model_config(weights, path)
    action = behavior_spec.action_spec
    observed = int(sum(np.prod(o.shape) for o in behavior_spec.observation_specs))
    flags = int(sum(action.discrete_branches))
    masked = bool(action.discrete_size) and width == observed + flags
    if width != observed + (flags if masked else 0):
        raise CheckpointError(
            f"{path} observes {width} floats, this game gives {observed}: pass the game the "
            "RLlib run trained on (--game)"
        )
    with _quiet(_DEPRECATION_LOGGERS):  # RLlib warns about its own internal config object
        module = DefaultPPOTorchRLModule(
            observation_space=spaces.Box(-np.inf, np.inf, (width,), np.float32),
            action_space=_action_space(behavior_spec),
            inference_only=False,
            model_config=model_config,
        )
    try:
        module.load_state_dict({k: torch.as_tensor(v) for k, v in weights.items()}, strict=True)
    except RuntimeError as error:
        raise CheckpointError(
            f"{path} does not fit RLlib's default PPO module rebuilt from its shapes for this "
            f"game ({outputs} policy outputs): {str(error).strip()}"
        ) from None
    module.eval()
    return RLlibModulePlayer(module, masked=masked, name=str(path))


class RLlibModulePlayer:
    """An RLlib PPO module playing our games (see the module docstring).

    Args:
        module: the RLModule.
        masked: its observations end with one legal-action flag per discrete action.
        seed: seeds sampled actions.
    """

    def __init__(self, module: Any, *, masked: bool, name: str = "rllib", seed: int = 0) -> None:
        import torch

        self.module = module
        self.masked = masked
        self.name = name
        self.generator = torch.Generator().manual_seed(seed)

    def _inputs(self, obs: list[np.ndarray], action_mask: Any) -> tuple[Any, Any]:
        import torch

        rows = np.concatenate([np.asarray(o, np.float32).reshape(len(o), -1) for o in obs], 1)
        blocked = None
        if action_mask is not None:
            parts = [np.asarray(m, bool).reshape(len(rows), -1) for m in action_mask]
            blocked = np.concatenate(parts, axis=1)
        if self.masked:
            flags = self.module.observation_space.shape[0] - rows.shape[1]
            legal = np.ones((len(rows), flags), bool) if blocked is None else ~blocked
            rows = np.concatenate([rows, legal.astype(np.float32)], axis=1)
        return torch.from_numpy(rows), blocked

    def act(
        self, obs: list[np.ndarray], action_mask: Any = None, deterministic: bool = False
    ) -> ActionTuple:
        import torch
        from gymnasium import spaces
        from ray.rllib.core.columns import Columns

        rows, blocked = self._inputs(obs, action_mask)
        with torch.no_grad():
            out = self.module.forward_inference({Columns.OBS: rows})[Columns.ACTION_DIST_INPUTS]
        space = self.module.action_space
        if isinstance(space, spaces.Box):
            mean, log_std = out.chunk(2, dim=-1)
            if not deterministic:
                noise = torch.randn(mean.shape, generator=self.generator)
                mean = mean + torch.exp(log_std) * noise
            return ActionTuple(continuous=mean.clamp(-1.0, 1.0).numpy().astype(np.float32))
        if blocked is not None and self.masked:
            out = torch.where(torch.from_numpy(blocked), torch.full_like(out, ILLEGAL_LOGIT), out)
        sizes = [space.n] if isinstance(space, spaces.Discrete) else list(space.nvec)
        chosen = []
        for logits in out.split([int(n) for n in sizes], dim=-1):
            probabilities = torch.softmax(logits, dim=-1)
            if deterministic:
                chosen.append(probabilities.argmax(dim=-1))
            else:
                chosen.append(torch.multinomial(probabilities, 1, generator=self.generator)[:, 0])
        return ActionTuple(discrete=torch.stack(chosen, dim=1).numpy().astype(np.int32))
