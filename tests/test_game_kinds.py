"""An environment says what kind of game it is, and ``preset: auto`` applies on every path:
a written ``self_play:``, self-play turned on by default, and no config at all."""

from __future__ import annotations

import logging

import attrs
import pytest

from envs.behavior_id import BehaviorId
from envs.settings import EnvironmentSettings
from ghost.config.behavior_matching import match_behaviors
from ghost.config.game_kinds import kind_of
from ghost.config.loader import resolve_options
from ghost.config.presets import AUTO_CHOICES, preset_values
from ghost.exceptions import ConfigError
from tests.fake_envs import make_duel, spec

DUEL = {BehaviorId("Duel", 0): spec(), BehaviorId("Duel", 1): spec()}


def _auto_values(kind: str) -> dict:
    preset = AUTO_CHOICES[kind][0]
    return preset_values(preset or "none", "ppo")


def _value_at(settings, dotted: str):
    for part in dotted.split("."):
        settings = settings[part] if isinstance(settings, dict) else getattr(settings, part)
    return settings


def test_a_factory_declares_its_kind_and_the_config_key_beats_it():
    declared = kind_of("tests.fake_envs:make_card_duel")
    assert declared.kind == "imperfect_information"
    assert "declares game_kind" in declared.why
    assert kind_of("tests.fake_envs:make_duel").kind == "unknown"
    written = EnvironmentSettings(env_path="tests.fake_envs:make_card_duel", game_kind="board")
    assert kind_of(written).kind == "board"
    assert kind_of(EnvironmentSettings(env_path="tennis", game_kind="matrix")).kind == "matrix"


def test_a_declared_kind_that_does_not_exist_is_a_clear_error():
    with pytest.raises(ConfigError, match="'cards' is not a game kind; valid kinds: imperfect"):
        kind_of("tests.fake_envs:make_misdeclared")
    with pytest.raises(ConfigError, match="env_settings.game_kind = 'cards': must be one of"):
        resolve_options({"env_settings": {"game_kind": "cards"}})


@pytest.mark.parametrize("kind", ["imperfect_information", "unknown", "control"])
def test_self_play_turned_on_by_default_takes_the_auto_preset(kind, caplog):
    options = resolve_options({"env_settings": {"env_path": "x:y", "game_kind": kind}})
    with caplog.at_level(logging.INFO, logger="ghost"):
        settings = match_behaviors(options, DUEL)["Duel"]
    assert settings.self_play.preset == "auto"
    assert "preset auto" in caplog.text
    for dotted, value in _auto_values(kind).items():
        assert _value_at(settings, dotted) == value, dotted


def test_default_settings_with_self_play_take_the_auto_preset():
    config = {
        "default_settings": {"self_play": {"window": 5}},
        "env_settings": {"game_kind": "imperfect_information"},
    }
    settings = resolve_options(config).default_settings
    assert settings.self_play.preset == "auto"
    values = _auto_values("imperfect_information")
    assert values, "card games have a preset of their own"
    for dotted, value in values.items():
        assert _value_at(settings, dotted) == value, dotted


def test_an_environment_object_that_declares_its_kind_is_heard(tmp_path, caplog):
    import ghost

    environment = make_duel()
    environment.game_kind = "imperfect_information"
    with caplog.at_level(logging.INFO, logger="ghost"):
        ghost.train(
            {"behaviors": {"Duel": {"max_steps": 40}}},
            env=environment,
            run_id="declared",
            results_dir=str(tmp_path),
            inference=True,
        )
    recorded = (tmp_path / "declared" / "configuration.yaml").read_text()
    assert "game_kind: imperfect_information" in recorded


def test_no_config_at_all_on_a_card_game_says_what_auto_picked(tmp_path, caplog):
    pytest.importorskip("pyspiel", reason="OpenSpiel is an optional extra (open-spiel)")
    import ghost

    with caplog.at_level(logging.INFO, logger="ghost"):
        ghost.train(
            env="openspiel:kuhn_poker", run_id="kuhn", results_dir=str(tmp_path), max_steps=300
        )
    lines = [m for m in caplog.messages if "preset 'auto' picked for" in m]
    assert lines and "an imperfect information game" in lines[0]


def test_the_run_records_what_default_self_play_trains_with_and_resumes_with_it(tmp_path):
    pytest.importorskip("pyspiel", reason="OpenSpiel is an optional extra (open-spiel)")
    import ghost
    from ghost.config.loader import load_options

    ghost.train(env="openspiel:kuhn_poker", run_id="k", results_dir=str(tmp_path), max_steps=300)
    recorded = load_options(tmp_path / "k" / "configuration.yaml").behaviors["kuhn_poker"]
    assert recorded.self_play.preset == "auto"
    assert recorded.reward_signals["extrinsic"].gamma == 1.0  # a card game: no discount
    for dotted, value in _auto_values("imperfect_information").items():
        assert _value_at(recorded, dotted) == value, dotted
    ghost.train(None, run_id="k", results_dir=str(tmp_path), max_steps=600, resume=True)
    resumed = load_options(tmp_path / "k" / "configuration.yaml").behaviors["kuhn_poker"]
    assert attrs.evolve(resumed, max_steps=300) == recorded  # only the budget given changed
