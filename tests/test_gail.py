"""GAIL (``reward_signals.gail``): ML-Agents' keys and defaults, a discriminator that tells the
demonstrations from other play and pays more for play like them, VAIL, PPO, SAC and POCA training
with it, and checkpoints that carry the discriminator."""

from __future__ import annotations

import logging

import attrs
import numpy as np
import pytest
import torch

from envs.exceptions import DemoFileError
from envs.games import make_game
from envs.stepping import InProcessStepper
from ghost.config.loader import options_from_dict, options_to_dict
from ghost.exceptions import UnsupportedFeatureError
from tests.conftest import FakeEntryPoint, FakeTrainer, builtin_types
from tests.demo_fixtures import record_scripted
from trainers.demonstrations import DemoRows
from trainers.exceptions import ConfigError
from trainers.gail import GAIL, VAIL_CODE_SIZE
from trainers.hyperparameters import POCASettings, PPOSettings, SACSettings
from trainers.rollout import Transitions
from trainers.run_files.layout import RunLayout
from trainers.run_files.safe_load import load_pt
from trainers.settings import (
    GAILSettings,
    MemorySettings,
    NetworkSettings,
    RewardSignalSettings,
    TrainerSettings,
)
from trainers.training_loop import TrainingLoop

pytestmark = pytest.mark.usefixtures("one_torch_thread")

SMALL = NetworkSettings(hidden_units=32, num_layers=2)
TAGS = {
    "Policy/GAIL Reward", "Policy/GAIL Value Estimate", "Losses/GAIL Loss",
    "Policy/GAIL Policy Estimate", "Policy/GAIL Expert Estimate", "Policy/GAIL Grad Mag Loss",
}  # fmt: skip
VAIL_TAGS = {"Policy/GAIL Beta", "Losses/GAIL KL Loss"}


@pytest.fixture(scope="module")
def tennis_demo(tmp_path_factory):
    folder = tmp_path_factory.mktemp("demos")
    return record_scripted(folder / "Tennis.demo", "tennis", "medium", episodes=20)


@pytest.fixture(scope="module")
def random_play(tmp_path_factory):
    folder = tmp_path_factory.mktemp("demos")
    return record_scripted(folder / "Random.demo", "tennis", "random", episodes=20, seed=1)


def tennis_signals(**gail) -> dict:
    return {"behaviors": {"Tennis": {"reward_signals": {"extrinsic": {}, "gail": gail}}}}


# -- configuration -------------------------------------------------------------------------------
def test_the_signal_takes_ml_agents_keys_and_defaults_and_reads_back():
    options = options_from_dict(tennis_signals(demo_path="demos/Tennis.demo", use_vail=True))
    gail = options.behaviors["Tennis"].reward_signals["gail"]
    assert gail == GAILSettings(demo_path="demos/Tennis.demo", use_vail=True)
    assert (gail.strength, gail.gamma, gail.learning_rate) == (1.0, 0.99, 3e-4)
    assert (gail.encoding_size, gail.use_actions) == (None, False)
    assert gail.network_settings == NetworkSettings()
    written = options_to_dict(options)["behaviors"]["Tennis"]["reward_signals"]["gail"]
    assert written["demo_path"] == "demos/Tennis.demo" and written["use_vail"] is True
    assert options_from_dict(options_to_dict(options)) == options


@pytest.mark.parametrize(
    ("section", "words"),
    [
        ({}, "reward_signals.gail: GAILSettings needs the key(s) demo_path"),
        ({"demo_path": ""}, "reward_signals.gail.demo_path = '': must name a .demo file"),
        ({"demo_path": "a.demo", "use_action": True}, "did you mean 'use_actions'?"),
        ({"demo_path": "a.demo", "learning_rate": 0}, "gail.learning_rate = 0: must be > 0"),
    ],
)
def test_a_wrong_signal_is_named_by_its_key(section, words):
    with pytest.raises(ConfigError) as caught:
        options_from_dict(tennis_signals(**section))
    assert "behaviors.Tennis." in str(caught.value) and words in str(caught.value)


def test_a_plugin_trainer_type_is_refused_gail(use_entry_points):
    use_entry_points(
        FakeEntryPoint("builtin", builtin_types),
        FakeEntryPoint("mine", lambda: ({"mine": FakeTrainer}, {"mine": PPOSettings})),
    )
    raw = tennis_signals(demo_path="a.demo")
    raw["behaviors"]["Tennis"]["trainer_type"] = "mine"
    with pytest.raises(UnsupportedFeatureError, match="only with ppo, sac, poca") as caught:
        options_from_dict(raw)
    assert "behaviors.Tennis.reward_signals.gail" in str(caught.value)


def test_a_demo_path_that_names_nothing_is_named_when_training_starts(tmp_path):
    settings = gail_settings("sac", str(tmp_path / "nowhere"))
    with pytest.raises(DemoFileError) as caught:
        train_tennis(tmp_path / "run", settings)
    assert str(caught.value).startswith(
        "behaviors.Tennis.reward_signals.gail.demo_path: no .demo file or folder at"
    )


# -- the discriminator ---------------------------------------------------------------------------
def as_steps(demo) -> Transitions:
    """A recorded demonstration's acting rows as an agent's transitions."""
    rows = DemoRows.of(demo.demo)
    n = len(rows)
    return Transitions(
        obs=rows.obs, next_obs=rows.obs,
        continuous_raw=rows.continuous * 3.0,  # PPO sends a third of its raw action
        discrete=rows.discrete, action_mask=None, next_action_mask=None,
        log_probs=np.zeros((n, 2), np.float32), rewards=np.zeros(n, np.float32),
        dones=rows.ended, continues=rows.next_index >= 0, slots=rows.episode, ended=rows.ended,
    )  # fmt: skip


def signal(demo, **settings) -> GAIL:
    torch.manual_seed(0)
    settings = {"network_settings": SMALL, "learning_rate": 1e-3, **settings}
    return GAIL(demo.spec, GAILSettings(demo_path="unused", **settings), DemoRows.of(demo.demo))


@pytest.mark.parametrize(
    "keys", [{}, {"use_actions": True}, {"use_vail": True}], ids=["obs", "actions", "vail"]
)
def test_the_discriminator_tells_demonstrations_from_other_play_and_pays_for_the_first(
    tennis_demo, random_play, keys
):
    """The other play is the ``random`` level's: the gradient penalty keeps ``D`` smooth, so it
    takes a few hundred steps to tell them apart."""
    gail = signal(tennis_demo, learning_rate=3e-3, **keys)
    expert, other = as_steps(tennis_demo), as_steps(random_play)
    rng = np.random.default_rng(0)
    before = gail.rewards(expert).mean(), gail.rewards(other).mean()
    assert abs(before[0] - before[1]) < 0.1  # untrained, it cannot tell
    for _ in range(300):
        stats = gail.update(other, rng.choice(len(other), 128))
    assert stats["Policy/GAIL Expert Estimate"] > stats["Policy/GAIL Policy Estimate"] + 0.05
    assert gail.rewards(expert).mean() > gail.rewards(other).mean() + 0.15
    expected = TAGS - {"Policy/GAIL Reward", "Policy/GAIL Value Estimate"}
    assert set(stats) == expected | (VAIL_TAGS if keys.get("use_vail") else set())


def test_the_reward_is_minus_log_one_minus_d_and_stays_finite(tennis_demo):
    gail = signal(tennis_demo)
    steps = as_steps(tennis_demo)
    with torch.no_grad():
        gail.discriminator.estimator.bias.fill_(1e3)  # D = 1 everywhere
    rewards = gail.rewards(steps)
    # -log(1e-7) = 16.1, less the float32 rounding of 1 - 1e-7
    assert np.isfinite(rewards).all() and 15.5 < rewards.max() < 16.2
    with torch.no_grad():
        gail.discriminator.estimator.bias.fill_(0.0)
        gail.discriminator.estimator.weight.fill_(0.0)  # D = 1/2
    assert gail.rewards(steps) == pytest.approx(np.full(len(steps.rewards), np.log(2)), rel=1e-5)
    assert gail.scaled_rewards(steps) == pytest.approx(gail.rewards(steps))


def test_vail_beta_rises_while_the_code_says_too_much_and_never_goes_below_zero(tennis_demo):
    gail = signal(tennis_demo, use_vail=True)
    assert gail.discriminator.code_mean.out_features == VAIL_CODE_SIZE
    steps = as_steps(tennis_demo)
    rng = np.random.default_rng(0)
    betas = []
    for _ in range(30):
        stats = gail.update(steps, rng.choice(len(steps), 64))
        betas.append(stats["Policy/GAIL Beta"])
        expected = max(0.0, (betas[-2] if len(betas) > 1 else 0.0)
                       + 0.0005 * (stats["Losses/GAIL KL Loss"] - 0.5))  # fmt: skip
        assert betas[-1] == pytest.approx(expected, abs=1e-7)
    assert min(betas) >= 0.0


# -- in the trainers -----------------------------------------------------------------------------
HYPERPARAMETERS = {
    "ppo": PPOSettings(batch_size=64, buffer_size=128),
    "poca": POCASettings(batch_size=64, buffer_size=128),
    "sac": SACSettings(batch_size=64, buffer_size=2000, steps_per_update=10),
}


def gail_settings(trainer_type: str, demo_path: str, *, max_steps: int = 400, **keys):
    gail = GAILSettings(demo_path=demo_path, network_settings=SMALL, **keys)
    return TrainerSettings(
        trainer_type=trainer_type,
        hyperparameters=HYPERPARAMETERS[trainer_type],
        network_settings=SMALL,
        reward_signals={"extrinsic": RewardSignalSettings(), "gail": gail},
        max_steps=max_steps, summary_freq=max_steps, checkpoint_interval=max_steps,
    )  # fmt: skip


def train_tennis(path, settings: TrainerSettings, *, resume: bool = False) -> TrainingLoop:
    torch.manual_seed(0)
    loop = TrainingLoop(
        behaviors={"Tennis": settings},
        stepper=InProcessStepper(make_game("tennis", num_arenas=4)),
        layout=RunLayout(path),
        seed=0,
    )
    loop.run(resume=resume)
    return loop


def signals_of(trainer) -> dict:
    return trainer.signals.signals if hasattr(trainer.signals, "signals") else trainer.signals


@pytest.mark.parametrize("trainer_type", ["ppo", "sac", "poca"])
def test_every_trainer_learns_with_gail_and_resumes_its_discriminator(
    tmp_path, tennis_demo, trainer_type
):
    path = tennis_demo.path
    settings = gail_settings(trainer_type, path, use_vail=True, use_actions=True)
    trainer = train_tennis(tmp_path / "run", settings).trainers["Tennis"]
    assert set(trainer.stats.latest) >= TAGS | VAIL_TAGS
    if trainer_type == "poca":
        assert "Policy/GAIL Baseline Estimate" in trainer.stats.latest
    saved = signals_of(trainer)["gail"].state_dict()
    checkpoint = load_pt(next((tmp_path / "run" / "Tennis" / "checkpoints").glob("*.pt")))
    stored = checkpoint["learner"]["reward_signals"]["gail"]
    assert {"discriminator", "optimizer"} <= set(stored)
    assert "beta" in stored["discriminator"]
    again = train_tennis(tmp_path / "run", settings, resume=True).trainers["Tennis"]
    restored = signals_of(again)["gail"].state_dict()
    torch.testing.assert_close(restored["discriminator"], saved["discriminator"])
    torch.testing.assert_close(restored["optimizer"], saved["optimizer"])


def test_sac_updates_gail_once_per_reward_signal_steps_per_update(tmp_path, tennis_demo):
    path = tennis_demo.path
    settings = gail_settings("sac", path, max_steps=600)
    hyperparameters = attrs.evolve(settings.hyperparameters, reward_signal_steps_per_update=20.0)
    trainer = train_tennis(
        tmp_path / "run", attrs.evolve(settings, hyperparameters=hyperparameters)
    ).trainers["Tennis"]
    assert trainer.updates > 40
    assert trainer.signal_updates == pytest.approx(trainer.updates / 2, abs=1)


def test_memory_in_the_signals_network_settings_is_ignored_with_a_warning(tennis_demo, caplog):
    network = attrs.evolve(SMALL, memory=MemorySettings(memory_size=16))
    with caplog.at_level(logging.WARNING, logger="trainers.gail"):
        gail = signal(tennis_demo, network_settings=network, encoding_size=24)
    assert "reward_signals.gail.network_settings.memory is ignored" in caplog.text
    assert gail.discriminator.body[0].out_features == 24  # encoding_size sets the width
