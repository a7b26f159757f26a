"""``self_play.learn_from_latest``: a ghosted team playing the latest copy of the learner trains it
too, uncounted (the trainer's steps count the learning team only).

While a ghosted team plays the latest copy (one opponent, no exploiter's turn), its step batches
reach the wrapped trainer through a queue of their own that counts no steps. When the team stops
playing the latest copy (a swap to a snapshot, a team change), its partial trajectories are
dropped (``Trainer.forget_partial``), so later experience does not continue them.
"""

from __future__ import annotations

from envs.behavior_id import BehaviorId
from ghost.core.opponents import Opponent
from ghost.core.settings import SelfPlaySettings
from ghost.exceptions import ConfigError
from trainers.base import ExperienceQueue, StepBatch, Trainer


def check_learn_from_latest(
    behavior_name: str, self_play: SelfPlaySettings, trainer_class: type
) -> None:
    """``self_play.learn_from_latest`` needs a trainer that can drop a team's partial
    trajectories (``Trainer.forget_partial``); also checked before training starts.

    Raises:
        ConfigError: the trainer cannot.
    """
    forget = getattr(trainer_class, "forget_partial", Trainer.forget_partial)
    if self_play.learn_from_latest and forget is Trainer.forget_partial:
        raise ConfigError(
            f"behaviors.{behavior_name}.self_play.learn_from_latest: trainer "
            f"{trainer_class.__name__} cannot drop a team's partial trajectories "
            "(Trainer.forget_partial), which learning from the latest copy needs; remove the key"
        )


class LatestCopyLearning:
    """The ghosted teams' experience against the latest copy, handed to ``trainer``."""

    def __init__(self, trainer: Trainer) -> None:
        self.trainer = trainer
        self._queues: dict[BehaviorId, ExperienceQueue] = {}
        self._mirroring: set[BehaviorId] = set()

    def connect(self, behavior_id: BehaviorId) -> None:
        """A team of the behavior: its uncounted queue to the trainer."""
        queue = ExperienceQueue(behavior_id, counts_steps=False)
        self._queues[behavior_id] = queue
        self.trainer.subscribe_trajectory_queue(queue)

    def offer(self, batch: StepBatch, opponents: list[Opponent], *, learner_learns: bool) -> None:
        """A ghosted team's batch: to the trainer while that team plays the latest copy and the
        learner learns; when it stops, its partial trajectories are dropped."""
        behavior_id = batch.behavior_id
        latest = len(opponents) == 1 and opponents[0].is_latest
        if latest and learner_learns:
            self._queues[behavior_id].put(batch)
            self._mirroring.add(behavior_id)
        elif behavior_id in self._mirroring:
            self._mirroring.discard(behavior_id)
            self.trainer.forget_partial(behavior_id)

    def environments_reset(self) -> None:
        """Every partial trajectory ended with the reset."""
        self._mirroring.clear()
