"""attrs validators for value ranges, shared by every settings class of the project.

Each raises ``ValueError`` naming the field, the allowed range and the value; the config loader
turns that into an error naming the full key path.
"""

from __future__ import annotations

from typing import Any

import attrs


def positive(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    """``value > 0`` (``None`` allowed: the field is optional)."""
    if value is not None and value <= 0:
        raise ValueError(f"{attribute.name} must be > 0 (got {value!r})")


def non_negative(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    """``value >= 0`` (``None`` allowed)."""
    if value is not None and value < 0:
        raise ValueError(f"{attribute.name} must be >= 0 (got {value!r})")


def unit_interval(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    """``0 <= value <= 1``."""
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{attribute.name} must be in [0, 1] (got {value!r})")


def open_unit_interval(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    """``0 < value <= 1``."""
    if not 0.0 < value <= 1.0:
        raise ValueError(f"{attribute.name} must be in (0, 1] (got {value!r})")
