"""Trainer types: which ``trainer_type`` names exist and which classes serve them.

Trainer types come from the ``ghost.trainer_type`` entry-point group, the same plug-in shape as
ML-Agents' ``mlagents.trainer_type``: each entry point names a function returning
``({name: TrainerClass}, {name: HyperparamSettingsClass})``. The built-in ``ppo``, ``sac`` and
``poca`` arrive through this project's own entry point (``builtin_trainer_types`` below).

A plugin that fails to load is logged and skipped, so one broken package cannot stop every run.
The ``hyperparameters`` schemas of the built-in types are always known (they live in
``trainers.hyperparameters``), so a configuration can be read and checked even when a built-in
trainer cannot be imported; asking for that trainer's class then names the failure.

Plugins are loaded once, on first use; ``refresh()`` loads them again.
"""

from __future__ import annotations

import difflib
import functools
import logging
from importlib import metadata
from typing import Any

import attrs

from trainers.exceptions import TrainerTypeError
from trainers.hyperparameters import POCASettings, PPOSettings, SACSettings
from trainers.settings import HyperparamSettings

logger = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "ghost.trainer_type"


@attrs.frozen(kw_only=True)
class _Registry:
    trainers: dict[str, Any]
    hyperparameters: dict[str, type[HyperparamSettings]]
    #: plugin name -> "ExceptionType: message", for plugins that failed to load
    failures: dict[str, str]


def builtin_trainer_types() -> tuple[dict[str, Any], dict[str, type[HyperparamSettings]]]:
    """``({name: TrainerClass}, {name: HyperparamSettingsClass})`` for PPO, SAC and POCA: the
    target of this project's own ``ghost.trainer_type`` entry point."""
    # imported on use: reading a configuration must not need torch
    from trainers.poca import POCATrainer
    from trainers.ppo import PPOTrainer
    from trainers.sac import SACTrainer

    trainers = {"ppo": PPOTrainer, "sac": SACTrainer, "poca": POCATrainer}
    return trainers, _builtin_hyperparameters()


def _builtin_hyperparameters() -> dict[str, type[HyperparamSettings]]:
    return {"ppo": PPOSettings, "sac": SACSettings, "poca": POCASettings}


def _describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def _load_plugin(entry_point: metadata.EntryPoint) -> tuple[dict[str, Any], dict[str, Any]]:
    """Call one entry point and check the shape of what it returns."""
    result = entry_point.load()()
    if not (
        isinstance(result, tuple)
        and len(result) == 2
        and all(isinstance(part, dict) for part in result)
    ):
        raise TypeError(
            "expected ({name: TrainerClass}, {name: HyperparamSettingsClass}), "
            f"got {type(result).__name__}"
        )
    trainers, hyperparameters = result
    for name, cls in hyperparameters.items():
        if not (isinstance(cls, type) and attrs.has(cls) and issubclass(cls, HyperparamSettings)):
            raise TypeError(
                f"hyperparameters class for {name!r} must be an attrs subclass of "
                f"trainers.settings.HyperparamSettings, got {cls!r}"
            )
    return trainers, hyperparameters


@functools.cache
def _registry() -> _Registry:
    trainers: dict[str, Any] = {}
    hyperparameters: dict[str, type[HyperparamSettings]] = dict(_builtin_hyperparameters())
    failures: dict[str, str] = {}
    # The built-in plugin first, so an installed plugin may replace a built-in type on purpose.
    entry_points = sorted(
        metadata.entry_points(group=ENTRY_POINT_GROUP),
        key=lambda ep: (ep.name != "builtin", ep.name),
    )
    for entry_point in entry_points:
        try:
            plugin_trainers, plugin_hyperparameters = _load_plugin(entry_point)
        except Exception as error:  # a plugin may fail in any way; report it and go on
            failures[entry_point.name] = _describe(error)
            logger.warning(
                "trainer plugin %r (%s) failed to load and is skipped: %s",
                entry_point.name,
                entry_point.value,
                _describe(error),
            )
            continue
        for name in plugin_trainers.keys() & trainers.keys():
            logger.warning("trainer plugin %r replaces trainer type %r", entry_point.name, name)
        trainers.update(plugin_trainers)
        hyperparameters.update(plugin_hyperparameters)
    return _Registry(trainers=trainers, hyperparameters=hyperparameters, failures=failures)


def refresh() -> None:
    """Forget the loaded plugins; the next lookup loads the entry points again."""
    _registry.cache_clear()


def trainer_types() -> tuple[str, ...]:
    """The registered trainer type names, sorted (those a ``trainer_type`` key may name)."""
    registry = _registry()
    return tuple(sorted(registry.trainers.keys() | registry.hyperparameters.keys()))


def _unknown(name: str) -> TrainerTypeError:
    known = trainer_types()
    close = difflib.get_close_matches(name, known, n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    return TrainerTypeError(
        f"unknown trainer_type {name!r}.{hint} Registered types: {', '.join(known) or 'none'}; "
        f"more can be installed as plugins in the {ENTRY_POINT_GROUP!r} entry-point group"
    )


def hyperparameter_class(name: str) -> type[HyperparamSettings]:
    """The ``hyperparameters`` settings class of trainer type ``name``.

    Raises:
        TrainerTypeError: ``name`` is not registered.
    """
    registry = _registry()
    if name not in registry.hyperparameters:
        raise _unknown(name)
    return registry.hyperparameters[name]


def trainer_class(name: str) -> Any:
    """The trainer class (a ``trainers.base.Trainer`` subclass) of trainer type ``name``.

    Raises:
        TrainerTypeError: ``name`` is not registered, or its plugin failed to load (the message
            names the plugin and its error).
    """
    registry = _registry()
    if name in registry.trainers:
        return registry.trainers[name]
    if name in registry.hyperparameters:
        failed = "; ".join(f"{plugin}: {error}" for plugin, error in registry.failures.items())
        raise TrainerTypeError(
            f"trainer_type {name!r} is known but its trainer could not be loaded"
            + (f" (failed plugins: {failed})" if failed else " (no plugin provides it)")
            + "; reinstall ghost-trainer with `pip install -e .` or fix the failing plugin"
        )
    raise _unknown(name)
