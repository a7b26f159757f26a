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

Learned reward signals (``reward_signals.curiosity``/``rnd``/``gail``, ``trainers.reward_signals``)
act per agent, on its own observations and actions, as in ML-Agents: each has a group critic of its
own (value and baseline), λ-returns of the agent's own signal reward with the signal's ``gamma``
on its values, advantages ``return - baseline`` added to the extrinsic ones; the value and baseline
losses are means over the streams.

Statistics, as ML-Agents writes them: ``Environment/Cumulative Reward`` (individual rewards only),
``Environment/Group Cumulative Reward``, ``Policy/Extrinsic Reward`` (individual plus group
reward: ML-Agents adds the groupmates' individual rewards too), ``Policy/Extrinsic Value Estimate``,
``Policy/Extrinsic Baseline Estimate``, ``Losses/Baseline Loss``, and PPO's others (with a learned
signal also ``Policy/Curiosity Baseline Estimate`` or ``Policy/RND Baseline Estimate``).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

import attrs
import numpy as np
import torch

from trainers.adam import Adam
from trainers.buffers import RolloutBuffer
from trainers.gae import compute_gae
from trainers.group_critic import GroupCritic
from trainers.group_minibatch import GroupIndex
from trainers.group_rollout import GroupTransitions
from trainers.hyperparameters import POCASettings
from trainers.policy import TorchPolicy, to_tensors
from trainers.ppo import PPOTrainer, RewardStream, clipped_value_loss
from trainers.ppo_sequences import CriticMemories, CriticPass, sequence_pass
from trainers.rollout import FinishedEpisodes, Transitions
from trainers.sequences import Sequences, cut_sequences
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


@attrs.frozen
class GroupedRows:
    """A rollout as the group-aware critic reads it (``trainers.group_minibatch``): which rows
    share a group step, every row's observations and flat actions."""

    groups: GroupIndex
    obs: list[torch.Tensor]
    actions: torch.Tensor

    def estimates(self, critic: GroupCritic, rows: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        """The group value and the baseline of each of ``rows`` (each group's value computed
        once)."""
        batch = self.groups.minibatch(rows)
        values, baselines = critic.grouped_value_and_baseline(
            [o[batch.rows] for o in self.obs], self.actions[batch.rows], batch
        )
        return values[batch.group_of_row], baselines


class POCATrainer(PPOTrainer):
    """MA-POCA for one behavior name (see module docstring)."""

    hyperparameters: POCASettings  # type: ignore[assignment]
    supports_memory = True
    #: with memory: the baseline's memory per agent slot between rollouts (the value's is
    #: ``critic_memories``)
    baseline_memories: CriticMemories | None = None
    #: with memory: the same for each learned reward signal's baseline
    signal_baseline_memories: dict[str, CriticMemories] = {}  # replaced by _make_learner

    def _make_learner(self, policy: TorchPolicy) -> None:
        spec = policy.behavior_spec
        self._check_memory_support()
        if policy.memory_size:
            self.critic_memories = CriticMemories(policy.memory_size)
            self.baseline_memories = CriticMemories(policy.memory_size)

        def group_critic() -> GroupCritic:
            return GroupCritic(
                list(spec.observation_specs), spec.action_spec, self.settings.network_settings
            )

        self.critic = group_critic().to(self.device)  # type: ignore[assignment]
        self._make_signals(policy, group_critic)
        if policy.memory_size:
            self.signal_baseline_memories = {
                key: CriticMemories(policy.memory_size) for key in self.signals
            }
        parameters = [
            *policy.actor.parameters(),
            *self.critic.parameters(),
            *self.signal_critics.parameters(),
        ]
        self.optimizer = Adam(parameters, lr=self.hyperparameters.learning_rate)
        self.buffer = RolloutBuffer()
        self._make_magnet(policy)
        self._branches = tuple(spec.action_spec.discrete_branches)

    def _take(self, transitions: Transitions) -> None:
        self.buffer.add(GroupTransitions.of(transitions))

    def _on_environment_reset(self, slots: np.ndarray | None = None) -> None:
        super()._on_environment_reset(slots)
        if slots is not None:
            return
        for memories in (self.baseline_memories, *self.signal_baseline_memories.values()):
            if memories is not None:
                memories.clear()

    def _ready(self) -> bool:
        # ML-Agents' POCA waits for more than buffer_size steps (its PPO for at least as many)
        return len(self.buffer) > self.hyperparameters.buffer_size

    def _record_episodes(self, episodes: FinishedEpisodes) -> None:
        self.stats.record(
            CUMULATIVE_REWARD, episodes.rewards - episodes.group_rewards, Aggregation.HISTOGRAM
        )
        self.stats.record(GROUP_CUMULATIVE_REWARD, episodes.group_rewards, Aggregation.HISTOGRAM)
        self.stats.add(EPISODE_LENGTH, episodes.lengths)
        self._record_extrinsic(episodes.rewards)

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
        stream: RewardStream,
        data: GroupTransitions,
        grouped: GroupedRows,
        next_index: np.ndarray,
        bounds: list[tuple[int, int]],
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Group values, counterfactual baselines and λ-returns of ``stream`` for every buffer
        row."""
        critic: GroupCritic = stream.critic  # type: ignore[assignment]
        every_row = np.arange(len(data))
        both = self._evaluate(
            lambda rows: torch.stack(grouped.estimates(critic, every_row[rows]), dim=1),
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
        returns = self._returns(stream, data, values, next_values, next_index, bounds)
        return values, baselines, returns

    def _returns(
        self,
        stream: RewardStream,
        data: GroupTransitions,
        values: np.ndarray,
        next_values: np.ndarray,
        next_index: np.ndarray,
        bounds: list[tuple[int, int]],
    ) -> np.ndarray:
        """λ-returns of ``stream``'s rewards on its group values (``next_values`` given where a
        trajectory stops)."""
        next_values = next_values.copy()
        linked = next_index >= 0
        next_values[linked] = values[next_index[linked]]
        return values + compute_gae(
            rewards=stream.rewards,
            values=values,
            next_values=next_values,
            dones=data.group_finished(),
            next_index=next_index,
            chunk_bounds=bounds,
            gamma=stream.gamma,
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

    def _streams(self, data: GroupTransitions) -> list[RewardStream]:
        """The extrinsic stream (the group's rewards as POCA learns them) and each learned
        signal's (the agent's own)."""
        extrinsic = data.group_rewards_sum() * self.settings.reward_strength
        return self._reward_signals(data.own, extrinsic)

    def _record_estimates(self, title: str, values: np.ndarray, baselines: np.ndarray) -> None:
        self.stats.add(f"Policy/{title} Value Estimate", float(values.mean()))
        self.stats.add(f"Policy/{title} Baseline Estimate", float(baselines.mean()))

    def _update_on_threads(self) -> None:
        if self.critic_memories is not None:
            self._update_sequences()
            return
        data, next_index, bounds = self.buffer.contents()
        self.buffer.clear()
        own: Transitions = data.own
        obs = self._rollout_obs(own)
        grouped = GroupedRows(
            groups=GroupIndex(data.members, self.device),
            obs=obs,
            actions=self._tensor(flat_actions(own, self._branches)),
        )
        advantages = np.zeros(len(data), dtype=np.float64)
        # (critic, old values, old baselines, returns) of each stream, extrinsic first
        estimates: list[tuple[GroupCritic, torch.Tensor, torch.Tensor, torch.Tensor]] = []
        for stream in self._streams(data):
            values, baselines, returns = self._targets(stream, data, grouped, next_index, bounds)
            self._record_estimates(stream.title, values, baselines)
            advantages = advantages + (returns - baselines)
            critic: GroupCritic = stream.critic  # type: ignore[assignment]
            estimates.append((critic, self._tensor(values), self._tensor(baselines),
                              self._tensor(returns)))  # fmt: skip

        def critic_loss(rows: torch.Tensor, epsilon: float) -> dict[str, torch.Tensor]:
            chosen = rows.cpu().numpy()
            value_losses, baseline_losses = [], []
            for critic, old_values, old_baselines, target in estimates:
                value, baseline = grouped.estimates(critic, chosen)
                value_losses.append(
                    clipped_value_loss(value, old_values[rows], target[rows], epsilon)
                )
                baseline_losses.append(
                    clipped_value_loss(baseline, old_baselines[rows], target[rows], epsilon)
                )
            return _critic_losses(value_losses, baseline_losses)

        self._optimize(
            own, obs, advantages, critic_loss,
            CRITIC_LOSS_WEIGHTS, epoch_order=grouped.groups.epoch_order,
        )  # fmt: skip

    def _stream_memories(self, key: str | None) -> tuple[CriticMemories, CriticMemories]:
        """The value's and the baseline's memories per agent of the stream ``key``."""
        if key is None:
            assert self.critic_memories is not None and self.baseline_memories is not None
            return self.critic_memories, self.baseline_memories
        return self.signal_memories[key], self.signal_baseline_memories[key]

    def _passes(
        self,
        stream: RewardStream,
        data: GroupTransitions,
        inputs: GroupInputs,
        sequences: Sequences,
        next_index: np.ndarray,
    ) -> tuple[CriticPass, CriticPass]:
        """``stream``'s value and baseline passes along each agent's trajectories, each from
        its memories carried over from the last update."""
        critic: GroupCritic = stream.critic  # type: ignore[assignment]
        own = data.own
        assert own.ended is not None
        value_memories, baseline_memories = self._stream_memories(stream.key)

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
            needs_next=(next_index < 0) & ~data.group_finished(), carried=value_memories,
        )  # fmt: skip
        baseline_pass = sequence_pass(
            baseline, None, sequences=sequences, ended=own.ended, device=self.device,
            needs_next=np.zeros(len(data), bool), carried=baseline_memories,
        )  # fmt: skip
        return value_pass, baseline_pass

    def _update_sequences(self) -> None:
        """The update with memory: each stream's value and baseline passes along each agent's
        trajectories, λ-returns, then PPO's minibatches of whole sequences."""
        assert self.settings.network_settings.memory is not None
        data, next_index, bounds = self.buffer.contents()
        self.buffer.clear()
        own: Transitions = data.own
        obs = self._rollout_obs(own)
        inputs = self._critic_inputs(data, obs)
        sequences = cut_sequences(
            next_index, own.slots, self.settings.network_settings.memory.sequence_length
        )
        advantages = np.zeros(len(data), dtype=np.float64)
        # (critic, value and baseline start memories, old values, old baselines, returns)
        estimates: list[
            tuple[GroupCritic, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]
        ] = []
        for stream in self._streams(data):
            value_pass, baseline_pass = self._passes(stream, data, inputs, sequences, next_index)
            values, baselines = value_pass.values, baseline_pass.values
            returns = self._returns(
                stream, data, values, value_pass.next_values, next_index, bounds
            )
            self._record_estimates(stream.title, values, baselines)
            advantages = advantages + (returns - baselines)
            critic: GroupCritic = stream.critic  # type: ignore[assignment]
            estimates.append((critic, value_pass.start_memories,
                              baseline_pass.start_memories, self._tensor(values),
                              self._tensor(baselines), self._tensor(returns)))  # fmt: skip

        def critic_loss(chosen: torch.Tensor, epsilon: float) -> dict[str, torch.Tensor]:
            grid = sequences.grid(chosen.cpu().numpy())
            rows = self._tensor(grid.rows)  # the real steps only
            value_losses, baseline_losses = [], []
            for critic, value_start, baseline_start, old_values, old_baselines, target in estimates:
                estimate, estimate_baseline = critic.recurrent_value_and_baseline(
                    *inputs.rows(rows), value_start[chosen], baseline_start[chosen], grid=grid
                )
                value_losses.append(
                    clipped_value_loss(estimate, old_values[rows], target[rows], epsilon)
                )
                baseline_losses.append(
                    clipped_value_loss(
                        estimate_baseline, old_baselines[rows], target[rows], epsilon
                    )
                )
            return _critic_losses(value_losses, baseline_losses)

        self._optimize(
            own, obs, advantages, critic_loss,
            CRITIC_LOSS_WEIGHTS,
            sequences=sequences,
        )  # fmt: skip

    def _learner_state(self) -> dict[str, Any]:
        state = super()._learner_state()
        if self.baseline_memories is not None:
            state["baseline_memories"] = self.baseline_memories.state_dict()
        for key, memories in self.signal_baseline_memories.items():
            state["reward_signals"][key]["baseline_memories"] = memories.state_dict()
        return state

    def _load_learner_state(self, state: dict[str, Any]) -> None:
        super()._load_learner_state(state)
        if self.baseline_memories is not None and "baseline_memories" in state:
            self.baseline_memories.load_state_dict(state["baseline_memories"])
        saved_signals = state.get("reward_signals", {})
        for key, memories in self.signal_baseline_memories.items():
            if "baseline_memories" in saved_signals.get(key, {}):
                memories.load_state_dict(saved_signals[key]["baseline_memories"])


#: how much the value and the baseline losses weigh in POCA's loss
CRITIC_LOSS_WEIGHTS = {"Losses/Value Loss": 0.5, "Losses/Baseline Loss": 0.25}


def _critic_losses(
    value_losses: list[torch.Tensor], baseline_losses: list[torch.Tensor]
) -> dict[str, torch.Tensor]:
    """The mean value and baseline losses over the reward streams."""
    return {
        "Losses/Value Loss": torch.stack(value_losses).mean(),
        "Losses/Baseline Loss": torch.stack(baseline_losses).mean(),
    }
