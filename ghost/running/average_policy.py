"""The average policy of a run: the window of snapshots distilled into one network (NFSP-style).

Plain self-play exports its last iterate, which in games with mixed equilibria (poker, simultaneous
moves) is often a near-deterministic best response to its recent opponents and easy to exploit.
The average of the policies it went through is closer to an equilibrium. With
``self_play.average_policy.enabled`` the ghost keeps a sample of the learner's recent observations
(``ObservationSample``); at export the final ``<Behavior>.pt`` is a copy of the learner trained to
match, on those observations, the mean of the window's action distributions (every snapshot and
the final learner weighted alike): for discrete branches the mean probabilities (cross-entropy),
for continuous actions the Gaussian with the mixture's mean and variance (KL). ``AveragePolicy``
is the ghost trainer's collaborator: the self-play cycle shows it the learner's experience, the
trainer asks it for the exported policy.
"""

from __future__ import annotations

import logging

import numpy as np
import torch

from ghost.core.settings import AveragePolicySettings, SelfPlaySettings
from trainers.actor import ActionDistribution
from trainers.adam import Adam
from trainers.base import Policy, StepBatch, Weights
from trainers.magnet import kl_divergence
from trainers.policy import TorchPolicy, to_tensors

logger = logging.getLogger(__name__)


class ObservationSample:
    """A bounded sample of the observations (and action masks) the learner decided on.

    Each decision row is kept with probability ``keep``, in a ring of ``capacity`` rows, so the
    sample spans the last ``capacity / keep`` decisions (the caller sizes ``keep`` to the window's
    span of steps).
    """

    def __init__(self, capacity: int, *, keep: float, seed: int) -> None:
        self.capacity = capacity
        self.keep = min(max(keep, 1e-6), 1.0)
        self.rng = np.random.default_rng(seed)
        self.obs: list[np.ndarray] | None = None
        self.masks: np.ndarray | None = None
        self.size = 0
        self._next = 0

    def add(self, batch: StepBatch) -> None:
        decision = batch.steps.decision
        n = len(decision)
        if n == 0:
            return
        rows = np.flatnonzero(self.rng.random(n) < self.keep)
        if len(rows) == 0:
            return
        obs = [np.asarray(o)[rows] for o in decision.obs]
        branches = decision.action_mask or []
        # only the kept rows, one bool column per action of every branch (True = blocked)
        mask = np.concatenate([m[rows] for m in branches], axis=1) if branches else None
        if self.obs is None:
            self.obs = [np.zeros((self.capacity, *o.shape[1:]), np.float32) for o in obs]
            if mask is not None:
                self.masks = np.zeros((self.capacity, mask.shape[1]), bool)
        slots = (self._next + np.arange(len(rows))) % self.capacity
        for store, part in zip(self.obs, obs, strict=True):
            store[slots] = part
        if self.masks is not None and mask is not None:
            self.masks[slots] = mask
        self._next = int((self._next + len(rows)) % self.capacity)
        self.size = min(self.size + len(rows), self.capacity)

    def arrays(self) -> tuple[list[np.ndarray], np.ndarray | None]:
        assert self.obs is not None
        masks = None if self.masks is None else self.masks[: self.size]
        return [o[: self.size] for o in self.obs], masks


class AveragePolicy:
    """``self_play.average_policy``: samples the learner's observations while it trains and
    distils the window's average at export.

    Args:
        settings: ``self_play.average_policy``.
        sample: where the learner's observations are kept.
    """

    def __init__(self, settings: AveragePolicySettings, sample: ObservationSample) -> None:
        self.settings = settings
        self.sample = sample
        self._exported: Policy | None = None

    @classmethod
    def for_settings(cls, self_play: SelfPlaySettings, *, seed: int) -> AveragePolicy | None:
        """The average policy of a behavior's ``self_play`` section (None when it is off)."""
        average = self_play.average_policy
        if not average.enabled:
            return None
        # the sample spans about the window's steps
        keep = average.observations / (self_play.save_steps * self_play.window)
        return cls(average, ObservationSample(average.observations, keep=keep, seed=seed))

    def add(self, experience: StepBatch) -> None:
        """A step batch of the learner while it trains."""
        self.sample.add(experience)

    def export(self, learner: Policy, window: list[Weights], *, seed: int) -> Policy:
        """The mean of ``window`` and ``learner``'s current weights distilled into a copy of
        ``learner`` (computed once); ``learner`` itself when it is no ``TorchPolicy``."""
        if not isinstance(learner, TorchPolicy):
            return learner
        if self._exported is None:
            members = [*window, learner.get_weights()]
            self._exported = distill_average(
                learner, members, self.sample, self.settings, seed=seed
            )
        return self._exported


def _mixture_target(
    members: list[TorchPolicy], obs: list[torch.Tensor], mask: torch.Tensor | None
) -> ActionDistribution:
    """The members' mean action distribution: mean probabilities per branch, and the Gaussian
    with the mixture's mean and variance."""
    dists = [member.actor(obs, mask) for member in members]
    first = dists[0]
    mean = log_std = None
    if first.mean is not None:
        means = torch.stack([d.mean for d in dists])
        variances = torch.stack([(2 * d.log_std).exp().expand_as(d.mean) for d in dists])
        mean = means.mean(0)
        variance = (variances + means**2).mean(0) - mean**2
        log_std = 0.5 * torch.log(variance.clamp(min=1e-8))
    logits = []
    for branch in range(len(first.logits)):
        probabilities = torch.stack([d.log_probs_by_branch[branch].exp() for d in dists]).mean(0)
        # masked actions keep the members' masked logit, so they add nothing to the divergence
        logits.append(torch.where(probabilities > 0, probabilities.log(), first.logits[branch]))
    return ActionDistribution(mean=mean, log_std=log_std, logits=logits, squash=first.squash)


def distill_average(
    learner: TorchPolicy,
    members: list[Weights],
    sample: ObservationSample,
    settings: AveragePolicySettings,
    *,
    seed: int,
) -> TorchPolicy:
    """A copy of ``learner`` trained to act like the mean of ``members`` on ``sample``."""
    student = learner.clone_architecture()
    student.load_weights(learner.get_weights())
    if sample.size == 0 or not members:
        logger.warning("No observations to distil the average policy on; exporting the learner")
        return student
    teachers = []
    for weights in members:
        teacher = learner.clone_architecture()
        teacher.load_weights(weights)
        teachers.append(teacher)
    obs_arrays, mask_array = sample.arrays()
    obs = to_tensors(obs_arrays, learner.device)
    mask = None if mask_array is None else torch.as_tensor(mask_array, device=learner.device)
    rows = sample.size
    with torch.no_grad():
        target = _mixture_target(teachers, obs, mask)
    optimizer = Adam(student.actor.parameters(), lr=settings.learning_rate)
    generator = torch.Generator().manual_seed(seed)
    batch = min(settings.batch_size, rows)
    loss = torch.zeros(())
    for _ in range(settings.epochs):
        order = torch.randperm(rows, generator=generator)
        for start in range(0, rows - batch + 1, batch):
            chosen = order[start : start + batch]
            dist = student.actor([o[chosen] for o in obs], None if mask is None else mask[chosen])
            loss = kl_divergence(_rows(target, chosen), dist).mean()
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
    logger.info(
        "Average policy: %d policies distilled on %d observations (final KL %.4f)",
        len(members), rows, float(loss.detach()),
    )  # fmt: skip
    student.actor.eval()
    return student


def _rows(dist: ActionDistribution, rows: torch.Tensor) -> ActionDistribution:
    return ActionDistribution(
        mean=None if dist.mean is None else dist.mean[rows],
        log_std=None if dist.log_std is None else dist.log_std[rows],
        logits=[branch[rows] for branch in dist.logits],
        squash=dist.squash,
    )
