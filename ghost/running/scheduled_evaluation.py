"""``self_play.evaluation``: games of the learner against fixed opponents, apart from training.

Every ``every_steps`` trainer steps the learner plays ``games`` matches against each listed fixed
opponent in a separate instance of the built-in game (no experience is kept, no rating moves).
The win rates go to TensorBoard as ``Evaluation/<opponent> Win Rate`` and to the log.

The games are played by a ``GameRunner``: at once in this process, or (with the Ray backend) as
Ray tasks while training goes on; their results are reported when they come back, under the step
at which they were scheduled, and ``finish`` waits for those still being played.
"""

from __future__ import annotations

import logging
from typing import Any

from envs.behavior_id import BehaviorId
from ghost.core.settings import EvaluationSettings
from ghost.exceptions import ConfigError
from ghost.play.game_runner import GameRunner, InlineGames
from ghost.play.head_to_head import EvaluationResult, evaluate
from ghost.running.ghost_trainer import GhostTrainer

logger = logging.getLogger(__name__)


def check_evaluation_game(behavior_name: str, game: str | None) -> None:
    """A scheduled evaluation plays a built-in game (``game``: the run's, or None); also checked
    before training starts.

    Raises:
        ConfigError: the run's environment is no built-in game.
    """
    if game is None:
        raise ConfigError(
            f"behaviors.{behavior_name}.self_play.evaluation plays a built-in game "
            "and this run's environment is not one; remove the evaluation section"
        )


class ScheduledEvaluation:
    """Runs one behavior's scheduled evaluations when its trainer step comes due."""

    def __init__(
        self,
        *,
        trainer: GhostTrainer,
        settings: EvaluationSettings,
        game: str | None,
        behavior_id: BehaviorId,
        seed: int,
        games: GameRunner | None = None,
    ) -> None:
        check_evaluation_game(trainer.behavior_name, game)
        self.trainer = trainer
        self.settings = settings
        self.game = game
        self.side = behavior_id.full_name
        self.seed = seed
        wanted = settings.opponents
        self.opponents = [f for f in trainer.fixed_opponents if wanted is None or f.name in wanted]
        self.next_step = self.after(trainer.step)
        self.games = games if games is not None else InlineGames()

    def after(self, step: int) -> int:
        """The first due step after ``step``."""
        every = self.settings.every_steps
        return (step // every + 1) * every

    def maybe_run(self) -> None:
        """Report the evaluations that have come back; schedule the next ones when due."""
        self._report(self.games.finished())
        if self.trainer.step < self.next_step:
            return
        step = self.trainer.step
        self.next_step = self.after(step)
        assert self.trainer.learner is not None
        for opponent in self.opponents:
            self.games.submit(
                (step, opponent.name),
                evaluate,
                game=self.game,
                policy=self.trainer.learner,
                opponent=opponent.policy,
                episodes=self.settings.games,
                seed=self.seed + step,
                side=self.side,
            )
        self._report(self.games.finished())

    def finish(self) -> None:
        """Wait for the evaluations still being played and report them (no summary is left to
        carry them, so they are written at their own steps)."""
        self._report(self.games.finished(wait=True), at_their_steps=True)

    def _report(
        self, finished: list[tuple[Any, EvaluationResult]], *, at_their_steps: bool = False
    ) -> None:
        for (step, opponent), result in finished:
            rate = result.win_rate if result.win_rate is not None else 0.0
            key = f"Evaluation/{opponent} Win Rate"
            if at_their_steps:
                self.trainer.stats.write_scalar(key, rate, step)
            else:
                self.trainer.stats.add(key, rate)
            logger.info(
                "%s. Step: %d. Evaluation against %s: win rate %.3f [%.3f, %.3f] over %d games",
                self.trainer.behavior_name, step, opponent, rate, *result.win_ci,
                result.episodes,
            )  # fmt: skip
