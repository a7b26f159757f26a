"""The learned reward signals a behavior's ``reward_signals`` names, built in the order it names
them (the order of SAC's return streams): curiosity and RND (``trainers.intrinsic_rewards``) and
GAIL (``trainers.gail``), whose demonstrations are read here."""

from __future__ import annotations

from mlagents_envs.base_env import BehaviorSpec

from trainers.demonstrations import load_demonstration
from trainers.gail import GAIL
from trainers.intrinsic_rewards import IntrinsicSignal, make_intrinsic_signals
from trainers.settings import GAILSettings, RewardSignalSettings


def make_reward_signals(
    spec: BehaviorSpec,
    reward_signals: dict[str, RewardSignalSettings],
    *,
    squash: bool = False,
    where: str = "reward_signals",
) -> dict[str, IntrinsicSignal]:
    """The learned signals among ``reward_signals`` (extrinsic is not one), by key.

    Args:
        squash: the policy squashes continuous actions with ``tanh`` (SAC), which GAIL needs to
            read the agent's actions as the environment received them.
        where: the key path of ``reward_signals`` (``behaviors.Tennis.reward_signals``), which
            errors about a ``demo_path`` start with.

    Raises:
        ConfigError: a ``demo_path`` that names nothing, or demonstrations that do not fit
            ``spec`` (``trainers.demonstrations.load_demonstration``).
    """
    signals = make_intrinsic_signals(spec, reward_signals)
    for key, settings in reward_signals.items():
        if isinstance(settings, GAILSettings):
            demo = load_demonstration(settings.demo_path, spec, where=f"{where}.{key}.demo_path")
            signals[key] = GAIL(spec, settings, demo, squash=squash)
    return {key: signals[key] for key in reward_signals if key in signals}
