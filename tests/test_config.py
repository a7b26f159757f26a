"""The configuration loader: strict keys, ranges, ML-Agents compatibility, overrides, round trip."""

from __future__ import annotations

import logging
from pathlib import Path

import attrs
import pytest

from envs import settings as env_schema
from envs.behavior_id import BehaviorId
from ghost.config import settings as schema
from ghost.config.behavior_matching import match_behaviors
from ghost.config.loader import (
    apply_overrides,
    load_options,
    options_from_dict,
    resolve_options,
    with_deterministic_actions,
    write_options,
)
from ghost.config.settings import default_behavior_settings
from ghost.core.settings import SelfPlaySettings
from ghost.exceptions import (
    ConfigError,
    EnvironmentSpecError,
    TrainerTypeError,
    UnsupportedFeatureError,
)
from tests.conftest import (
    REFERENCE_CONFIGS,
    FakeEntryPoint,
    FakeTrainer,
    builtin_types,
    needs_reference_configs,
)
from tests.fake_envs import spec
from trainers import settings as trainer_schema
from trainers.hyperparameters import POCASettings, PPOSettings, SACSettings
from trainers.settings import EncoderType, ScheduleType

DOCS = Path(__file__).resolve().parents[1] / "docs" / "config-reference.md"

pytestmark = pytest.mark.usefixtures("fake_registry")


def behavior(**section):
    return {"behaviors": {"Tennis": section}}


def error_of(raw, kind=ConfigError) -> str:
    with pytest.raises(kind) as caught:
        options_from_dict(raw)
    return str(caught.value)


# -- ML-Agents' own configs --------------------------------------------------------------------
@needs_reference_configs
@pytest.mark.parametrize("name", ["3DBall-ppo.yaml", "Tennis-ppo.yaml", "Tennis-sac.yaml"])
def test_reference_configs_load_unchanged(name):
    options = load_options(REFERENCE_CONFIGS / name)
    assert options.behaviors
    for settings in options.behaviors.values():
        assert settings.reward_signals["extrinsic"].gamma == 0.99


@needs_reference_configs
def test_reference_tennis_values():
    ppo = load_options(REFERENCE_CONFIGS / "Tennis-ppo.yaml").behaviors["Tennis"]
    assert isinstance(ppo.hyperparameters, PPOSettings)
    assert ppo.hyperparameters.batch_size == 2048
    assert ppo.hyperparameters.learning_rate_schedule is ScheduleType.CONSTANT
    assert ppo.network_settings.hidden_units == 256
    assert ppo.threaded is True
    assert ppo.self_play == SelfPlaySettings(save_steps=50000, team_change=100000, swap_steps=2000)
    sac = load_options(REFERENCE_CONFIGS / "Tennis-sac.yaml").behaviors["Tennis"]
    assert isinstance(sac.hyperparameters, SACSettings)
    assert sac.hyperparameters.steps_per_update == 10.0
    assert sac.self_play.steps_per_team == 250000


@needs_reference_configs
@pytest.mark.parametrize(
    ("name", "behavior_name"),
    [("SoccerTwos-poca.yaml", "SoccerTwos"), ("StrikersVsGoalie-poca.yaml", "Goalie")],
)
def test_poca_reference_configs_load(name, behavior_name):
    settings = load_options(REFERENCE_CONFIGS / name).behaviors[behavior_name]
    assert settings.trainer_type == "poca"
    hyperparameters = settings.hyperparameters
    assert isinstance(hyperparameters, POCASettings)
    assert (hyperparameters.batch_size, hyperparameters.buffer_size) == (2048, 20480)
    # ML-Agents 1.1 (RunOptions.from_dict) gives POCA's beta and epsilon the learning rate's
    # schedule when theirs are not written, as PPO's
    assert hyperparameters.learning_rate_schedule is ScheduleType.CONSTANT
    assert hyperparameters.beta_schedule_resolved is ScheduleType.CONSTANT
    assert hyperparameters.epsilon_schedule_resolved is ScheduleType.CONSTANT
    assert settings.self_play.window == 10


# -- strict keys ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("typo", "suggestion"),
    [
        ("swap_step", "swap_steps"),
        ("play_against_current_self_ratio", "play_against_latest_model_ratio"),
    ],
)
def test_self_play_typo_names_path_and_closest_key(write_yaml, typo, suggestion):
    path = write_yaml(behavior(trainer_type="ppo", self_play={"save_steps": 100, typo: 0.5}))
    with pytest.raises(ConfigError) as caught:
        load_options(path)
    message = str(caught.value)
    assert f"behaviors.Tennis.self_play.{typo} = 0.5" in message
    assert f"did you mean '{suggestion}'" in message
    assert "window" in message and "initial_elo" in message  # the valid keys are listed


def test_unknown_top_level_key():
    message = error_of({"behavior": {"Tennis": {}}})
    assert message.startswith("behavior = ")
    assert "did you mean 'behaviors'" in message


@pytest.mark.parametrize(
    ("raw", "path"),
    [
        (behavior(hyperparameters={"bta": 0.1}), "behaviors.Tennis.hyperparameters.bta"),
        (
            behavior(network_settings={"hiden_units": 3}),
            "behaviors.Tennis.network_settings.hiden_units",
        ),
        (
            behavior(reward_signals={"extrinsic": {"gama": 0.9}}),
            "behaviors.Tennis.reward_signals.extrinsic.gama",
        ),
        (behavior(reward_signals={"extrinsc": {}}), "behaviors.Tennis.reward_signals.extrinsc"),
        ({"env_settings": {"num_env": 2}}, "env_settings.num_env"),
        ({"engine_settings": {"timescale": 2}}, "engine_settings.timescale"),
        ({"checkpoint_settings": {"runid": "x"}}, "checkpoint_settings.runid"),
        ({"default_settings": {"max_step": 5}}, "default_settings.max_step"),
    ],
)
def test_unknown_keys_everywhere(raw, path):
    message = error_of(raw)
    assert message.startswith(f"{path} = ")
    assert "did you mean" in message


def test_hyperparameters_checked_against_the_behaviors_trainer_type():
    message = error_of(behavior(trainer_type="sac", hyperparameters={"beta": 0.01}))
    assert "behaviors.Tennis.hyperparameters.beta" in message
    assert "buffer_init_steps" in message


def test_unknown_trainer_type_lists_registered():
    with pytest.raises(TrainerTypeError) as caught:
        options_from_dict(behavior(trainer_type="ppx"))
    assert "behaviors.Tennis.trainer_type = 'ppx'" in str(caught.value)
    assert "ppo, sac" in str(caught.value) and "did you mean 'ppo'" in str(caught.value).lower()


# -- ranges and types -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("self_play", "expected"),
    [
        ({"window": 0}, "behaviors.Tennis.self_play.window = 0: must be > 0"),
        (
            {"play_against_latest_model_ratio": 1.5},
            "behaviors.Tennis.self_play.play_against_latest_model_ratio = 1.5: must be in [0, 1]",
        ),
        ({"save_steps": -5}, "behaviors.Tennis.self_play.save_steps = -5: must be > 0"),
        ({"elo_k": 0}, "behaviors.Tennis.self_play.elo_k = 0: must be > 0"),
    ],
)
def test_out_of_range_self_play(self_play, expected):
    assert error_of(behavior(self_play=self_play)) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (
            behavior(max_steps="many"),
            "behaviors.Tennis.max_steps = 'many': expected a whole number",
        ),
        (behavior(max_steps=2.5), "expected a whole number"),
        (behavior(threaded="yes"), "behaviors.Tennis.threaded = 'yes': expected true or false"),
        (behavior(hyperparameters={"epsilon": 1.0}), "epsilon = 1.0: must be in (0, 1)"),
        (behavior(reward_signals={"extrinsic": {"gamma": 0}}), "gamma = 0: must be in (0, 1]"),
        (behavior(network_settings={"vis_encode_type": "cnn"}), "expected one of simple"),
        (behavior(self_play=[1]), "behaviors.Tennis.self_play = [1]: expected a section"),
        ({"env_settings": {"base_port": 80}}, "env_settings.base_port = 80: must be >= 1024"),
        (
            {"env_settings": {"backend": "cluster"}},
            "env_settings.backend = 'cluster': expected one of local, ray",
        ),
        (
            {"env_settings": {"ray_wait_fraction": 0}},
            "env_settings.ray_wait_fraction = 0: must be in (0, 1]",
        ),
        (
            {"env_settings": {"env_args": ["a", {}]}},
            "env_settings.env_args[1] = {}: expected a string",
        ),
        ({"behaviors": {"Tennis": 3}}, "behaviors.Tennis = 3: expected a section"),
        (["not", "a", "mapping"], "configuration = "),
    ],
)
def test_wrong_values(raw, expected):
    assert expected in error_of(raw)


def test_numbers_as_yaml_reads_them(write_yaml):
    # YAML 1.1 reads 3e-4 and 5.0e7 as strings; ML-Agents configs use both forms.
    path = write_yaml(
        "behaviors:\n  T:\n    max_steps: 5.0e7\n    hyperparameters:\n      learning_rate: 3e-4\n"
    )
    settings = load_options(path).behaviors["T"]
    assert settings.max_steps == 50_000_000 and isinstance(settings.max_steps, int)
    assert settings.hyperparameters.learning_rate == pytest.approx(3e-4)


# -- unsupported ML-Agents features -------------------------------------------------------------
@pytest.mark.parametrize(
    ("raw", "path"),
    [
        (
            behavior(network_settings={"memory": {}}, hyperparameters={"magnet_strength": 0.1}),
            "network_settings.memory",
        ),
        (
            behavior(
                network_settings={"memory": {}},
                self_play={"average_policy": {"enabled": True}},
            ),
            "network_settings.memory",
        ),
        (behavior(network_settings={"vis_encode_type": "resnet"}), "vis_encode_type"),
        (behavior(network_settings={"vis_encode_type": "match3"}), "vis_encode_type"),
    ],
)
def test_unsupported_features_are_named(raw, path):
    message = error_of(raw, UnsupportedFeatureError)
    assert path in message
    assert "not supported" in message


def test_plain_environment_parameters():
    options = options_from_dict({"environment_parameters": {"gravity": 9, "size": "0.5"}})
    values = {k: v.curriculum[0].value.value for k, v in options.environment_parameters.items()}
    assert values == {"gravity": 9.0, "size": 0.5}
    assert "expected a number or a sampler" in error_of({"environment_parameters": {"g": "heavy"}})


def test_memory_takes_ml_agents_keys_and_defaults_with_ppo():
    memory = (
        options_from_dict(behavior(network_settings={"memory": {"memory_size": 64}}))
        .behaviors["Tennis"]
        .network_settings.memory
    )
    assert (memory.memory_size, memory.sequence_length) == (64, 64)
    message = error_of(behavior(network_settings={"memory": {"memory_size": 63}}))
    assert "network_settings.memory.memory_size" in message
    assert "even" in message


@pytest.mark.parametrize("trainer_type", ["sac", "poca"])
def test_memory_is_accepted_by_the_trainer_types_that_train_it(trainer_type):
    raw = behavior(trainer_type=trainer_type, network_settings={"memory": {"memory_size": 64}})
    settings = options_from_dict(raw).behaviors["Tennis"]
    assert settings.network_settings.memory.memory_size == 64


def test_curiosity_and_rnd_take_ml_agents_keys_and_defaults():
    signals = (
        options_from_dict(
            behavior(
                reward_signals={
                    "extrinsic": {},
                    "curiosity": {"strength": 0.02, "encoding_size": 64},
                    "rnd": {"gamma": 0.9, "network_settings": {"hidden_units": 32}},
                }
            )
        )
        .behaviors["Tennis"]
        .reward_signals
    )
    curiosity, rnd = signals["curiosity"], signals["rnd"]
    assert (curiosity.strength, curiosity.gamma, curiosity.learning_rate) == (0.02, 0.99, 3.0e-4)
    assert curiosity.encoding_size == 64
    assert (rnd.strength, rnd.gamma, rnd.learning_rate) == (1.0, 0.9, 1.0e-4)
    assert rnd.network_settings.hidden_units == 32
    message = error_of(behavior(reward_signals={"extrinsic": {}, "curiosity": {"lr": 1}}))
    assert "reward_signals.curiosity.lr" in message and "learning_rate" in message
    message = error_of(behavior(reward_signals={"extrinsic": {}, "curiosty": {}}))
    assert "did you mean 'curiosity'" in message and "extrinsic, curiosity, rnd, gail" in message


@pytest.mark.parametrize("trainer_type", ["ppo", "sac", "poca"])
def test_every_builtin_trainer_takes_curiosity_and_rnd(trainer_type):
    signals = {"extrinsic": {}, "curiosity": {"strength": 0.1}, "rnd": {"gamma": 0.9}}
    settings = options_from_dict(
        behavior(trainer_type=trainer_type, reward_signals=signals)
    ).behaviors["Tennis"]
    assert settings.reward_signals["curiosity"].strength == 0.1
    assert settings.reward_signals["rnd"].gamma == 0.9


def test_a_plugin_trainer_type_is_refused_learned_reward_signals(use_entry_points):
    def plugin_types():
        return {"mine": FakeTrainer}, {"mine": PPOSettings}

    use_entry_points(FakeEntryPoint("builtin", builtin_types), FakeEntryPoint("mine", plugin_types))
    raw = behavior(trainer_type="mine", reward_signals={"extrinsic": {}, "rnd": {}})
    message = error_of(raw, UnsupportedFeatureError)
    assert "reward_signals.rnd" in message and "trainer_type mine" in message
    assert "only with ppo, sac, poca" in message


def test_no_signal_at_all_is_refused_and_imitation_alone_is_not():
    assert "nothing to learn from" in error_of(behavior(reward_signals={}))
    gail_only = behavior(reward_signals={"gail": {"demo_path": "expert.demo"}})
    assert "extrinsic" not in options_from_dict(gail_only).behaviors["Tennis"].reward_signals


# -- self_play and defaults -----------------------------------------------------------------------
def test_self_play_empty_mapping_enables_defaults():
    settings = options_from_dict(behavior(self_play={})).behaviors["Tennis"]
    assert settings.self_play == SelfPlaySettings()
    assert settings.self_play.steps_per_team == 5 * 20000


def test_self_play_null_stays_off_with_a_warning(caplog):
    with caplog.at_level(logging.WARNING):
        settings = options_from_dict(behavior(self_play=None)).behaviors["Tennis"]
    assert settings.self_play is None
    assert "self_play: {}" in caplog.text


def test_team_change_defaults_to_five_save_steps():
    self_play = (
        options_from_dict(behavior(self_play={"save_steps": 300})).behaviors["Tennis"].self_play
    )
    assert self_play.team_change is None
    assert self_play.steps_per_team == 1500
    explicit = options_from_dict(behavior(self_play={"team_change": 7})).behaviors["Tennis"]
    assert explicit.self_play.steps_per_team == 7


def test_empty_sections_mean_defaults():
    options = options_from_dict({"behaviors": {"A": None, "B": {"network_settings": None}}})
    assert options.behaviors["A"] == default_behavior_settings()
    assert options.behaviors["B"] == default_behavior_settings()
    assert isinstance(default_behavior_settings().hyperparameters, PPOSettings)
    assert options_from_dict(None) == options_from_dict({})


def test_default_settings_fill_behaviors_key_by_key():
    options = options_from_dict(
        {
            "default_settings": {
                "hyperparameters": {"batch_size": 64, "buffer_size": 640, "beta": 0.01},
                "max_steps": 1000,
                "self_play": {"window": 3},
            },
            "behaviors": {
                "A": {"hyperparameters": {"batch_size": 32}, "self_play": {"save_steps": 10}},
                "B": {"self_play": None},
                "C": {"trainer_type": "sac"},
            },
        }
    )
    a, b, c = (options.behaviors[name] for name in "ABC")
    assert (a.hyperparameters.batch_size, a.hyperparameters.buffer_size) == (32, 640)
    assert a.hyperparameters.beta == 0.01
    assert a.max_steps == 1000
    assert (a.self_play.window, a.self_play.save_steps) == (3, 10)
    assert b.self_play is None  # a behavior may turn the default self-play off
    assert isinstance(c.hyperparameters, SACSettings)  # ppo hyperparameters are not inherited
    assert c.hyperparameters == SACSettings()
    assert c.max_steps == 1000
    assert options.default_settings.max_steps == 1000
    assert options.settings_for("Unlisted") == options.default_settings


def test_an_unlisted_behavior_without_default_settings_gets_ppo_defaults():
    settings = options_from_dict({"behaviors": {"A": {}}}).settings_for("Unlisted")
    assert isinstance(settings.hyperparameters, PPOSettings)
    assert settings.hyperparameters == PPOSettings()


# -- round trip, overrides ---------------------------------------------------------------------
@needs_reference_configs
def test_configuration_yaml_round_trip(tmp_path):
    mixed = options_from_dict(
        {
            "behaviors": {"T": {"network_settings": {"vis_encode_type": "nature_cnn"}}},
            "default_settings": {"self_play": {}, "hyperparameters": {"batch_size": 32}},
            "environment_parameters": {"gravity": 9.81},
        }
    )
    for options in (mixed, load_options(REFERENCE_CONFIGS / "Tennis-ppo.yaml")):
        path = tmp_path / "configuration.yaml"
        write_options(options, path)
        assert load_options(path) == options


@needs_reference_configs
def test_round_trip_keeps_flag_values(tmp_path):
    options = apply_overrides(
        load_options(REFERENCE_CONFIGS / "Tennis-sac.yaml"),
        {"env_settings.env_args": ["--level", "3"], "env_settings.seed": 7, "debug": True},
    )
    write_options(options, tmp_path / "c.yaml")
    again = load_options(tmp_path / "c.yaml")
    assert again == options
    assert again.env_settings.env_args == ["--level", "3"]
    assert again.behaviors["Tennis"].network_settings.vis_encode_type is EncoderType.SIMPLE


def test_overrides_are_checked_and_labelled():
    options = options_from_dict({})
    changed = apply_overrides(
        options, {"env_settings.num_envs": "4", "torch_settings.device": "cpu"}
    )
    assert changed.env_settings.num_envs == 4 and changed.torch_settings.device == "cpu"
    with pytest.raises(ConfigError) as caught:
        apply_overrides(
            options, {"env_settings.num_envs": "0"}, labels={"env_settings.num_envs": "--num-envs"}
        )
    assert str(caught.value) == "--num-envs = '0': must be > 0"
    with pytest.raises(ConfigError, match="not a configuration key"):
        apply_overrides(options, {"env_settings.nope": 1})


def test_overrides_reach_into_a_behavior_with_the_yaml_checks():
    options = options_from_dict({"behaviors": {"Tennis": {"max_steps": 100}}})
    changed = apply_overrides(
        options,
        {"behaviors.Tennis.self_play.window": 4, "behaviors.Tennis.max_steps": 50, "debug": True},
    )
    tennis = changed.behaviors["Tennis"]
    assert tennis.self_play.window == 4 and tennis.max_steps == 50 and changed.debug
    with pytest.raises(ConfigError) as caught:
        apply_overrides(options, {"behaviors.Tennis.self_play.windw": 4})
    assert str(caught.value).startswith("behaviors.Tennis.self_play.windw = 4: unknown key; ")
    assert "window" in str(caught.value)
    with pytest.raises(ConfigError, match=r"behaviors.Tennis.self_play.window = -1: must be > 0"):
        apply_overrides(options, {"behaviors.Tennis.self_play.window": -1})


def test_deterministic_actions_everywhere():
    options = with_deterministic_actions(
        options_from_dict({"default_settings": {}, "behaviors": {"A": {}, "B": {}}})
    )
    assert all(s.network_settings.deterministic for s in options.behaviors.values())
    assert options.default_settings.network_settings.deterministic


def test_bad_yaml_and_missing_file(write_yaml, tmp_path):
    with pytest.raises(ConfigError, match="not valid YAML at line 2, column 20: mapping values"):
        load_options(write_yaml("behaviors:\n  Tennis: max_steps: 5\n"))
    with pytest.raises(ConfigError, match="not found"):
        load_options(tmp_path / "missing.yaml")


# -- matching the environment ----------------------------------------------------------------
DUEL = {BehaviorId("Duel", 0): spec(), BehaviorId("Duel", 1): spec()}


def test_two_teams_self_play_with_the_defaults_when_the_config_has_none(caplog):
    with caplog.at_level(logging.INFO, logger="ghost"):
        defaulted = match_behaviors(options_from_dict({"behaviors": {"Duel": {}}}), DUEL)
    # no env_path names the game: an unknown kind, for which auto picks `robust`
    assert defaulted["Duel"].self_play == SelfPlaySettings(preset="auto", learn_from_latest=True)
    assert defaulted["Duel"].hyperparameters.magnet_strength == 0.3
    assert "self-play is on with ML-Agents' default settings" in caplog.text
    resolved = match_behaviors(options_from_dict({"behaviors": {"Duel": {"self_play": {}}}}), DUEL)
    assert resolved["Duel"].self_play == SelfPlaySettings()


def test_asymmetric_teams_share_the_one_self_play_section_given(caplog):
    specs = {BehaviorId("Striker", 0): spec(), BehaviorId("Goalie", 1): spec()}
    striker = {"self_play": {"save_steps": 500, "team_change": 4000}}
    options = resolve_options({"behaviors": {"Striker": striker, "Goalie": {}}})
    with caplog.at_level(logging.INFO, logger="ghost"):
        resolved = match_behaviors(options, specs)
    assert resolved["Goalie"].self_play == resolved["Striker"].self_play
    assert resolved["Goalie"].self_play.preset == "auto"
    assert resolved["Goalie"].self_play.steps_per_team == 4000
    assert "behaviors.Goalie has no self_play section" in caplog.text
    assert "with behaviors.Striker's settings" in caplog.text


def test_behavior_settings_come_from_behaviors_then_defaults(caplog):
    options = options_from_dict({"default_settings": {"max_steps": 5}, "behaviors": {"Other": {}}})
    with caplog.at_level(logging.WARNING):
        resolved = match_behaviors(options, {BehaviorId("Solo", 0): spec()})
    assert resolved["Solo"].max_steps == 5
    assert "behaviors.Other is configured" in caplog.text


def test_unconfigured_behavior_is_an_error_when_others_are_configured():
    with pytest.raises(EnvironmentSpecError, match="add behaviors.Solo"):
        match_behaviors(
            options_from_dict({"behaviors": {"Other": {}}}), {BehaviorId("Solo"): spec()}
        )
    resolved = match_behaviors(options_from_dict({}), {BehaviorId("Solo"): spec()})
    assert resolved["Solo"] == default_behavior_settings()


def test_teams_of_one_name_must_share_specs():
    specs = {BehaviorId("Duel", 0): spec(6), BehaviorId("Duel", 1): spec(5)}
    with pytest.raises(EnvironmentSpecError, match="team 1"):
        match_behaviors(options_from_dict({"behaviors": {"Duel": {"self_play": {}}}}), specs)


# -- documentation ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "section",
    [
        schema.RunOptions,
        trainer_schema.TrainerSettings,
        PPOSettings,
        SACSettings,
        trainer_schema.NetworkSettings,
        trainer_schema.MemorySettings,
        trainer_schema.RewardSignalSettings,
        SelfPlaySettings,
        env_schema.EnvironmentSettings,
        env_schema.EngineSettings,
        schema.CheckpointSettings,
        schema.TorchSettings,
    ],
)
def test_every_key_is_documented(section):
    text = DOCS.read_text(encoding="utf-8")
    keys = [f.name for f in attrs.fields(section) if not f.metadata.get(schema.NOT_A_KEY)]
    missing = [name for name in keys if f"| `{name}` |" not in text]
    assert not missing, f"docs/config-reference.md lacks {section.__name__} keys {missing}"
