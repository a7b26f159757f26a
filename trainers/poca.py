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

With ``network_settings.memory`` the actor is PPO's with memory, and the critic's value and
baseline each carry an LSTM memory per agent (``trainers.group_critic``): a pass along each
agent's trajectories gives them, one no-grad pass for each (``trainers.ppo_sequences``), and
minibatches are whole sequences, as in PPO's update with memory.

Statistics, as ML-Agents writes them: ``Environment/Cumulative Reward`` (individual rewards only),
``Environment/Group Cumulative Reward``, ``Policy/Extrinsic Value Estimate``,
``Policy/Extrinsic Baseline Estimate``, ``Losses/Baseline Loss``, and PPO's others.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

import attrs
import numpy as np
import torch

from trainers.buffers import RolloutBuffer
from trainers.adam import Adam
from trainers.gae import compute_gae
from trainers.group_critic import GroupCritic
from trainers.group_rollout import GroupTransitions
from trainers.hyperparameters import POCASettings
from trainers.policy import TorchPolicy, to_tensors
from trainers.ppo import PPOTrainer, clipped_value_loss
from trainers.ppo_sequences import CriticMemories, sequence_pass
from trainers.rollout import FinishedEpisodes, Transitions
from trainers.sequences import cut_sequences
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
    supports_memory = True
    #: with memory: the baseline's memory per agent slot between rollouts (the value's is
    #: ``critic_memories``)
    baseline_memories: CriticMemories | None = None

    def _make_learner(self, policy: TorchPolicy) -> None:
        spec = policy.behavior_spec
        self._check_memory_support()
        if policy.memory_size:
            self.critic_memories = CriticMemories(policy.memory_size)
            self.baseline_memories = CriticMemories(policy.memory_size)
        self.critic = GroupCritic(  # type: ignore[assignment]
            list(spec.observation_specs), spec.action_spec, self.settings.network_settings
        ).to(self.device)
        parameters = list(policy.actor.parameters()) + list(self.critic.parameters())
        self.optimizer = Adam(parameters, lr=self.hyperparameters.learning_rate)
        self.buffer = RolloutBuffer()
        self._make_magnet(policy)
        self._branches = tuple(spec.action_spec.discrete_branches)

    def _take(self, transitions: Transitions) -> None:
        self.buffer.add(GroupTransitions.of(transitions))

    def _on_environment_reset(self) -> None:
        super()._on_environment_reset()
        if self.baseline_memories is not None:
            self.baseline_memories.clear()

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
        return values, baselines, self._returns(data, values, next_values, next_index, bounds)

    def _returns(
        self,
        data: GroupTransitions,
        values: np.ndarray,
        next_values: np.ndarray,
        next_index: np.ndarray,
        bounds: list[tuple[int, int]],
    ) -> np.ndarray:
        """λ-returns of the group values (``next_values`` given where a trajectory stops)."""
        next_values = next_values.copy()
        linked = next_index >= 0
        next_values[linked] = values[next_index[linked]]
        return values + compute_gae(
            rewards=data.group_rewards_sum() * self.settings.reward_strength,
            values=values,
            next_values=next_values,
            dones=data.group_finished(),
            next_index=next_index,
            chunk_bounds=bounds,
            gamma=self.settings.gamma,
            lambd=self.hyperparameters.lambd,
        )

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
        if self.critic_memories is not None:
            self._update_sequences()
            return
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

    def _update_sequences(self) -> None:
        """The update with memory: the value's and the baseline's passes along each agent's
        trajectories, λ-returns, then PPO's minibatches of whole sequences."""
        assert self.critic_memories is not None and self.baseline_memories is not None
        assert self.settings.network_settings.memory is not None
        critic: GroupCritic = self.critic  # type: ignore[assignment]
        data, next_index, bounds = self.buffer.contents()
        self.buffer.clear()
        own: Transitions = data.own
        obs = self._rollout_obs(own)
        inputs = self._critic_inputs(data, obs)
        sequences = cut_sequences(
            next_index, own.slots, self.settings.network_settings.memory.sequence_length
        )
        assert own.ended is not None

        def value(rows: np.ndarray, memory: torch.Tensor, length: int, lengths: torch.Tensor):
            member_obs, present, _ = inputs.rows(self._tensor(rows))
            return critic.recurrent_value(member_obs, present, memory, length, lengths)

        def later_value(rows: np.ndarray, memory: torch.Tensor) -> torch.Tensor:
            # the group one step later: the agent's next observation and its mates' next ones
            members = data.members[rows]
            later = to_tensors([o[members.clip(0)] for o in own.next_obs], self.device)
            return critic.recurrent_value(later, self._tensor(members >= 0), memory)[0]

        def baseline(rows: np.ndarray, memory: torch.Tensor, length: int, lengths: torch.Tensor):
            return critic.recurrent_baseline(
                *inputs.rows(self._tensor(rows)), memory, length, lengths
            )

        value_pass = sequence_pass(
            value, later_value, sequences=sequences, ended=own.ended, device=self.device,
            needs_next=(next_index < 0) & ~data.group_finished(), carried=self.critic_memories,
        )  # fmt: skip
        baseline_pass = sequence_pass(
            baseline, None, sequences=sequences, ended=own.ended, device=self.device,
            needs_next=np.zeros(len(data), bool), carried=self.baseline_memories,
        )  # fmt: skip
        values, baselines = value_pass.values, baseline_pass.values
        returns = self._returns(data, values, value_pass.next_values, next_index, bounds)
        self.stats.add("Policy/Extrinsic Value Estimate", float(values.mean()))
        self.stats.add("Policy/Extrinsic Baseline Estimate", float(baselines.mean()))
        old_values, old_baselines = self._tensor(values), self._tensor(baselines)
        target = self._tensor(returns)
        length = sequences.sequence_length
        gather = self._tensor(sequences.gather_rows()).view(len(sequences), length)
        valid = self._tensor(sequences.valid)

        def critic_loss(chosen: torch.Tensor, epsilon: float) -> dict[str, torch.Tensor]:
            rows, real = gather[chosen].reshape(-1), valid[chosen].reshape(-1)
            estimate, estimate_baseline = critic.recurrent_value_and_baseline(
                *inputs.rows(rows),
                value_pass.start_memories[chosen],
                baseline_pass.start_memories[chosen],
                length,
            )
            return {
                "Losses/Value Loss": clipped_value_loss(
                    estimate, old_values[rows], target[rows], epsilon, real
                ),
                "Losses/Baseline Loss": clipped_value_loss(
                    estimate_baseline, old_baselines[rows], target[rows], epsilon, real
                ),
            }

        self._optimize(
            own,
            obs,
            returns - baselines,
            critic_loss,
            {"Losses/Value Loss": 0.5, "Losses/Baseline Loss": 0.25},
            sequences=sequences,
        )

    def _learner_state(self) -> dict[str, Any]:
        state = super()._learner_state()
        if self.baseline_memories is not None:
            state["baseline_memories"] = self.baseline_memories.state_dict()
        return state

    def _load_learner_state(self, state: dict[str, Any]) -> None:
        super()._load_learner_state(state)
        if self.baseline_memories is not None and "baseline_memories" in state:
            self.baseline_memories.load_state_dict(state["baseline_memories"])
