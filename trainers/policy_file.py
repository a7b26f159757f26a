"""Policy files: a self-describing torch file any run, evaluation or user script can load.

A policy file holds the behavior spec, the network settings and the actor weights. The final
``<run>/<Behavior>.pt``, every snapshot, and every checkpoint (under its ``policy`` key, or
``trainer.policy`` for a self-play behavior) use it, so ``load_policy`` reads all of them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import cattrs
import torch
from mlagents_envs.base_env import (
    ActionSpec,
    BehaviorSpec,
    DimensionProperty,
    ObservationSpec,
    ObservationType,
)

from trainers.base import Policy
from trainers.exceptions import CheckpointError
from trainers.run_files.atomic import atomic_save
from trainers.run_files.safe_load import load_pt
from trainers.settings import NetworkSettings
from trainers.state_mismatch import load_policy_weights

FORMAT = "ghost-trainer-policy"
VERSION = 1
_converter = cattrs.Converter()


def spec_to_dict(spec: BehaviorSpec) -> dict[str, Any]:
    return {
        "observations": [
            {
                "shape": list(o.shape),
                "dimension_property": [int(d.value) for d in o.dimension_property],
                "observation_type": int(o.observation_type.value),
                "name": o.name,
            }
            for o in spec.observation_specs
        ],
        "continuous_size": spec.action_spec.continuous_size,
        "discrete_branches": list(spec.action_spec.discrete_branches),
    }


def spec_from_dict(data: dict[str, Any]) -> BehaviorSpec:
    observations = [
        ObservationSpec(
            shape=tuple(o["shape"]),
            dimension_property=tuple(DimensionProperty(d) for d in o["dimension_property"]),
            observation_type=ObservationType(o["observation_type"]),
            name=o["name"],
        )
        for o in data["observations"]
    ]
    action = ActionSpec(data["continuous_size"], tuple(data["discrete_branches"]))
    return BehaviorSpec(observations, action)


def policy_record(policy: Any, weights: dict[str, torch.Tensor]) -> dict[str, Any]:
    """The dict stored for a ``TorchPolicy`` (alone in a policy file, or inside a checkpoint)."""
    return {
        "format": FORMAT,
        "version": VERSION,
        "behavior_spec": spec_to_dict(policy.behavior_spec),
        "network_settings": _converter.unstructure(policy.network_settings),
        "squash": policy.squash,
        "conditional_std": policy.conditional_std,
        "weights": weights,
    }


def write_policy_file(path: Path, policy: Any, weights: dict[str, torch.Tensor]) -> None:
    atomic_save(policy_record(policy, weights), path)


def _read_record(path: Path) -> dict[str, Any]:
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"policy file {path} does not exist")
    record = find_policy_record(load_pt(path))
    if record is None or not isinstance(record.get("weights"), dict):
        raise CheckpointError(f"{path} is not a ghost-trainer policy file, snapshot or checkpoint")
    return record


def find_policy_record(data: Any) -> dict[str, Any] | None:
    """The policy record in the contents of a policy file, or of a checkpoint: a trainer's state
    keeps it under ``policy``, and a wrapping trainer (the ghost) keeps the wrapped trainer's
    state under ``trainer``. None when there is none."""
    while isinstance(data, dict):
        if data.get("format") == FORMAT:
            return data
        data = data["policy"] if isinstance(data.get("policy"), dict) else data.get("trainer")
    return None


def network_settings_changes(saved: Any, current: NetworkSettings) -> str:
    """The network settings of a policy record (``record["network_settings"]``, as stored or
    structured) that differ from ``current``, with their saved values: ``"hidden_units: 128"``;
    empty when they are the same."""
    if isinstance(saved, NetworkSettings):
        saved = _converter.unstructure(saved)
    if not isinstance(saved, dict):
        return ""
    was, now = _flat(saved), _flat(_converter.unstructure(current))
    return ", ".join(f"{key}: {was[key]}" for key in was if key in now and was[key] != now[key])


def _flat(settings: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in settings.items():
        if isinstance(value, dict):
            flat.update(_flat(value, prefix=f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def read_policy_weights(path: Path) -> dict[str, torch.Tensor]:
    """Only the weights of a policy file, snapshot or checkpoint."""
    return _read_record(path)["weights"]


def initialize_policy(
    policy: Policy, path: Path, *, behavior_name: str, network_settings: NetworkSettings
) -> None:
    """Start ``policy`` from the weights of the policy file, snapshot or checkpoint at ``path``
    (``--initialize-from``, ``init_path``).

    Raises:
        CheckpointError: ``path`` cannot be read or holds no policy; ``NetworkMismatchError`` when
            its network is not the one ``network_settings`` build for ``behavior_name``.
    """
    record = _read_record(Path(path))
    changed = network_settings_changes(record.get("network_settings"), network_settings)
    advice = (
        f"give {behavior_name} the network_settings it was trained with ({changed})"
        if changed
        else f"it was trained for other observations or actions than {behavior_name} has"
    ) + ", or start without --initialize-from / init_path"
    load_policy_weights(policy, record["weights"], source=path, advice=advice)


def read_policy_record(path: str | Path) -> dict[str, Any]:
    """The policy record of a policy file, snapshot or checkpoint, with its settings structured:
    ``behavior_spec`` (a ``BehaviorSpec``), ``network_settings``, ``squash``,
    ``conditional_std`` and ``weights``."""
    record = dict(_read_record(Path(path)))
    record["behavior_spec"] = spec_from_dict(record["behavior_spec"])
    record["network_settings"] = _converter.structure(record["network_settings"], NetworkSettings)
    return record
