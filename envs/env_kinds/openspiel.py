"""``openspiel:<game string>``: a game of OpenSpiel (``envs.openspiel``), ``num_areas`` tables per
environment (``envs.openspiel.DEFAULT_COPIES`` when ``num_areas`` is left at 1).

OpenSpiel is imported only when such a game is used.
"""

from __future__ import annotations

from typing import Any

from envs.env_kinds.registry import (
    Capabilities,
    EnvironmentKind,
    EnvPath,
    GameKind,
    areas_asked,
)
from envs.game_kind import BOARD, IMPERFECT_INFORMATION, MATRIX, UNKNOWN
from envs.settings import EngineSettings, EnvironmentSettings


class OpenSpielGames(EnvironmentKind):
    """A seated turn-based (or simultaneous-move) game; the two-player zero-sum ones have an
    exact exploitability (``envs.exploitability.check_exploitable``)."""

    name = "openspiel"
    prefix = "openspiel"
    capabilities = Capabilities(seated=True, exact_exploitability=True)

    def form(self) -> str:
        return "openspiel:<game>"

    def example(self) -> str:
        return "openspiel:<game string> (e.g. openspiel:leduc_poker)"

    def factory(
        self,
        env: EnvPath,
        *,
        env_settings: EnvironmentSettings | None,
        engine_settings: EngineSettings | None,
    ) -> Any:
        from envs import openspiel

        copies = areas_asked(env_settings) or openspiel.DEFAULT_COPIES
        source = openspiel.OpenSpielSource(game=env.target, copies=copies)
        source.load()
        return source

    def game_kind(self, env: EnvPath) -> GameKind:
        from envs.openspiel import load_game

        game_string = env.target
        try:
            game = load_game(game_string)
        except Exception:  # the environment's own resolution reports a bad game string
            return GameKind(UNKNOWN, f"OpenSpiel cannot load {game_string!r}")
        game_type = game.get_type()
        information = game_type.information.name
        if information == "ONE_SHOT":
            return GameKind(MATRIX, f"OpenSpiel says {game_string!r} is one-shot")
        if game_type.dynamics.name == "SIMULTANEOUS":
            # each player picks without seeing the others' picks: information is hidden every turn
            return GameKind(
                IMPERFECT_INFORMATION, f"OpenSpiel says {game_string!r} has simultaneous moves"
            )
        if information == "PERFECT_INFORMATION":
            return GameKind(BOARD, f"OpenSpiel says {game_string!r} has perfect information")
        return GameKind(
            IMPERFECT_INFORMATION, f"OpenSpiel says {game_string!r} has imperfect information"
        )

    def exact_exploitability_problem(self, env: EnvPath) -> str | None:
        from envs.exploitability import check_exploitable
        from envs.openspiel import load_game

        try:
            check_exploitable(load_game(env.target))
        except ValueError as error:
            return str(error)
        return None
