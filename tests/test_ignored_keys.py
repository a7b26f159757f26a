"""ML-Agents keys that this project does not act on: each is refused or warned about, never ignored
silently (``shared_critic``, ``goal_conditioning_type``, ``threaded``, ``load_model``,
``train_model``)."""

from __future__ import annotations

import logging

import pytest
from mlagents_envs.base_env import ActionSpec, BehaviorSpec, ObservationSpec, ObservationType

from envs.behavior_id import BehaviorId
from envs.specs import vector_observation_spec
from ghost.config.loader import options_from_dict
from ghost.exceptions import ConfigError, UnsupportedFeatureError
from trainers.hyperparameters import PPOSettings
from trainers.networks import ObservationEncoder
from trainers.ppo import PPOTrainer
from trainers.settings import ConditioningType, NetworkSettings, TrainerSettings

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def behavior(**section):
    return {"behaviors": {"Tennis": section}}


def warnings_of(raw, caplog) -> str:
    with caplog.at_level(logging.WARNING, logger="ghost.config"):
        options_from_dict(raw)
    return caplog.text


# -- shared_critic: refused --------------------------------------------------------------------
def test_shared_critic_true_is_refused_with_its_key_path():
    with pytest.raises(UnsupportedFeatureError) as caught:
        options_from_dict(behavior(hyperparameters={"shared_critic": True}))
    message = str(caught.value)
    assert message.startswith("behaviors.Tennis.hyperparameters.shared_critic = True: ")
    assert "not supported yet" in message and "remove `shared_critic`" in message


def test_shared_critic_false_loads():
    settings = options_from_dict(behavior(hyperparameters={"shared_critic": False}))
    assert settings.behaviors["Tennis"].hyperparameters.shared_critic is False


def test_ppo_trainer_refuses_shared_critic_built_in_code(tmp_path):
    settings = TrainerSettings(hyperparameters=PPOSettings(shared_critic=True))
    trainer = PPOTrainer(behavior_name="Tennis", settings=settings, artifact_dir=tmp_path)
    spec = BehaviorSpec([vector_observation_spec(3)], ActionSpec.create_discrete((2,)))
    behavior_id = BehaviorId("Tennis", 0)
    with pytest.raises(UnsupportedFeatureError, match="shared_critic"):
        trainer.add_policy(behavior_id, trainer.create_policy(behavior_id, spec))


# -- goal_conditioning_type: none works, hyper is refused where it would matter ----------------
GOAL = ObservationSpec(
    shape=(2,),
    dimension_property=vector_observation_spec(2).dimension_property,
    observation_type=ObservationType.GOAL_SIGNAL,
    name="goal",
)


def test_goal_conditioning_type_takes_only_ml_agents_values():
    raw = behavior(network_settings={"goal_conditioning_type": "none"})
    network = options_from_dict(raw).behaviors["Tennis"].network_settings
    assert network.goal_conditioning_type is ConditioningType.NONE
    with pytest.raises(ConfigError) as caught:
        options_from_dict(behavior(network_settings={"goal_conditioning_type": "film"}))
    assert str(caught.value).startswith(
        "behaviors.Tennis.network_settings.goal_conditioning_type = 'film': expected one of hyper"
    )


def test_hyper_goal_conditioning_is_refused_for_goal_observations():
    with pytest.raises(UnsupportedFeatureError) as caught:
        ObservationEncoder([vector_observation_spec(4), GOAL], NetworkSettings())
    message = str(caught.value)
    assert "network_settings.goal_conditioning_type = 'hyper'" in message
    assert "goal" in message and "goal_conditioning_type: none" in message


def test_goal_observations_are_plain_inputs_with_none():
    settings = NetworkSettings(goal_conditioning_type=ConditioningType.NONE)
    encoder = ObservationEncoder([vector_observation_spec(4), GOAL], settings)
    assert encoder.output_size == 6


def test_hyper_without_goal_observations_changes_nothing():
    encoder = ObservationEncoder([vector_observation_spec(4)], NetworkSettings())
    assert encoder.output_size == 4


# -- threaded, load_model, train_model: no effect, and a warning says so -----------------------
def test_threaded_true_warns_with_its_key_path(caplog):
    text = warnings_of(
        {"default_settings": {"threaded": True}, "behaviors": {"Tennis": {}}}, caplog
    )
    assert "behaviors.Tennis.threaded, default_settings.threaded: true has no effect" in text
    assert "main loop" in text


def test_deprecated_checkpoint_flags_warn_what_to_use(caplog):
    raw = {"checkpoint_settings": {"load_model": True, "train_model": True}}
    text = warnings_of(raw, caplog)
    assert "checkpoint_settings.load_model" in text and "use `resume: true`" in text
    assert "checkpoint_settings.train_model" in text and "training is the default" in text


def test_their_defaults_say_nothing(caplog):
    raw = {
        "behaviors": {"Tennis": {"threaded": False}},
        "checkpoint_settings": {"load_model": False, "train_model": False},
    }
    assert warnings_of(raw, caplog) == ""
