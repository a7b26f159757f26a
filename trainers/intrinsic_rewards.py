"""Reward signals learned from experience: curiosity (ICM) and random network distillation (RND).

Both follow ML-Agents' ``reward_signals.curiosity`` and ``reward_signals.rnd`` (keys, defaults,
statistics). Each trainer gives a signal a return stream of its own, discounted by the signal's
``gamma``, and trains the signal's network, with an optimizer of its own, on the minibatches the
policy learns from:

- PPO and POCA score the whole buffer before an update; each signal has its own value estimate
  (and, in POCA, its own counterfactual baseline), its own GAE, and the advantages are summed;
- SAC scores each replay minibatch as it is drawn; each signal has its own Q-value stream, and the
  policy maximizes the sum of the streams (``trainers.sac``).

Rewards are the signal's own times its ``strength``; a signal reads one agent's observations and
actions (in POCA too: each agent's own, not its group's).

- **Curiosity** (Pathak et al., 2017): a state encoder, a forward model predicting the next state's
  encoding from the state's and the action, and an inverse model predicting the action from both
  encodings. The reward is the forward model's error, ``0.5 * sum((φ(s') - f(φ(s), a))²)``, capped
  so that after ``strength`` it is at most 1, and 0 until the networks have trained once.
- **RND** (Burda et al., 2018): a fixed random network and a predictor trained to match it; the
  reward is the squared prediction error on the observation, large where the agent has rarely been.

With self-play only the learning team's experience reaches the trainer, so only it trains these.
GAIL (``trainers.gail``) is a signal of the same kind, learned from demonstrations too.
"""

from __future__ import annotations

import abc
from typing import Any, Protocol

import numpy as np
import torch
from mlagents_envs.base_env import BehaviorSpec
from torch import nn
from torch.nn import functional

from trainers.adam import Adam
from trainers.networks import ObservationEncoder, mlp
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


class Steps(Protocol):
    """What a signal reads of experience, one row per step: ``trainers.rollout.Transitions`` and
    SAC's ``trainers.buffers.ReplayBatch`` both are."""

    @property
    def obs(self) -> list[np.ndarray]: ...

    @property
    def next_obs(self) -> list[np.ndarray]: ...

    @property
    def continuous_raw(self) -> np.ndarray: ...

    @property
    def discrete(self) -> np.ndarray: ...


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

    @property
    def reward_tag(self) -> str:
        """The statistics tag of the mean scaled reward per step (``Policy/RND Reward``)."""
        return f"Policy/{self.title} Reward"

    def scaled_rewards(self, data: Steps) -> np.ndarray:
        """``rewards`` times ``strength``: what the signal's return stream learns from."""
        return (self.rewards(data) * self.strength).astype(np.float32)

    @abc.abstractmethod
    def rewards(self, data: Steps) -> np.ndarray:
        """The signal's reward for every row of ``data`` (before ``strength``), no gradients."""

    @abc.abstractmethod
    def update(self, data: Steps, rows: np.ndarray) -> dict[str, float]:
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

    def vectors(self, data: Steps, rows: np.ndarray | slice) -> torch.Tensor:
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
        self.optimizer = Adam(self.modules.parameters(), lr=settings.learning_rate)
        self.updated_once = False

    def _encode(self, data: Steps, rows: np.ndarray | slice) -> tuple[torch.Tensor, ...]:
        """The encodings of the states before and after each row's action."""
        return (
            self.state_encoder(_tensors(data.obs, rows)),
            self.state_encoder(_tensors(data.next_obs, rows)),
        )

    def _prediction_error(
        self,
        data: Steps,
        rows: np.ndarray | slice,
        state: torch.Tensor,
        next_state: torch.Tensor,
    ) -> torch.Tensor:
        """Per row, half the squared error of the forward model's next-state prediction."""
        predicted = self.forward_model(torch.cat([state, self.actions.vectors(data, rows)], 1))
        return 0.5 * (next_state - predicted).pow(2).sum(dim=1)

    def rewards(self, data: Steps) -> np.ndarray:
        if not self.updated_once:
            return np.zeros(len(data.discrete), dtype=np.float32)
        with torch.no_grad():
            rows = slice(None)
            error = self._prediction_error(data, rows, *self._encode(data, rows)).numpy()
        cap = 1.0 / self.strength if self.strength > 0 else np.inf
        return np.minimum(error, cap).astype(np.float32)

    def update(self, data: Steps, rows: np.ndarray) -> dict[str, float]:
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
        self, data: Steps, rows: np.ndarray, state: torch.Tensor, next_state: torch.Tensor
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
        self.optimizer = Adam(self.predictor.parameters(), lr=settings.learning_rate)

    def _error(self, data: Steps, rows: np.ndarray | slice) -> torch.Tensor:
        obs = _tensors(data.obs, rows)
        with torch.no_grad():
            target = self.target(obs)
        return (self.predictor(obs) - target).pow(2).sum(dim=1)

    def rewards(self, data: Steps) -> np.ndarray:
        with torch.no_grad():
            return self._error(data, slice(None)).numpy().astype(np.float32)

    def update(self, data: Steps, rows: np.ndarray) -> dict[str, float]:
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


class MinibatchSignals:
    """Learned signals scored and trained on each minibatch as it is drawn (SAC's way, as in
    ML-Agents): every stream's rewards for the minibatch, one step of each signal's optimizer on
    the same rows, and the means of both over the minibatches since the last ``drain``."""

    def __init__(self, signals: dict[str, IntrinsicSignal]) -> None:
        self.signals = signals
        self._totals: dict[str, float] = {}
        self._minibatches = 0

    def stream_rewards(self, data: Steps, extrinsic: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """``[len(extrinsic), 1 + len(signals)]``: the (already scaled) ``extrinsic`` rewards,
        then each signal's scaled reward; ``rows`` are the real ones (not padding)."""
        columns = [extrinsic.astype(np.float32)]
        for signal in self.signals.values():
            rewards = signal.scaled_rewards(data)
            self._add(signal.reward_tag, float(rewards[rows].mean()) if len(rows) else 0.0)
            columns.append(rewards)
        return np.stack(columns, axis=1)

    def train(self, data: Steps, rows: np.ndarray) -> None:
        """One optimizer step of every signal on the minibatch's ``rows``."""
        for signal in self.signals.values():
            for tag, value in signal.update(data, rows).items():
                self._add(tag, value)
        self._minibatches += 1

    def _add(self, tag: str, value: float) -> None:
        self._totals[tag] = self._totals.get(tag, 0.0) + value

    def drain(self) -> dict[str, float]:
        """The mean of every statistic per minibatch since the last call."""
        means = {tag: total / max(self._minibatches, 1) for tag, total in self._totals.items()}
        self._totals, self._minibatches = {}, 0
        return means
