"""``default_settings``: what every behavior inherits, laid under its section before structuring.

As in ML-Agents, a behavior's keys are laid over a copy of ``default_settings``, section by
section and key by key (``hyperparameters: {batch_size: 64}`` keeps the other default
hyperparameters). Two deliberate differences: a behavior with another ``trainer_type`` does not
inherit the defaults' ``hyperparameters``, and one with another sampling ``strategy`` inherits
only the sampling keys every strategy shares (the others belong to the other type or strategy).
Then a ``self_play.preset`` fills the keys the section leaves out (``ghost.config.presets``).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping
from typing import Any

from ghost.config.config_problem import ConfigProblem
from ghost.config.presets import UnknownPresetError, expand_preset
from ghost.core.sampling import COMMON_KEYS, DEFAULT_STRATEGY

logger = logging.getLogger(__name__)


def _deep_update(target: dict[str, Any], update: Mapping[str, Any]) -> None:
    for key, item in update.items():
        if isinstance(target.get(key), Mapping) and isinstance(item, Mapping):
            target[key] = dict(target[key])
            _deep_update(target[key], item)
        else:
            target[key] = copy.deepcopy(item)


def with_defaults(name: str, behavior: Any, defaults: Any) -> Any:
    """``behavior``'s raw section laid over ``default_settings``' raw section."""
    if behavior is not None and not isinstance(behavior, Mapping):
        return behavior  # structuring reports it
    behavior = behavior or {}
    defaults = defaults if isinstance(defaults, Mapping) else {}
    if "self_play" in behavior and behavior["self_play"] is None and not defaults.get("self_play"):
        logger.warning(
            "behaviors.%s.self_play is empty, which counts as no section: self-play stays off "
            "in a single-team environment and goes on with the defaults where teams oppose; "
            "write `self_play: {}` to turn it on with the defaults",
            name,
        )
    merged = copy.deepcopy(dict(defaults))
    if behavior.get("trainer_type", merged.get("trainer_type", "ppo")) != merged.get(
        "trainer_type", "ppo"
    ):
        merged.pop("hyperparameters", None)
    _keep_shared_sampling_keys(merged, behavior)
    _deep_update(merged, behavior)
    return merged


def _keep_shared_sampling_keys(merged: dict[str, Any], behavior: Mapping[str, Any]) -> None:
    """Where the behavior names another sampling strategy than ``default_settings``, the
    defaults' sampling keeps only the keys every strategy shares (the others are its strategy's)."""
    sections = merged.get("self_play"), behavior.get("self_play")
    if not all(isinstance(section, Mapping) for section in sections):
        return  # no section on one side, or a malformed one that structuring reports
    inherited, written = (section.get("sampling") for section in sections)  # type: ignore[union-attr]
    if not (isinstance(inherited, Mapping) and isinstance(written, Mapping)):
        return
    if written.get("strategy", inherited.get("strategy", DEFAULT_STRATEGY)) == inherited.get(
        "strategy", DEFAULT_STRATEGY
    ):
        return
    shared = {key: item for key, item in inherited.items() if key in COMMON_KEYS}
    merged["self_play"] = {**merged["self_play"], "sampling": shared}


def with_preset(name: str, behavior: Any) -> Any:
    """``behavior``'s raw section with its ``self_play.preset`` expanded."""
    if not isinstance(behavior, Mapping):
        return behavior  # structuring reports it
    try:
        return expand_preset(name, behavior)
    except UnknownPresetError as error:
        problem = ConfigProblem(str(error), value=behavior["self_play"]["preset"])
        raise problem.below("preset").below("self_play").below(name).below("behaviors") from None
