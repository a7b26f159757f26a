"""``GhostSelfPlayCallback``: the RLlib callback that runs our self-play cycle.

On the driver it owns the ``RLlibSelfPlay`` host (made in ``on_algorithm_init``, advanced in
``on_train_result``); in every env runner it stamps new episodes, tallies steps and records
finished matches (``routing``). In env runners and learners alike it batches agents in one order
whatever the process's hash seed (``agent_order``). ``ghost_self_play`` adds it to a config; use
that rather than adding the class by hand.
"""

from __future__ import annotations

from typing import Any

import attrs
from ray.rllib.callbacks.callbacks import RLlibCallback

from ghost.core.settings import SelfPlaySettings
from ghost.integrations.rllib import routing
from ghost.integrations.rllib.agent_order import pin_agent_order, pin_learner_agent_order
from ghost.integrations.rllib.host import RLlibSelfPlay


@attrs.frozen(kw_only=True)
class SelfPlayOptions:
    """What ``ghost_self_play`` decided: the settings, the game's teams, the seed, the limit."""

    settings: SelfPlaySettings
    teams: tuple[int, ...]
    seed: int = 0
    behavior_name: str = routing.LEARNER_MODULE
    max_steps: int | None = None


class GhostSelfPlayCallback(RLlibCallback):
    """Runs the self-play cycle (see the module docstring).

    Args:
        options: what ``ghost_self_play`` decided (RLlib makes each instance with them through
            a ``functools.partial``).
    """

    def __init__(self, options: SelfPlayOptions | None = None) -> None:
        super().__init__()
        self.options = options
        #: the driver's self-play (None in env runners and before ``on_algorithm_init``)
        self.self_play: RLlibSelfPlay | None = None

    # -- driver ------------------------------------------------------------------------------
    def on_algorithm_init(self, *, algorithm: Any, **kwargs: Any) -> None:
        learners = getattr(algorithm, "learner_group", None)
        if learners is not None:
            learners.foreach_learner(pin_learner_agent_order)
        if self.options is None:
            return
        self.self_play = RLlibSelfPlay(
            settings=self.options.settings, teams=list(self.options.teams),
            seed=self.options.seed, behavior_name=self.options.behavior_name,
            max_steps=self.options.max_steps,
        )  # fmt: skip
        self.self_play.attach(algorithm)

    def on_train_result(self, *, algorithm: Any, result: dict, **kwargs: Any) -> None:
        if self.self_play is not None:
            self.self_play.after_iteration(result)

    # -- env runners -------------------------------------------------------------------------
    def on_episode_created(
        self, *, episode: Any, env_runner: Any = None, env_index: int = 0, **kwargs: Any
    ) -> None:
        if env_runner is not None:
            pin_agent_order(env_runner)
            routing.stamp_episode(episode, env_runner, env_index)

    def on_episode_end(self, *, episode: Any, env_runner: Any = None, **kwargs: Any) -> None:
        if env_runner is not None:
            routing.record_match(episode, env_runner)

    def on_sample_end(self, *, env_runner: Any = None, samples: Any = (), **kwargs: Any) -> None:
        if env_runner is not None:
            routing.count_steps(samples, env_runner)
