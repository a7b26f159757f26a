"""Policies saved by Stable-Baselines3, rebuilt without unpickling, as players of our games.

SB3's ``model.zip`` holds ``data``, a JSON file in which every Python object (the policy class,
the spaces, the schedules) is cloudpickled, and ``policy.pth``, the policy's ``state_dict``.
``PPO.load`` unpickles those objects, which can run code. Here nothing is unpickled:

- the policy class comes from its pickle's opcodes (``pickletools``, which only parses): a
  pickle that is one reference to a class and nothing else; only SB3 policy classes of
  ``stable_baselines3`` and ``sb3_contrib`` are accepted, imported as any module is;
- the spaces come from the plain fields SB3 writes beside each pickle (``_shape``, ``dtype``,
  the bounds, ``n``, ``nvec``);
- ``policy_kwargs`` are taken when SB3 wrote them as JSON (``net_arch``...); a class among them
  (``activation_fn``) is named by SB3 as ``"<class 'torch.nn...ReLU'>"`` and imported by that
  name from ``torch.nn``, ``stable_baselines3`` or ``sb3_contrib``; anything else is refused;
- the weights come through torch's weights-only loader: ``policy.pth`` for the model, and for a
  snapshot of the ``model.self_play`` folder beside it its file (the same policy's
  ``state_dict``).

``SB3PolicyPlayer`` acts with the rebuilt policy through SB3's ``predict``, on our observations
(every observation flattened and joined, as ``GhostVecEnv`` shows them to SB3) and masks.
"""

from __future__ import annotations

import base64
import binascii
import importlib
import inspect
import io
import re
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from mlagents_envs.base_env import ActionTuple

from ghost.exceptions import CheckpointError
from ghost.play.run_layouts import SB3_SUFFIX, sb3_model_data
from trainers.run_files.safe_load import load_pt

#: packages whose classes a model's data may name (imported by name, never unpickled)
_POLICY_PACKAGES = ("stable_baselines3.", "sb3_contrib.")
_KWARG_PACKAGES = ("torch.nn.", *_POLICY_PACKAGES)
_CLASS_TEXT = re.compile(r"<class '([\w.]+)\.(\w+)'>")
#: ``policy_kwargs`` that only the optimizer reads: nothing a player needs
_OPTIMIZER_KWARGS = {"optimizer_class", "optimizer_kwargs"}


def _sb3_installed() -> None:
    try:
        import stable_baselines3  # noqa: F401
    except ImportError as error:
        raise CheckpointError(
            f"playing a Stable-Baselines3 policy needs Stable-Baselines3 ({error}): "
            "pip install 'ghost-trainer[sb3]'"
        ) from None


def _class_reference(serialized: str, *, what: str) -> tuple[str, str]:
    """``(module, name)`` of a pickle that is one reference to a class and nothing else."""
    import pickletools

    try:
        operations = list(pickletools.genops(base64.b64decode(serialized)))
    except (ValueError, binascii.Error) as error:
        raise CheckpointError(f"{what}: not a pickle SB3 writes ({error})") from None
    strings = [arg for op, arg, _ in operations if op.name.endswith("UNICODE")]
    others = [
        op.name
        for op, _, _ in operations
        if op.name not in ("PROTO", "FRAME", "MEMOIZE", "STOP") and not op.name.endswith("UNICODE")
    ]
    if others == ["STACK_GLOBAL"] and len(strings) == 2:
        return str(strings[0]), str(strings[1])
    globals_ = [arg for op, arg, _ in operations if op.name == "GLOBAL"]
    if others == ["GLOBAL"] and not strings:
        module, _, name = str(globals_[0]).partition(" ")
        return module, name
    raise CheckpointError(
        f"{what} is stored as a pickle that holds more than a class name; ghost-eval does not "
        "unpickle it (it could run code)"
    )


def _import_class(module: str, name: str, *, packages: tuple[str, ...], what: str) -> type:
    """The class ``module.name``, imported by name from one of ``packages``."""
    if not module.startswith(packages):
        raise CheckpointError(
            f"{what} names {module}.{name}; ghost-eval imports classes of "
            f"{', '.join(p.rstrip('.') for p in packages)} only"
        )
    try:
        found = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as error:
        raise CheckpointError(
            f"{what} names {module}.{name}, which is not there ({error})"
        ) from None
    if not isinstance(found, type):
        raise CheckpointError(f"{what} names {module}.{name}, which is not a class")
    return found


def _policy_class(data: Mapping[str, Any], model: Path) -> type:
    from stable_baselines3.common.policies import BasePolicy

    entry = data.get("policy_class")
    what = f"{model}'s policy_class"
    if not isinstance(entry, Mapping) or ":serialized:" not in entry:
        raise CheckpointError(f"{model} names no policy_class; is it a model saved by SB3?")
    module, name = _class_reference(entry[":serialized:"], what=what)
    found = _import_class(module, name, packages=_POLICY_PACKAGES, what=what)
    if not issubclass(found, BasePolicy):
        raise CheckpointError(f"{what} names {module}.{name}, which is not an SB3 policy")
    return found


def _numbers(text: Any, *, what: str) -> np.ndarray:
    """An array SB3 wrote as numpy's text (``"[-1. -1.]"``, ``"[3 3]"``) or as a number."""
    if isinstance(text, int | float):
        return np.asarray([text], dtype=np.float64)
    cleaned = str(text).replace("[", " ").replace("]", " ")
    if "..." in cleaned:
        raise CheckpointError(f"{what}: SB3 wrote it shortened ({text!r}); it cannot be read back")
    try:
        return np.array(cleaned.split(), dtype=np.float64)
    except ValueError:
        raise CheckpointError(f"{what}: cannot read {text!r} as numbers") from None


def _space(entry: Any, *, what: str) -> Any:
    """A Gymnasium space from the plain fields SB3 wrote beside its pickle."""
    from gymnasium import spaces

    kind = str(entry.get(":type:", "")) if isinstance(entry, Mapping) else ""
    if kind.endswith(".Box'>"):
        shape = tuple(int(n) for n in entry["_shape"])
        low = _numbers(entry.get("low_repr", entry.get("low")), what=f"{what} low")
        high = _numbers(entry.get("high_repr", entry.get("high")), what=f"{what} high")
        size = int(np.prod(shape))
        low = low if low.size in (1, size) else _numbers(entry.get("low"), what=f"{what} low")
        high = high if high.size in (1, size) else _numbers(entry.get("high"), what=f"{what} high")
        bounds = [b[0] if b.size == 1 else b.reshape(shape) for b in (low, high)]
        return spaces.Box(bounds[0], bounds[1], shape=shape, dtype=np.dtype(entry["dtype"]))
    if kind.endswith(".MultiDiscrete'>"):
        nvec = _numbers(entry["nvec"], what=f"{what} nvec").astype(np.int64)
        return spaces.MultiDiscrete(nvec)
    if kind.endswith(".Discrete'>"):
        start = int(_numbers(entry.get("start", 0), what=f"{what} start")[0])
        return spaces.Discrete(int(_numbers(entry["n"], what=f"{what} n")[0]), start=start)
    raise CheckpointError(
        f"{what} is a {kind or 'space of no known kind'}; ghost-eval rebuilds Box, Discrete and "
        "MultiDiscrete spaces"
    )


def _policy_kwargs(data: Mapping[str, Any], model: Path) -> dict[str, Any]:
    """``policy_kwargs`` as SB3 wrote them: JSON values, and classes named as text."""
    entry = data.get("policy_kwargs") or {}
    if not isinstance(entry, Mapping):
        raise CheckpointError(f"{model}: policy_kwargs are not a mapping ({entry!r})")
    kwargs: dict[str, Any] = {}
    for key, value in entry.items():
        if key.startswith(":") or key in _OPTIMIZER_KWARGS:
            continue
        named = _CLASS_TEXT.fullmatch(value) if isinstance(value, str) else None
        if named is not None:
            what = f"{model}'s policy_kwargs {key}"
            kwargs[key] = _import_class(*named.groups(), packages=_KWARG_PACKAGES, what=what)
        elif ":serialized:" in entry and isinstance(value, str) and value.startswith("<"):
            raise CheckpointError(
                f"{model}'s policy_kwargs {key} = {value} is a Python object SB3 pickled; "
                "ghost-eval does not unpickle it (it could run code)"
            )
        else:
            kwargs[key] = value
    return kwargs


def _weights_in_zip(model: Path) -> dict[str, Any]:
    import torch

    try:
        with zipfile.ZipFile(model) as archive:
            raw = archive.read("policy.pth")
        return torch.load(io.BytesIO(raw), map_location="cpu", weights_only=True)
    except (OSError, KeyError, zipfile.BadZipFile) as error:
        raise CheckpointError(f"{model} holds no policy.pth ({error})") from None
    except Exception as error:  # the weights-only unpickler refuses anything but tensors
        raise CheckpointError(f"{model}'s policy.pth was not loaded: {error}") from None


def build_sb3_policy(model: Path) -> Any:
    """A fresh policy of the class and spaces ``model`` (an SB3 ``model.zip``) was saved with,
    in evaluation mode, its weights not yet loaded."""
    _sb3_installed()
    data = sb3_model_data(model)
    policy_class = _policy_class(data, model)
    observation_space = _space(data.get("observation_space"), what=f"{model}'s observation_space")
    action_space = _space(data.get("action_space"), what=f"{model}'s action_space")
    kwargs = _policy_kwargs(data, model)
    if "use_sde" in inspect.signature(policy_class).parameters:
        kwargs.setdefault("use_sde", bool(data.get("use_sde", False)))
    try:
        policy = policy_class(observation_space, action_space, lambda _: 0.0, **kwargs)
    except (TypeError, ValueError) as error:
        raise CheckpointError(
            f"{model}: cannot rebuild its {policy_class.__name__} ({error})"
        ) from None
    policy.set_training_mode(False)
    return policy


def load_sb3_policy(path: Path) -> SB3PolicyPlayer:
    """The SB3 policy in ``path``: a ``model.zip``, or a snapshot of its ``model.self_play``
    folder (the model beside it gives the class and spaces).

    Raises:
        CheckpointError: not SB3's, a class or keyword SB3 pickled beyond a class name, or weights
            that do not fit the model's policy.
    """
    if path.suffix == ".zip":
        model, weights = path, _weights_in_zip(path)
    else:
        folder = path.parent
        model = folder.with_name(folder.name[: -len(SB3_SUFFIX)] + ".zip")
        weights = load_pt(path)
    policy = build_sb3_policy(model)
    try:
        policy.load_state_dict(weights)
    except (RuntimeError, TypeError, AttributeError) as error:
        raise CheckpointError(
            f"{path} does not fit the policy {model.name} describes: {str(error).strip()}"
        ) from None
    return SB3PolicyPlayer(policy, name=str(path))


class SB3PolicyPlayer:
    """An SB3 policy playing our games: ``act`` on our observations and masks (True: blocked).

    Args:
        policy: an SB3 policy (``model.policy``).
        name: the player's label.
    """

    def __init__(self, policy: Any, *, name: str = "sb3") -> None:
        self.policy = policy
        self.name = name
        self._takes_masks = "action_masks" in inspect.signature(policy.predict).parameters
        self._width = int(np.prod(policy.observation_space.shape))

    def act(
        self,
        obs: list[np.ndarray],
        action_mask: list[np.ndarray] | None = None,
        deterministic: bool = False,
    ) -> ActionTuple:
        rows = [np.asarray(o, dtype=np.float32).reshape(len(o), -1) for o in obs]
        flat = rows[0] if len(rows) == 1 else np.concatenate(rows, axis=1)
        if flat.shape[1] != self._width:
            raise CheckpointError(
                f"{self.name} observes {self._width} floats, this game gives {flat.shape[1]}: "
                "pass a policy trained on this game"
            )
        extra = {}
        if self._takes_masks and action_mask is not None:
            blocked = [np.asarray(m, dtype=bool).reshape(len(flat), -1) for m in action_mask]
            extra["action_masks"] = ~np.concatenate(blocked, axis=1)
        actions, _ = self.policy.predict(flat, deterministic=deterministic, **extra)
        actions = np.asarray(actions).reshape(len(flat), -1)
        from gymnasium import spaces

        if isinstance(self.policy.action_space, spaces.Box):
            return ActionTuple(continuous=actions.astype(np.float32))
        return ActionTuple(discrete=actions.astype(np.int32))
