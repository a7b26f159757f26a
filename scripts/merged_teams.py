"""Benchmark helper: a game's teams merged into one behavior, as ML-Agents trains without self-play.

``make_tennis`` exposes the built-in tennis game's two teams as a single behavior ``Tennis``: every
agent acts with one policy in one batch and all experience trains it. ``bench_vs_mlagents.py
--self-play-overhead`` uses it as the "without self_play" side of the comparison.
"""

from __future__ import annotations

import numpy as np
from mlagents_envs.base_env import ActionTuple, BaseEnv, DecisionSteps, TerminalSteps

from envs.games import make_game


def _concat(parts: list, kind: type) -> object:
    fields = {
        "obs": [np.concatenate(group) for group in zip(*(p.obs for p in parts), strict=True)],
        "reward": np.concatenate([p.reward for p in parts]),
        "agent_id": np.concatenate([p.agent_id for p in parts]),
        "group_id": np.concatenate([p.group_id for p in parts]),
        "group_reward": np.concatenate([p.group_reward for p in parts]),
    }
    if kind is DecisionSteps:
        masks = [p.action_mask for p in parts]
        fields["action_mask"] = (
            None if masks[0] is None
            else [np.concatenate(branch) for branch in zip(*masks, strict=True)]
        )  # fmt: skip
        return DecisionSteps(**fields)
    fields["interrupted"] = np.concatenate([p.interrupted for p in parts])
    return TerminalSteps(**fields)


class MergedTeams(BaseEnv):
    """All behaviors of ``env`` (same spec) seen as one behavior named ``name``."""

    def __init__(self, env: BaseEnv, name: str) -> None:
        self.env = env
        self.name = name
        self.parts = sorted(env.behavior_specs)
        self._rows: list[int] = []

    @property
    def behavior_specs(self):  # type: ignore[no-untyped-def]
        return {self.name: self.env.behavior_specs[self.parts[0]]}

    def reset(self) -> None:
        self.env.reset()

    def step(self) -> None:
        self.env.step()

    def get_steps(self, behavior_name: str):  # type: ignore[no-untyped-def]
        steps = [self.env.get_steps(part) for part in self.parts]
        self._rows = [len(d) for d, _ in steps]
        return (_concat([d for d, _ in steps], DecisionSteps),
                _concat([t for _, t in steps], TerminalSteps))  # fmt: skip

    def set_actions(self, behavior_name: str, action: ActionTuple) -> None:
        start = 0
        for part, rows in zip(self.parts, self._rows, strict=True):
            self.env.set_actions(part, ActionTuple(
                continuous=action.continuous[start:start + rows],
                discrete=action.discrete[start:start + rows]))  # fmt: skip
            start += rows

    def set_action_for_agent(self, behavior_name, agent_id, action) -> None:  # type: ignore[no-untyped-def]
        raise NotImplementedError

    def arena_of(self, behavior_name: str, agent_ids: np.ndarray) -> np.ndarray:
        return self.env.arena_of(self.parts[0], agent_ids)

    def close(self) -> None:
        self.env.close()


def make_tennis(worker_id: int = 0, seed: int = 0) -> MergedTeams:
    return MergedTeams(make_game("tennis", worker_id=worker_id, seed=seed), "Tennis")
