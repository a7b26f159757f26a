"""Saved weights against the network this configuration builds, told in one line.

A checkpoint or policy file holds tensors by parameter name. When ``network_settings`` or the
environment's observations and actions changed since the file was written, torch's
``load_state_dict`` answers with a many-line ``RuntimeError``. Here the comparison is made before
loading: ``describe_mismatch`` names the first few keys that differ with both shapes, and
``require_fit`` / ``load_policy_weights`` raise a ``NetworkMismatchError`` naming the file and the
fix instead.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from trainers.base import Policy
from trainers.exceptions import NetworkMismatchError

#: differing keys a message names before it only counts the rest
SHOWN_KEYS = 3


def tensor_shapes(state: Mapping[Any, Any], prefix: str = "") -> dict[str, tuple[int, ...]]:
    """The shape of every tensor (or array) in a nested state dict, by dotted key; other values
    (steps, settings, RNG states) are left out."""
    shapes: dict[str, tuple[int, ...]] = {}
    for key, value in state.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            shapes.update(tensor_shapes(value, prefix=f"{name}."))
        elif isinstance(value, torch.Tensor | np.ndarray):
            shapes[name] = tuple(value.shape)
    return shapes


def describe_mismatch(
    found: Mapping[Any, Any], expected: Mapping[Any, Any], *, shown: int = SHOWN_KEYS
) -> str | None:
    """Where the tensors of ``found`` (read from a file) do not fit those of ``expected`` (the
    network built now), or None when every key is in both with the same shape.

    Args:
        found: the saved state dict (nested dicts of tensors).
        expected: the state dict of the network it should load into.
        shown: how many differing keys are named; the rest are counted.
    """
    in_file, in_config = tensor_shapes(found), tensor_shapes(expected)
    differences = []
    for key, shape in in_config.items():  # the network's own order: first layers first
        if key not in in_file:
            differences.append(f"{key} {_dims(shape)} is in this config but not in the file")
        elif in_file[key] != shape:
            differences.append(
                f"{key} is {_dims(in_file[key])} in the file and {_dims(shape)} in this config"
            )
    differences += [
        f"{key} {_dims(shape)} is in the file but not in this config"
        for key, shape in in_file.items()
        if key not in in_config
    ]
    if not differences:
        return None
    text = ", ".join(differences[:shown])
    rest = len(differences) - shown
    if rest > 0:
        text += f" (and {rest} more key{'s' if rest > 1 else ''})"
    return text


def require_fit(
    found: Mapping[Any, Any],
    expected: Mapping[Any, Any],
    *,
    source: str | os.PathLike[str],
    advice: str,
) -> None:
    """Raise ``NetworkMismatchError`` unless ``found`` fits ``expected`` (see
    ``describe_mismatch``).

    Args:
        found: the state dict read from ``source``.
        expected: the state dict of the network it should load into.
        source: the file it was read from, named in the message.
        advice: what to do instead, the end of the message.
    """
    description = describe_mismatch(found, expected)
    if description is not None:
        raise NetworkMismatchError(
            f"{os.fspath(source)} was trained with a different network: {description}; {advice}"
        )


def load_policy_weights(
    policy: Policy, weights: Mapping[str, Any], *, source: str | os.PathLike[str], advice: str
) -> None:
    """``policy.load_weights(weights)`` once they are known to fit its network.

    Raises:
        NetworkMismatchError: naming ``source``, the keys that differ and ``advice``.
    """
    # a policy's weights are its actor's: the prefix makes the keys read as they do in a checkpoint
    require_fit({"actor": weights}, {"actor": policy.get_weights()}, source=source, advice=advice)
    policy.load_weights(dict(weights))


def _dims(shape: tuple[int, ...]) -> str:
    return f"[{', '.join(str(size) for size in shape)}]"
