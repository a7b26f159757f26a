"""GAIL: a reward for behaving like the demonstrations (Ho & Ermon, 2016), as ML-Agents'
``reward_signals.gail``.

A discriminator ``D`` learns to tell the demonstrator's steps (``trainers.demonstrations``) from the
agent's: it reads the observation and, with ``use_actions``, the action as the environment received
it (continuous values, then a one-hot block per discrete branch) and whether the episode ended
after it. Each update draws as many demonstration steps as the agent's minibatch holds and takes one
Adam step on

- the discriminator loss ``-mean(log D(expert)) - mean(log(1 - D(agent)))``;
- a gradient penalty (Gulrajani et al., 2017): ``10 * mean((|∇D(x)| - 1)²)`` at points ``x`` drawn
  between paired agent and expert inputs, element by element. ML-Agents takes the gradient with
  respect to the first observation only; here it is with respect to every input;
- with ``use_vail``, the variational bottleneck of VAIL (Peng et al., 2018): the encoder's output
  becomes the mean of a 128-wide Gaussian code with a learned spread, ``D`` reads a sample of it,
  and ``beta * (KL - 0.5)`` joins the loss, where ``KL`` is the divergence of the agent's and the
  expert's codes from the unit Gaussian (summed, as ML-Agents). ``beta`` starts at 0 and moves by
  ``0.0005 * (KL - 0.5)`` after each update, never below 0.

The reward of a step is ``-log(1 - D(s, a))``, with ``D`` scaled by ``1 - 1e-7`` so that it stays
finite (at most about 16.1), and the code's mean rather than a sample under VAIL. It is high where
the discriminator takes the agent for the demonstrator.

TensorBoard, as ML-Agents: ``Policy/GAIL Reward``, ``Policy/GAIL Value Estimate``,
``Losses/GAIL Loss``, ``Policy/GAIL Policy Estimate``, ``Policy/GAIL Expert Estimate``,
``Policy/GAIL Grad Mag Loss``, and with VAIL ``Policy/GAIL Beta`` and ``Losses/GAIL KL Loss``.

The discriminator has no memory: ``network_settings.memory`` of the signal is ignored with a
warning, as ML-Agents does.
"""

from __future__ import annotations

import logging
from typing import Any

import attrs
import numpy as np
import torch
from mlagents_envs.base_env import BehaviorSpec
from torch import nn
from torch.nn import functional

from trainers.adam import Adam
from trainers.demonstrations import DemoRows
from trainers.intrinsic_rewards import IntrinsicSignal, Steps
from trainers.networks import ObservationEncoder, linear_layer, mlp
from trainers.settings import GAILSettings, NetworkSettings

logger = logging.getLogger(__name__)

#: ML-Agents' discriminator constants: the gradient penalty's weight, the VAIL code's width, the
#: step of VAIL's beta, the KL it aims at, and the floor that keeps logarithms finite
GRADIENT_PENALTY_WEIGHT = 10.0
VAIL_CODE_SIZE = 128
VAIL_BETA_STEP = 0.0005
VAIL_TARGET_KL = 0.5
EPSILON = 1e-7


def discriminator_settings(settings: GAILSettings) -> NetworkSettings:
    """The discriminator's network: the signal's ``network_settings``, ``encoding_size`` (an older
    key) as its width when set, and no memory."""
    network = settings.network_settings
    if network.memory is not None:
        logger.warning(
            "reward_signals.gail.network_settings.memory is ignored: GAIL's discriminator has "
            "no memory"
        )
    width = settings.encoding_size or network.hidden_units
    return attrs.evolve(network, hidden_units=width, memory=None)


class Discriminator(nn.Module):
    """Observations (and actions) → the probability that they are the demonstrator's."""

    def __init__(self, spec: BehaviorSpec, settings: GAILSettings) -> None:
        super().__init__()
        network = discriminator_settings(settings)
        action_spec = spec.action_spec
        self.action_size = 0
        if settings.use_actions:
            # the actions, then whether the episode ended after them
            self.action_size = action_spec.continuous_size + sum(action_spec.discrete_branches) + 1
        self.encoder = ObservationEncoder(list(spec.observation_specs), network)
        self.body = mlp(
            self.encoder.output_size + self.action_size, network.hidden_units, network.num_layers
        )
        self.use_vail = settings.use_vail
        width = network.hidden_units
        if self.use_vail:
            self.code_mean = linear_layer(width, VAIL_CODE_SIZE, gain=0.1)
            self.code_std = nn.Parameter(torch.ones(VAIL_CODE_SIZE))
            self.register_buffer("beta", torch.zeros(()))
            width = VAIL_CODE_SIZE
        self.estimator = linear_layer(width, 1, gain=0.2)

    def forward(
        self, obs: list[torch.Tensor], actions: torch.Tensor | None, *, noise: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``D`` of each row ``[n]``, and under VAIL the code's mean ``[n, 128]`` (else None);
        ``noise``: read a sample of the code rather than its mean."""
        features = self.encoder(obs)
        if actions is not None:
            features = torch.cat([features, actions], dim=1)
        hidden = self.body(features)
        code_mean = None
        if self.use_vail:
            code_mean = self.code_mean(hidden)
            hidden = code_mean
            if noise:
                hidden = code_mean + torch.randn_like(code_mean) * self.code_std
        return torch.sigmoid(self.estimator(hidden)).squeeze(1), code_mean

    def code_divergence(self, code_mean: torch.Tensor) -> torch.Tensor:
        """Per row, the KL divergence of the code's Gaussian from the unit Gaussian."""
        variance = self.code_std.pow(2)
        return 0.5 * (code_mean.pow(2) + variance - 1.0 - torch.log(variance)).sum(dim=1)


@attrs.frozen
class _Inputs:
    """What the discriminator reads of a batch of steps."""

    obs: list[torch.Tensor]
    actions: torch.Tensor | None


class GAIL(IntrinsicSignal):
    """ML-Agents' GAIL reward signal (see the module docstring).

    Args:
        spec: the behavior's spec.
        settings: the ``reward_signals.gail`` section.
        demo: the demonstrations' acting rows.
        squash: the policy squashes continuous actions with ``tanh`` (SAC) rather than clipping
            them (PPO, POCA): how the agent's stored raw actions reach the environment.
    """

    key = "gail"
    title = "GAIL"

    def __init__(
        self, spec: BehaviorSpec, settings: GAILSettings, demo: DemoRows, *, squash: bool = False
    ) -> None:
        super().__init__(settings)
        self.use_actions = settings.use_actions
        self.squash = squash
        self.branches = tuple(spec.action_spec.discrete_branches)
        self.discriminator = Discriminator(spec, settings)
        self.optimizer = Adam(self.discriminator.parameters(), lr=settings.learning_rate)
        self.demo_obs = [torch.as_tensor(o) for o in demo.obs]
        self.demo_actions = None
        if self.use_actions:
            self.demo_actions = self._action_vectors(
                torch.as_tensor(demo.continuous),
                torch.as_tensor(demo.discrete),
                torch.as_tensor(demo.ended),
            )

    def _action_vectors(
        self, continuous: torch.Tensor, discrete: torch.Tensor, ended: torch.Tensor
    ) -> torch.Tensor:
        """Environment-space continuous actions, one-hot branches, and the episode's end."""
        parts = [continuous.float()]
        for branch, size in enumerate(self.branches):
            parts.append(functional.one_hot(discrete[:, branch].long(), size).float())
        parts.append(ended.float().unsqueeze(1))
        return torch.cat(parts, dim=1)

    def _agent_inputs(self, data: Steps, rows: np.ndarray | slice) -> _Inputs:
        obs = [torch.as_tensor(o[rows], dtype=torch.float32) for o in data.obs]
        if not self.use_actions:
            return _Inputs(obs, None)
        raw = torch.as_tensor(data.continuous_raw[rows], dtype=torch.float32)
        continuous = torch.tanh(raw) if self.squash else torch.clamp(raw, -3.0, 3.0) / 3.0
        # rollouts know whether an episode ended (interrupted or not); replay, only if it ended
        ended = getattr(data, "ended", None)
        ended = data.dones if ended is None else ended  # type: ignore[attr-defined]
        return _Inputs(
            obs,
            self._action_vectors(
                continuous, torch.as_tensor(data.discrete[rows]), torch.as_tensor(ended[rows])
            ),
        )

    def _expert_inputs(self, count: int) -> _Inputs:
        """``count`` demonstration steps drawn at random (with replacement, as ML-Agents)."""
        drawn = torch.randint(len(self.demo_obs[0]), (count,))
        actions = None if self.demo_actions is None else self.demo_actions[drawn]
        return _Inputs([o[drawn] for o in self.demo_obs], actions)

    def rewards(self, data: Steps) -> np.ndarray:
        with torch.no_grad():
            inputs = self._agent_inputs(data, slice(None))
            estimate, _ = self.discriminator(inputs.obs, inputs.actions)
            return (-torch.log(1.0 - estimate * (1.0 - EPSILON))).numpy().astype(np.float32)

    def update(self, data: Steps, rows: np.ndarray) -> dict[str, float]:
        agent = self._agent_inputs(data, rows)
        expert = self._expert_inputs(len(rows))
        # the normalizer learns the demonstrations' statistics only, as ML-Agents
        self.discriminator.encoder.update_normalizer(expert.obs)
        agent_estimate, agent_code = self.discriminator(agent.obs, agent.actions, noise=True)
        expert_estimate, expert_code = self.discriminator(expert.obs, expert.actions, noise=True)
        loss = -(
            torch.log(expert_estimate + EPSILON) + torch.log(1.0 - agent_estimate + EPSILON)
        ).mean()
        stats = {
            "Policy/GAIL Policy Estimate": agent_estimate.mean().item(),
            "Policy/GAIL Expert Estimate": expert_estimate.mean().item(),
            "Losses/GAIL Loss": loss.item(),
        }
        total = loss
        if agent_code is not None and expert_code is not None:
            total = total + self._bottleneck(agent_code, expert_code, stats)
        penalty = GRADIENT_PENALTY_WEIGHT * self._gradient_penalty(agent, expert)
        stats["Policy/GAIL Grad Mag Loss"] = penalty.item()
        total = total + penalty
        self.optimizer.zero_grad(set_to_none=True)
        total.backward()
        self.optimizer.step()
        return stats

    def _bottleneck(
        self, agent_code: torch.Tensor, expert_code: torch.Tensor, stats: dict[str, float]
    ) -> torch.Tensor:
        """VAIL's loss term ``beta * (KL - target)``; ``beta`` then takes its step."""
        discriminator = self.discriminator
        divergence = (
            discriminator.code_divergence(agent_code) + discriminator.code_divergence(expert_code)
        ).mean()
        beta = discriminator.beta.item()
        term = beta * (divergence - VAIL_TARGET_KL)
        discriminator.beta.fill_(
            max(beta + VAIL_BETA_STEP * (divergence.item() - VAIL_TARGET_KL), 0.0)
        )
        stats["Policy/GAIL Beta"] = discriminator.beta.item()
        stats["Losses/GAIL KL Loss"] = divergence.item()
        return term

    def _gradient_penalty(self, agent: _Inputs, expert: _Inputs) -> torch.Tensor:
        """``mean((|∇D(x)| - 1)²)`` at points between the paired agent and expert inputs."""

        def between(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
            share = torch.rand_like(a)
            return (share * a + (1.0 - share) * b).requires_grad_(True)

        obs = [between(a, b) for a, b in zip(agent.obs, expert.obs, strict=True)]
        actions = None
        if agent.actions is not None and expert.actions is not None:
            actions = between(agent.actions, expert.actions)
        estimate, _ = self.discriminator(obs, actions, noise=True)
        inputs = [*obs, *([] if actions is None else [actions])]
        gradients = torch.autograd.grad(estimate.sum(), inputs, create_graph=True)
        squared = sum(g.pow(2).flatten(1).sum(dim=1) for g in gradients)
        norm = torch.sqrt(squared + EPSILON)  # type: ignore[operator]
        return (norm - 1.0).pow(2).mean()

    def state_dict(self) -> dict[str, Any]:
        """The discriminator (VAIL's beta included) and its optimizer."""
        return {
            "discriminator": self.discriminator.state_dict(),
            "optimizer": self.optimizer.state_dict(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.discriminator.load_state_dict(state["discriminator"])
        self.optimizer.load_state_dict(state["optimizer"])
