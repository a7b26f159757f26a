"""Proximal Policy Optimization with ML-Agents' hyperparameters and semantics.

Every ``buffer_size`` trainer steps: value estimates for the whole buffer in one batched pass,
GAE with bootstrapping at ``time_horizon`` cuts, interrupted episodes and the buffer end, advantages
normalized over the buffer, then ``num_epoch`` shuffled passes of ``batch_size`` minibatches on
``policy_loss + 0.5 * value_loss - beta * entropy`` (clipped surrogate and clipped value loss).
``learning_rate``, ``beta`` and ``epsilon`` decay linearly to 1e-10, 1e-5 and 0.1 over ``max_steps``
when their schedule is ``linear``.

Size: ``_optimize`` (67 lines) is the PPO update as the paper writes it (epochs × minibatches,
clipped surrogate, value loss, entropy), kept in one piece on purpose.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from trainers.buffers import RolloutBuffer
from trainers.gae import compute_gae
from trainers.hyperparameters import PPOSettings
from trainers.networks import ValueNetwork
from trainers.policy import TorchPolicy, to_tensors
from trainers.rl_trainer import RLTrainer, decayed
from trainers.rollout import Transitions


class PPOTrainer(RLTrainer):
    """PPO for one behavior name (see module docstring)."""

    hyperparameters: PPOSettings

    def _make_learner(self, policy: TorchPolicy) -> None:
        self.critic = ValueNetwork(
            list(policy.behavior_spec.observation_specs), self.settings.network_settings
        ).to(self.device)
        parameters = list(policy.actor.parameters()) + list(self.critic.parameters())
        self.optimizer = torch.optim.Adam(parameters, lr=self.hyperparameters.learning_rate)
        self.buffer = RolloutBuffer()

    def _take(self, transitions: Transitions) -> None:
        self.buffer.add(transitions)

    def _on_environment_reset(self) -> None:
        self.buffer.cut_links()

    def _ready(self) -> bool:
        return len(self.buffer) >= self.hyperparameters.buffer_size

    def _schedules(self) -> tuple[float, float, float]:
        h, step, horizon = self.hyperparameters, self._step, self.settings.max_steps
        return (
            decayed(h.learning_rate_schedule, h.learning_rate, 1e-10, step, horizon),
            decayed(h.beta_schedule_resolved, h.beta, 1e-5, step, horizon),
            decayed(h.epsilon_schedule_resolved, h.epsilon, 0.1, step, horizon),
        )

    def _values(self, obs: list[torch.Tensor]) -> torch.Tensor:
        with torch.no_grad():
            return torch.cat([self.critic([o[i : i + 8192] for o in obs])
                              for i in range(0, len(obs[0]), 8192)])  # fmt: skip

    def _update(self) -> None:
        assert self.policy is not None
        data, next_index, bounds = self.buffer.contents()
        self.buffer.clear()
        obs = to_tensors(data.obs, self.device)
        # like ML-Agents: the statistics include this rollout before it is learned from
        self.policy.actor.encoder.update_normalizer(obs)
        self.critic.encoder.update_normalizer(obs)
        values = self._values(obs).cpu().numpy()
        # only rows whose trajectory stops here need their next observation's value
        next_values = np.zeros_like(values)
        needs = (next_index < 0) & ~data.dones
        if needs.any():
            tail = to_tensors([o[needs] for o in data.next_obs], self.device)
            next_values[needs] = self._values(tail).cpu().numpy()
        linked = next_index >= 0
        next_values[linked] = values[next_index[linked]]
        advantages = compute_gae(
            rewards=self.scaled_rewards(data),
            values=values,
            next_values=next_values,
            dones=data.dones,
            next_index=next_index,
            chunk_bounds=bounds,
            gamma=self.settings.gamma,
            lambd=self.hyperparameters.lambd,
        )
        returns = advantages + values
        normalized = (advantages - advantages.mean()) / (advantages.std() + 1e-10)
        self._optimize(data, obs, values, returns, normalized)

    def _optimize(
        self,
        data: Transitions,
        obs: list[torch.Tensor],
        old_values: np.ndarray,
        returns: np.ndarray,
        advantages: np.ndarray,
    ) -> None:
        assert self.policy is not None
        h = self.hyperparameters
        learning_rate, beta, epsilon = self._schedules()
        for group in self.optimizer.param_groups:
            group["lr"] = learning_rate
        tensor = lambda a: torch.as_tensor(a, device=self.device)  # noqa: E731
        continuous = tensor(data.continuous_raw) if data.continuous_raw.shape[1] else None
        discrete = tensor(data.discrete) if data.discrete.shape[1] else None
        masks = tensor(data.action_mask) if data.action_mask is not None else None
        old_log_probs, old_values_t = tensor(data.log_probs), tensor(old_values)
        returns_t, advantages_t = tensor(returns), tensor(advantages)
        n = len(data)
        batch_size = min(h.batch_size, n)
        totals = {"policy": 0.0, "value": 0.0, "entropy": 0.0}
        updates = 0
        for _ in range(h.num_epoch):
            order = torch.as_tensor(self.rng.permutation(n), device=self.device)
            for start in range(0, n - batch_size + 1, batch_size):
                rows = order[start : start + batch_size]
                dist = self.policy.actor(
                    [o[rows] for o in obs], None if masks is None else masks[rows]
                )
                log_probs = dist.log_prob_components(
                    None if continuous is None else continuous[rows],
                    None if discrete is None else discrete[rows],
                )
                # one ratio per action component, each clipped on its own (ML-Agents' PPO)
                ratio = torch.exp(log_probs - old_log_probs[rows])
                advantage = advantages_t[rows].unsqueeze(1)
                policy_loss = -torch.min(
                    ratio * advantage, torch.clamp(ratio, 1 - epsilon, 1 + epsilon) * advantage
                ).mean()
                values = self.critic([o[rows] for o in obs])
                old = old_values_t[rows]
                clipped = old + torch.clamp(values - old, -epsilon, epsilon)
                value_loss = torch.max(
                    (returns_t[rows] - values) ** 2, (returns_t[rows] - clipped) ** 2
                ).mean()
                entropy = dist.mean_entropy().mean()
                loss = policy_loss + 0.5 * value_loss - beta * entropy
                self.optimizer.zero_grad(set_to_none=True)
                loss.backward()
                self.optimizer.step()
                totals["policy"] += policy_loss.item()
                totals["value"] += value_loss.item()
                totals["entropy"] += entropy.item()
                updates += 1
        updates = max(updates, 1)
        self.record_losses(
            {
                "Losses/Policy Loss": abs(totals["policy"]) / updates,
                "Losses/Value Loss": totals["value"] / updates,
                "Policy/Entropy": totals["entropy"] / updates,
                "Policy/Learning Rate": learning_rate,
                "Policy/Epsilon": epsilon,
                "Policy/Beta": beta,
                "Policy/Extrinsic Value Estimate": float(old_values.mean()),
            }
        )

    def _learner_state(self) -> dict[str, Any]:
        return {
            "critic": self.critic.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "buffer": self.buffer.state_dict(),
        }

    def _load_learner_state(self, state: dict[str, Any]) -> None:
        self.critic.load_state_dict(state["critic"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.buffer.load_state_dict(state["buffer"])
