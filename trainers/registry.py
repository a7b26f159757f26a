"""The built-in trainer types, exposed through the ``ghost.trainer_type`` entry-point group."""

from __future__ import annotations

from ghost.settings import HyperparamSettings
from trainers.base import Trainer
from trainers.hyperparameters import PPOSettings, SACSettings


def builtin_trainer_types() -> tuple[dict[str, type[Trainer]], dict[str, type[HyperparamSettings]]]:
    """``({name: TrainerClass}, {name: HyperparamSettingsClass})`` for PPO and SAC."""
    from trainers.ppo import PPOTrainer
    from trainers.sac import SACTrainer

    return {"ppo": PPOTrainer, "sac": SACTrainer}, {"ppo": PPOSettings, "sac": SACSettings}
