"""Tiny ``BaseEnv`` fakes for the config/CLI/source tests, reachable as ``tests.fake_envs:<name>``."""

from __future__ import annotations

import numpy as np
from mlagents_envs.base_env import (
    ActionSpec,
    ActionTuple,
    BaseEnv,
    BehaviorMapping,
    BehaviorSpec,
    DecisionSteps,
    TerminalSteps,
)

from envs.specs import vector_observation_spec


def spec(obs_size: int = 6, *, continuous: int = 2, discrete: tuple[int, ...] = ()) -> BehaviorSpec:
    """A behavior spec with one vector observation."""
    return BehaviorSpec([vector_observation_spec(obs_size)], ActionSpec(continuous, discrete))


class FakeEnv(BaseEnv):
    """One agent per behavior, zero observations, nothing ever ends."""

    def __init__(self, specs: dict[str, BehaviorSpec], *, worker_id: int = 0, seed: int = 0):
        self._specs = specs
        self.worker_id = worker_id
        self.seed = seed
        self.resets = 0
        self.closed = False

    @property
    def behavior_specs(self) -> BehaviorMapping:
        return BehaviorMapping(self._specs)

    def reset(self) -> None:
        self.resets += 1

    def step(self) -> None:
        pass

    def get_steps(self, behavior_name: str) -> tuple[DecisionSteps, TerminalSteps]:
        behavior = self._specs[behavior_name]
        obs = [np.zeros((1, *o.shape), dtype=np.float32) for o in behavior.observation_specs]
        decision = DecisionSteps(
            obs, np.zeros(1, np.float32), np.array([0]), None, np.zeros(1, np.int32), np.zeros(1)
        )
        return decision, TerminalSteps.empty(behavior)

    def set_actions(self, behavior_name: str, action: ActionTuple) -> None:
        pass

    def set_action_for_agent(self, behavior_name: str, agent_id: int, action: ActionTuple) -> None:
        pass

    def close(self) -> None:
        self.closed = True


def make_duel(worker_id: int = 0, seed: int = 0) -> FakeEnv:
    """A symmetric two-team game: ``Duel?team=0`` and ``Duel?team=1``."""
    return FakeEnv({"Duel?team=0": spec(), "Duel?team=1": spec()}, worker_id=worker_id, seed=seed)


def make_card_duel(worker_id: int = 0, seed: int = 0) -> FakeEnv:
    """``make_duel`` declaring itself a card game (``envs.game_kind``)."""
    return make_duel(worker_id, seed)


make_card_duel.game_kind = "imperfect_information"  # type: ignore[attr-defined]


def make_misdeclared(worker_id: int = 0, seed: int = 0) -> FakeEnv:
    """``make_duel`` declaring a kind that does not exist."""
    return make_duel(worker_id, seed)


make_misdeclared.game_kind = "cards"  # type: ignore[attr-defined]


def make_asymmetric(**kwargs: int) -> FakeEnv:
    """Strikers (team 0) against a goalie (team 1), as in ML-Agents' StrikersVsGoalie."""
    return FakeEnv(
        {"Striker?team=0": spec(8, continuous=0, discrete=(3, 3)), "Goalie?team=1": spec(8)},
        **kwargs,
    )


def make_solo(*, seed: int = 0) -> FakeEnv:
    """One behavior, one team; takes ``seed`` but no ``worker_id``."""
    return FakeEnv({"Solo": spec(4, continuous=0, discrete=(3,))}, seed=seed)


def make_no_args() -> FakeEnv:
    """A factory that takes no arguments at all."""
    return FakeEnv({"Solo": spec(4)})


def make_mismatched(worker_id: int = 0, seed: int = 0) -> FakeEnv:
    """Two teams of one name whose observations differ."""
    return FakeEnv({"Duel?team=0": spec(6), "Duel?team=1": spec(5)})


def make_empty(worker_id: int = 0, seed: int = 0) -> FakeEnv:
    """An environment without behaviors."""
    return FakeEnv({})


def not_an_env(worker_id: int = 0, seed: int = 0) -> object:
    """Returns something that is not a ``BaseEnv``."""
    return {"not": "an env"}


NOT_CALLABLE = 42
