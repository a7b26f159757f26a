"""What changed between two run configurations, key by key (a resumed run logs it)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ghost.config.loader import options_to_dict
from ghost.config.settings import RunOptions

#: keys that say how a session starts, not how the run trains: they differ on every resume
SESSION_KEYS = frozenset(
    {"checkpoint_settings.resume", "checkpoint_settings.force", "checkpoint_settings.inference"}
)


def _flatten(value: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(value, Mapping) and value:
        for key, item in value.items():
            yield from _flatten(item, f"{prefix}.{key}" if prefix else str(key))
    else:
        yield prefix, value


def configuration_changes(before: RunOptions, after: RunOptions) -> list[tuple[str, Any, Any]]:
    """``(key, value before, value after)`` for every key whose value differs, in key order.

    Keys are dotted paths (``behaviors.Tennis.hyperparameters.learning_rate``); a key present on
    one side only has ``None`` on the other. ``SESSION_KEYS`` are left out.
    """
    old = dict(_flatten(options_to_dict(before)))
    new = dict(_flatten(options_to_dict(after)))
    changes = []
    for key in sorted(old.keys() | new.keys()):
        if key in SESSION_KEYS:
            continue
        if old.get(key) != new.get(key):
            changes.append((key, old.get(key), new.get(key)))
    return changes


def describe_changes(changes: list[tuple[str, Any, Any]]) -> list[str]:
    """One line per change: ``key: before -> after``."""
    return [f"{key}: {before!r} -> {after!r}" for key, before, after in changes]
