"""Proximal Policy Optimization with ML-Agents' hyperparameters and semantics.

Every ``buffer_size`` trainer steps: value estimates for the whole buffer in one batched pass,
GAE with bootstrapping at ``time_horizon`` cuts, interrupted episodes and the buffer end, advantages
normalized over the buffer, then ``num_epoch`` shuffled passes of ``batch_size`` minibatches on
``policy_loss + 0.5 * value_loss - beta * entropy`` (clipped surrogate and clipped value loss).
``learning_rate``, ``beta`` and ``epsilon`` decay linearly to 1e-10, 1e-5 and 0.1 over ``max_steps``
when their schedule is ``linear``.

With ``network_settings.memory`` the values come from a pass of the critic's LSTM along each
agent's trajectories (``trainers.ppo_sequences``) and a minibatch is whole sequences of
``sequence_length`` steps (``trainers.sequences``), trimmed to its longest real run, the layers
around the LSTM and every loss seeing only the real steps (``Sequences.grid``).

With ``behavioral_cloning`` the policy takes a cloning update after the epochs
(``trainers.behavioral_cloning``); POCA's update ends the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import torch

from trainers.adam import Adam
from trainers.buffers import RolloutBuffer
from trainers.exceptions import UnsupportedFeatureError
from trainers.gae import compute_gae
from trainers.hyperparameters import SHARED_CRITIC_UNSUPPORTED, PPOSettings
from trainers.intrinsic_rewards import IntrinsicSignal
from trainers.magnet import Magnet
from trainers.networks import ValueNetwork
from trainers.policy import TorchPolicy, to_tensors
from trainers.ppo_sequences import CriticMemories, critic_pass
from trainers.reward_signals import make_reward_signals
from trainers.rl_trainer import RLTrainer, decayed
from trainers.rollout import Transitions
from trainers.sequences import Sequences, cut_sequences

#: rows per no-grad critic pass over the buffer
_CHUNK = 8192
#: the critic's loss terms (stat name -> value) on the minibatch ``rows`` under clip range epsilon
CriticLoss = Callable[[torch.Tensor, float], dict[str, torch.Tensor]]


def clipped_value_loss(
    estimate: torch.Tensor, old: torch.Tensor, target: torch.Tensor, epsilon: float
) -> torch.Tensor:
    """PPO's value loss: the mean of the larger squared error of the new estimate and of the
    estimate clipped to within ``epsilon`` of the ``old`` one."""
    clipped = old + torch.clamp(estimate - old, -epsilon, epsilon)
    return torch.max((target - estimate) ** 2, (target - clipped) ** 2).mean()


class _Rollout(NamedTuple):
    """The rollout as tensors on the device, indexed by minibatch rows (``None``: no such part)."""

    obs: list[torch.Tensor]
    continuous: torch.Tensor | None
    discrete: torch.Tensor | None
    masks: torch.Tensor | None
    old_log_probs: torch.Tensor
    #: normalized over the rollout
    advantages: torch.Tensor
    #: with memory: the rollout cut into sequences (minibatch "rows" are then sequences)
    sequences: Sequences | None = None
    #: with memory: the actor's stored memory at each sequence's first step
    start_memories: torch.Tensor | None = None


class RewardStream(NamedTuple):
    """One reward signal as an update learns it: its critic, its strength-scaled rewards for
    every buffer row and its discount; ``key`` None for the extrinsic signal."""

    title: str
    critic: torch.nn.Module
    rewards: np.ndarray
    gamma: float
    key: str | None


class PPOTrainer(RLTrainer):
    """PPO for one behavior name (see module docstring)."""

    hyperparameters: PPOSettings
    supports_memory = True
    #: the learned reward signals (``reward_signals.curiosity``/``rnd``/``gail``) and their critics
    signals: dict[str, IntrinsicSignal] = {}  # replaced by _make_learner, never changed in place
    signal_critics: torch.nn.ModuleDict = torch.nn.ModuleDict()
    #: with memory: the critic's memory per agent slot between rollouts
    critic_memories: CriticMemories | None = None
    #: with memory: the same for each learned reward signal's critic
    signal_memories: dict[str, CriticMemories] = {}  # replaced by _make_learner

    def _make_learner(self, policy: TorchPolicy) -> None:
        if self.hyperparameters.shared_critic:
            raise UnsupportedFeatureError(SHARED_CRITIC_UNSUPPORTED)
        self._check_memory_support()
        self.critic_memories = CriticMemories(policy.memory_size) if policy.memory_size else None
        obs_specs = list(policy.behavior_spec.observation_specs)
        self.critic = ValueNetwork(obs_specs, self.settings.network_settings).to(self.device)
        self._make_signals(policy, lambda: ValueNetwork(obs_specs, self.settings.network_settings))
        parameters = [
            *policy.actor.parameters(),
            *self.critic.parameters(),
            *self.signal_critics.parameters(),
        ]
        self.optimizer = Adam(parameters, lr=self.hyperparameters.learning_rate)
        self.buffer = RolloutBuffer()
        self._make_magnet(policy)

    def _make_signals(self, policy: TorchPolicy, critic: Callable[[], torch.nn.Module]) -> None:
        """The learned reward signals, each with a critic of its own from ``critic()`` (as
        ML-Agents gives each a value head) and, with memory, that critic's memory per agent."""
        self.signals = make_reward_signals(
            policy.behavior_spec,
            self.settings.reward_signals,
            squash=policy.squash,
            where=self.reward_signals_key,
        )
        self.signal_critics = torch.nn.ModuleDict({key: critic() for key in self.signals}).to(
            self.device
        )
        if policy.memory_size:
            self.signal_memories = {key: CriticMemories(policy.memory_size) for key in self.signals}

    def _make_magnet(self, policy: TorchPolicy) -> None:
        """The magnet the update is pulled toward, when ``magnet_strength`` > 0."""
        self.magnet = (
            Magnet(policy.actor, rate=self.hyperparameters.magnet_rate)
            if self.hyperparameters.magnet_strength > 0
            else None
        )

    def _take(self, transitions: Transitions) -> None:
        self.buffer.add(transitions)

    def _on_environment_reset(self, slots: np.ndarray | None = None) -> None:
        self.buffer.cut_links(slots)
        if slots is not None:
            return  # memory networks never take part (self_play.learn_from_latest refuses them)
        for memories in (self.critic_memories, *self.signal_memories.values()):
            if memories is not None:
                memories.clear()

    def _check_memory_support(self) -> None:
        """Refuse what does not work with ``network_settings.memory`` yet."""
        if self.settings.network_settings.memory is None:
            return
        if self.hyperparameters.magnet_strength > 0:
            raise UnsupportedFeatureError(
                "network_settings.memory with magnet_strength > 0 is not supported yet; set "
                "magnet_strength: 0 or remove the memory section"
            )

    def _ready(self) -> bool:
        return len(self.buffer) >= self.hyperparameters.buffer_size

    def _schedules(self) -> tuple[float, float, float]:
        h, step, horizon = self.hyperparameters, self._step, self.settings.max_steps
        return (
            decayed(h.learning_rate_schedule, h.learning_rate, 1e-10, step, horizon),
            decayed(h.beta_schedule_resolved, h.beta, 1e-5, step, horizon),
            decayed(h.epsilon_schedule_resolved, h.epsilon, 0.1, step, horizon),
        )

    def _evaluate(self, estimate: Callable[[slice], torch.Tensor], rows: int) -> np.ndarray:
        """``estimate`` of ``rows`` buffer rows without gradients, a chunk of rows at a time."""
        with torch.no_grad():
            parts = [estimate(slice(i, i + _CHUNK)) for i in range(0, rows, _CHUNK)]
        return torch.cat(parts).cpu().numpy() if parts else np.zeros(0, np.float32)

    def _rollout_obs(self, transitions: Transitions) -> list[torch.Tensor]:
        """The rollout's observations as tensors, folded into the actor's and critics'
        normalizers first (like ML-Agents: the statistics include the rollout learned from)."""
        assert self.policy is not None
        obs = to_tensors(transitions.obs, self.device)
        self.policy.actor.encoder.update_normalizer(obs)
        for critic in (self.critic, *self.signal_critics.values()):
            critic.encoder.update_normalizer(obs)
        return obs

    def _update(self) -> None:
        if self.critic_memories is not None:
            self._update_sequences()
            return
        data, next_index, bounds = self.buffer.contents()
        self.buffer.clear()
        obs = self._rollout_obs(data)
        # (critic, old values, returns) of each reward signal, extrinsic first
        estimates: list[tuple[torch.nn.Module, torch.Tensor, torch.Tensor]] = []
        advantages = np.zeros(len(data), dtype=np.float64)
        streams = self._reward_signals(data, self.scaled_rewards(data))
        for title, critic, rewards, gamma, _ in streams:
            values, next_values = self._bootstrap(critic, data, obs, next_index)
            signal_advantages = self._gae(
                rewards, values, next_values, data, next_index, bounds, gamma
            )
            advantages = advantages + signal_advantages
            self.stats.add(f"Policy/{title} Value Estimate", float(values.mean()))
            returns = signal_advantages + values
            estimates.append((critic, self._tensor(values), self._tensor(returns)))

        def value_loss(rows: torch.Tensor, epsilon: float) -> dict[str, torch.Tensor]:
            losses = [
                clipped_value_loss(critic([o[rows] for o in obs]), old[rows], target[rows], epsilon)
                for critic, old, target in estimates
            ]
            return {"Losses/Value Loss": torch.stack(losses).mean()}

        self._optimize(data, obs, advantages, value_loss, {"Losses/Value Loss": 0.5})

    def _reward_signals(self, data: Transitions, extrinsic: np.ndarray) -> list[RewardStream]:
        """The extrinsic stream (its scaled rewards ``extrinsic``) and each learned signal's,
        scored on ``data`` here, where their mean reward is logged."""
        streams = [RewardStream("Extrinsic", self.critic, extrinsic, self.settings.gamma, None)]
        for key, signal in self.signals.items():
            rewards = signal.scaled_rewards(data)
            self.stats.add(signal.reward_tag, float(rewards.mean()))
            streams.append(RewardStream(signal.title, self.signal_critics[key], rewards,
                                        signal.gamma, key))  # fmt: skip
        return streams

    def _gae(
        self,
        rewards: np.ndarray,
        values: np.ndarray,
        next_values: np.ndarray,
        data: Transitions,
        next_index: np.ndarray,
        bounds: list[tuple[int, int]],
        gamma: float,
    ) -> np.ndarray:
        return compute_gae(
            rewards=rewards, values=values, next_values=next_values, dones=data.dones,
            next_index=next_index, chunk_bounds=bounds, gamma=gamma,
            lambd=self.hyperparameters.lambd,
        )  # fmt: skip

    def _update_sequences(self) -> None:
        """The update of networks with memory: GAE from each critic's value pass along the
        trajectories, then minibatches of whole sequences (``trainers.ppo_sequences``)."""
        assert self.critic_memories is not None and self.settings.network_settings.memory
        data, next_index, bounds = self.buffer.contents()
        self.buffer.clear()
        obs = self._rollout_obs(data)
        sequences = cut_sequences(
            next_index, data.slots, self.settings.network_settings.memory.sequence_length
        )
        advantages = np.zeros(len(data), dtype=np.float64)
        # (critic, memories its sequences start from, old values, returns) of each signal
        estimates = []
        linked = next_index >= 0
        for title, critic, rewards, gamma, key in self._reward_signals(
            data, self.scaled_rewards(data)
        ):
            memories = self.critic_memories if key is None else self.signal_memories[key]
            values_pass = critic_pass(
                critic,
                obs=obs,
                next_obs=data.next_obs,
                sequences=sequences,
                needs_next=(next_index < 0) & ~data.dones,
                ended=data.ended,
                carried=memories,
            )
            values, next_values = values_pass.values, values_pass.next_values
            next_values[linked] = values[next_index[linked]]
            signal_advantages = self._gae(
                rewards, values, next_values, data, next_index, bounds, gamma
            )
            advantages = advantages + signal_advantages
            self.stats.add(f"Policy/{title} Value Estimate", float(values.mean()))
            estimates.append((critic, values_pass.start_memories, self._tensor(values),
                              self._tensor(signal_advantages + values)))  # fmt: skip

        def value_loss(chosen: torch.Tensor, epsilon: float) -> dict[str, torch.Tensor]:
            grid = sequences.grid(chosen.cpu().numpy())
            rows = self._tensor(grid.rows)
            losses = []
            for critic, start_memories, old, target in estimates:
                estimate = critic.over_grid([o[rows] for o in obs], start_memories[chosen], grid)
                losses.append(clipped_value_loss(estimate, old[rows], target[rows], epsilon))
            return {"Losses/Value Loss": torch.stack(losses).mean()}

        self._optimize(
            data, obs, advantages, value_loss, {"Losses/Value Loss": 0.5}, sequences=sequences
        )

    def _bootstrap(
        self,
        critic: torch.nn.Module,
        data: Transitions,
        obs: list[torch.Tensor],
        next_index: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray]:
        """``critic``'s value of every row, and of the observation after it (zero at an
        episode's end; a later row's value where the trajectory goes on in the buffer)."""
        values = self._evaluate(lambda rows: critic([o[rows] for o in obs]), len(data))
        # only rows whose trajectory stops here need their next observation's value
        next_values = np.zeros_like(values)
        needs = (next_index < 0) & ~data.dones
        if needs.any():
            tail = to_tensors([o[needs] for o in data.next_obs], self.device)
            next_values[needs] = self._evaluate(
                lambda rows: critic([o[rows] for o in tail]), int(needs.sum())
            )
        linked = next_index >= 0
        next_values[linked] = values[next_index[linked]]
        return values, next_values

    def _tensor(self, array: np.ndarray) -> torch.Tensor:
        return torch.as_tensor(array, device=self.device)

    def _optimize(
        self,
        data: Transitions,
        obs: list[torch.Tensor],
        advantages: np.ndarray,
        critic_loss: CriticLoss,
        critic_weights: dict[str, float],
        sequences: Sequences | None = None,
        epoch_order: Callable[[np.random.Generator], np.ndarray] | None = None,
    ) -> None:
        """``num_epoch`` shuffled passes of minibatches on the clipped surrogate of the normalized
        ``advantages``, minus ``beta`` times the entropy, plus each of ``critic_loss``'s terms
        times its weight in ``critic_weights``. With ``sequences`` a minibatch is
        ``batch_size // sequence_length`` whole sequences, and ``critic_loss`` gets their indices.
        ``epoch_order`` orders each epoch's rows instead of a plain shuffle (POCA: whole groups)."""
        assert self.policy is not None
        h = self.hyperparameters
        learning_rate, beta, epsilon = self._schedules()
        for group in self.optimizer.param_groups:
            group["lr"] = learning_rate
        rollout = self._minibatch_source(data, obs, advantages)
        n = len(data)
        batch_size = min(h.batch_size, n)
        if sequences is not None:
            assert data.memories is not None, "the acting policy stored its memories"
            rollout = rollout._replace(
                sequences=sequences,
                start_memories=self._tensor(data.memories[sequences.rows[:, 0]]),
            )
            n = len(sequences)
            batch_size = min(max(h.batch_size // sequences.sequence_length, 1), n)
        totals = dict.fromkeys(["policy", "entropy", "magnet", *critic_weights], 0.0)
        updates = 0
        for _ in range(h.num_epoch):
            shuffled = epoch_order(self.rng) if epoch_order is not None else self.rng.permutation(n)
            order = torch.as_tensor(shuffled, device=self.device)
            for start in range(0, n - batch_size + 1, batch_size):
                rows = order[start : start + batch_size]
                policy_loss, entropy, pull = self._actor_losses(rollout, rows, epsilon)
                loss = policy_loss - beta * entropy
                if pull is not None:
                    loss = loss + h.magnet_strength * pull
                    totals["magnet"] += pull.item()
                for name, term in critic_loss(rows, epsilon).items():
                    loss = loss + critic_weights[name] * term
                    totals[name] += term.item()
                self.optimizer.zero_grad(set_to_none=True)
                loss.backward()
                self.optimizer.step()
                self._train_signals(data, rows.cpu().numpy(), sequences, totals)
                totals["policy"] += policy_loss.item()
                totals["entropy"] += entropy.item()
                updates += 1
        self._record_optimization(totals, max(updates, 1), learning_rate, beta, epsilon)
        self.clone_demonstrations()

    def _train_signals(
        self,
        data: Transitions,
        rows: np.ndarray,
        sequences: Sequences | None,
        totals: dict[str, float],
    ) -> None:
        """One step of every learned signal on the minibatch ``rows`` (sequences, with memory),
        its statistics added to ``totals``."""
        if sequences is not None:  # the real steps of the minibatch's sequences
            rows = sequences.rows[rows].reshape(-1)
            rows = rows[rows >= 0]
        for signal in self.signals.values():
            for name, value in signal.update(data, rows).items():
                totals[name] = totals.get(name, 0.0) + value

    def _minibatch_source(
        self, data: Transitions, obs: list[torch.Tensor], advantages: np.ndarray
    ) -> _Rollout:
        """The rollout's tensors the minibatches are rows of, advantages normalized."""
        tensor = self._tensor
        return _Rollout(
            obs=obs,
            continuous=tensor(data.continuous_raw) if data.continuous_raw.shape[1] else None,
            discrete=tensor(data.discrete) if data.discrete.shape[1] else None,
            masks=tensor(data.action_mask) if data.action_mask is not None else None,
            old_log_probs=tensor(data.log_probs),
            advantages=tensor((advantages - advantages.mean()) / (advantages.std() + 1e-10)),
        )

    def _actor_losses(
        self, rollout: _Rollout, rows: torch.Tensor, epsilon: float
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """The clipped surrogate loss, the mean entropy and the magnet's pull (None without a
        magnet) on the minibatch ``rows`` (sequences, with memory)."""
        assert self.policy is not None
        if rollout.sequences is not None:
            assert rollout.start_memories is not None
            grid = rollout.sequences.grid(rows.cpu().numpy())
            start_memories = rollout.start_memories[rows]
            rows = self._tensor(grid.rows)  # the real steps: padding never enters the losses
            obs = [o[rows] for o in rollout.obs]
            masks = None if rollout.masks is None else rollout.masks[rows]
            heads = self.policy.actor.head_outputs(obs, masks, start_memories, grid=grid)
            dist = self.policy.actor.distribution(heads)
        else:
            obs = [o[rows] for o in rollout.obs]
            masks = None if rollout.masks is None else rollout.masks[rows]
            dist = self.policy.actor(obs, masks)
        log_probs = dist.log_prob_components(
            None if rollout.continuous is None else rollout.continuous[rows],
            None if rollout.discrete is None else rollout.discrete[rows],
        )
        # one ratio per action component, each clipped on its own (ML-Agents' PPO)
        ratio = torch.exp(log_probs - rollout.old_log_probs[rows])
        advantage = rollout.advantages[rows].unsqueeze(1)
        policy_loss = -torch.min(
            ratio * advantage, torch.clamp(ratio, 1 - epsilon, 1 + epsilon) * advantage
        ).mean()
        entropy = dist.bonus_entropy().mean()
        pull = None if self.magnet is None else self.magnet.divergence(dist, obs, masks)
        return policy_loss, entropy, pull

    def _record_optimization(
        self,
        totals: dict[str, float],
        updates: int,
        learning_rate: float,
        beta: float,
        epsilon: float,
    ) -> None:
        """The mean losses over ``updates`` minibatches and the schedules' values; the magnet
        follows the updated policy."""
        assert self.policy is not None
        magnet = totals.pop("magnet") / updates
        if self.magnet is not None:
            self.magnet.follow(self.policy.actor)
            self.stats.add("Policy/Magnet KL", magnet)
        self.record_losses(
            {
                "Losses/Policy Loss": abs(totals.pop("policy")) / updates,
                "Policy/Entropy": totals.pop("entropy") / updates,
                **{name: total / updates for name, total in totals.items()},
                "Policy/Learning Rate": learning_rate,
                "Policy/Epsilon": epsilon,
                "Policy/Beta": beta,
            }
        )

    def _learner_state(self) -> dict[str, Any]:
        state = {
            "critic": self.critic.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "buffer": self.buffer.state_dict(),
        }
        if self.magnet is not None:
            state["magnet"] = self.magnet.state_dict()
        if self.critic_memories is not None:
            state["critic_memories"] = self.critic_memories.state_dict()
        if self.signals:
            state["reward_signals"] = {
                key: {"critic": self.signal_critics[key].state_dict(), **signal.state_dict()}
                for key, signal in self.signals.items()
            }
            for key, memories in self.signal_memories.items():
                state["reward_signals"][key]["critic_memories"] = memories.state_dict()
        return state

    def _load_learner_state(self, state: dict[str, Any]) -> None:
        self.critic.load_state_dict(state["critic"])
        saved_signals = state.get("reward_signals", {})
        for key, signal in self.signals.items():
            if key in saved_signals:  # a signal added at resume starts fresh
                self.signal_critics[key].load_state_dict(saved_signals[key]["critic"])
                signal.load_state_dict(saved_signals[key])
                if key in self.signal_memories and "critic_memories" in saved_signals[key]:
                    self.signal_memories[key].load_state_dict(saved_signals[key]["critic_memories"])
        if set(saved_signals) == set(self.signals):
            self.optimizer.load_state_dict(state["optimizer"])
        self.buffer.load_state_dict(state["buffer"])
        if self.critic_memories is not None and "critic_memories" in state:
            self.critic_memories.load_state_dict(state["critic_memories"])
        if self.magnet is not None:
            # a run that turned the magnet on at resume starts it at the policy
            self.magnet.load_state_dict(state.get("magnet", self.policy.actor.state_dict()))
