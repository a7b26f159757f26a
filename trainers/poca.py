"""MA-POCA (Cohen et al. 2021), ML-Agents' trainer for cooperating groups, with its semantics.

The policy is PPO's (one actor per agent, acting on its own observation). The critic is centralized
(``trainers.group_critic.GroupCritic``): per transition it sees the agent's group mates of that step
(``trainers.group_rollout``). Every ``buffer_size`` trainer steps:

- **reward**: the agent's individual reward + its mates' individual rewards + the group reward, times
  the extrinsic ``strength``;
- **returns**: λ-returns on the group value ``V(s_t)`` (GAE over each agent's own trajectory plus the
  value). A trajectory that stops bootstraps from the group's next value; the bootstrap is zero only
  where the agent's episode really ended *and* all of its mates' ended with it. An agent that
  finished early therefore keeps the value of what its group goes on to achieve, with no absorbing
  padding states;
- **advantage**: return minus the agent's counterfactual baseline ``Q(s, a_mates)``, normalized over
  the buffer;
- **loss**: PPO's clipped surrogate + ``0.5 * (value_loss + 0.5 * baseline_loss)`` − ``beta`` ×
  entropy, with both critic losses clipped like PPO's value loss.

Statistics, as ML-Agents writes them: ``Environment/Cumulative Reward`` (individual rewards only),
``Environment/Group Cumulative Reward``, ``Policy/Extrinsic Value Estimate``,
``Policy/Extrinsic Baseline Estimate``, ``Losses/Baseline Loss``, and PPO's others.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import attrs
import numpy as np
import torch

from trainers.buffers import RolloutBuffer
from trainers.deferred_optimizer import DeferredAdam
from trainers.gae import compute_gae
from trainers.group_critic import GroupCritic
from trainers.group_rollout import GroupTransitions
from trainers.hyperparameters import POCASettings
from trainers.policy import TorchPolicy, to_tensors
from trainers.ppo import PPOTrainer, clipped_value_loss
from trainers.rollout import FinishedEpisodes, Transitions
from trainers.stats import (
    CUMULATIVE_REWARD,
    EPISODE_LENGTH,
    GROUP_CUMULATIVE_REWARD,
    Aggregation,
)

Rows = slice | torch.Tensor
#: hidden units from which the critic's update uses every core
_WIDE_CRITIC = 256


def flat_actions(transitions: Transitions, branches: tuple[int, ...]) -> np.ndarray:
    """Actions as the critic reads them: continuous values, then each discrete branch one-hot."""
    parts = [transitions.continuous_raw.astype(np.float32)]
    for branch, size in enumerate(branches):
        parts.append(np.eye(size, dtype=np.float32)[transitions.discrete[:, branch]])
    return np.concatenate(parts, axis=1)


@attrs.frozen
class GroupInputs:
    """The critic's view of buffer rows: members' observations ``[rows, members, ...]``, which
    members are present, and their flat actions ``[rows, members, A]``."""

    obs: list[torch.Tensor]
    present: torch.Tensor
    actions: torch.Tensor

    def rows(self, rows: Rows) -> tuple[list[torch.Tensor], torch.Tensor, torch.Tensor]:
        """``(obs, present, actions)`` of the selected rows."""
        return [o[rows] for o in self.obs], self.present[rows], self.actions[rows]


class POCATrainer(PPOTrainer):
    """MA-POCA for one behavior name (see module docstring)."""

    hyperparameters: POCASettings  # type: ignore[assignment]
    supports_memory = False

    def _make_learner(self, policy: TorchPolicy) -> None:
        spec = policy.behavior_spec
        self.critic = GroupCritic(  # type: ignore[assignment]
            list(spec.observation_specs), spec.action_spec, self.settings.network_settings
        ).to(self.device)
        parameters = list(policy.actor.parameters()) + list(self.critic.parameters())
        self.optimizer = DeferredAdam(parameters, lr=self.hyperparameters.learning_rate)
        self.buffer = RolloutBuffer()
        self._make_magnet(policy)
        self._branches = tuple(spec.action_spec.discrete_branches)

    def _take(self, transitions: Transitions) -> None:
        self.buffer.add(GroupTransitions.of(transitions))

    def _ready(self) -> bool:
        # ML-Agents' POCA waits for more than buffer_size steps (its PPO for at least as many)
        return len(self.buffer) > self.hyperparameters.buffer_size

    def _record_episodes(self, episodes: FinishedEpisodes) -> None:
        self.stats.add(CUMULATIVE_REWARD, episodes.rewards - episodes.group_rewards)
        self.stats.record(GROUP_CUMULATIVE_REWARD, episodes.group_rewards, Aggregation.HISTOGRAM)
        self.stats.add(EPISODE_LENGTH, episodes.lengths)

    def _critic_inputs(self, data: GroupTransitions, obs: list[torch.Tensor]) -> GroupInputs:
        """What the critic reads of every buffer row, from the rows' observations ``obs``."""
        members = data.members
        index = self._tensor(np.maximum(members, 0))
        return GroupInputs(
            obs=[o[index] for o in obs],
            present=self._tensor(members >= 0),
            actions=self._tensor(flat_actions(data.own, self._branches))[index],
        )

    def _targets(
        self,
        data: GroupTransitions,
        inputs: GroupInputs,
        next_index: np.ndarray,
        bounds: list[tuple[int, int]],
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Group values, counterfactual baselines and λ-returns of every buffer row."""
        critic: GroupCritic = self.critic  # type: ignore[assignment]
        both = self._evaluate(
            lambda rows: torch.stack(critic.value_and_baseline(*inputs.rows(rows)), dim=1),
            len(data),
        )
        values, baselines = both[:, 0].copy(), both[:, 1].copy()
        finished = data.group_finished()
        next_values = np.zeros_like(values)
        needs = np.flatnonzero((next_index < 0) & ~finished)
        if len(needs):
            # the group one step later: the agent's next observation and its mates' next ones
            members = data.members[needs]
            later = to_tensors([o[members.clip(0)] for o in data.own.next_obs], self.device)
            present = self._tensor(members >= 0)
            next_values[needs] = self._evaluate(
                lambda rows: critic.value([o[rows] for o in later], present[rows]), len(needs)
            )
        linked = next_index >= 0
        next_values[linked] = values[next_index[linked]]
        returns = values + compute_gae(
            rewards=data.group_rewards_sum() * self.settings.reward_strength,
            values=values,
            next_values=next_values,
            dones=finished,
            next_index=next_index,
            chunk_bounds=bounds,
            gamma=self.settings.gamma,
            lambd=self.hyperparameters.lambd,
        )
        return values, baselines, returns

    def _update(self) -> None:
        with self._update_threads():
            self._update_on_threads()

    @contextlib.contextmanager
    def _update_threads(self) -> Iterator[None]:
        """Wide critics update on every core: stepping is paused meanwhile (lock-step), so the
        core the environment uses is free. (Measured on 2 cores: 512 units, minibatch 2048:
        0.56 s instead of 0.87 s; 128 units, minibatch 512: one thread is faster.)"""
        before = torch.get_num_threads()
        wide = self.settings.network_settings.hidden_units >= _WIDE_CRITIC
        if wide:
            torch.set_num_threads(max(before, len(os.sched_getaffinity(0))))
        try:
            yield
        finally:
            torch.set_num_threads(before)

    def _update_on_threads(self) -> None:
        critic: GroupCritic = self.critic  # type: ignore[assignment]
        data, next_index, bounds = self.buffer.contents()
        self.buffer.clear()
        own: Transitions = data.own
        obs = self._rollout_obs(own)
        inputs = self._critic_inputs(data, obs)
        values, baselines, returns = self._targets(data, inputs, next_index, bounds)
        self.stats.add("Policy/Extrinsic Value Estimate", float(values.mean()))
        self.stats.add("Policy/Extrinsic Baseline Estimate", float(baselines.mean()))
        old_values, old_baselines = self._tensor(values), self._tensor(baselines)
        target = self._tensor(returns)

        def critic_loss(rows: torch.Tensor, epsilon: float) -> dict[str, torch.Tensor]:
            value, baseline = critic.value_and_baseline(*inputs.rows(rows))
            return {
                "Losses/Value Loss": clipped_value_loss(
                    value, old_values[rows], target[rows], epsilon
                ),
                "Losses/Baseline Loss": clipped_value_loss(
                    baseline, old_baselines[rows], target[rows], epsilon
                ),
            }

        self._optimize(
            own,
            obs,
            returns - baselines,
            critic_loss,
            {"Losses/Value Loss": 0.5, "Losses/Baseline Loss": 0.25},
        )
