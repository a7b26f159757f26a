"""Unity ML-Agents 1.1 policies from their weights, acting as our evaluation's players.

ML-Agents writes ``<Behavior>-<step>.pt`` as ``{"Policy": actor.state_dict(), ...}``: its
``SimpleActor`` (``mlagents/trainers/torch_entities/networks.py``); our ``mlagents-learn``
plugin keeps each self-play snapshot as that actor's ``state_dict`` alone
(``<Behavior>/self_play/snapshot-<id>.pt``). ``MLAgentsActor`` recomputes the actor's forward
pass in numpy, so either plays through ``ghost.play.head_to_head`` like any policy with
``act(obs, action_mask, deterministic)``, without ML-Agents installed:

1. per vector observation, the running normalizer when ``normalize`` was on:
   ``clip((x - mean) / sqrt(variance_sum / steps), -5, 5)``; the observations concatenated;
2. ``num_layers`` linear layers, each followed by Swish (``x * sigmoid(x)``);
3. continuous actions: the Gaussian's mean ``mu`` (deterministic) or ``mu + exp(log_sigma) * N(0,
   1)``, then, as ML-Agents sends them to the environment, ``clip(a, -3, 3) / 3`` (``tanh``
   instead for a ``tanh_squash`` actor, SAC's, which ML-Agents does not clip);
4. discrete actions: one linear head of logits per branch, masked as ML-Agents masks them
   (``logits * allowed - 1e8 * blocked``); the argmax, or a draw from the softmax.

Recurrent actors (``memory``), visual encoders and a state-conditioned sigma are not
reimplemented: loading them raises ``ValueError``. ``scripts/mlagents_actor_reference.py``,
run in the ML-Agents venv, writes ML-Agents' own outputs for ``tests/test_learning_curves.py``
to compare. Files are read with the weights-only loader (``trainers.run_files.safe_load``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from mlagents_envs.base_env import ActionTuple

from trainers.exceptions import CheckpointError

_PROCESSOR = re.compile(r"network_body\.observation_encoder\.processors\.(\d+)\.(.+)")
_LAYER = re.compile(r"network_body\._body_endoder\.seq_layers\.(\d+)\.(weight|bias)")
_BRANCH = re.compile(r"action_model\._discrete_distribution\.branches\.(\d+)\.(weight|bias)")
_CONTINUOUS = "action_model._continuous_distribution."
_CLIP = 3.0


def _swish(x: np.ndarray) -> np.ndarray:
    return x / (1.0 + np.exp(-x))


class MLAgentsActor:
    """The actor of one ML-Agents checkpoint, as a policy of our evaluations.

    Args:
        state: the actor's state dict (``checkpoint["Policy"]``), tensors or arrays.
        name: a label for evaluation results.
        tanh_squash: the actor squashes with ``tanh`` (SAC's) instead of clipping (PPO's).
        seed: seeds the draws of non-deterministic actions.

    Raises:
        ValueError: a recurrent actor, or keys this reimplementation does not know.
    """

    def __init__(
        self,
        state: Mapping[str, Any],
        *,
        name: str = "ml-agents",
        tanh_squash: bool = False,
        seed: int | None = 0,
    ) -> None:
        arrays = {key: np.asarray(value, dtype=np.float32) for key, value in state.items()}
        self.name = name
        self.tanh_squash = tanh_squash
        self.rng = np.random.default_rng(seed)
        if float(arrays.get("memory_size_vector", np.zeros(1))[0]) > 0:
            raise ValueError(f"{name}: recurrent ML-Agents actors (memory) are not supported")
        self.normalizers: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        processors: dict[int, dict[str, np.ndarray]] = {}
        layers: dict[int, dict[str, np.ndarray]] = {}
        branches: dict[int, dict[str, np.ndarray]] = {}
        known = {
            "version_number", "is_continuous_int_deprecated", "continuous_act_size_vector",
            "discrete_act_size_vector", "act_size_vector_deprecated", "memory_size_vector",
        }  # fmt: skip
        for key, value in arrays.items():
            if match := _PROCESSOR.fullmatch(key):
                processors.setdefault(int(match[1]), {})[match[2]] = value
            elif match := _LAYER.fullmatch(key):
                layers.setdefault(int(match[1]), {})[match[2]] = value
            elif match := _BRANCH.fullmatch(key):
                branches.setdefault(int(match[1]), {})[match[2]] = value
            elif not (
                key in known
                or key.startswith("network_body.processors.")  # the same normalizers again
                or key.startswith(_CONTINUOUS)
            ):
                raise ValueError(f"{name}: unknown ML-Agents actor key {key!r}")
        for index, parts in processors.items():
            if not {"normalizer.running_mean", "normalizer.running_variance"} <= parts.keys():
                raise ValueError(f"{name}: observation {index} has an encoder other than a vector")
            steps = parts["normalizer.normalization_steps"]
            std = np.sqrt(parts["normalizer.running_variance"] / steps)
            self.normalizers[index] = (parts["normalizer.running_mean"], std)
        self.layers = [(layers[i]["weight"].T, layers[i]["bias"]) for i in sorted(layers)]
        self.mu: tuple[np.ndarray, np.ndarray] | None = None
        self.log_sigma: np.ndarray | None = None
        if f"{_CONTINUOUS}mu.weight" in arrays:
            if f"{_CONTINUOUS}log_sigma.weight" in arrays:
                raise ValueError(f"{name}: a state-conditioned sigma is not supported")
            self.mu = (arrays[f"{_CONTINUOUS}mu.weight"].T, arrays[f"{_CONTINUOUS}mu.bias"])
            self.log_sigma = arrays[f"{_CONTINUOUS}log_sigma"].reshape(-1)
        self.branches = [(branches[i]["weight"].T, branches[i]["bias"]) for i in sorted(branches)]

    @classmethod
    def from_checkpoint(cls, path: str | Path, **options: Any) -> MLAgentsActor:
        """The actor of ML-Agents' checkpoint ``path`` (``<Behavior>-<step>.pt``,
        ``checkpoint.pt``) or of a snapshot of the plugin (the actor's ``state_dict`` alone).

        Raises:
            ValueError: the file holds no ML-Agents actor.
        """
        from trainers.run_files.safe_load import load_pt

        data = load_pt(Path(path))
        state = data.get("Policy", data) if isinstance(data, dict) else None
        if not isinstance(state, dict) or not any(_LAYER.fullmatch(str(k)) for k in state):
            raise ValueError(f"{path} holds no ML-Agents actor (no network_body layers)")
        arrays = {key: value.numpy() for key, value in state.items()}
        return cls(arrays, **{"name": str(path), **options})

    def encode(self, obs: list[np.ndarray]) -> np.ndarray:
        """The network body's output for a batch of observations (one array per observation)."""
        parts = []
        for index, ob in enumerate(obs):
            x = np.asarray(ob, dtype=np.float32).reshape(len(ob), -1)
            if index in self.normalizers:
                mean, std = self.normalizers[index]
                x = np.clip((x - mean) / std, -5.0, 5.0)
            parts.append(x)
        hidden = np.concatenate(parts, axis=1)
        if self.layers and hidden.shape[1] != self.layers[0][0].shape[0]:
            raise CheckpointError(
                f"{self.name} observes {self.layers[0][0].shape[0]} floats, this game gives "
                f"{hidden.shape[1]}: pass a policy trained on this game"
            )
        for weight, bias in self.layers:
            hidden = _swish(hidden @ weight + bias)
        return hidden

    def act(
        self,
        obs: list[np.ndarray],
        action_mask: list[np.ndarray] | None = None,
        deterministic: bool = False,
    ) -> ActionTuple:
        """Actions as ML-Agents sends them to the environment (``action_mask``: True = blocked,
        as in ``DecisionSteps``)."""
        hidden = self.encode(obs)
        n = len(hidden)
        continuous = np.zeros((n, 0), dtype=np.float32)
        if self.mu is not None and self.log_sigma is not None:
            action = hidden @ self.mu[0] + self.mu[1]
            if not deterministic:
                action = action + np.exp(self.log_sigma) * self.rng.standard_normal(action.shape)
            if self.tanh_squash:
                continuous = np.tanh(action)
            else:
                continuous = np.clip(action, -_CLIP, _CLIP) / _CLIP
        discrete = np.zeros((n, len(self.branches)), dtype=np.int32)
        for index, (weight, bias) in enumerate(self.branches):
            logits = hidden @ weight + bias
            if action_mask is not None:
                allowed = 1.0 - np.asarray(action_mask[index], dtype=np.float32)
                logits = logits * allowed - 1e8 * (1.0 - allowed)
            if deterministic:
                discrete[:, index] = logits.argmax(axis=1)
            else:
                probs = np.exp(logits - logits.max(axis=1, keepdims=True))
                cumulative = np.cumsum(probs / probs.sum(axis=1, keepdims=True), axis=1)
                draws = self.rng.random((n, 1))
                discrete[:, index] = np.minimum((cumulative < draws).sum(axis=1), len(bias) - 1)
        return ActionTuple(continuous=continuous.astype(np.float32), discrete=discrete)
