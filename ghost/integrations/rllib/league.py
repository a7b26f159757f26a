"""League roles inside RLlib: ``self_play.league`` exploiters as trainable RLlib modules.

``RLlibLeagueTurns`` is the ``LeagueTurns`` collaborator of the RLlib host's ``GhostCycle``.
What is decided (the role schedule, promotions, restarts) is ``ghost.core.league``'s, as in
ghost-learn; RLlib does the learning:

- every exploiter is a module of its own, ``"exploiter_<index>"``, in ``policies_to_train``
  beside ``"main"``. RLlib updates a module only from the samples it acted in, and an exploiter
  acts only in its turns: the learning team's agents map to it (``routing``), so each turn's
  experience trains the exploiter whose turn it is, never the main learner;
- a main exploiter faces the main learner's latest weights, a league exploiter the whole pool by
  its own win rates (``draw_for_exploiter``, through the cycle's draws); its finished matches go
  to its own tally, never to the main learner's Elo;
- a turn lasts ``steps_per_team`` of the exploiter's agent steps; at its end a promoted
  exploiter joins the pool as a league member, and one due for a restart gets fresh weights
  drawn from its generation's seed (``exploiter_seed``). Its optimizer state is RLlib's and
  carries over the restart.
"""

from __future__ import annotations

import logging
from typing import Any

import torch

from ghost.core.controller import GhostController
from ghost.core.ghost_cycle import MatchResult
from ghost.core.league import Exploiter, LeagueState, TurnOutcome, exploiter_seed
from ghost.integrations.rllib.routing import LEARNER_MODULE, exploiter_module

logger = logging.getLogger(__name__)


class RLlibLeagueTurns:
    """Runs one behavior's exploiter turns in RLlib (see the module docstring).

    Args:
        league: the league bookkeeping (``SelfPlayState.league``).
        host: the RLlib host (``RLlibSelfPlay``): reads and installs module weights.
        seed: the run's seed (each exploiter generation derives its own).
        steps_per_team: an exploiter's agent steps in one turn.
    """

    def __init__(self, *, league: LeagueState, host: Any, seed: int, steps_per_team: int) -> None:
        self.league = league
        self.host = host
        self.seed = seed
        self.steps_per_team = steps_per_team
        #: the exploiter playing the current learning turn (None: the main learner's turn)
        self.active: Exploiter | None = None
        #: agent steps each exploiter module has played, by exploiter index
        self.steps: dict[int, int] = {e.index: 0 for e in league.exploiters}
        self.turn_start_step = 0

    @property
    def learning_module(self) -> str:
        """The module the learning team acts with now."""
        return LEARNER_MODULE if self.active is None else exploiter_module(self.active.index)

    def modules(self) -> list[str]:
        """Every exploiter's module id."""
        return [exploiter_module(e.index) for e in self.league.exploiters]

    def count(self, steps: dict[str, int]) -> None:
        """Add the agent steps each exploiter module played (``Tally.exploiter_steps``)."""
        for exploiter in self.league.exploiters:
            self.steps[exploiter.index] += steps.get(exploiter_module(exploiter.index), 0)

    # -- LeagueTurns -------------------------------------------------------------------------
    def begin_turn(self, turn: int) -> None:
        self.active = self.league.role_for(turn)
        if self.active is not None:
            self.turn_start_step = self.steps[self.active.index]

    def put(self, experience: Any) -> None:
        """Nothing to hand over: RLlib trains the exploiter module from its own samples."""

    def record(self, results: list[MatchResult], controller: GhostController) -> None:
        """The learning turn's finished matches ``(slot, score)``: the active exploiter's."""
        assert self.active is not None
        for slot, score in results:
            self.active.record(score, controller.fielded_opponents(slot))

    def advance(self) -> None:
        """Nothing to advance: RLlib stepped the exploiter's optimizer in its update."""

    def turn_over(self, *, still_training: bool) -> bool:
        assert self.active is not None
        played = self.steps[self.active.index] - self.turn_start_step
        return played >= self.steps_per_team or not still_training

    def end_turn(self) -> TurnOutcome | None:
        """End the active exploiter's turn: promote or restart it as the league decides."""
        if self.active is None:
            return None
        exploiter, self.active = self.active, None
        module_id = exploiter_module(exploiter.index)
        played = self.steps[exploiter.index] - self.turn_start_step
        outcome = self.league.finish_turn(
            exploiter, weights=self.host.module_weights(module_id), step=self.steps[exploiter.index]
        )
        win_rate = "-" if outcome.win_rate is None else f"{outcome.win_rate:.2f}"
        verdict = f"promoted as {outcome.member.name}" if outcome.member else "not promoted"
        logger.info(
            "League: %s (generation %d) played %d steps, win rate %s over %d matches; %s%s",
            outcome.exploiter, outcome.generation, played, win_rate, outcome.matches, verdict,
            "; it restarts from fresh weights" if outcome.restarts else "",
        )  # fmt: skip
        if outcome.restarts:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(exploiter_seed(self.seed, exploiter))
                self.host.install_fresh_weights(module_id)
        return outcome

    # -- persistence -------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """The running turn and the exploiters' steps (the league's bookkeeping travels in
        ``SelfPlayState.state_dict``, the modules' weights in RLlib's checkpoint)."""
        return {
            "active": None if self.active is None else self.active.index,
            "turn_start_step": self.turn_start_step,
            "steps": {str(index): steps for index, steps in self.steps.items()},
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        exploiters = self.league.exploiters
        active = state["active"]
        self.active = (
            exploiters[active] if active is not None and active < len(exploiters) else None
        )
        self.turn_start_step = int(state["turn_start_step"])
        for key, steps in state["steps"].items():
            if int(key) in self.steps:
                self.steps[int(key)] = int(steps)
