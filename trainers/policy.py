"""``TorchPolicy``: the acting side of PPO and SAC, and what ``trainers.load_policy`` returns."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import torch
from mlagents_envs.base_env import ActionTuple, BehaviorSpec

from trainers.actor import ActionDistribution, Actor
from trainers.base import ActionOutput, Policy, Weights
from trainers.exceptions import MemoryUseError
from trainers.fast_acting import NumpyActor, NumpyDistribution, numpy_acting
from trainers.memory import AgentMemories
from trainers.policy_file import read_policy_record, write_policy_file
from trainers.settings import NetworkSettings
from trainers.state_mismatch import load_policy_weights


def to_tensors(obs: list[np.ndarray], device: str = "cpu") -> list[torch.Tensor]:
    """Observation arrays → float32 tensors without copying where the dtype already fits."""
    return [torch.as_tensor(o, dtype=torch.float32, device=device) for o in obs]


def mask_tensor(action_mask: list[np.ndarray] | None, device: str = "cpu") -> torch.Tensor | None:
    """ML-Agents' per-branch masks → one bool ``[n, sum(branches)]`` tensor (True = unavailable)."""
    if action_mask is None or len(action_mask) == 0:
        return None
    flat = action_mask[0] if len(action_mask) == 1 else np.concatenate(action_mask, axis=1)
    return torch.as_tensor(flat, dtype=torch.bool, device=device)


def action_tuple(
    dist: ActionDistribution, continuous: torch.Tensor | None, discrete: torch.Tensor | None
) -> ActionTuple:
    """Raw actions drawn from ``dist`` as the environment takes them."""
    return ActionTuple(
        continuous=None if continuous is None else dist.env_continuous(continuous).cpu().numpy(),
        discrete=None if discrete is None else discrete.cpu().numpy().astype(np.int32),
    )


def sampled_output(dist: ActionDistribution, memories: np.ndarray | None = None) -> ActionOutput:
    """Draw one action per row of ``dist``, with its per-component log-probabilities
    (``memories``: the agents' memories the draw was made with, stored for training)."""
    continuous, discrete = dist.sample()
    log_probs = dist.log_prob_components(continuous, discrete)
    raw = (
        continuous.cpu().numpy()
        if continuous is not None
        else np.zeros((log_probs.shape[0], 0), np.float32)
    )
    return ActionOutput(
        actions=action_tuple(dist, continuous, discrete),
        log_probs=log_probs.cpu().numpy(),
        continuous_raw=raw,
        memories=memories,
    )


class TorchPolicy(Policy):
    """A policy backed by an ``Actor`` network; batched inference, no per-agent Python work.

    With ``network_settings.memory`` it keeps each agent's memory (``trainers.memory``): pass
    ``agent_ids`` to ``sample``/``act`` and ``forget`` the agents whose episode ended.

    ``device`` holds ``actor``, the network an update trains. With an ``acting_device`` other than
    ``device`` (a GPU trains, the CPU acts: small acting batches are faster there), decisions come
    from a copy of the actor on ``acting_device``, refreshed from ``actor`` at the first decision
    after ``weights_changed()``; ``load_weights`` and ``update_normalizer`` call it themselves.

    An actor on a CPU acting device decides through a numpy copy of its weights where that is
    faster (``trainers.fast_acting``), with the same random draws and memories as torch.
    """

    def __init__(
        self,
        *,
        behavior_spec: BehaviorSpec,
        network_settings: NetworkSettings,
        squash: bool = False,
        conditional_std: bool = False,
        device: str = "cpu",
        acting_device: str | None = None,
    ) -> None:
        self.behavior_spec = behavior_spec
        self.network_settings = network_settings
        self.squash = squash
        self.conditional_std = conditional_std
        self.device = device
        self.acting_device = acting_device or device
        self.actor = Actor(
            obs_specs=list(behavior_spec.observation_specs),
            action_spec=behavior_spec.action_spec,
            settings=network_settings,
            squash=squash,
            conditional_std=conditional_std,
        ).to(device)
        self._acting_copy = (
            None if self.acting_device == device else copy.deepcopy(self.actor).to(acting_device)
        )
        self._acting_stale = False
        self._numpy = (
            numpy_acting(self.actor)
            # any CPU acting device (a separate copy on ``cpu:0`` included) acts alike
            if torch.device(self.acting_device).type == "cpu"
            else None
        )
        self.memory_size = self.actor.memory_size
        self.memories = AgentMemories(self.memory_size)

    @property
    def acting_actor(self) -> Actor:
        """The network decisions are made with: ``actor``, or its up-to-date copy on
        ``acting_device``."""
        if self._acting_copy is None:
            return self.actor
        if self._acting_stale:
            self._acting_copy.load_state_dict(self.actor.state_dict())
            self._acting_stale = False
        return self._acting_copy

    def weights_changed(self) -> None:
        """Say that ``actor``'s weights or statistics changed in place (an update): the acting
        copy, if any, follows before the next decision."""
        self._acting_stale = True
        if self._numpy is not None:
            self._numpy.mark_stale()

    def _numpy_actor(self, obs: list[np.ndarray]) -> NumpyActor | None:
        """The numpy copy of the actor where it acts faster for this batch, else None."""
        return None if self._numpy is None else self._numpy.for_rows(len(obs[0]))

    def _recall(self, agent_ids: np.ndarray | None) -> np.ndarray | None:
        """With memory, the memories of ``agent_ids`` (one per row); None without memory."""
        if not self.memory_size:
            return None
        if agent_ids is None:
            raise MemoryUseError(
                "this policy has memory (network_settings.memory): pass agent_ids=, one per row, "
                "so that each agent's memory is carried to its next decision"
            )
        return self.memories.recall(agent_ids)

    def _numpy_decision(
        self,
        fast: NumpyActor,
        obs: list[np.ndarray],
        action_mask: list[np.ndarray] | None,
        agent_ids: np.ndarray | None,
    ) -> tuple[NumpyDistribution, np.ndarray | None]:
        """``_decision`` through the numpy copy of the actor."""
        before = self._recall(agent_ids)
        dist, after = fast.decide(obs, action_mask, before)
        if after is not None:
            self.memories.store(agent_ids, after)  # type: ignore[arg-type]
        return dist, before

    def _distribution(
        self,
        obs: list[np.ndarray],
        action_mask: list[np.ndarray] | None,
        agent_ids: np.ndarray | None = None,
    ) -> ActionDistribution:
        return self._decision(obs, action_mask, agent_ids)[0]

    def _decision(
        self,
        obs: list[np.ndarray],
        action_mask: list[np.ndarray] | None,
        agent_ids: np.ndarray | None,
    ) -> tuple[ActionDistribution, np.ndarray | None]:
        """The action distribution of each row, and with memory the memories it started from
        (the agents' memories then move on to the ones after this decision)."""
        actor, device = self.acting_actor, self.acting_device
        obs_tensors = to_tensors(obs, device)
        mask = mask_tensor(action_mask, device)
        before = self._recall(agent_ids)
        if before is None:
            return actor(obs_tensors, mask), None
        heads = actor.head_outputs(obs_tensors, mask, torch.as_tensor(before, device=device))
        self.memories.store(agent_ids, heads["memory"].cpu().numpy())  # type: ignore[arg-type]
        return actor.distribution(heads), before

    def forget(self, agent_ids: np.ndarray | None = None) -> None:
        self.memories.forget(agent_ids)

    def sample(
        self,
        obs: list[np.ndarray],
        action_mask: list[np.ndarray] | None = None,
        agent_ids: np.ndarray | None = None,
    ) -> ActionOutput:
        """Draw actions for a batch of agents (``agent_ids``: needed with memory)."""
        fast = self._numpy_actor(obs)
        if fast is not None:
            dist, before = self._numpy_decision(fast, obs, action_mask, agent_ids)
            return dist.sampled_output(before)
        with torch.inference_mode():
            return sampled_output(*self._decision(obs, action_mask, agent_ids))

    def act(
        self,
        obs: list[np.ndarray],
        action_mask: list[np.ndarray] | None = None,
        deterministic: bool = False,
        agent_ids: np.ndarray | None = None,
    ) -> ActionTuple:
        """Actions for a batch of agents; with memory, ``agent_ids`` (one per row) says whose
        memory each row carries on, and ``forget`` must be called when an agent's episode ends."""
        if not deterministic:
            return self.sample(obs, action_mask, agent_ids).actions
        fast = self._numpy_actor(obs)
        if fast is not None:
            decided = self._numpy_decision(fast, obs, action_mask, agent_ids)[0]
            return decided.actions(*decided.most_likely())
        with torch.inference_mode():
            dist = self._distribution(obs, action_mask, agent_ids)
            return action_tuple(dist, *dist.most_likely())

    def action_probabilities(
        self,
        obs: list[np.ndarray],
        action_mask: list[np.ndarray] | None = None,
        agent_ids: np.ndarray | None = None,
    ) -> list[np.ndarray]:
        """Probabilities of every discrete action, one ``[n, branch_size]`` array per branch
        (with memory this is a decision: the agents' memories move on)."""
        fast = self._numpy_actor(obs)
        if fast is not None:
            decided = self._numpy_decision(fast, obs, action_mask, agent_ids)[0]
            return [np.exp(lp) for lp in decided.log_probs_by_branch]
        with torch.inference_mode():
            dist = self._distribution(obs, action_mask, agent_ids)
            return [lp.exp().cpu().numpy() for lp in dist.log_probs_by_branch]

    def get_weights(self) -> Weights:
        """A copy of the actor's weights on the CPU (snapshots and files hold them there)."""
        return {k: v.detach().to("cpu", copy=True) for k, v in self.actor.state_dict().items()}

    def load_weights(self, weights: Weights) -> None:
        self.actor.load_state_dict(weights)
        self.weights_changed()

    def update_normalizer(self, obs: list[np.ndarray]) -> None:
        self.actor.encoder.update_normalizer(to_tensors(obs, self.device))
        self.weights_changed()

    def save(self, path: Path, weights: Weights | None = None) -> None:
        write_policy_file(path, self, weights if weights is not None else self.get_weights())

    def clone_architecture(self) -> TorchPolicy:
        """A new policy with the same spec and settings (fresh weights)."""
        return TorchPolicy(
            behavior_spec=self.behavior_spec,
            network_settings=self.network_settings,
            squash=self.squash,
            conditional_std=self.conditional_std,
            device=self.device,
            acting_device=self.acting_device,
        )


def load_policy(path: str | Path, device: str = "cpu") -> TorchPolicy:
    """Load a saved policy (final ``<Behavior>.pt``, snapshot or checkpoint) ready to ``act``.

    The result has ``act(obs, action_mask=None, deterministic=False) -> ActionTuple`` for a batch
    of agents and ``action_probabilities(obs, action_mask=None)`` for discrete branches. A policy
    with memory (``memory_size`` > 0) takes ``agent_ids=`` (one per row) in both and carries each
    agent's memory to its next call; call ``forget(agent_ids)`` when those agents' episodes end.

    Raises:
        CheckpointError: the file is missing or is not a ghost-trainer policy file.
    """
    record = read_policy_record(path)
    policy = TorchPolicy(
        behavior_spec=record["behavior_spec"],
        network_settings=record["network_settings"],
        squash=record["squash"],
        conditional_std=record["conditional_std"],
        device=device,
    )
    load_policy_weights(
        policy,
        record["weights"],
        source=path,
        advice="its weights do not fit the network its own settings describe; the file is damaged",
    )
    policy.actor.eval()
    return policy
