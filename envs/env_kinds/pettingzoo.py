"""``pettingzoo:<module path>``: a PettingZoo environment module (``envs.pettingzoo``),
``num_areas`` copies per environment (``envs.pettingzoo.DEFAULT_COPIES`` when ``num_areas`` is
left at 1).

PettingZoo is imported only when such a game is used.
"""

from __future__ import annotations

import re
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

#: PettingZoo's classic games by module name (without the ``_v<N>`` version)
GAME_KINDS = {
    "chess": BOARD,
    "connect_four": BOARD,
    "go": BOARD,
    "tictactoe": BOARD,
    "gin_rummy": IMPERFECT_INFORMATION,
    "hanabi": IMPERFECT_INFORMATION,
    "leduc_holdem": IMPERFECT_INFORMATION,
    "texas_holdem": IMPERFECT_INFORMATION,
    "texas_holdem_no_limit": IMPERFECT_INFORMATION,
    "rps": MATRIX,
}


class PettingZooGames(EnvironmentKind):
    """A seated game of PettingZoo's AEC or parallel API."""

    name = "pettingzoo"
    prefix = "pettingzoo"
    capabilities = Capabilities(seated=True)

    def form(self) -> str:
        return "pettingzoo:<module>"

    def example(self) -> str:
        return "pettingzoo:<module> (e.g. pettingzoo:pettingzoo.classic.connect_four_v3)"

    def factory(
        self,
        env: EnvPath,
        *,
        env_settings: EnvironmentSettings | None,
        engine_settings: EngineSettings | None,
    ) -> Any:
        from envs import pettingzoo

        copies = areas_asked(env_settings) or pettingzoo.DEFAULT_COPIES
        return pettingzoo.from_module(env.target, copies=copies)

    def game_kind(self, env: EnvPath) -> GameKind:
        module = env.target.rsplit(".", 1)[-1]
        kind = GAME_KINDS.get(re.sub(r"_v\d+$", "", module), UNKNOWN)
        why = f"PettingZoo game {module!r}" if kind != UNKNOWN else f"{module!r} is not known here"
        return GameKind(kind, why)
