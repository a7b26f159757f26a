"""The built-in games (``envs.games.BUILTIN_GAMES``): ``--env tennis``."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

import attrs
from mlagents_envs.base_env import BaseEnv

from envs.env_kinds.registry import (
    Capabilities,
    EnvironmentKind,
    EnvPath,
    GameKind,
    areas_asked,
)
from envs.game_kind import CONTROL, MATRIX, UNKNOWN
from envs.settings import EngineSettings, EnvironmentSettings

#: the kind of each built-in game, for ``preset: auto``
GAME_KINDS = {
    "tennis": CONTROL,
    "soccer": CONTROL,
    "strikers_vs_goalie": CONTROL,
    "volley": CONTROL,
    "rock_paper_scissors": MATRIX,
    "biased_rps": MATRIX,
}


def builtin_games() -> Mapping[str, Any]:
    """``envs.games.BUILTIN_GAMES``, or nothing while that module is missing."""
    # imported on use: the games load only for a run that names one
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


class BuiltinGames(EnvironmentKind):
    """A built-in game by name: many arenas in one process, scripted levels, replays; the
    matrix games have an exact exploitability."""

    name = "builtin"
    capabilities = Capabilities(arenas=True, exact_exploitability=True, replays=True)

    def recognises(self, text: str | None) -> bool:
        return bool(text) and text in builtin_games()

    def form(self) -> str:
        return f"a built-in game ({', '.join(sorted(builtin_games())) or 'none installed'})"

    def factory(
        self,
        env: EnvPath,
        *,
        env_settings: EnvironmentSettings | None,
        engine_settings: EngineSettings | None,
    ) -> BuiltinGame:
        return BuiltinGame(name=env.target, arenas=areas_asked(env_settings))

    def game_kind(self, env: EnvPath) -> GameKind:
        return GameKind(GAME_KINDS.get(env.target, UNKNOWN), f"built-in game {env.target!r}")

    def exact_exploitability_problem(self, env: EnvPath) -> str | None:
        return (
            None if GAME_KINDS.get(env.target) == MATRIX else f"{env.text!r} is not a matrix game"
        )
