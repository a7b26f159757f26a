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

Each form is an environment kind of ``envs.env_kinds`` (where a new one is registered), and the
text is read once there (``describe_env``). ``resolve_env`` checks everything it can up front, so
a wrong ``--env`` fails before any worker starts. A training run that names no environment at all
trains in the Unity Editor instead (``envs.unity_editor``, chosen by ``ghost.config.environment``).
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

import attrs
from mlagents_envs.base_env import BaseEnv

from envs.env_kinds import accepted_forms, describe_env
from envs.env_kinds.builtin import BuiltinGame, builtin_games
from envs.env_kinds.python_callable import CallableEnv, call_env_function
from envs.exceptions import EnvironmentSourceError
from envs.settings import EngineSettings, EnvironmentSettings

__all__ = [
    "BuiltinGame",
    "CallableEnv",
    "EnvFactory",
    "EnvFunction",
    "EnvInstance",
    "resolve_env",
    "with_shuffled_seats",
]

logger = logging.getLogger(__name__)

# the name callers and tests used before the built-in games became an environment kind
_builtin_games = builtin_games


class EnvFactory(Protocol):
    """Makes one environment copy: ``factory(worker_id=..., seed=...)``."""

    def __call__(self, *, worker_id: int, seed: int) -> BaseEnv: ...


@attrs.frozen
class EnvFunction:
    """Any Python callable returning a BaseEnv (called with ``worker_id``/``seed`` if it takes them).

    Worker processes receive it pickled: with ``num_envs`` > 1 it must be picklable (a
    module-level function or class, not a lambda).
    """

    make: Any

    def __call__(self, *, worker_id: int = 0, seed: int = 0) -> BaseEnv:
        label = getattr(self.make, "__qualname__", type(self.make).__name__)
        return call_env_function(self.make, f"env {label!r}", worker_id=worker_id, seed=seed)

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


def resolve_env(
    env: str | None,
    *,
    env_settings: EnvironmentSettings | None = None,
    engine_settings: EngineSettings | None = None,
) -> Any:
    """The factory ``env`` names: a built-in game, ``module:callable``, an OpenSpiel or PettingZoo
    game, a Unity build path, or the form of any other registered kind (``envs.env_kinds``).

    Args:
        env: the ``--env`` / ``env_settings.env_path`` text.
        env_settings: ports, timeouts, areas and arguments for Unity builds.
        engine_settings: window size, time scale... for Unity builds.

    Raises:
        EnvironmentSourceError: ``env`` is missing or names nothing usable (the message lists
            the built-in games and the accepted forms).
    """
    if not env:
        raise EnvironmentSourceError(
            f"no environment given: pass --env or set env_settings.env_path to {accepted_forms()}"
        )
    return describe_env(env).factory(env_settings=env_settings, engine_settings=engine_settings)
