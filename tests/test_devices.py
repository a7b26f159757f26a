"""Where networks train and where policies act: ``torch_settings.device: auto`` and a separate
acting device whose copy of the actor follows every update."""

from __future__ import annotations

import logging

import numpy as np
import pytest
import torch

import ghost
from envs.tennis import Tennis
from ghost.config.torch_device import check_torch_device
from ghost.exceptions import ConfigError
from trainers import load_policy
from trainers.devices import WIDE_NETWORK_UNITS, acting_device_argument, behavior_devices
from trainers.policy import TorchPolicy
from trainers.settings import NetworkSettings

# a second name for the CPU: the policy keeps a separate acting copy, as it would on a GPU
OTHER_CPU = "cpu:0"


@pytest.fixture(autouse=True)
def one_thread():
    torch.set_num_threads(1)


def test_auto_trains_wide_networks_and_poca_on_a_gpu_and_acts_on_the_cpu():
    wide, narrow = WIDE_NETWORK_UNITS, WIDE_NETWORK_UNITS // 2
    chosen = behavior_devices(None, None, wide, "ppo", gpu_present=True)
    assert (chosen.update, chosen.acting) == ("cuda", "cpu")
    assert "256 hidden units" in chosen.reason
    assert behavior_devices("auto", None, narrow, "ppo", gpu_present=True).update == "cpu"
    assert behavior_devices("auto", None, narrow, "sac", gpu_present=True).update == "cpu"
    assert behavior_devices("auto", None, narrow, "poca", gpu_present=True).update == "cuda"
    assert behavior_devices("auto", None, wide, "poca", gpu_present=False).update == "cpu"
    # a device given is used as given; acting stays on the CPU unless asked otherwise
    assert behavior_devices("cuda:1", None, narrow, "ppo", gpu_present=True).update == "cuda:1"
    assert behavior_devices("cuda", "cuda", wide, "ppo", gpu_present=True).acting == "cuda"


def test_a_plugin_trainer_without_acting_device_is_built_where_it_is_moot():
    assert acting_device_argument("cpu", "cpu") == {}
    assert acting_device_argument("cuda", "cpu") == {"acting_device": "cpu"}


def test_device_settings_are_checked_by_name():
    check_torch_device("auto")
    check_torch_device(None, key="acting_device")
    with pytest.raises(ConfigError, match="torch_settings.acting_device 'auto' is not a torch"):
        check_torch_device("auto", key="acting_device")
    with pytest.raises(ConfigError, match="torch_settings.device 'gpu'.*use auto, cpu"):
        check_torch_device("gpu")


def _tennis_policy(acting_device: str | None) -> TorchPolicy:
    spec = Tennis(num_arenas=1).behavior_specs["Tennis?team=0"]
    torch.manual_seed(0)
    return TorchPolicy(
        behavior_spec=spec,
        network_settings=NetworkSettings(hidden_units=16, num_layers=1),
        acting_device=acting_device,
    )


def test_the_acting_copy_follows_updates_weights_and_statistics():
    together, apart = _tennis_policy(None), _tennis_policy(OTHER_CPU)
    assert together.acting_actor is together.actor
    assert apart.acting_actor is not apart.actor
    size = apart.behavior_spec.observation_specs[0].shape[0]
    obs = [np.random.default_rng(0).normal(size=(5, size)).astype(np.float32)]

    def decide(policy: TorchPolicy) -> np.ndarray:
        return policy.act(obs, deterministic=True).continuous

    np.testing.assert_array_equal(decide(apart), decide(together))
    for policy in (together, apart):  # an update changes the trained network in place
        with torch.no_grad():
            for parameter in policy.actor.parameters():
                parameter.add_(0.5)
        policy.weights_changed()
    np.testing.assert_array_equal(decide(apart), decide(together))
    for policy in (together, apart):
        policy.update_normalizer([obs[0] * 3.0 + 1.0])
    np.testing.assert_array_equal(decide(apart), decide(together))
    apart.load_weights(_tennis_policy(None).get_weights())
    np.testing.assert_array_equal(decide(apart), decide(_tennis_policy(None)))
    assert all(w.device.type == "cpu" for w in apart.get_weights().values())


def test_an_opponent_network_lives_where_it_acts(tmp_path):
    """A frozen opponent is never trained: one network on the acting device, no second copy."""
    from envs.behavior_id import BehaviorId
    from trainers.ppo import PPOTrainer
    from trainers.settings import TrainerSettings

    trainer = PPOTrainer(
        behavior_name="Tennis", settings=TrainerSettings(), artifact_dir=tmp_path,
        device="cpu", acting_device=OTHER_CPU,
    )  # fmt: skip
    behavior_id = BehaviorId.parse("Tennis?team=1")
    spec = Tennis(num_arenas=1).behavior_specs["Tennis?team=1"]
    learner = trainer.create_policy(behavior_id, spec)
    assert learner.device == "cpu" and learner.acting_actor is not learner.actor
    opponent = trainer.create_opponent_policy(behavior_id, spec)
    assert opponent.device == OTHER_CPU and opponent.acting_actor is opponent.actor


def _config(trainer_type: str, acting_device: str | None) -> dict:
    hyperparameters = (
        {"batch_size": 128, "buffer_size": 512}
        if trainer_type == "ppo"
        else {"batch_size": 64, "buffer_size": 4096, "buffer_init_steps": 256}
    )
    return {
        "behaviors": {
            "Tennis": {
                "trainer_type": trainer_type,
                "hyperparameters": hyperparameters,
                "network_settings": {"hidden_units": 32},
                "max_steps": 3000,
                "summary_freq": 1000,
                "self_play": {"save_steps": 500, "team_change": 1000, "swap_steps": 250},
            }
        },
        "env_settings": {"env_path": "tennis", "seed": 5, "num_envs": 1},
        "engine_settings": {},
        "torch_settings": {"acting_device": acting_device},
    }


@pytest.mark.parametrize("trainer_type", ["ppo", "sac"])
def test_a_run_acting_on_a_separate_copy_is_the_same_run(tmp_path, caplog, trainer_type):
    """Same seed, same run: sampling from the acting copy sees every update, snapshot swap and
    normalizer change exactly when sampling from the trained network would."""
    plain = ghost.train(_config(trainer_type, None), run_id="plain", results_dir=tmp_path)
    with caplog.at_level(logging.INFO, logger="trainers"):
        apart = ghost.train(_config(trainer_type, OTHER_CPU), run_id="apart", results_dir=tmp_path)
    assert "Tennis trains on cpu and acts on cpu:0" in caplog.text
    assert apart.ratings == plain.ratings
    torch.testing.assert_close(
        load_policy(apart.policies["Tennis"]).get_weights(),
        load_policy(plain.policies["Tennis"]).get_weights(),
        rtol=0,
        atol=0,
    )
