"""Demonstrations for the imitation tests: a built-in game played by one of its scripted levels,
recorded into a ``.demo`` file (``envs.demo_recorder.record_demo``) and read back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

from envs.behavior_id import BehaviorId
from envs.demo_files import Demonstration, read_demos
from envs.demo_recorder import record_demo
from envs.games import make_game, scripted_policy


@attrs.frozen
class Recording:
    """A recorded ``.demo`` file and what it holds."""

    path: str
    demo: Demonstration

    @property
    def spec(self) -> Any:
        return self.demo.spec


def record_scripted(
    path: Path, game: str, level: str, *, episodes: int, seed: int = 0, num_arenas: int = 8
) -> Recording:
    """``episodes`` agent episodes of ``game`` with every behavior played by ``level``,
    recorded for the first behavior's name (all its teams) into ``path``."""
    env = make_game(game, num_arenas=num_arenas, seed=seed)
    try:
        names = list(env.behavior_specs)
        players = {name: scripted_policy(game, level, behavior=name, seed=seed) for name in names}
        behavior = BehaviorId.parse(names[0]).name
        record_demo(env, players, path=path, behavior_name=behavior, episodes=episodes)
    finally:
        env.close()
    return Recording(str(path), read_demos(path))
