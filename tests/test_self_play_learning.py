"""Self-play learns, and without swaps one side stays weak (the negative control)."""

from __future__ import annotations

import torch

from envs.stepping import InProcessStepper
from ghost.config.settings import BehaviorSettings, RunOptions
from ghost.core.settings import SelfPlaySettings
from ghost.running.session import SelfPlaySession
from tests.toy_envs import TwoTeamTargetEnv
from trainers.hyperparameters import PPOSettings
from trainers.run_files.layout import RunLayout
from trainers.settings import NetworkSettings

MAX_STEPS = 24000


def _train(tmp_path, self_play: SelfPlaySettings) -> TwoTeamTargetEnv:
    torch.set_num_threads(1)
    env = TwoTeamTargetEnv(seed=3)
    settings = BehaviorSettings(
        hyperparameters=PPOSettings(batch_size=256, buffer_size=1024, learning_rate=3e-3, beta=0.01),
        network_settings=NetworkSettings(hidden_units=32),
        max_steps=MAX_STEPS, summary_freq=4000, self_play=self_play,
    )  # fmt: skip
    session = SelfPlaySession(options=RunOptions(behaviors={"Target": settings}),
                              stepper=InProcessStepper(env), layout=RunLayout(tmp_path))  # fmt: skip
    session.run()
    assert session.controller.team_changes >= (1 if self_play.steps_per_team < MAX_STEPS else 0)
    return env


def test_self_play_makes_both_sides_strong(tmp_path):
    env = _train(tmp_path, SelfPlaySettings(save_steps=2000, team_change=6000, swap_steps=500))
    # random play scores 0.5 (one of the two unmasked actions is right)
    assert env.recent_accuracy(0) > 0.8
    assert env.recent_accuracy(1) > 0.8


def test_without_swaps_the_ghosted_side_stays_weak(tmp_path):
    never = 10 * MAX_STEPS
    env = _train(tmp_path, SelfPlaySettings(save_steps=2000, team_change=never, swap_steps=never))
    assert env.recent_accuracy(0) > 0.8  # the learning side still learns
    assert env.recent_accuracy(1) < 0.6  # its opponent keeps the untrained first snapshot
