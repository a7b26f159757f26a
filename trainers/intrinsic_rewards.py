"""Reward signals learned from experience: curiosity (ICM) and random network distillation (RND).

Both follow ML-Agents' ``reward_signals.curiosity`` and ``reward_signals.rnd`` (keys, defaults,
statistics): PPO adds the signal's reward, scaled by its ``strength``, to the extrinsic one, with a
value estimate and advantages of its own discounted by the signal's ``gamma``; the signal's network
trains on the same minibatches as the policy, with an optimizer of its own.

- **Curiosity** (Pathak et al., 2017): a state encoder, a forward model predicting the next state's
  encoding from the state's and the action, and an inverse model predicting the action from both
  encodings. The reward is the forward model's error, ``0.5 * sum((φ(s') - f(φ(s), a))²)``, capped
  so that after ``strength`` it is at most 1, and 0 until the networks have trained once.
- **RND** (Burda et al., 2018): a fixed random network and a predictor trained to match it; the
  reward is the squared prediction error on the observation, large where the agent has rarely been.

With self-play only the learning team's experience reaches the trainer, so only it trains these.
"""

from __future__ import annotations

import abc
from typing import Any

import numpy as np
import torch
from mlagents_envs.base_env import BehaviorSpec
from torch import nn
from torch.nn import functional

from trainers.networks import ObservationEncoder, mlp
from trainers.rollout import Transitions
from trainers.settings import (
    CuriositySettings,
    NetworkSettings,
    RewardSignalSettings,
    RNDSettings,
)

#: forward against inverse loss weight, and the loss scale, of ML-Agents' curiosity module
CURIOSITY_FORWARD_WEIGHT = 0.2
CURIOSITY_LOSS_SCALE = 10.0
#: the hidden layer of the forward and inverse models (ML-Agents uses the same size)
MODEL_UNITS = 256


class IntrinsicSignal(abc.ABC):
    """A reward signal with a network of its own, trained on the learner's experience."""

    #: the key under ``reward_signals`` and the word in statistics tags (``Policy/RND Reward``)
    key: str
    title: str

    def __init__(self, settings: RewardSignalSettings) -> None:
        self.settings = settings

    @property
    def gamma(self) -> float:
        return self.settings.gamma

    @property
    def strength(self) -> float:
        return self.settings.strength

    @abc.abstractmethod
    def rewards(self, data: Transitions) -> np.ndarray:
        """The signal's reward for every row of ``data`` (before ``strength``), no gradients."""

    @abc.abstractmethod
    def update(self, data: Transitions, rows: np.ndarray) -> dict[str, float]:
        """One optimizer step on the minibatch ``rows``; the losses by statistics tag."""

    @abc.abstractmethod
    def state_dict(self) -> dict[str, Any]: ...

    @abc.abstractmethod
    def load_state_dict(self, state: dict[str, Any]) -> None: ...


def _encoder_settings(settings: CuriositySettings | RNDSettings) -> NetworkSettings:
    """The signal's own network settings; ``encoding_size`` (an older key) sets their width."""
    network = settings.network_settings
    if settings.encoding_size is None:
        return network
    return NetworkSettings(
        normalize=network.normalize,
        hidden_units=settings.encoding_size,
        num_layers=network.num_layers,
    )


class _StateEncoder(nn.Module):
    """Observations → a feature vector (the width of the signal's ``hidden_units``)."""

    def __init__(self, spec: BehaviorSpec, settings: NetworkSettings) -> None:
        super().__init__()
        self.encoder = ObservationEncoder(list(spec.observation_specs), settings)
        self.body = mlp(self.encoder.output_size, settings.hidden_units, settings.num_layers)
        self.output_size = settings.hidden_units

    def forward(self, obs: list[torch.Tensor]) -> torch.Tensor:
        return self.body(self.encoder(obs))


def _tensors(arrays: list[np.ndarray], rows: np.ndarray | slice) -> list[torch.Tensor]:
    return [torch.as_tensor(array[rows], dtype=torch.float32) for array in arrays]


class _Actions:
    """The actions of a behavior as one float vector each: continuous values, then a one-hot
    block per discrete branch."""

    def __init__(self, spec: BehaviorSpec) -> None:
        self.continuous_size = spec.action_spec.continuous_size
        self.branches = tuple(spec.action_spec.discrete_branches)
        self.size = self.continuous_size + sum(self.branches)

    def vectors(self, data: Transitions, rows: np.ndarray | slice) -> torch.Tensor:
        parts = []
        if self.continuous_size:
            parts.append(torch.as_tensor(data.continuous_raw[rows], dtype=torch.float32))
        discrete = torch.as_tensor(data.discrete[rows], dtype=torch.int64)
        for branch, size in enumerate(self.branches):
            parts.append(functional.one_hot(discrete[:, branch], size).float())
        return torch.cat(parts, dim=1)


class Curiosity(IntrinsicSignal):
    """ML-Agents' curiosity module (see the module docstring)."""

    key = "curiosity"
    title = "Curiosity"

    def __init__(self, spec: BehaviorSpec, settings: CuriositySettings) -> None:
        super().__init__(settings)
        self.actions = _Actions(spec)
        self.state_encoder = _StateEncoder(spec, _encoder_settings(settings))
        width = self.state_encoder.output_size
        self.forward_model = nn.Sequential(
            nn.Linear(width + self.actions.size, MODEL_UNITS),
            nn.SiLU(),
            nn.Linear(MODEL_UNITS, width),
        )
        self.inverse_model = nn.Sequential(nn.Linear(2 * width, MODEL_UNITS), nn.SiLU())
        self.continuous_head = (
            nn.Linear(MODEL_UNITS, self.actions.continuous_size)
            if self.actions.continuous_size
            else None
        )
        self.discrete_head = (
            nn.Linear(MODEL_UNITS, sum(self.actions.branches)) if self.actions.branches else None
        )
        self.modules = nn.ModuleList(
            m
            for m in (
                self.state_encoder,
                self.forward_model,
                self.inverse_model,
                self.continuous_head,
                self.discrete_head,
            )
            if m is not None
        )
        self.optimizer = torch.optim.Adam(self.modules.parameters(), lr=settings.learning_rate)
        self.updated_once = False

    def _encode(self, data: Transitions, rows: np.ndarray | slice) -> tuple[torch.Tensor, ...]:
        """The encodings of the states before and after each row's action."""
        return (
            self.state_encoder(_tensors(data.obs, rows)),
            self.state_encoder(_tensors(data.next_obs, rows)),
        )

    def _prediction_error(
        self,
        data: Transitions,
        rows: np.ndarray | slice,
        state: torch.Tensor,
        next_state: torch.Tensor,
    ) -> torch.Tensor:
        """Per row, half the squared error of the forward model's next-state prediction."""
        predicted = self.forward_model(torch.cat([state, self.actions.vectors(data, rows)], 1))
        return 0.5 * (next_state - predicted).pow(2).sum(dim=1)

    def rewards(self, data: Transitions) -> np.ndarray:
        if not self.updated_once:
            return np.zeros(len(data), dtype=np.float32)
        with torch.no_grad():
            rows = slice(None)
            error = self._prediction_error(data, rows, *self._encode(data, rows)).numpy()
        cap = 1.0 / self.strength if self.strength > 0 else np.inf
        return np.minimum(error, cap).astype(np.float32)

    def update(self, data: Transitions, rows: np.ndarray) -> dict[str, float]:
        self.state_encoder.encoder.update_normalizer(_tensors(data.obs, rows))
        state, next_state = self._encode(data, rows)
        forward_loss = self._prediction_error(data, rows, state, next_state).mean()
        inverse_loss = self._inverse_loss(data, rows, state, next_state)
        loss = CURIOSITY_LOSS_SCALE * (
            CURIOSITY_FORWARD_WEIGHT * forward_loss + (1 - CURIOSITY_FORWARD_WEIGHT) * inverse_loss
        )
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        self.updated_once = True
        return {
            "Losses/Curiosity Forward Loss": forward_loss.item(),
            "Losses/Curiosity Inverse Loss": inverse_loss.item(),
        }

    def _inverse_loss(
        self, data: Transitions, rows: np.ndarray, state: torch.Tensor, next_state: torch.Tensor
    ) -> torch.Tensor:
        """How badly the inverse model names the action taken between two states."""
        hidden = self.inverse_model(torch.cat([state, next_state], dim=1))
        loss = torch.zeros(())
        if self.continuous_head is not None:
            taken = torch.as_tensor(data.continuous_raw[rows], dtype=torch.float32)
            loss = loss + (self.continuous_head(hidden) - taken).pow(2).sum(dim=1).mean()
        if self.discrete_head is not None:
            logits = self.discrete_head(hidden).split(list(self.actions.branches), dim=1)
            discrete = torch.as_tensor(data.discrete[rows], dtype=torch.int64)
            for branch, branch_logits in enumerate(logits):
                loss = loss + functional.cross_entropy(branch_logits, discrete[:, branch])
        return loss

    def state_dict(self) -> dict[str, Any]:
        return {
            "modules": self.modules.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "updated_once": self.updated_once,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.modules.load_state_dict(state["modules"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.updated_once = bool(state["updated_once"])


class RandomNetworkDistillation(IntrinsicSignal):
    """ML-Agents' RND module (see the module docstring)."""

    key = "rnd"
    title = "RND"

    def __init__(self, spec: BehaviorSpec, settings: RNDSettings) -> None:
        super().__init__(settings)
        network = _encoder_settings(settings)
        self.target = _StateEncoder(spec, network)
        self.predictor = _StateEncoder(spec, network)
        for parameter in self.target.parameters():
            parameter.requires_grad_(False)
        self.optimizer = torch.optim.Adam(self.predictor.parameters(), lr=settings.learning_rate)

    def _error(self, data: Transitions, rows: np.ndarray | slice) -> torch.Tensor:
        obs = _tensors(data.obs, rows)
        with torch.no_grad():
            target = self.target(obs)
        return (self.predictor(obs) - target).pow(2).sum(dim=1)

    def rewards(self, data: Transitions) -> np.ndarray:
        with torch.no_grad():
            return self._error(data, slice(None)).numpy().astype(np.float32)

    def update(self, data: Transitions, rows: np.ndarray) -> dict[str, float]:
        obs = _tensors(data.obs, rows)
        self.target.encoder.update_normalizer(obs)
        self.predictor.encoder.update_normalizer(obs)
        loss = self._error(data, rows).mean()
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        return {"Losses/RND Loss": loss.item()}

    def state_dict(self) -> dict[str, Any]:
        return {
            "target": self.target.state_dict(),
            "predictor": self.predictor.state_dict(),
            "optimizer": self.optimizer.state_dict(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.target.load_state_dict(state["target"])
        self.predictor.load_state_dict(state["predictor"])
        self.optimizer.load_state_dict(state["optimizer"])


def make_intrinsic_signals(
    spec: BehaviorSpec, reward_signals: dict[str, RewardSignalSettings]
) -> dict[str, IntrinsicSignal]:
    """The learned signals among ``reward_signals`` (extrinsic is not one), by key."""
    signals: dict[str, IntrinsicSignal] = {}
    for key, settings in reward_signals.items():
        if isinstance(settings, CuriositySettings):
            signals[key] = Curiosity(spec, settings)
        elif isinstance(settings, RNDSettings):
            signals[key] = RandomNetworkDistillation(spec, settings)
    return signals
