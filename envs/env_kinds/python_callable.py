"""``module:callable``: any importable callable returning a ``BaseEnv`` (``--env my_envs:make_env``).

The current folder is on the import path; the callable is called with ``worker_id``/``seed`` when
its signature takes them, and may declare its game kind with a ``game_kind`` attribute
(``envs.game_kind``).
"""

from __future__ import annotations

import functools
import importlib
import inspect
import os
import re
import sys
from typing import Any

import attrs
from mlagents_envs.base_env import BaseEnv

from envs.env_kinds.registry import (
    Capabilities,
    EnvironmentKind,
    EnvPath,
    GameKind,
    registered_prefixes,
)
from envs.exceptions import EnvironmentSourceError, did_you_mean
from envs.game_kind import UNKNOWN, declared_kind
from envs.settings import EngineSettings, EnvironmentSettings

_SPEC = re.compile(r"(?P<module>[A-Za-z_][\w.]*):(?P<attribute>[A-Za-z_][\w.]*)")


def _accepts(function: Any, name: str) -> bool:
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):  # some builtins have no signature
        return False
    return any(
        p.kind is p.VAR_KEYWORD
        or (p.name == name and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))
        for p in parameters
    )


def call_env_function(make: Any, label: str, *, worker_id: int, seed: int) -> BaseEnv:
    """``make(worker_id=..., seed=...)``, passing only the arguments it accepts; checks the result.

    Raises:
        EnvironmentSourceError: ``make`` returned something other than a ``BaseEnv``.
    """
    kwargs: dict[str, int] = {}
    if _accepts(make, "worker_id"):
        kwargs["worker_id"] = worker_id
    if _accepts(make, "seed"):
        kwargs["seed"] = seed
    env = make(**kwargs)
    if not isinstance(env, BaseEnv):
        raise EnvironmentSourceError(
            f"{label} returned a {type(env).__name__}, not an mlagents_envs.base_env.BaseEnv; "
            "return an environment implementing that interface"
        )
    return env


@attrs.frozen(kw_only=True)
class CallableEnv:
    """``module:callable``, imported where it is called (so worker processes can use it too).

    Attributes:
        module: dotted module name.
        attribute: name in the module (dots reach into classes: ``Games.make``).
        search_path: folder put on ``sys.path`` before importing (the folder ``--env`` was
            given in), or None.
    """

    module: str
    attribute: str
    search_path: str | None = None

    @property
    def spec(self) -> str:
        return f"{self.module}:{self.attribute}"

    def load(self) -> Any:
        """Import the module and return the callable, or raise ``EnvironmentSourceError``."""
        if self.search_path and self.search_path not in sys.path:
            sys.path.insert(0, self.search_path)
        try:
            target: Any = importlib.import_module(self.module)
        except ModuleNotFoundError as error:
            if error.name == self.module or self.module.startswith(f"{error.name}."):
                raise EnvironmentSourceError(
                    f"--env/env_path {self.spec!r}: module {self.module!r} not found (searched the current "
                    f"folder {os.getcwd()} and the installed packages); check the spelling, or "
                    "run from the folder that holds it"
                ) from None
            raise EnvironmentSourceError(
                f"--env/env_path {self.spec!r}: importing {self.module!r} failed: {error}; "
                "install the missing package"
            ) from error
        for part in self.attribute.split("."):
            if not hasattr(target, part):
                names = [n for n in dir(target) if not n.startswith("_")]
                hint = did_you_mean(part, names)
                hint = f"; {hint}" if hint else ""
                raise EnvironmentSourceError(
                    f"--env/env_path {self.spec!r}: {self.module!r} has no attribute {part!r}{hint}"
                )
            target = getattr(target, part)
        if not callable(target):
            raise EnvironmentSourceError(
                f"--env/env_path {self.spec!r} is a {type(target).__name__}, not callable; name a function "
                "or class that returns an mlagents_envs BaseEnv"
            )
        return target

    def __call__(self, *, worker_id: int = 0, seed: int = 0) -> BaseEnv:
        return call_env_function(
            self.load(), f"--env/env_path {self.spec!r}", worker_id=worker_id, seed=seed
        )

    def describe(self) -> str:
        return f"{self.spec} (module:callable)"


def _callable_env(text: str, folder: str) -> CallableEnv:
    match = _SPEC.fullmatch(text)
    assert match is not None, text
    return CallableEnv(module=match["module"], attribute=match["attribute"], search_path=folder)


class PythonCallable(EnvironmentKind):
    """``module:callable`` (a registered prefix such as ``openspiel:`` is never one): an opaque
    BaseEnv."""

    name = "module:callable"
    capabilities = Capabilities(base_env=True)

    def recognises(self, text: str | None) -> bool:
        if not text or _SPEC.fullmatch(text) is None:
            return False
        return text.partition(":")[0] not in registered_prefixes()

    def form(self) -> str:
        return "module:callable (e.g. my_envs:make_env)"

    def factory(
        self,
        env: EnvPath,
        *,
        env_settings: EnvironmentSettings | None,
        engine_settings: EngineSettings | None,
    ) -> CallableEnv:
        source = _callable_env(env.target, os.getcwd())
        source.load()
        return source

    def game_kind(self, env: EnvPath) -> GameKind:
        return _declared_game_kind(env.target, os.getcwd())


@functools.lru_cache(maxsize=32)
def _declared_game_kind(text: str, folder: str) -> GameKind:
    """The kind a ``module:callable`` declares with its ``game_kind`` attribute, else unknown
    (imported, not called, from ``folder``, the current folder, as the environment itself will
    be). An ``UnknownGameKindError`` of a misdeclared kind passes through."""
    try:
        kind = declared_kind(_callable_env(text, folder).load())
    except EnvironmentSourceError:
        kind = None  # resolving the environment reports a bad path with its own message
    if kind is None:
        return GameKind(UNKNOWN, f"{text!r} is a Python environment that declares no game_kind")
    return GameKind(kind, f"{text!r} declares game_kind {kind!r}")
