"""Demonstrations for the imitation tests: a built-in game played by one of its scripted levels,
recorded as ``envs.demo_files`` lays a ``.demo`` file out (one row per agent step, an episode's
rows together, its terminal observation last with a zero action).

``demo_on_disk`` puts a demonstration where a ``demo_path`` finds it: written with
``envs.demo_files.DemoWriter`` when that module is there, else served by a stand-in reader.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import pytest
from mlagents_envs.base_env import BehaviorSpec

from envs.behavior_id import BehaviorId
from envs.games import make_game, scripted_policy

try:
    from envs import demo_files
except ImportError:  # the .demo reader is not there yet: the tests serve demonstrations directly
    demo_files = None


@attrs.frozen
class StandInDemonstration:
    """``envs.demo_files.Demonstration``'s fields, for when that module is not there."""

    behavior_name: str
    spec: BehaviorSpec
    observations: list[np.ndarray]
    continuous_actions: np.ndarray
    discrete_actions: np.ndarray
    rewards: np.ndarray
    done: np.ndarray
    max_step_reached: np.ndarray
    action_masks: np.ndarray | None
    episodes: int

    @property
    def steps(self) -> int:
        return len(self.done)


Demonstration: Any = demo_files.Demonstration if demo_files is not None else StandInDemonstration


def _row(obs: list[np.ndarray], continuous: np.ndarray, discrete: np.ndarray, **flags) -> dict:
    return {"obs": obs, "continuous": continuous, "discrete": discrete, **flags}


def record_scripted(
    game: str, level: str, *, episodes: int, seed: int = 0, num_arenas: int = 8
) -> Any:
    """``episodes`` whole episodes of ``game`` with every behavior played by ``level``, recorded
    for the first behavior's name (all its teams' agents)."""
    env = make_game(game, num_arenas=num_arenas, seed=seed)
    names = list(env.behavior_specs)
    recorded = BehaviorId.parse(names[0]).name
    names = [n for n in names if BehaviorId.parse(n).name == recorded]
    policies = {n: scripted_policy(game, level, behavior=n, seed=seed) for n in names}
    spec = env.behavior_specs[names[0]]
    zeros = (np.zeros(spec.action_spec.continuous_size, np.float32),
             np.zeros(len(spec.action_spec.discrete_branches), np.int64))  # fmt: skip
    open_rows: dict[tuple[str, int], list[dict]] = {}
    finished: list[list[dict]] = []
    env.reset()
    while len(finished) < episodes:
        for name in names:
            decision, terminal = env.get_steps(name)
            for i, agent in enumerate(terminal.agent_id):
                rows = open_rows.pop((name, int(agent)), [])
                obs = [o[i] for o in terminal.obs]
                cut = bool(terminal.interrupted[i])
                rows.append(_row(obs, *zeros, reward=terminal.reward[i], done=True, cut=cut))
                finished.append(rows)
            actions = policies[name].act(decision.obs)
            env.set_actions(name, actions)
            for i, agent in enumerate(decision.agent_id):
                continuous = zeros[0] if actions.continuous is None else actions.continuous[i]
                discrete = zeros[1] if actions.discrete is None else actions.discrete[i]
                row = _row([o[i] for o in decision.obs], continuous, discrete,
                           reward=decision.reward[i], done=False, cut=False)  # fmt: skip
                open_rows.setdefault((name, int(agent)), []).append(row)
        env.step()
    env.close()
    rows = [row for episode in finished[:episodes] for row in episode]
    return Demonstration(
        behavior_name=recorded,
        spec=spec,
        observations=[
            np.stack([r["obs"][k] for r in rows]).astype(np.float32)
            for k in range(len(spec.observation_specs))
        ],
        continuous_actions=np.stack([r["continuous"] for r in rows]).astype(np.float32),
        discrete_actions=np.stack([r["discrete"] for r in rows]).astype(np.int64),
        rewards=np.asarray([r["reward"] for r in rows], np.float32),
        done=np.asarray([r["done"] for r in rows], bool),
        max_step_reached=np.asarray([r["cut"] for r in rows], bool),
        action_masks=None,
        episodes=episodes,
    )


def _write(path: Path, demo: Any) -> None:
    assert demo_files is not None
    writer = demo_files.DemoWriter(path, demo.behavior_name, demo.spec)
    spec = demo.spec.action_spec
    for i in range(demo.steps):
        writer.add(
            [o[i] for o in demo.observations],
            reward=float(demo.rewards[i]),
            done=bool(demo.done[i]),
            max_step_reached=bool(demo.max_step_reached[i]),
            continuous=demo.continuous_actions[i] if spec.continuous_size else None,
            discrete=demo.discrete_actions[i] if spec.discrete_branches else None,
        )
    writer.close()


def demo_on_disk(path: Path, demo: Any, monkeypatch: pytest.MonkeyPatch) -> str:
    """``demo`` at ``path`` as a ``demo_path`` reads it; returns the path as configured."""
    if demo_files is not None:
        _write(path, demo)
        return str(path)
    path.write_bytes(b"")  # the path exists; the stand-in reader below answers for it
    served = dict(getattr(sys.modules.get("envs.demo_files"), "served", {}))
    served[str(path)] = demo
    stand_in = types.ModuleType("envs.demo_files")
    stand_in.served = served  # type: ignore[attr-defined]
    stand_in.read_demos = lambda demo_path: served[str(demo_path)]  # type: ignore[attr-defined]
    stand_in.check_demo_fits = lambda demo, spec, *, where: None  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "envs.demo_files", stand_in)
    return str(path)
