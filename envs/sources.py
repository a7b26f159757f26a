"""Where environments come from: ``--env`` / ``env_settings.env_path`` turned into a factory.

An **environment factory** is a picklable callable ``factory(*, worker_id, seed) -> BaseEnv``; the
steppers call it once per environment copy (in worker processes too). ``--env`` may name:

1. a built-in game (``envs.games.BUILTIN_GAMES``), e.g. ``--env tennis``;
2. ``module:callable``: any importable callable returning a ``BaseEnv`` (the current folder is on
   the import path), called with ``worker_id``/``seed`` when its signature takes them;
3. ``openspiel:<game string>`` (``envs.openspiel``) or ``pettingzoo:<module path>``
   (``envs.pettingzoo``): a game of those libraries, ``num_areas`` copies per environment
   (32 when ``num_areas`` is left at 1);
4. a Unity build (a file or folder path, with or without its ``.x86_64``/``.app``/``.exe``
   extension), started with ``mlagents_envs.environment.UnityEnvironment``.

They are tried in that order. ``resolve_env`` checks everything it can up front, so a wrong
``--env`` fails before any worker starts. A training run that names no environment at all trains
in the Unity Editor instead (``envs.unity_editor``, chosen by ``ghost.config.environment``).
"""

from __future__ import annotations

import importlib
import inspect
import logging
import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

import attrs
from mlagents_envs.base_env import BaseEnv

from envs.exceptions import EnvironmentSourceError, did_you_mean
from envs.settings import EngineSettings, EnvironmentSettings
from envs.unity_build import UNITY_SUFFIXES, UnityBuild, check_executable

logger = logging.getLogger(__name__)

_CALLABLE_SPEC = re.compile(r"(?P<module>[A-Za-z_][\w.]*):(?P<attribute>[A-Za-z_][\w.]*)")


class EnvFactory(Protocol):
    """Makes one environment copy: ``factory(worker_id=..., seed=...)``."""

    def __call__(self, *, worker_id: int, seed: int) -> BaseEnv: ...


def _builtin_games() -> Mapping[str, Any]:
    """``envs.games.BUILTIN_GAMES``, or nothing while that module is missing."""
    try:
        games = importlib.import_module("envs.games")
    except ModuleNotFoundError as error:
        if error.name == "envs.games":
            return {}
        raise
    return games.BUILTIN_GAMES


@attrs.frozen(kw_only=True)
class BuiltinGame:
    """A game shipped with ghost-trainer, made by ``envs.games.make_game``.

    Attributes:
        arenas: matches per environment (``--num-areas`` when above 1); None: the game's default.
    """

    name: str
    arenas: int | None = None

    def __call__(self, *, worker_id: int = 0, seed: int = 0) -> BaseEnv:
        from envs.games import make_game

        sized = {} if self.arenas is None else {"num_arenas": self.arenas}
        return make_game(self.name, worker_id=worker_id, seed=seed, **sized)

    def describe(self) -> str:
        arenas = "" if self.arenas is None else f", {self.arenas} arenas"
        return f"built-in game {self.name!r}{arenas}"


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
        return _call_env_function(
            self.load(), f"--env/env_path {self.spec!r}", worker_id=worker_id, seed=seed
        )

    def describe(self) -> str:
        return f"{self.spec} (module:callable)"


def _call_env_function(make: Any, label: str, *, worker_id: int, seed: int) -> BaseEnv:
    """``make(worker_id=..., seed=...)``, passing only the arguments it accepts; checks the result."""
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


@attrs.frozen
class EnvFunction:
    """Any Python callable returning a BaseEnv (called with ``worker_id``/``seed`` if it takes them).

    Worker processes receive it pickled: with ``num_envs`` > 1 it must be picklable (a
    module-level function or class, not a lambda).
    """

    make: Any

    def __call__(self, *, worker_id: int = 0, seed: int = 0) -> BaseEnv:
        label = getattr(self.make, "__qualname__", type(self.make).__name__)
        return _call_env_function(self.make, f"env {label!r}", worker_id=worker_id, seed=seed)

    def describe(self) -> str:
        return f"{getattr(self.make, '__qualname__', repr(self.make))} (Python callable)"


@attrs.frozen
class EnvInstance:
    """One already-built BaseEnv: a single in-process environment (``num_envs`` must be 1)."""

    env: BaseEnv

    def __call__(self, *, worker_id: int = 0, seed: int = 0) -> BaseEnv:
        return self.env

    def describe(self) -> str:
        return f"{type(self.env).__name__} instance"


#: ``--env`` prefixes of the game libraries we adapt
ECOSYSTEM_PREFIXES = ("openspiel", "pettingzoo")


def _ecosystem_source(prefix: str, target: str, env_settings: EnvironmentSettings | None) -> Any:
    """The factory of ``openspiel:<game>`` or ``pettingzoo:<module>``, checked up front."""
    areas = env_settings.num_areas if env_settings is not None else 1
    if prefix == "openspiel":
        from envs import openspiel

        copies = areas if areas > 1 else openspiel.DEFAULT_COPIES
        source = openspiel.OpenSpielSource(game=target, copies=copies)
        source.load()
        return source
    from envs import pettingzoo

    copies = areas if areas > 1 else pettingzoo.DEFAULT_COPIES
    return pettingzoo.from_module(target, copies=copies)


def with_shuffled_seats(factory: Any) -> Any:
    """``factory`` (an OpenSpiel or PettingZoo game) dealing its seats to the teams at random
    every game (``SeatedGame.shuffle_seats``).

    Raises:
        EnvironmentSourceError: a factory whose games have no seats to deal.
    """
    if attrs.has(type(factory)) and "shuffle_seats" in attrs.fields_dict(type(factory)):
        return attrs.evolve(factory, shuffle_seats=True)
    raise EnvironmentSourceError(
        "self_play.seats: shuffled deals the seats of turn-based games (openspiel:<game>, "
        f"pettingzoo:<module>); {_described(factory)} has none to deal: use seats: fixed"
    )


def _described(factory: Any) -> str:
    describe = getattr(factory, "describe", None)
    return describe() if callable(describe) else type(factory).__name__


def _unity_candidates(path: str) -> list[Path]:
    return [Path(path), *(Path(path + suffix) for suffix in UNITY_SUFFIXES)]


def _unity_build(
    path: str, env_settings: EnvironmentSettings | None, engine_settings: EngineSettings | None
) -> UnityBuild:
    """The factory of the Unity build at ``path``, launched as the settings (or defaults) say.

    Raises:
        EnvironmentSourceError: ``path`` cannot start as a player (``check_executable``).
    """
    check_executable(path)
    env_settings = env_settings or EnvironmentSettings()
    return UnityBuild(
        file_name=path,
        base_port=env_settings.base_port,
        timeout_wait=env_settings.timeout_wait,
        num_areas=env_settings.num_areas,
        env_args=tuple(env_settings.env_args or ()),
        engine=engine_settings or EngineSettings(),
    )


def resolve_env(
    env: str | None,
    *,
    env_settings: EnvironmentSettings | None = None,
    engine_settings: EngineSettings | None = None,
) -> Any:
    """The factory ``env`` names: a built-in game, ``module:callable``, an OpenSpiel or PettingZoo
    game, or a Unity build path.

    Args:
        env: the ``--env`` / ``env_settings.env_path`` text.
        env_settings: ports, timeouts, areas and arguments for Unity builds.
        engine_settings: window size, time scale... for Unity builds.

    Raises:
        EnvironmentSourceError: ``env`` is missing or names nothing usable (the message lists
            the built-in games and the accepted forms).
    """
    games = _builtin_games()
    forms = (
        f"a built-in game ({', '.join(sorted(games)) or 'none installed'}), module:callable "
        "(e.g. my_envs:make_env), openspiel:<game>, pettingzoo:<module>, or the path of a "
        "Unity build"
    )
    if not env:
        raise EnvironmentSourceError(
            f"no environment given: pass --env or set env_settings.env_path to {forms}"
        )
    if env in games:
        areas = env_settings.num_areas if env_settings is not None else 1
        return BuiltinGame(name=env, arenas=areas if areas > 1 else None)
    prefix, _, target = env.partition(":")
    if prefix in ECOSYSTEM_PREFIXES:
        if not target:
            raise EnvironmentSourceError(
                f"--env {env!r} names no game; write openspiel:<game string> (e.g. "
                "openspiel:leduc_poker) or pettingzoo:<module> (e.g. "
                "pettingzoo:pettingzoo.classic.connect_four_v3)"
            )
        return _ecosystem_source(prefix, target, env_settings)
    match = _CALLABLE_SPEC.fullmatch(env)
    if match:
        source = CallableEnv(
            module=match["module"], attribute=match["attribute"], search_path=os.getcwd()
        )
        source.load()
        return source
    if any(candidate.exists() for candidate in _unity_candidates(env)):
        return _unity_build(env, env_settings, engine_settings)
    if "/" in env or os.sep in env or env.endswith(UNITY_SUFFIXES):
        folder = Path(env).parent
        tried = "" if env.endswith(UNITY_SUFFIXES) else f" (nor with {'/'.join(UNITY_SUFFIXES)})"
        where = "" if folder.is_dir() else f", and there is no folder {str(folder)!r}"
        raise EnvironmentSourceError(
            f"--env/env_path {env!r}: Unity build not found: no such file{tried}{where}; check "
            f"the path (a relative one starts from {os.getcwd()})"
        )
    hint = did_you_mean(env, games).replace("mean ", "mean the built-in game ")
    raise EnvironmentSourceError(
        f"--env/env_path {env!r} names no environment"
        + (f"; {hint}" if hint else "")
        + f" (it is not a built-in game, not module:callable, and no file or folder {env!r} "
        f"exists); give {forms}"
    )
