"""Soft Actor-Critic with ML-Agents' hyperparameters and semantics.

Every completed transition goes into a replay ring of ``buffer_size`` rows (rewards scaled by the
extrinsic signal's ``strength``). Once ``buffer_init_steps`` trainer steps are in and the ring holds
``batch_size`` rows, the trainer keeps one gradient update per ``steps_per_update`` trainer steps
counted from ``buffer_init_steps`` (``0.25`` means four updates per step; updates that fell due
while the ring was still short of a minibatch are caught up at once, as in ML-Agents). One update
draws one minibatch of ``batch_size`` and takes one optimizer step each for:

- the twin Q networks: ``0.5 * (Q_i(s, a) - y)^2`` with the soft target
  ``y = r + gamma * (1 - done) * V'(s')``, where ``V'`` is the expectation under the current policy
  of the smaller target-network Q minus the entropy terms. ``done`` is True only for real
  terminations: time-horizon cuts and interrupted episodes bootstrap;
- the policy: ``-V(s)`` with the online Q networks (``alpha * log pi - min(Q1, Q2)``), continuous
  actions reparameterised;
- the entropy coefficients: ``log alpha`` moves so that the policy's entropy tracks its target.

Then the target networks follow the online ones by Polyak averaging with ``tau``.

Learned reward signals (``reward_signals.curiosity``/``rnd``/``gail``,
``trainers.reward_signals``), as in ML-Agents, each get a return stream of their own: every Q
network has one output block per stream (extrinsic first), and stream ``k``'s target is ``r_k + gamma_k * (1 - done) * V'_k(s')``
with the signal's own ``gamma``. The signals score each minibatch as it is drawn (their rewards,
times ``strength``, are never stored) and take one step of their own optimizer on it. The policy
maximizes the sum of the streams; the entropy terms enter the extrinsic stream only, so that with
equal gammas the sum is the soft value of the summed reward. With ``behavioral_cloning`` the
policy takes a cloning update after every gradient step (``trainers.behavioral_cloning``).

Action kinds: continuous actions are squashed with ``tanh`` and the Q networks take the squashed
action as input. A discrete branch has one Q output per action; the Q-value of a joint action is
the mean over branches of the chosen actions' outputs (as ML-Agents condenses them), and every
expectation over discrete actions is computed exactly from the action probabilities, with masked
actions at probability zero. Hybrid specs combine both. There is one entropy coefficient for the
continuous part (target entropy ``-continuous_size``) and one per discrete branch (target entropy
``0.2 * log(branch_size)``), all starting at ``init_entcoef``.

``learning_rate`` decays linearly to 1e-10 over ``max_steps`` when its schedule is ``linear``.
"""

from __future__ import annotations

import copy
import math
from typing import Any

import attrs
import numpy as np
import torch
from mlagents_envs.base_env import ActionSpec, ObservationSpec
from torch import nn

from trainers.actor import ActionDistribution
from trainers.adam import Adam
from trainers.buffers import ReplayBatch, ReplayBuffer
from trainers.exceptions import NetworkMismatchError
from trainers.hyperparameters import SACSettings
from trainers.intrinsic_rewards import MinibatchSignals
from trainers.memory import MemoryCore, masked_mean
from trainers.networks import ObservationEncoder, mlp
from trainers.policy import TorchPolicy, to_tensors
from trainers.reward_signals import make_reward_signals
from trainers.rl_trainer import RLTrainer, decayed
from trainers.rollout import Transitions
from trainers.sequence_replay import SequenceReplayBuffer
from trainers.settings import NetworkSettings

#: target entropy of a discrete branch, as a fraction of its largest entropy (ML-Agents' value)
DISCRETE_TARGET_ENTROPY_SCALE = 0.2


class QNetwork(nn.Module):
    """Observations and squashed continuous actions → Q-values.

    The output has one column per discrete action of every branch (``sum(branches)``), or a single
    column when the action spec is purely continuous; with ``streams`` > 1 (learned reward
    signals) that block repeats once per stream. Called in two parts: ``encode`` the
    observations into each row's state, then ``values`` of that state for actions.

    With ``settings.memory`` an LSTM (``trainers.memory``) follows the body, which then reads the
    observations alone; the continuous action joins after the LSTM, through one more hidden
    layer. So the memory sums up what was observed, and one pass of the LSTM over a sequence
    serves the Q-values of both the stored and the freshly sampled actions.
    """

    def __init__(
        self,
        obs_specs: list[ObservationSpec],
        action_spec: ActionSpec,
        settings: NetworkSettings,
        *,
        streams: int = 1,
    ) -> None:
        super().__init__()
        self.encoder = ObservationEncoder(obs_specs, settings)
        hidden, continuous = settings.hidden_units, action_spec.continuous_size
        outputs = streams * max(sum(action_spec.discrete_branches), 1)
        self.memory_size = settings.memory.memory_size if settings.memory is not None else 0
        if not self.memory_size:
            self.body = mlp(self.encoder.output_size + continuous, hidden, settings.num_layers)
            self.head = nn.Linear(hidden, outputs)
            return
        self.body = mlp(self.encoder.output_size, hidden, settings.num_layers)
        self.memory = MemoryCore(hidden, self.memory_size)
        size = self.memory.output_size
        self.after_memory = mlp(size + continuous, hidden, 1) if continuous else nn.Identity()
        self.head = nn.Linear(hidden if continuous else size, outputs)

    def encode(
        self,
        obs: list[torch.Tensor],
        memory: torch.Tensor | None = None,
        sequence_length: int = 1,
    ) -> torch.Tensor:
        """Each row's state: its encoded observations or, with memory, the LSTM's output along
        sequences of ``sequence_length`` rows, each started from its row of ``memory`` (zeros
        when None)."""
        features = self.encoder(obs)
        if not self.memory_size:
            return features
        hidden = self.body(features)
        if memory is None:
            memory = hidden.new_zeros(hidden.shape[0] // sequence_length, self.memory_size)
        return self.memory(hidden, memory, sequence_length)[0]

    def values(self, state: torch.Tensor, continuous: torch.Tensor | None) -> torch.Tensor:
        """Q-values of ``encode``'s states for squashed ``continuous`` actions."""
        if continuous is not None:
            state = torch.cat([state, continuous], dim=1)
        if not self.memory_size:
            return self.head(self.body(state))
        return self.head(self.after_memory(state))

    def forward(self, obs: list[torch.Tensor], continuous: torch.Tensor | None) -> torch.Tensor:
        return self.values(self.encode(obs), continuous)


@attrs.frozen
class _TensorBatch:
    """A ``ReplayBatch`` on the device; ``continuous`` holds the squashed actions and ``rewards``
    one column per return stream (extrinsic, then each learned signal)."""

    obs: list[torch.Tensor]
    next_obs: list[torch.Tensor]
    continuous: torch.Tensor | None
    discrete: torch.Tensor | None
    mask: torch.Tensor | None
    next_mask: torch.Tensor | None
    rewards: torch.Tensor
    dones: torch.Tensor
    #: with memory: False at padding rows, and each sequence's starting actor memory
    valid: torch.Tensor | None = None
    start_memories: torch.Tensor | None = None
    sequence_length: int = 1


@attrs.frozen
class _SoftValue:
    """``V(s)`` under the current policy, and the log-probability terms it was built from."""

    value: torch.Tensor  # [n, streams]
    continuous_log_prob: torch.Tensor | None  # [n], of the sampled squashed action
    discrete_neg_entropy: torch.Tensor | None  # [n, branches], sum_a pi log pi per branch
    entropy: torch.Tensor


class SACTrainer(RLTrainer):
    """SAC for one behavior name (see module docstring)."""

    squash = True
    conditional_std = True
    supports_memory = True
    hyperparameters: SACSettings

    def _make_learner(self, policy: TorchPolicy) -> None:
        h = self.hyperparameters
        spec = policy.behavior_spec
        action_spec = spec.action_spec
        self.continuous_size = action_spec.continuous_size
        self.branches: list[int] = list(action_spec.discrete_branches)
        self.signals = MinibatchSignals(
            make_reward_signals(
                spec, self.settings.reward_signals, squash=True, where=self.reward_signals_key
            )
        )
        signals = self.signals.signals.values()
        self.stream_titles = ["Extrinsic", *(signal.title for signal in signals)]
        self.gammas = torch.tensor(
            [self.settings.gamma, *(signal.gamma for signal in signals)], device=self.device
        )
        # the entropy terms belong to the extrinsic stream alone (see the module docstring)
        self._entropy_stream = torch.zeros(len(self.stream_titles), device=self.device)
        self._entropy_stream[0] = 1.0

        def q_network() -> QNetwork:
            return QNetwork(
                list(spec.observation_specs),
                action_spec,
                self.settings.network_settings,
                streams=len(self.stream_titles),
            ).to(self.device)

        self.q1, self.q2 = q_network(), q_network()
        self.q1_target, self.q2_target = copy.deepcopy(self.q1), copy.deepcopy(self.q2)
        self._q_parameters: list[torch.Tensor] = [*self.q1.parameters(), *self.q2.parameters()]
        self._target_parameters: list[torch.Tensor] = [
            *self.q1_target.parameters(),
            *self.q2_target.parameters(),
        ]
        for parameter in self._target_parameters:
            parameter.requires_grad_(False)

        start = math.log(h.init_entcoef)
        self.log_ent_coef_continuous = torch.full(
            (1 if self.continuous_size else 0,), start, device=self.device, requires_grad=True
        )
        self.log_ent_coef_discrete = torch.full(
            (len(self.branches),), start, device=self.device, requires_grad=True
        )
        self.target_entropy_continuous = -float(self.continuous_size)
        self.target_entropy_discrete = torch.tensor(
            [DISCRETE_TARGET_ENTROPY_SCALE * math.log(size) for size in self.branches],
            device=self.device,
        )

        lr = h.learning_rate
        self.q_optimizer = Adam(self._q_parameters, lr=lr)
        self.policy_optimizer = Adam(policy.actor.parameters(), lr=lr)
        self.entropy_optimizer = Adam(
            [self.log_ent_coef_continuous, self.log_ent_coef_discrete], lr=lr
        )
        self.buffer = self._new_buffer()
        self.updates = 0
        self.signal_updates = 0

    def _new_buffer(self) -> ReplayBuffer | SequenceReplayBuffer:
        """A replay ring of transitions or, with memory, of whole sequences."""
        memory = self.settings.network_settings.memory
        if memory is None:
            return ReplayBuffer(self.hyperparameters.buffer_size)
        return SequenceReplayBuffer(self.hyperparameters.buffer_size, memory.sequence_length)

    # -- experience ------------------------------------------------------------------------
    def _take(self, transitions: Transitions) -> None:
        assert self.policy is not None
        self.buffer.add(attrs.evolve(transitions, rewards=self.scaled_rewards(transitions)))
        obs = to_tensors(transitions.obs, self.device)
        # the target networks see the same statistics as the online ones: averaging the weights
        # only makes sense if both read their inputs alike
        for network in (self.policy.actor, self.q1, self.q2, self.q1_target, self.q2_target):
            network.encoder.update_normalizer(obs)

    def _on_environment_reset(self, slots: np.ndarray | None = None) -> None:
        if isinstance(self.buffer, SequenceReplayBuffer):
            self.buffer.flush()

    def _updates_due(self, steps_per_update: float | None = None) -> int:
        """Gradient updates the trainer should have made by now (ML-Agents' ratio): of the
        networks, or with ``steps_per_update`` given, of the learned reward signals."""
        h = self.hyperparameters
        collected = self._step - h.buffer_init_steps
        if collected <= 0:
            return 0
        return math.floor(collected / (steps_per_update or h.steps_per_update) + 1e-9)

    def _signal_updates_due(self) -> int:
        """Updates the learned reward signals should have made by now: one per
        ``reward_signal_steps_per_update`` trainer steps (``steps_per_update`` when unset)."""
        return self._updates_due(self.hyperparameters.reward_signal_steps_per_update)

    def _ready(self) -> bool:
        return (
            len(self.buffer) >= self.hyperparameters.batch_size
            and self.updates < self._updates_due()
        )

    # -- the update ------------------------------------------------------------------------
    def _update(self) -> None:
        h = self.hyperparameters
        learning_rate = decayed(
            h.learning_rate_schedule, h.learning_rate, 1e-10, self._step, self.settings.max_steps
        )
        for optimizer in (self.q_optimizer, self.policy_optimizer, self.entropy_optimizer):
            for group in optimizer.param_groups:
                group["lr"] = learning_rate
        steps = self._updates_due() - self.updates
        signal_steps = self._signal_updates_due() - self.signal_updates
        losses = torch.stack(
            [self._gradient_step(train_signals=i < signal_steps) for i in range(steps)]
        ).mean(dim=0)
        for _ in range(signal_steps - steps):  # signals updated more often than the networks
            self._signal_step()
        self.updates += steps
        self.signal_updates += signal_steps
        self.clone_demonstrations(steps)  # after every gradient step, as ML-Agents
        policy_loss, q1_loss, q2_loss, entropy, *estimates = losses.tolist()
        coefficients = torch.cat([self.log_ent_coef_continuous, self.log_ent_coef_discrete]).exp()
        stats = {
            "Losses/Policy Loss": policy_loss,
            "Losses/Value Loss": 0.5 * (q1_loss + q2_loss),
            "Losses/Q1 Loss": q1_loss,
            "Losses/Q2 Loss": q2_loss,
            "Policy/Entropy Coeff": coefficients.mean().item(),
            "Policy/Learning Rate": learning_rate,
            "Policy/Entropy": entropy,
            **{
                f"Policy/{title} Value Estimate": estimate
                for title, estimate in zip(self.stream_titles, estimates, strict=True)
            },
            **self.signals.drain(),
        }
        if self.continuous_size:
            stats["Policy/Continuous Entropy Coeff"] = coefficients[0].item()
        if self.branches:
            stats["Policy/Discrete Entropy Coeff"] = (
                coefficients[-len(self.branches) :].mean().item()
            )
        self.record_losses(stats)

    def _tensors(self, batch: ReplayBatch, rewards: np.ndarray | None = None) -> _TensorBatch:
        """``batch`` on the device, with ``rewards`` per stream (``[n, streams]``; None: the
        batch's own, when there is no learned signal)."""
        device = self.device
        if rewards is None:
            rewards = batch.rewards[:, None]

        def tensor(array: np.ndarray | None, dtype: torch.dtype | None = None) -> Any:
            return None if array is None else torch.as_tensor(array, dtype=dtype, device=device)

        continuous = tensor(batch.continuous_raw) if self.continuous_size else None
        return _TensorBatch(
            obs=to_tensors(batch.obs, device),
            next_obs=to_tensors(batch.next_obs, device),
            continuous=None if continuous is None else torch.tanh(continuous),
            discrete=tensor(batch.discrete, torch.long) if self.branches else None,
            mask=tensor(batch.action_mask),
            next_mask=tensor(batch.next_action_mask),
            rewards=tensor(rewards),
            dones=tensor(batch.dones, torch.float32),
            valid=tensor(batch.valid),
            start_memories=tensor(batch.start_memories),
            sequence_length=batch.sequence_length,
        )

    def _soft_value(
        self,
        dist: ActionDistribution,
        states: tuple[torch.Tensor, torch.Tensor],
        q_a: QNetwork,
        q_b: QNetwork,
    ) -> _SoftValue:
        """``E_pi[min(Q_a, Q_b) - alpha log pi]`` at the rows whose states (``QNetwork.encode``)
        in ``q_a`` and ``q_b`` are ``states``, one sample for continuous actions."""
        alpha_continuous = self.log_ent_coef_continuous.detach().exp()
        alpha_discrete = self.log_ent_coef_discrete.detach().exp()
        continuous = log_prob = None
        if dist.mean is not None:
            assert dist.log_std is not None
            raw = dist.mean + torch.randn_like(dist.mean) * dist.log_std.exp()
            log_prob = dist.log_prob(raw, None)
            continuous = torch.tanh(raw)
        q = self._by_stream(
            torch.min(q_a.values(states[0], continuous), q_b.values(states[1], continuous))
        )
        neg_entropy = None
        if self.branches:
            expected_q, terms = [], []
            for branch_q, log_probs in zip(
                torch.split(q, self.branches, dim=2), dist.log_probs_by_branch, strict=True
            ):
                probs = log_probs.exp()
                expected_q.append((probs.unsqueeze(1) * branch_q).sum(dim=2))
                terms.append((probs * log_probs).sum(dim=1))
            neg_entropy = torch.stack(terms, dim=1)
            entropy_bonus = (alpha_discrete * neg_entropy).sum(dim=1)
            value = torch.stack(expected_q, dim=2).mean(dim=2)
            value = value - entropy_bonus.unsqueeze(1) * self._entropy_stream
        else:
            value = q.squeeze(2)
        if log_prob is not None:
            value = value - (alpha_continuous * log_prob).unsqueeze(1) * self._entropy_stream
        return _SoftValue(
            value=value,
            continuous_log_prob=log_prob,
            discrete_neg_entropy=neg_entropy,
            entropy=dist.entropy(),
        )

    def _by_stream(self, q: torch.Tensor) -> torch.Tensor:
        """A Q network's output ``[n, streams * outputs]`` as ``[n, streams, outputs]``."""
        return q.reshape(q.shape[0], len(self.stream_titles), -1)

    def _taken_q(self, q: torch.Tensor, discrete: torch.Tensor | None) -> torch.Tensor:
        """Each stream's Q-value of the stored joint action (mean over branches of the chosen
        outputs), ``[n, streams]``."""
        q = self._by_stream(q)
        if discrete is None:
            return q.squeeze(2)
        chosen = [
            branch_q.gather(2, discrete[:, None, i : i + 1].expand(-1, q.shape[1], 1)).squeeze(2)
            for i, branch_q in enumerate(torch.split(q, self.branches, dim=2))
        ]
        return torch.stack(chosen, dim=2).mean(dim=2)

    def _gradient_step(self, *, train_signals: bool = True) -> torch.Tensor:
        """One minibatch, one step of each optimizer (with ``train_signals``, the learned
        signals' too, on the same minibatch); returns (policy, Q1, Q2 loss, entropy, each
        stream's value estimate)."""
        batch = self.buffer.sample(self.hyperparameters.batch_size, self.rng)
        if not self.signals.signals:
            return self._learn(self._tensors(batch))
        real = np.arange(len(batch.rewards)) if batch.valid is None else np.flatnonzero(batch.valid)
        rewards = self.signals.stream_rewards(batch, batch.rewards, real)
        losses = self._learn(self._tensors(batch, rewards))
        if train_signals:
            self.signals.train(batch, real)
        return losses

    def _signal_step(self) -> None:
        """One step of the learned signals alone, on a minibatch of their own."""
        if not self.signals.signals:
            return
        batch = self.buffer.sample(self.hyperparameters.batch_size, self.rng)
        real = np.arange(len(batch.rewards)) if batch.valid is None else np.flatnonzero(batch.valid)
        self.signals.train(batch, real)

    def _distribution(
        self,
        obs: list[torch.Tensor],
        mask: torch.Tensor | None,
        memory: torch.Tensor | None,
        sequence_length: int,
    ) -> ActionDistribution:
        """The policy's distribution at ``obs``, along sequences from ``memory`` when given."""
        assert self.policy is not None
        actor = self.policy.actor
        if memory is None:
            return actor(obs, mask)
        return actor.distribution(actor.head_outputs(obs, mask, memory, sequence_length))

    def _next_step(
        self, b: _TensorBatch
    ) -> tuple[ActionDistribution, tuple[torch.Tensor, torch.Tensor]]:
        """The policy's distribution at each row's next observation and the target networks'
        states there. With memory each sequence is run again from its first step, one step
        longer: the memories at the next observations are the ones that sequence leads to."""
        targets = (self.q1_target, self.q2_target)
        if b.start_memories is None:
            dist = self._distribution(b.next_obs, b.next_mask, None, 1)
            return dist, (targets[0].encode(b.next_obs), targets[1].encode(b.next_obs))
        length = b.sequence_length
        obs = [_with_first_step(o, n, length) for o, n in zip(b.obs, b.next_obs, strict=True)]
        mask = None
        if b.mask is not None and b.next_mask is not None:
            mask = _with_first_step(b.mask, b.next_mask, length)
        assert self.policy is not None
        heads = self.policy.actor.head_outputs(obs, mask, b.start_memories, length + 1)
        rows = obs[0].shape[0]
        dist = self.policy.actor.distribution(
            {
                key: _without_first_step(value, length + 1) if value.shape[0] == rows else value
                for key, value in heads.items()
                if key != "memory"
            }
        )
        states = [_without_first_step(q.encode(obs, None, length + 1), length + 1) for q in targets]
        return dist, (states[0], states[1])

    def _learn(self, b: _TensorBatch) -> torch.Tensor:
        """One step of each optimizer on the minibatch ``b`` (padding rows, with memory, count in
        no loss); returns (policy, Q1, Q2 loss, entropy, each stream's value estimate)."""
        assert self.policy is not None
        q1, q1_loss, q2_loss = self._q_step(b, self._td_target(b))
        policy_loss, soft = self._policy_step(b)
        self._entropy_step(soft, b.valid)
        with torch.no_grad():
            torch._foreach_lerp_(
                self._target_parameters, self._q_parameters, self.hyperparameters.tau
            )
        estimates = [masked_mean(stream, b.valid) for stream in q1.detach().unbind(dim=1)]
        return torch.stack(
            [
                policy_loss.detach(),
                q1_loss.detach(),
                q2_loss.detach(),
                masked_mean(soft.entropy.detach(), b.valid),
                *estimates,
            ]
        )

    @torch.no_grad()
    def _td_target(self, b: _TensorBatch) -> torch.Tensor:
        """Each row's soft TD target per stream, ``r + gamma (1 - done) V_target(s')``."""
        next_dist, next_states = self._next_step(b)
        next_value = self._soft_value(next_dist, next_states, self.q1_target, self.q2_target).value
        return b.rewards + self.gammas * (1.0 - b.dones).unsqueeze(1) * next_value

    def _q_step(
        self, b: _TensorBatch, target: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """One step of the Q optimizer towards ``target``; returns Q1's values of the stored
        actions ``[n, streams]`` and the two Q losses."""
        length, valid = b.sequence_length, b.valid
        # the Q networks' memories start from zeros at each sequence's first step, as in ML-Agents
        q1 = self._taken_q(self.q1.values(self.q1.encode(b.obs, None, length), b.continuous),
                           b.discrete)  # fmt: skip
        q2 = self._taken_q(self.q2.values(self.q2.encode(b.obs, None, length), b.continuous),
                           b.discrete)  # fmt: skip
        # the mean over streams of each stream's loss, as ML-Agents
        q1_loss = 0.5 * masked_mean(((q1 - target) ** 2).mean(dim=1), valid)
        q2_loss = 0.5 * masked_mean(((q2 - target) ** 2).mean(dim=1), valid)
        self.q_optimizer.zero_grad(set_to_none=True)
        (q1_loss + q2_loss).backward()
        self.q_optimizer.step()
        return q1, q1_loss, q2_loss

    def _policy_step(self, b: _TensorBatch) -> tuple[torch.Tensor, _SoftValue]:
        """One step of the policy optimizer up the soft value; returns the policy loss and the
        soft value it was taken from (its log-probability terms drive the entropy step)."""
        length = b.sequence_length
        # the policy loss differentiates through the Q networks without training them
        for parameter in self._q_parameters:
            parameter.requires_grad_(False)
        with torch.no_grad():
            states = (self.q1.encode(b.obs, None, length), self.q2.encode(b.obs, None, length))
        dist = self._distribution(b.obs, b.mask, b.start_memories, length)
        soft = self._soft_value(dist, states, self.q1, self.q2)
        policy_loss = -masked_mean(soft.value.sum(dim=1), b.valid)
        self.policy_optimizer.zero_grad(set_to_none=True)
        policy_loss.backward()
        self.policy_optimizer.step()
        for parameter in self._q_parameters:
            parameter.requires_grad_(True)
        return policy_loss, soft

    def _entropy_step(self, soft: _SoftValue, valid: torch.Tensor | None) -> None:
        """One step of the entropy coefficients towards the target entropies."""
        entropy_loss = torch.zeros((), device=self.device)
        if soft.continuous_log_prob is not None:
            gap = soft.continuous_log_prob.detach() + self.target_entropy_continuous
            entropy_loss = entropy_loss - masked_mean(self.log_ent_coef_continuous * gap, valid)
        if soft.discrete_neg_entropy is not None:
            gap = soft.discrete_neg_entropy.detach() + self.target_entropy_discrete
            entropy_loss = entropy_loss - masked_mean(
                (self.log_ent_coef_discrete * gap).sum(dim=1), valid
            )
        self.entropy_optimizer.zero_grad(set_to_none=True)
        entropy_loss.backward()
        self.entropy_optimizer.step()

    # -- persistence -----------------------------------------------------------------------
    def _learner_state(self) -> dict[str, Any]:
        state: dict[str, Any] = {
            "q1": self.q1.state_dict(),
            "q2": self.q2.state_dict(),
            "q1_target": self.q1_target.state_dict(),
            "q2_target": self.q2_target.state_dict(),
            "q_optimizer": self.q_optimizer.state_dict(),
            "policy_optimizer": self.policy_optimizer.state_dict(),
            "entropy_optimizer": self.entropy_optimizer.state_dict(),
            "log_ent_coef_continuous": self.log_ent_coef_continuous.detach().clone(),
            "log_ent_coef_discrete": self.log_ent_coef_discrete.detach().clone(),
            "updates": self.updates,
            "signal_updates": self.signal_updates,
        }
        if self.hyperparameters.save_replay_buffer:
            state["buffer"] = self.buffer.state_dict()
        if self.signals.signals:
            state["reward_signals"] = {
                key: signal.state_dict() for key, signal in self.signals.signals.items()
            }
        return state

    def _load_learner_state(self, state: dict[str, Any]) -> None:
        saved_signals = state.get("reward_signals", {})
        if set(saved_signals) != set(self.signals.signals):
            # every Q network has one output block per stream: they cannot be loaded across
            raise NetworkMismatchError(
                "the checkpoint was trained with learned reward signals "
                f"[{', '.join(saved_signals) or 'none'}] and the configuration names "
                f"[{', '.join(self.signals.signals) or 'none'}]; SAC's Q networks have one "
                "return stream per signal, so resume with the reward_signals it was trained with "
                "or start a new run"
            )
        for key, signal in self.signals.signals.items():
            signal.load_state_dict(saved_signals[key])
        for name in ("q1", "q2", "q1_target", "q2_target"):
            getattr(self, name).load_state_dict(state[name])
        self.q_optimizer.load_state_dict(state["q_optimizer"])
        self.policy_optimizer.load_state_dict(state["policy_optimizer"])
        self.entropy_optimizer.load_state_dict(state["entropy_optimizer"])
        with torch.no_grad():
            self.log_ent_coef_continuous.copy_(state["log_ent_coef_continuous"])
            self.log_ent_coef_discrete.copy_(state["log_ent_coef_discrete"])
        self.updates = int(state["updates"])
        # checkpoints written before the signals kept their own count updated them in step
        self.signal_updates = int(state.get("signal_updates", self._signal_updates_due()))
        if "buffer" in state:
            self.buffer.load_state_dict(state["buffer"])
        else:
            self.buffer = self._new_buffer()


def _with_first_step(
    steps: torch.Tensor, following: torch.Tensor, sequence_length: int
) -> torch.Tensor:
    """Rows of sequences of ``sequence_length`` → each sequence's first row of ``steps``, then
    its rows of ``following`` (``sequence_length + 1`` rows a sequence)."""
    count = steps.shape[0] // sequence_length
    first = steps.reshape(count, sequence_length, *steps.shape[1:])[:, :1]
    rest = following.reshape(count, sequence_length, *following.shape[1:])
    return torch.cat([first, rest], dim=1).reshape(-1, *steps.shape[1:])


def _without_first_step(rows: torch.Tensor, sequence_length: int) -> torch.Tensor:
    """Rows of sequences of ``sequence_length`` without each sequence's first row."""
    count = rows.shape[0] // sequence_length
    return rows.reshape(count, sequence_length, *rows.shape[1:])[:, 1:].reshape(-1, *rows.shape[1:])
