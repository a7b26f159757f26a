"""Exploiter turns inside a ``GhostTrainer``: the exploiters' trainers, networks and turns.

One ``ExploiterTurns`` per self-play behavior with ``self_play.league`` exploiters, the
``LeagueTurns`` collaborator of its ``GhostCycle`` (``ghost.core.ghost_cycle``). What is decided
(the role schedule, promotions, restarts) is ``ghost.core.league``'s; this module runs it:

- each exploiter trains with its own instance of the behavior's trainer class and settings,
  built when its first turn comes (``exploiter_factory``); its statistics go to
  ``<run>/<Behavior>/league/<exploiter>/generation-<g>/`` and its console summaries carry its
  name, so the main learner's curves only show the main learner;
- during an exploiter turn the learning team acts with the exploiter's network, its step batches
  go to the exploiter's trainer only, and its finished matches to the exploiter's own tally
  (never to the main learner's Elo or win rates);
- the turn ends after ``steps_per_team`` steps of the exploiter's trainer, through the
  controller's team change like any turn (so the environments reset at both ends); then a
  promoted exploiter joins the pool, and a main exploiter due for a restart gets a new trainer
  (fresh weights, from a seed of its own).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch
from mlagents_envs.base_env import BehaviorSpec

from envs.behavior_id import BehaviorId
from ghost.core.controller import GhostController
from ghost.core.ghost_cycle import MatchResult
from ghost.core.league import Exploiter, LeagueState, TurnOutcome, exploiter_seed
from ghost.core.self_play import SelfPlayState
from trainers.base import ExperienceQueue, Policy, StepBatch, Trainer
from trainers.devices import acting_device_argument

logger = logging.getLogger(__name__)

#: builds an exploiter's trainer: ``(label, seed) -> trainer``, the label naming its stats folder
ExploiterFactory = Callable[[str, int], Trainer]


def exploiter_factory(trainer: Trainer, folder: Path) -> ExploiterFactory:
    """Exploiter trainers like ``trainer`` (its class and settings), with stats in
    ``folder/<label>`` and console summaries named ``<Behavior> [<label>]``."""

    def make(label: str, seed: int) -> Trainer:
        exploiter = type(trainer)(
            behavior_name=trainer.behavior_name, settings=trainer.settings,
            artifact_dir=folder / label, seed=seed, device=trainer.device,
            training=trainer.training,
            **acting_device_argument(trainer.device, trainer.acting_device),
        )  # fmt: skip
        exploiter.stats.behavior_name = f"{trainer.behavior_name} [{label}]"
        exploiter.stats.max_steps = None  # it learns in turns: no share of max_steps to show
        return exploiter

    return make


@contextlib.contextmanager
def _own_random_stream(seed: int) -> Iterator[None]:
    """Torch draws inside come from ``seed`` and leave the run's global stream as it was, so
    building or restoring an exploiter never changes what the main learner draws."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


class ExploiterTurns:
    """Trains the exploiters of one behavior in their turns (see the module docstring).

    Args:
        league: the behavior's league bookkeeping (``SelfPlayState.league``).
        make_trainer: builds an exploiter's trainer.
        seed: the run's seed (each exploiter generation derives its own).
        steps_per_team: trainer steps of one turn.
    """

    def __init__(
        self, *, league: LeagueState, make_trainer: ExploiterFactory, seed: int, steps_per_team: int
    ) -> None:
        self.league = league
        self.make_trainer = make_trainer
        self.seed = seed
        self.steps_per_team = steps_per_team
        self.specs: dict[BehaviorId, BehaviorSpec] = {}
        self.trainers: dict[int, Trainer] = {}
        self.policies: dict[int, Policy] = {}
        self._queues: dict[int, dict[BehaviorId, ExperienceQueue]] = {}
        #: the exploiter playing this behavior's current learning turn
        self.active: Exploiter | None = None
        self.turn_start_step = 0

    @classmethod
    def for_behavior(
        cls, state: SelfPlayState, *, trainer: Trainer, make_trainer: ExploiterFactory | None
    ) -> ExploiterTurns | None:
        """The exploiter turns of ``state``'s league beside ``trainer`` (None without exploiters,
        or when ``trainer`` does not train)."""
        if not (state.league.enabled and trainer.training):
            return None
        if make_trainer is None:
            raise ValueError(
                f"{trainer.behavior_name}: self_play.league has exploiters, so the ghost "
                "trainer needs make_trainer to build their trainers"
            )
        return cls(
            league=state.league, make_trainer=make_trainer, seed=trainer.seed,
            steps_per_team=state.settings.steps_per_team,
        )  # fmt: skip

    # -- wiring ----------------------------------------------------------------------------
    def connect(self, behavior_id: BehaviorId, spec: BehaviorSpec) -> None:
        """A team of this behavior joined: exploiters built already learn for it too."""
        self.specs[behavior_id] = spec
        for index in self.trainers:
            self._add_team(index, behavior_id)

    def _add_team(self, index: int, behavior_id: BehaviorId) -> None:
        trainer = self.trainers[index]
        with _own_random_stream(self._seed(self.league.exploiters[index])):
            trainer.add_policy(behavior_id, self.policies[index])
        queue = ExperienceQueue(behavior_id)
        trainer.subscribe_trajectory_queue(queue)
        self._queues[index][behavior_id] = queue

    def _seed(self, exploiter: Exploiter) -> int:
        return exploiter_seed(self.seed, exploiter)

    def trainer_of(self, exploiter: Exploiter) -> Trainer:
        """``exploiter``'s trainer, built with fresh weights on first use."""
        if exploiter.index not in self.trainers:
            label = f"{exploiter.name}/generation-{exploiter.generation}"
            first = min(self.specs)
            with _own_random_stream(self._seed(exploiter)):
                trainer = self.make_trainer(label, self._seed(exploiter))
                self.policies[exploiter.index] = trainer.create_policy(first, self.specs[first])
            self.trainers[exploiter.index] = trainer
            self._queues[exploiter.index] = {}
            for behavior_id in self.specs:
                self._add_team(exploiter.index, behavior_id)
        return self.trainers[exploiter.index]

    def policy(self) -> Policy:
        """The active exploiter's network."""
        assert self.active is not None
        return self.policies[self.active.index]

    # -- turns -----------------------------------------------------------------------------
    def begin_turn(self, turn: int) -> None:
        """This behavior's learning turn numbered ``turn`` starts (``LeagueState.role_for``)."""
        self.active = self.league.role_for(turn)
        if self.active is not None:
            self.turn_start_step = self.trainer_of(self.active).step

    def put(self, experience: StepBatch) -> None:
        """A step batch of the learning team: the active exploiter learns from it."""
        assert self.active is not None
        self._queues[self.active.index][experience.behavior_id].put(experience)

    def record(self, results: list[MatchResult], controller: GhostController) -> None:
        """The learning team's finished matches ``(arena, score)``: the active exploiter's."""
        assert self.active is not None
        for arena, score in results:
            self.active.record(score, controller.fielded_opponents(arena))

    def advance(self) -> None:
        assert self.active is not None
        self.trainers[self.active.index].advance()

    def turn_over(self, *, still_training: bool) -> bool:
        """Whether the active exploiter's turn is over (``still_training``: the main learner's;
        once it is done, so is the league)."""
        assert self.active is not None
        trainer = self.trainers[self.active.index]
        return (
            trainer.step - self.turn_start_step >= self.steps_per_team
            or not still_training
            or not trainer.should_still_train
        )

    def end_turn(self) -> TurnOutcome | None:
        """End the active exploiter's turn: promote or restart it as the league decides."""
        if self.active is None:
            return None
        exploiter, self.active = self.active, None
        trainer = self.trainers[exploiter.index]
        weights = self.policies[exploiter.index].get_weights()
        outcome = self.league.finish_turn(exploiter, weights=weights, step=trainer.step)
        win_rate = "-" if outcome.win_rate is None else f"{outcome.win_rate:.2f}"
        verdict = f"promoted as {outcome.member.name}" if outcome.member else "not promoted"
        logger.info(
            "League %s: %s (generation %d) played %d steps, win rate %s over %d matches; %s%s",
            trainer.behavior_name, outcome.exploiter, outcome.generation,
            trainer.step - self.turn_start_step, win_rate, outcome.matches, verdict,
            "; it restarts from fresh weights" if outcome.restarts else "",
        )  # fmt: skip
        if outcome.restarts:
            self._drop(exploiter.index)
        return outcome

    def _drop(self, index: int) -> None:
        self.trainers.pop(index).close()
        del self.policies[index], self._queues[index]

    def end_episode(self) -> None:
        for trainer in self.trainers.values():
            trainer.end_episode()

    # -- persistence -----------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """The built exploiters' trainer states and the running turn (the league's bookkeeping
        travels in ``SelfPlayState.state_dict``)."""
        return {
            "active": None if self.active is None else self.active.index,
            "turn_start_step": self.turn_start_step,
            "trainers": {str(i): trainer.state_dict() for i, trainer in self.trainers.items()},
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from ``state_dict()`` (after ``SelfPlayState.load_state_dict``)."""
        for index in list(self.trainers):
            self._drop(index)
        exploiters = self.league.exploiters
        for key, saved in state["trainers"].items():
            if int(key) < len(exploiters):
                exploiter = exploiters[int(key)]
                trainer = self.trainer_of(exploiter)
                with _own_random_stream(self._seed(exploiter)):
                    trainer.load_state_dict(saved)
        active = state["active"]
        self.active = (
            exploiters[active] if active is not None and active < len(exploiters) else None
        )
        if self.active is not None:
            self.trainer_of(self.active)
        self.turn_start_step = int(state["turn_start_step"])

    def close(self) -> None:
        for trainer in self.trainers.values():
            trainer.close()
