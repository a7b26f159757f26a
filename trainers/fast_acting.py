"""Acting without torch's per-call cost: an ``Actor``'s decisions computed in numpy.

A small network's forward pass for a few dozen agents is a few microseconds of arithmetic, while
torch spends about half a millisecond per call dispatching its operators. ``NumpyActor`` holds a
float32 copy of an actor's weights and computes what ``TorchPolicy.sample``/``act`` compute —
normalizer, SiLU body, the LSTM step of an actor with memory (``trainers.memory``: each row's
memory in, hidden then cell state, and its memory after the step out), Gaussian and categorical
heads with ML-Agents' conventions — with the same random draws: the normal noise and the
exponential variates behind ``torch.multinomial`` come from torch's global generator, in the same
order and shapes, so a seed gives the same actions on either path (to float rounding).

``NumpyActing`` keeps that copy in step with the torch actor: it rebuilds it when told
(``mark_stale``) and whenever any parameter or buffer was changed in place (an optimizer step, a
``load_state_dict``, a normalizer update), which torch records in each tensor's version counter.

Actors with image observations act through torch (``numpy_supported``). Which path acts is chosen
per call by ``numpy_is_faster`` from measurements (docs/benchmarks.md, "Acting path"): numpy's BLAS
splitting a product over threads is what makes it slower than torch, so ``limit_blas_threads``
(``ghost-learn`` calls it) keeps numpy on one thread, and numpy then acts at every size. Set
``GHOST_TORCH_ACTING=1`` to always act through torch.
"""

from __future__ import annotations

import functools
import os

import numpy as np
import torch
from mlagents_envs.base_env import ActionTuple
from threadpoolctl import ThreadpoolController, threadpool_limits

from trainers.actor import LOG_SQRT_2PI, MASKED_LOGIT, Actor
from trainers.base import ActionOutput

#: environment variable that, set to a non-empty value other than ``0``, makes every policy
#: act through torch (to compare the two paths while debugging)
FORCE_TORCH_VARIABLE = "GHOST_TORCH_ACTING"

#: with its BLAS on one thread numpy acts at every size; on more, only while its widest matrix
#: product, ``rows × inputs × outputs`` of one layer (body or LSTM), stays below this: past it
#: OpenBLAS splits the product over threads and numpy falls from about 2.5 times faster than torch
#: to several times slower (docs/benchmarks.md, "Acting path")
NUMPY_WORK_LIMIT = 2**20


def torch_acting_forced() -> bool:
    """Whether ``GHOST_TORCH_ACTING`` asks for torch acting everywhere."""
    return os.environ.get(FORCE_TORCH_VARIABLE, "") not in ("", "0")


def numpy_supported(actor: Actor) -> bool:
    """Whether ``NumpyActor`` can act for ``actor``: vector observations only."""
    return not actor.encoder.visual_indices


def limit_blas_threads() -> None:
    """Let numpy's BLAS use one thread from now on, in the whole process (as torch runs in
    ``ghost-learn``): acting's small products gain nothing from more, and lose much where other
    work holds the cores (docs/benchmarks.md, "Acting path")."""
    threadpool_limits(limits=1, user_api="blas")


@functools.cache
def _blas_libraries() -> ThreadpoolController:
    # finding the loaded libraries takes milliseconds; asking one its thread count, less than one
    return ThreadpoolController().select(user_api="blas")


def blas_threads() -> int:
    """The most threads numpy's BLAS may use now (1 where threadpoolctl finds no BLAS)."""
    return max((lib.num_threads for lib in _blas_libraries().lib_controllers), default=1)


def numpy_is_faster(*, rows: int, widest: int) -> bool:
    """The measured rule: numpy's forward pass beats torch's for ``rows`` agents through a network
    whose largest layer has ``widest`` weights (inputs × outputs)."""
    return rows * widest < NUMPY_WORK_LIMIT or blas_threads() == 1


def widest_layer(actor: Actor) -> int:
    """The number of weights (inputs × outputs) of ``actor``'s largest body or LSTM layer."""
    sizes = [m.weight.numel() for m in actor.body if isinstance(m, torch.nn.Linear)]
    if actor.memory is not None:
        weight_ih, weight_hh, _, _ = actor.memory.lstm.all_weights[0]
        sizes.append(weight_ih.numel() + weight_hh.numel())
    return max(sizes)


def _halved(weight: torch.Tensor, bias: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """A linear layer's ``[inputs, outputs]`` weight and bias, both halved: the layer then gives
    ``h = x / 2`` of its torch twin's output ``x``, exactly (halving is exact in floating point),
    which ``_silu_of_half`` takes."""
    return _array(weight).T.copy() * np.float32(0.5), _array(bias) * np.float32(0.5)


def _silu_of_half(half: np.ndarray) -> np.ndarray:
    """SiLU of ``x = 2 * half``, as ``half * (1 + tanh(half))``: the tanh form of
    ``x * sigmoid(x)``, which never overflows (unlike ``1 / (1 + exp(-x))``), in three numpy calls
    (at these sizes numpy's cost is per call) and to the bit what ``x * (0.5 * tanh(x / 2) + 0.5)``
    gives."""
    out = np.tanh(half)
    out += np.float32(1.0)
    out *= half
    return out


def _clip_(x: np.ndarray, bound: float) -> np.ndarray:
    """``x`` clipped to ``[-bound, bound]`` in place (``np.clip`` costs several times more)."""
    np.minimum(x, np.float32(bound), out=x)
    np.maximum(x, np.float32(-bound), out=x)
    return x


def _array(tensor: torch.Tensor) -> np.ndarray:
    return tensor.detach().to("cpu", torch.float32).numpy().copy()


def _log_softmax(logits: np.ndarray) -> np.ndarray:
    # the ufuncs' own reductions: ``ndarray.max``/``sum`` add a Python call each
    shifted = logits - np.maximum.reduce(logits, axis=1, keepdims=True)
    return shifted - np.log(np.add.reduce(np.exp(shifted), axis=1, keepdims=True))


def _lstm_weights(actor: Actor) -> tuple[np.ndarray, np.ndarray] | None:
    """The LSTM's weights as one ``[inputs + hidden, 4 hidden]`` matrix over ``[x, h]`` and one
    bias, torch's gate order (input, forget, cell, output); the input, forget and output gates'
    columns halved (exact in floating point), so that one ``tanh`` gives every gate's value."""
    if actor.memory is None:
        return None
    weight_ih, weight_hh, bias_ih, bias_hh = actor.memory.lstm.all_weights[0]
    weight = _array(torch.cat([weight_ih, weight_hh], dim=1)).T.copy()
    bias = _array(bias_ih) + _array(bias_hh)
    hidden = actor.memory.output_size
    for gate in (0, 1, 3):  # sigmoid(z) = 0.5 * tanh(z / 2) + 0.5
        weight[:, gate * hidden : (gate + 1) * hidden] *= np.float32(0.5)
        bias[gate * hidden : (gate + 1) * hidden] *= np.float32(0.5)
    return weight, bias


class NumpyActor:
    """A float32 numpy copy of an ``Actor`` (see ``numpy_supported``) that makes its decisions.

    Args:
        actor: the network to copy; later changes to it are not seen (``NumpyActing`` rebuilds).
    """

    def __init__(self, actor: Actor) -> None:
        encoder = actor.encoder
        self.vector_indices = list(encoder.vector_indices)
        self.normalizer: tuple[np.ndarray, np.ndarray] | None = None
        if encoder.normalizer is not None:
            mean, std = encoder.normalizer.statistics()
            self.normalizer = (_array(mean), _array(std))
        linears = [m for m in actor.body if isinstance(m, torch.nn.Linear)]
        self.layers = [_halved(m.weight, m.bias) for m in linears]
        self.memory_size = actor.memory_size
        self.lstm = _lstm_weights(actor)
        self.squash = actor.squash
        self.branches = actor.branches
        self.split_at = np.cumsum(self.branches)[:-1] if self.branches else np.zeros(0, int)
        self.mean_head = self.std_head = self.log_std = self.std = self.logits_head = None
        self.draws = TorchDraws()
        if actor.continuous_size:
            self.mean_head = (_array(actor.mean_head.weight).T.copy(), _array(actor.mean_head.bias))
            if actor.conditional_std:
                head = actor.log_std_head
                self.std_head = (_array(head.weight).T.copy(), _array(head.bias))
            else:
                self.log_std = _array(actor.log_std)
                self.std = np.exp(self.log_std)
        if self.branches:
            head = actor.logits_head
            self.logits_head = (_array(head.weight).T.copy(), _array(head.bias))

    def _hidden(self, obs: list[np.ndarray]) -> np.ndarray:
        if len(self.vector_indices) == 1:
            x = np.asarray(obs[self.vector_indices[0]], np.float32)
        else:
            x = np.concatenate([np.asarray(obs[i], np.float32) for i in self.vector_indices], 1)
        if self.normalizer is not None:
            mean, std = self.normalizer
            x = x - mean
            x /= std
            _clip_(x, 5.0)
        for weight, bias in self.layers:
            half = x @ weight
            half += bias
            x = _silu_of_half(half)
        return x

    def _remember(self, x: np.ndarray, memory: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """One LSTM step from each row's ``memory`` (hidden then cell; zeros when None): the
        output rows and the memories after the step."""
        weight, bias = self.lstm  # type: ignore[misc]
        half = self.memory_size // 2
        if memory is None:
            memory = np.zeros((len(x), self.memory_size), np.float32)
        gates = np.concatenate([x, memory[:, :half]], axis=1) @ weight
        gates += bias
        np.tanh(gates, out=gates)
        sigmoids = gates[:, : 2 * half], gates[:, 3 * half :]
        for part in sigmoids:
            part *= np.float32(0.5)
            part += np.float32(0.5)
        cell = gates[:, half : 2 * half] * memory[:, half:]
        cell += gates[:, :half] * gates[:, 2 * half : 3 * half]
        hidden = np.tanh(cell)
        hidden *= gates[:, 3 * half :]
        return hidden, np.concatenate([hidden, cell], axis=1)

    def decide(
        self,
        obs: list[np.ndarray],
        action_mask: list[np.ndarray] | None = None,
        memory: np.ndarray | None = None,
    ) -> tuple[NumpyDistribution, np.ndarray | None]:
        """The action distribution of each row of ``obs`` (ML-Agents' per-branch masks, True =
        unavailable), as ``Actor.forward`` gives it, and with memory each row's memory after this
        decision (``memory``: each row's memory before it, ``[rows, memory_size]``; zeros when
        None)."""
        x = self._hidden(obs)
        after = None
        if self.lstm is not None:
            x, after = self._remember(x, memory)
        mean = log_std = std = None
        if self.mean_head is not None:
            mean = x @ self.mean_head[0]
            mean += self.mean_head[1]
            if self.std_head is not None:
                log_std = np.clip(x @ self.std_head[0] + self.std_head[1], -20.0, 2.0)
            else:
                log_std, std = self.log_std, self.std
        logits: list[np.ndarray] = []
        if self.logits_head is not None:
            flat = x @ self.logits_head[0]
            flat += self.logits_head[1]
            if action_mask is not None and len(action_mask):
                mask = action_mask[0] if len(action_mask) == 1 else np.concatenate(action_mask, 1)
                flat = np.where(np.asarray(mask, bool), np.float32(MASKED_LOGIT), flat)
            logits = [flat] if len(self.branches) == 1 else np.split(flat, self.split_at, axis=1)
        dist = NumpyDistribution(
            mean=mean, log_std=log_std, std=std, logits=logits, squash=self.squash,
            draws=self.draws,
        )  # fmt: skip
        return dist, after


class TorchDraws:
    """Random draws from torch's global generator into float32 tensors kept for each shape: the
    numbers ``torch.randn(shape)`` and ``torch.empty(shape).exponential_()`` give, in one torch
    call instead of three. Each torch call costs tens of microseconds once a training loop's other
    work has pushed torch's code out of the CPU's caches. A returned array is overwritten by the
    next draw of its kind and shape, so callers use it at once."""

    #: the most shapes kept; past it the buffers are dropped (a run meets a few row counts)
    KEPT_SHAPES = 64

    def __init__(self) -> None:
        self._buffers: dict[tuple[str, tuple[int, ...]], tuple[torch.Tensor, np.ndarray]] = {}

    def _buffer(self, kind: str, shape: tuple[int, ...]) -> tuple[torch.Tensor, np.ndarray]:
        found = self._buffers.get((kind, shape))
        if found is None:
            if len(self._buffers) >= self.KEPT_SHAPES:
                self._buffers.clear()
            tensor = torch.empty(shape, dtype=torch.float32)
            found = self._buffers[(kind, shape)] = (tensor, tensor.numpy())
        return found

    def normal(self, shape: tuple[int, ...]) -> np.ndarray:
        """Standard normal variates, as ``torch.randn(shape)`` draws them."""
        tensor, array = self._buffer("normal", shape)
        tensor.normal_()
        return array

    def exponential(self, shape: tuple[int, ...]) -> np.ndarray:
        """Exp(1) variates, as ``torch.empty(shape).exponential_()`` draws them."""
        tensor, array = self._buffer("exponential", shape)
        tensor.exponential_()
        return array


class NumpyDistribution:
    """``ActionDistribution`` in numpy: the same draws, log-probabilities and env actions."""

    def __init__(
        self,
        *,
        mean: np.ndarray | None,
        log_std: np.ndarray | None,
        logits: list[np.ndarray],
        squash: bool,
        std: np.ndarray | None = None,
        draws: TorchDraws | None = None,
    ) -> None:
        self.mean = mean
        self.log_std = log_std
        self.std = np.exp(log_std) if std is None and log_std is not None else std
        self.squash = squash
        self.logits = logits
        self.log_probs_by_branch = [_log_softmax(branch) for branch in logits]
        self.draws = TorchDraws() if draws is None else draws

    def sample(self) -> tuple[np.ndarray | None, np.ndarray | None]:
        """Raw continuous actions and discrete choices, drawing from torch's generator exactly
        what ``ActionDistribution.sample`` draws: ``randn_like(mean)``, then per branch the
        exponential variates ``torch.multinomial`` draws for one sample (it picks
        ``argmax(p / q)``, ``q ~ Exp(1)``)."""
        continuous = None
        if self.mean is not None:
            continuous = self.draws.normal(self.mean.shape) * self.std
            continuous += self.mean
        discrete = None
        if self.logits:
            choices = []
            for log_probs in self.log_probs_by_branch:
                ratio = np.exp(log_probs)
                ratio /= self.draws.exponential(ratio.shape)
                choices.append(ratio.argmax(axis=1))
            discrete = choices[0][:, None] if len(choices) == 1 else np.stack(choices, axis=1)
        return continuous, discrete

    def most_likely(self) -> tuple[np.ndarray | None, np.ndarray | None]:
        discrete = None
        if self.logits:
            discrete = np.stack([branch.argmax(axis=1) for branch in self.logits], axis=1)
        return self.mean, discrete

    def log_prob_components(
        self, continuous: np.ndarray | None, discrete: np.ndarray | None
    ) -> np.ndarray:
        """Log-probability per component ``[n, continuous dims + discrete branches]``."""
        parts = []
        if self.mean is not None and continuous is not None:
            z = (continuous - self.mean) / self.std
            per_dim = -0.5 * z**2 - self.log_std - np.float32(LOG_SQRT_2PI)
            if self.squash:
                per_dim = per_dim - np.log(1.0 - np.tanh(continuous) ** 2 + np.float32(1e-6))
            parts.append(per_dim)
        if discrete is not None:
            rows = np.arange(discrete.shape[0])
            for branch, log_probs in enumerate(self.log_probs_by_branch):
                parts.append(log_probs[rows, discrete[:, branch]][:, None])
        joined = parts[0] if len(parts) == 1 else np.concatenate(parts, axis=1)
        return joined.astype(np.float32, copy=False)

    def env_continuous(self, raw: np.ndarray) -> np.ndarray:
        """The continuous action the environment receives, in [-1, 1]."""
        if self.squash:
            return np.tanh(raw)
        env = _clip_(raw.copy(), 3.0)
        env /= np.float32(3.0)
        return env

    def actions(self, continuous: np.ndarray | None, discrete: np.ndarray | None) -> ActionTuple:
        """Raw actions as the environment takes them."""
        return ActionTuple(
            continuous=None if continuous is None else self.env_continuous(continuous),
            discrete=None if discrete is None else discrete.astype(np.int32),
        )

    def sampled_output(self, memories: np.ndarray | None = None) -> ActionOutput:
        """One drawn action per row with its per-component log-probabilities, as
        ``trainers.policy.sampled_output`` gives them."""
        continuous, discrete = self.sample()
        log_probs = self.log_prob_components(continuous, discrete)
        raw = continuous if continuous is not None else np.zeros((len(log_probs), 0), np.float32)
        return ActionOutput(
            actions=self.actions(continuous, discrete),
            log_probs=log_probs,
            continuous_raw=raw,
            memories=memories,
        )


class NumpyActing:
    """The numpy copy of one torch actor, rebuilt whenever the actor's tensors change.

    Args:
        actor: the torch network whose weights and normalizer statistics the copy follows.
    """

    def __init__(self, actor: Actor) -> None:
        self.actor = actor
        self.widest = widest_layer(actor)
        self._tensors = [*actor.parameters(), *actor.buffers()]
        self._versions: tuple[int, ...] | None = None
        self._copy: NumpyActor | None = None

    def mark_stale(self) -> None:
        """Rebuild the copy before the next decision (weights changed in a way torch's version
        counters may not show, e.g. through ``.data``)."""
        self._versions = None

    def for_rows(self, rows: int) -> NumpyActor | None:
        """The up-to-date numpy copy, or None where torch acts faster for ``rows`` agents."""
        if not numpy_is_faster(rows=rows, widest=self.widest):
            return None
        versions = tuple(t._version for t in self._tensors)
        if versions != self._versions or self._copy is None:
            self._copy = NumpyActor(self.actor)
            self._versions = versions
        return self._copy


def numpy_acting(actor: Actor) -> NumpyActing | None:
    """A ``NumpyActing`` for ``actor``, or None where it must act through torch (images,
    ``GHOST_TORCH_ACTING``)."""
    if torch_acting_forced() or not numpy_supported(actor):
        return None
    return NumpyActing(actor)
