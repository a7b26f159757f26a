"""Writing a policy as the ``.onnx`` brain Unity's ML-Agents package runs.

The graph has the interface ML-Agents 1.x exports for the same behavior spec, which is what the
Unity package's inference reads (checked against a model ML-Agents itself exported, in
``tests/fixtures/mlagents_onnx_interface.json``):

- inputs ``obs_0`` … ``obs_{n-1}`` with the observation specs' shapes (images channels-first when
  the spec says so) and, with discrete actions, ``action_masks``: float ``[batch, sum(branches)]``,
  1 where an action is allowed (Unity's convention; ours inside Python is True = blocked);
- with memory, the input ``recurrent_in``: float ``[batch, 1, memory_size]``, each agent's memory
  (hidden state, then cell state);
- outputs ``version_number`` (3: the ML-Agents 2.0 model API), ``memory_size`` (0 without memory),
  then for continuous actions ``continuous_actions`` (sampled), ``continuous_action_output_shape``
  and ``deterministic_continuous_actions``, for discrete ones ``discrete_actions`` (sampled,
  int64), ``discrete_action_output_shape`` and ``deterministic_discrete_actions``, and with memory
  ``recurrent_out`` (``[batch, 1, memory_size]``: the memory to feed back at the next decision);
- a dynamic batch axis, ONNX opset 9.

Continuous actions come out as the environment takes them: ``clamp(a, -3, 3) / 3`` for PPO,
``tanh(a)`` for SAC, as ``TorchPolicy.act`` gives them.
"""

from __future__ import annotations

import contextlib
import copy
import importlib.util
import io
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
from torch import nn

from trainers.exceptions import UnsupportedFeatureError
from trainers.normalizer import RunningNormalizer
from trainers.policy import TorchPolicy
from trainers.run_files.atomic import atomic_write

OPSET = 9
MODEL_API_VERSION = 3  # ML-Agents' ModelApiVersion.MLAgents2_0


class UnityPolicyGraph(nn.Module):
    """A ``TorchPolicy``'s actor behind the input and output tensors Unity's ML-Agents reads."""

    def __init__(self, policy: TorchPolicy) -> None:
        super().__init__()
        # a copy: the graph moves to the CPU and to eval mode, the policy's network stays as it is
        self.actor = copy.deepcopy(policy.acting_actor)
        spec = policy.behavior_spec
        self.observation_count = len(spec.observation_specs)
        self.continuous_size = spec.action_spec.continuous_size
        self.branches = tuple(spec.action_spec.discrete_branches)
        self.register_buffer("version_number", torch.tensor([float(MODEL_API_VERSION)]))
        self.recurrent = policy.memory_size > 0
        self.register_buffer("memory_size", torch.tensor([float(policy.memory_size)]))
        self.register_buffer("continuous_shape", torch.tensor([float(self.continuous_size)]))
        self.register_buffer("discrete_shape", torch.tensor([[float(b) for b in self.branches]]))

    def input_names(self) -> list[str]:
        names = [f"obs_{i}" for i in range(self.observation_count)]
        return (
            names
            + (["action_masks"] if self.branches else [])
            + (["recurrent_in"] if self.recurrent else [])
        )

    def output_names(self) -> list[str]:
        names = ["version_number", "memory_size"]
        if self.continuous_size:
            names += ["continuous_actions", "continuous_action_output_shape",
                      "deterministic_continuous_actions"]  # fmt: skip
        if self.branches:
            names += ["discrete_actions", "discrete_action_output_shape",
                      "deterministic_discrete_actions"]  # fmt: skip
        return names + (["recurrent_out"] if self.recurrent else [])

    def forward(self, *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        obs = list(inputs[: self.observation_count])
        blocked = inputs[self.observation_count] < 0.5 if self.branches else None
        memory = inputs[-1][:, 0, :] if self.recurrent else None
        heads = self.actor.head_outputs(obs, blocked, memory)
        dist = self.actor.distribution(heads)
        sampled_continuous, sampled_discrete = dist.sample()
        greedy_continuous, greedy_discrete = dist.most_likely()
        outputs: list[Any] = [self.version_number, self.memory_size]
        if self.continuous_size:
            assert sampled_continuous is not None and greedy_continuous is not None
            outputs += [dist.env_continuous(sampled_continuous), self.continuous_shape,
                        dist.env_continuous(greedy_continuous)]  # fmt: skip
        if self.branches:
            outputs += [sampled_discrete, self.discrete_shape, greedy_discrete]
        if self.recurrent:
            outputs.append(heads["memory"].unsqueeze(1))
        return tuple(outputs)


@contextlib.contextmanager
def _frozen_normalizers(module: nn.Module) -> Iterator[None]:
    """Observation normalizers as constants: their float64 running statistics would otherwise
    be exported as float64 operations, which ONNX runtimes (and Unity's) do not run."""
    normalizers = [m for m in module.modules() if isinstance(m, RunningNormalizer)]
    saved = [(n.cache, n._cache) for n in normalizers]
    for normalizer in normalizers:
        normalizer.cache, normalizer._cache = True, normalizer.statistics()
    try:
        yield
    finally:
        for normalizer, (cache, cached) in zip(normalizers, saved, strict=True):
            normalizer.cache, normalizer._cache = cache, cached


def onnx_available() -> bool:
    """Whether the ``onnx`` package, which torch's exporter needs, is installed (the onnx extra)."""
    return importlib.util.find_spec("onnx") is not None


def export_onnx(policy: TorchPolicy, path: str | Path) -> Path:
    """Write ``policy`` to ``path`` (atomically) as a Unity ML-Agents ``.onnx`` brain.

    Raises:
        UnsupportedFeatureError: the ``onnx`` package is not installed.
    """
    if not onnx_available():
        raise UnsupportedFeatureError(
            "writing .onnx files needs the onnx package: pip install 'ghost-trainer[onnx]' (or, in "
            'a checkout, pip install -e ".[onnx]")'
        )
    graph = UnityPolicyGraph(policy).to("cpu").eval()
    spec = policy.behavior_spec
    dummy = [torch.zeros(1, *o.shape) for o in spec.observation_specs]
    if graph.branches:
        dummy.append(torch.ones(1, sum(graph.branches)))
    if graph.recurrent:
        dummy.append(torch.zeros(1, 1, policy.memory_size))
    batch = {name: {0: "batch"} for name in graph.input_names()}
    for name in ("continuous_actions", "discrete_actions", "recurrent_out"):
        if name in graph.output_names():
            batch[name] = {0: "batch"}
    buffer = io.BytesIO()
    with torch.no_grad(), _frozen_normalizers(graph), warnings.catch_warnings():
        # the legacy exporter on purpose: Unity's runtimes read opset 9, which the newer
        # torch.export-based exporter does not write
        warnings.simplefilter("ignore", DeprecationWarning)
        # about LSTMs whose initial state is not an input; ours is (recurrent_in)
        warnings.filterwarnings("ignore", "Exporting a model to ONNX with a batch_size other")
        warnings.simplefilter("ignore", torch.jit.TracerWarning)  # an LSTM's shape checks
        torch.onnx.export(
            graph, tuple(dummy), buffer, opset_version=OPSET, input_names=graph.input_names(),
            output_names=graph.output_names(), dynamic_axes=batch, dynamo=False,
        )  # fmt: skip
    path = Path(path)
    atomic_write(path, lambda handle: handle.write(buffer.getbuffer()))
    return path
