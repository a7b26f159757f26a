"""``GhostPPO``: RLlib's PPO whose own checkpoints carry the self-play state
(``checkpoints.SelfPlayCheckpoints``); ``ghost_self_play`` makes a ``PPOConfig`` build it, so
``Algorithm.save``/``restore``, ``Algorithm.from_checkpoint`` and Tune keep the window, ratings
and league (train with Tune through ``tune.Tuner(config.algo_class, param_space=config)``)."""

from __future__ import annotations

from typing import Any

from ray.rllib.algorithms.ppo import PPO

from ghost.exceptions import GhostError
from ghost.integrations.rllib.checkpoints import SelfPlayCheckpoints


class GhostPPO(SelfPlayCheckpoints, PPO):
    """RLlib's PPO with the self-play state in its checkpoints."""


def with_self_play_checkpoints(algo_class: Any) -> type:
    """The Algorithm class ``ghost_self_play`` builds in place of ``algo_class``.

    Raises:
        GhostError: an Algorithm other than PPO (a subclass of PPO can mix in
            ``SelfPlayCheckpoints`` itself).
    """
    if isinstance(algo_class, type) and issubclass(algo_class, SelfPlayCheckpoints):
        return algo_class
    if algo_class is PPO:
        return GhostPPO
    name = getattr(algo_class, "__name__", algo_class)
    if isinstance(algo_class, type) and issubclass(algo_class, PPO):
        raise GhostError(
            f"{name} is a PPO subclass: define it as `class {name}(SelfPlayCheckpoints, ...)` "
            "(from ghost.integrations.rllib) so its checkpoints carry the self-play state"
        )
    raise GhostError(f"ghost_self_play drives RLlib's PPO; got a config for {name}")
