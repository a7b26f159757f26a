"""``ConfigProblem``: a mistake found while structuring, and the wording of its message.

A hook raises ``ConfigProblem`` with the reason (and the value, when there is one); each enclosing
level prepends its key, so the ``ConfigError`` it becomes names the full key path
(``behaviors.Tennis.self_play.swap_step = 1: unknown key; did you mean 'swap_steps'? ...``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from envs.exceptions import did_you_mean
from ghost.exceptions import ConfigError

_NO_VALUE = object()


class ConfigProblem(Exception):
    """A mistake found while structuring; each enclosing level prepends its key to ``path``."""

    def __init__(
        self,
        reason: str,
        *,
        value: Any = _NO_VALUE,
        kind: type[ConfigError] = ConfigError,
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.value = value
        self.kind = kind
        self.path: tuple[str, ...] = ()

    def below(self, key: Any) -> ConfigProblem:
        self.path = (f"[{key}]" if isinstance(key, int) else str(key), *self.path)
        return self

    def to_error(self, prefix: tuple[str, ...] = ()) -> ConfigError:
        where = ".".join((*prefix, *self.path)).replace(".[", "[") or "configuration"
        shown = "" if self.value is _NO_VALUE else f" = {_short(self.value)}"
        return self.kind(f"{where}{shown}: {self.reason}")


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def unknown_key(key: Any, value: Any, valid: Iterable[str]) -> ConfigProblem:
    """``key`` is not one of ``valid``: the closest valid key, if one is close, and all of them."""
    valid = list(valid)
    hint = did_you_mean(key, valid, cutoff=0.5)
    hint = f"{hint} " if hint else ""
    return ConfigProblem(
        f"unknown key; {hint}valid keys here: {', '.join(valid)}", value=value
    ).below(key)


def validator_reason(error: Exception, name: str, value: Any) -> str:
    """A validator's message without the key name and value the error line shows anyway."""
    text = str(error)
    for prefix in (f"{name} ", f"'{name}' "):
        if text.startswith(prefix):
            text = text[len(prefix) :]
    text = re.sub(r"\s*\(got .*\)$", "", text)
    suffix = f": {value!r}"
    return text[: -len(suffix)] if text.endswith(suffix) else text
