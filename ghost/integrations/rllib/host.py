"""``RLlibSelfPlay``: the self-play cycle, through the host kit (``SelfPlayHost``), driven by an
RLlib ``Algorithm``.

It lives on the driver, beside the Algorithm, and acts through RLlib's public handles only:

- the learner's weights are the ``"main"`` module's state in the ``LearnerGroup``; with
  ``self_play.league`` each exploiter is a module RLlib trains too (``league``);
- ``field`` and ``publish`` write snapshot weights into the frozen ghost modules (the learner's
  copies, which RLlib never trains, and the env runners') and tell every env runner the
  learning team (``routing``);
- after each training iteration (``after_iteration``, from ``on_train_result``): the env
  runners' tallies are taken, ghost steps counted, finished matches rated (one result per
  match), then ``after_update`` (snapshot, team change request, swap) and, when a team change
  is due, ``on_team_change``; Elo and win rates go into the iteration's result under
  ``"Self-play"`` (``Self-play/ELO`` once flattened, as in ML-Agents).

The learner's step is the number of agent steps the learning team sampled (as ML-Agents counts
a trainer's steps); ``save``/``load`` keep it with the rest of the self-play state.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ghost.core.opponents import Opponent
from ghost.core.self_play import SelfPlayState
from ghost.core.self_play_host import SelfPlayHost
from ghost.core.settings import SelfPlaySettings
from ghost.core.state_folder import SelfPlayFolder
from ghost.integrations.rllib import routing
from ghost.integrations.rllib.league import RLlibLeagueTurns
from ghost.integrations.rllib.routing import LEARNER_MODULE, Routing, Tally, ghost_module
from trainers.run_files.access import RUN_FILES

logger = logging.getLogger(__name__)

#: the folder inside an RLlib checkpoint that holds the self-play state
FOLDER = "ghost_self_play"
RESULT_KEY = "Self-play"


def as_tensors(state: dict[str, Any]) -> dict[str, torch.Tensor]:
    """A module state as CPU tensors of its own (RLlib hands out numpy arrays)."""
    return {key: torch.as_tensor(np.array(value)) for key, value in state.items()}


class _Learner:
    """The ``LearnerHandle`` of an RLlib Algorithm (see the module docstring)."""

    def __init__(self, host: RLlibSelfPlay) -> None:
        self.host = host
        self.algorithm: Any = None
        self._fielded: dict[str, dict[str, torch.Tensor]] = {}
        self._slots = host.slots

    @property
    def step(self) -> int:
        return self.host.learner_steps

    @property
    def still_training(self) -> bool:
        limit = self.host.max_steps
        return limit is None or self.host.learner_steps < limit

    def weights(self) -> dict[str, torch.Tensor]:
        return self.host.module_weights(LEARNER_MODULE)

    def install(self, module_id: str, weights: dict[str, torch.Tensor]) -> None:
        """Give ``module_id`` these weights at the next ``publish``."""
        self._fielded[module_id] = weights

    def field(self, team: int, opponents: list[Opponent]) -> None:
        # a main exploiter's turn fields one opponent whatever opponents_per_swap says
        self._slots = len(opponents)
        for slot, opponent in enumerate(opponents):
            assert opponent.snapshot is not None, "fixed opponents are refused by the settings"
            self._fielded[ghost_module(team, slot)] = opponent.snapshot.weights

    def act_as_learner(self, team: int) -> None:
        self.host.learning_team = team

    def publish(self) -> None:
        weights, self._fielded = self._fielded, {}
        league = self.host.league
        where = Routing(
            learning_team=self.host.learning_team, slots=self._slots,
            learning_module=LEARNER_MODULE if league is None else league.learning_module,
        )  # fmt: skip
        if weights:
            # RLlib syncs every module of the learner's results to the env runners after each
            # update, ghosts included: the learner's copies must hold the fielded weights too
            self.algorithm.learner_group.set_weights(weights)

        def install(env_runner: Any) -> None:
            module = getattr(env_runner, "module", None)
            if module is not None:
                for module_id, state in weights.items():
                    if module_id in module:
                        module[module_id].set_state(state)
            routing.set_routing(env_runner, where)

        self.algorithm.env_runner_group.foreach_env_runner(install, local_env_runner=True)


class RLlibSelfPlay:
    """Self-play of one RLlib Algorithm (see the module docstring).

    Args:
        settings: the ``self_play`` section.
        teams: the game's teams, in the order they take turns learning.
        seed: seeds the opponent draws.
        behavior_name: names the learner in logs and win-rate tables.
        max_steps: learner steps after which its turn ends at once (None: no limit).
    """

    def __init__(
        self,
        *,
        settings: SelfPlaySettings,
        teams: list[int],
        seed: int = 0,
        behavior_name: str = LEARNER_MODULE,
        max_steps: int | None = None,
    ) -> None:
        self.settings = settings
        self.teams = list(teams)
        self.slots = settings.opponents_per_swap
        self.max_steps = max_steps
        self.learner_steps = 0
        self.learning_team = self.teams[0]
        self.state = SelfPlayState(behavior_name=behavior_name, settings=settings, seed=seed)
        self.kit = SelfPlayHost(logger=logger)
        self.controller = self.kit.controller
        #: the exploiters' turns (None without ``self_play.league`` exploiters)
        self.league = (
            RLlibLeagueTurns(
                league=self.state.league,
                host=self,
                seed=seed,
                steps_per_team=settings.steps_per_team,
            )  # fmt: skip
            if self.state.league.enabled
            else None
        )
        self.learner = _Learner(self)
        self._scores: dict[str, list[float]] = defaultdict(list)
        self.cycle = self.kit.add_behavior(
            state=self.state, learner=self.learner, league=self.league,
            report=lambda key, score: self._scores[key].append(score),
        )  # fmt: skip

    def attach(self, algorithm: Any) -> None:
        """Start self-play on ``algorithm``: the untrained learner is the first snapshot."""
        self.learner.algorithm = algorithm
        self.kit.connect(self.state.behavior_name, self.teams)
        self.cycle.begin()
        self.learner.publish()

    def module_weights(self, module_id: str) -> dict[str, torch.Tensor]:
        """A copy of ``module_id``'s current weights in the learner group."""
        found = self.learner.algorithm.learner_group.get_weights(module_ids=[module_id])
        return as_tensors(found[module_id])

    def install_fresh_weights(self, module_id: str) -> None:
        """Give ``module_id`` newly initialised weights (from torch's current random stream)."""
        spec = self.learner.algorithm.config.rl_module_spec.rl_module_specs[module_id]
        fresh = spec.build().get_state()
        self.learner.install(module_id, {k: torch.as_tensor(v).clone() for k, v in fresh.items()})

    # -- after each training iteration -------------------------------------------------------
    def after_iteration(self, result: dict[str, Any]) -> None:
        """Count, rate, then snapshot / team change / swap; report into ``result``."""
        tally = self._take_tallies()
        self.learner_steps += tally.learner_steps
        if self.league is not None:
            self.league.count(tally.exploiter_steps)
        for team, steps in sorted(tally.ghost_steps.items()):
            self.cycle.route(team=team, agent_steps=steps)
        learning = self.controller.learning_team
        module = LEARNER_MODULE if self.league is None else self.league.learning_module
        # a match begun before a team change was played by the previous learner: no result
        current = [
            (r.slot, r.score)
            for r in tally.results
            if r.learning_team == learning and r.learning_module == module
        ]
        self.cycle.book(current)
        self.kit.update_done(self.state.behavior_name)
        result[RESULT_KEY] = self._report(matches=len(current))

    def _take_tallies(self) -> Tally:
        total = Tally()
        group = self.learner.algorithm.env_runner_group
        for tally in group.foreach_env_runner(routing.take_tally, local_env_runner=True):
            total.merge(tally)
        return total

    def _report(self, *, matches: int) -> dict[str, Any]:
        report: dict[str, Any] = {
            "ELO": self.state.rating,
            "matches": matches,
            "learning_team": self.controller.learning_team,
            "team_changes": self.controller.team_changes,
            "learner_steps": self.learner_steps,
            "window": [snapshot.snapshot_id for snapshot in self.state.window],
            "swaps": self.state.swaps,
        }
        if self.league is not None:
            active = self.league.active
            report["role"] = "main" if active is None else active.name
            report["league_members"] = [member.name for member in self.state.league.members]
        for key, scores in self._scores.items():
            report[key.partition("/")[2] or key] = float(np.mean(scores))
        self._scores.clear()
        return report

    # -- persistence -------------------------------------------------------------------------
    @staticmethod
    def _files(checkpoint: str | Path) -> SelfPlayFolder:
        return SelfPlayFolder(Path(checkpoint) / FOLDER, files=RUN_FILES)

    def save(self, checkpoint: str | Path) -> Path:
        """Write the self-play state into ``<checkpoint>/ghost_self_play`` (every file atomic;
        snapshots before the state that names them); returns that folder."""
        files = self._files(checkpoint)
        self.kit.save(
            self.state.behavior_name, files, step=self.learner_steps,
            learner_steps=self.learner_steps, learning_team=self.learning_team,
            league_turns=None if self.league is None else self.league.state_dict(),
        )  # fmt: skip
        return files.folder

    def load(self, checkpoint: str | Path) -> None:
        """Continue from ``save``'s folder in ``checkpoint`` (read without unpickling code) and
        field the saved opponents again."""
        files = self._files(checkpoint)
        record = files.load()
        if record is None:
            raise FileNotFoundError(
                f"{checkpoint} holds no self-play state ({FOLDER}/state.pt); save it with "
                "ghost.integrations.rllib.save_checkpoint"
            )
        self.learner_steps = int(record["learner_steps"])
        self.learning_team = int(record["learning_team"])
        self.kit.restore(self.state.behavior_name, files, record, step=self.learner_steps)
        if self.league is not None and record.get("league_turns") is not None:
            self.league.load_state_dict(record["league_turns"])  # its members are restored now
        self.learner.publish()
