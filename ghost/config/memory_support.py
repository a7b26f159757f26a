"""What a network with memory (``network_settings.memory``) cannot train with yet, and the one
message that refuses it: the behavior, the key, its value, where the value came from and the fix.

The configuration loader refuses what a file wrote (``ghost.config.structuring``); the start
checks refuse the same in the settings a behavior trains with once the environment is known
(self-play turned on by default, a ``self_play`` section shared by a behavior that has none), so
``ghost-learn --check`` and training say the same thing.
"""

from __future__ import annotations

from typing import Any

import attrs

from ghost.config.settings import BehaviorSettings

#: the trainer types that train networks with ``network_settings.memory``
MEMORY_TRAINER_TYPES = ("ppo", "sac", "poca")


@attrs.frozen
class MemoryConflict:
    """A key whose value a network with memory cannot train with, and how to change it."""

    key: str
    value: Any
    fix: str


def memory_conflict(settings: BehaviorSettings) -> MemoryConflict | None:
    """The first key of ``settings`` that its network's memory refuses, or None (also without
    memory)."""
    if settings.network_settings.memory is None:
        return None
    if settings.trainer_type not in MEMORY_TRAINER_TYPES:
        return MemoryConflict(
            "trainer_type",
            settings.trainer_type,
            f"train it with {', '.join(MEMORY_TRAINER_TYPES)}",
        )
    magnet = getattr(settings.hyperparameters, "magnet_strength", 0)
    if magnet > 0:
        return MemoryConflict(
            "hyperparameters.magnet_strength", magnet, "write hyperparameters.magnet_strength: 0"
        )
    self_play = settings.self_play
    if self_play is not None and self_play.average_policy.enabled:
        return MemoryConflict(
            "self_play.average_policy.enabled", True, "remove self_play.average_policy"
        )
    if self_play is not None and self_play.learn_from_latest:
        return MemoryConflict(
            "self_play.learn_from_latest", True, "write self_play.learn_from_latest: false"
        )
    return None


def memory_refusal(conflict: MemoryConflict, origin: str) -> str:
    """``<key> = <value> (<origin>) is not supported with a network with memory yet; <fix>, or
    remove the memory section``: the text after ``behaviors.<name>.network_settings.memory: ``."""
    return (
        f"{conflict.key} = {conflict.value!r} ({origin}) is not supported with a network with "
        f"memory yet; {conflict.fix}, or remove the memory section"
    )
