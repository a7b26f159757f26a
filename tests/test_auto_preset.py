"""``self_play.preset: auto``: the measured-best settings picked by the kind of game, said in the log."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import yaml

from ghost.config.effects import preset_line
from ghost.config.game_kinds import game_kind
from ghost.config.loader import load_options, resolve_options
from ghost.config.presets import PRESETS
from ghost.exceptions import ConfigError


@pytest.mark.parametrize(
    ("env_path", "kind"),
    [
        ("tennis", "control"),
        ("strikers_vs_goalie", "control"),
        ("rock_paper_scissors", "matrix"),
        ("pettingzoo:pettingzoo.classic.connect_four_v3", "board"),
        ("pettingzoo:pettingzoo.classic.texas_holdem_no_limit_v6", "imperfect_information"),
        ("pettingzoo:my_games.backgammon_v1", "unknown"),
        ("my_envs:make_env", "unknown"),
        ("builds/Tennis.x86_64", "control"),
        (None, "unknown"),
    ],
)
def test_the_kind_of_game_is_told_from_the_env_path(env_path, kind):
    assert game_kind(env_path).kind == kind


@pytest.mark.parametrize(
    ("game", "kind"),
    [
        ("leduc_poker", "imperfect_information"),
        ("goofspiel(num_cards=4)", "imperfect_information"),  # simultaneous moves hide a choice
        ("tic_tac_toe", "board"),
        ("matrix_rps", "matrix"),
        ("no_such_game", "unknown"),
    ],
)
def test_openspiel_games_are_told_by_openspiels_own_game_type(game, kind):
    pytest.importorskip("pyspiel", reason="OpenSpiel is an optional extra (open-spiel)")
    assert game_kind(f"openspiel:{game}").kind == kind


def _leduc(tmp_path, **self_play):
    config = yaml.safe_load(Path("config/leduc_poker.yaml").read_text())
    behavior = config["behaviors"]["leduc_poker"]
    behavior["self_play"].update(self_play)
    path = tmp_path / "leduc.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


#: the magnet of the preset ``auto`` picks for card games
CARD_MAGNET = (
    PRESETS["imperfect_information"].hyperparameters["magnet_strength"],
    PRESETS["imperfect_information"].hyperparameters["magnet_rate"],
)


def _hyperparameters(options, name):
    hp = options.behaviors[name].hyperparameters
    return hp.magnet_strength, hp.magnet_rate


def test_a_card_game_without_a_preset_gets_the_imperfect_information_one(tmp_path):
    pytest.importorskip("pyspiel", reason="OpenSpiel is an optional extra (open-spiel)")
    options = resolve_options(str(_leduc(tmp_path)))
    assert options.behaviors["leduc_poker"].self_play.preset == "auto"
    assert _hyperparameters(options, "leduc_poker") == CARD_MAGNET
    line = preset_line(
        "leduc_poker", options.behaviors["leduc_poker"], options.env_settings.env_path
    )
    assert "imperfect information game" in line and "'imperfect_information'" in line
    assert f"magnet_strength = {CARD_MAGNET[0]}" in line


def test_written_keys_win_and_preset_none_keeps_mlagents_settings(tmp_path):
    pytest.importorskip("pyspiel", reason="OpenSpiel is an optional extra (open-spiel)")
    config = yaml.safe_load(_leduc(tmp_path).read_text())
    config["behaviors"]["leduc_poker"]["hyperparameters"]["magnet_strength"] = 0.1
    written = resolve_options(config)
    assert _hyperparameters(written, "leduc_poker") == (0.1, CARD_MAGNET[1])
    assert f"(yours; the preset's: {CARD_MAGNET[0]})" in preset_line(
        "leduc_poker", written.behaviors["leduc_poker"], written.env_settings.env_path
    )
    plain = resolve_options(str(_leduc(tmp_path, preset="none")))
    assert _hyperparameters(plain, "leduc_poker") == (0.0, 0.05)
    assert preset_line("leduc_poker", plain.behaviors["leduc_poker"]) is None


def test_board_games_keep_mlagents_settings_and_control_games_learn_from_the_latest_copy():
    board = resolve_options("config/tictactoe.yaml")
    assert _hyperparameters(board, "tictactoe") == (0.0, 0.05)
    assert not board.behaviors["tictactoe"].self_play.learn_from_latest
    line = preset_line("tictactoe", board.behaviors["tictactoe"], board.env_settings)
    assert "a board game" in line and "ML-Agents' settings" in line
    control = resolve_options("config/tennis.yaml")
    assert _hyperparameters(control, "Tennis") == (0.0, 0.05)  # no magnet
    assert control.behaviors["Tennis"].self_play.learn_from_latest
    line = preset_line("Tennis", control.behaviors["Tennis"], control.env_settings)
    assert "a control game" in line and "'sample_efficient'" in line
    assert "self_play.learn_from_latest = True" in line


def test_the_env_flag_decides_the_kind_not_the_config_file(tmp_path):
    pytest.importorskip("pyspiel", reason="OpenSpiel is an optional extra (open-spiel)")
    options = resolve_options(str(_leduc(tmp_path)), {"env_settings.env_path": "tennis"})
    assert _hyperparameters(options, "leduc_poker") == (0.0, 0.05)


def test_an_unknown_preset_lists_auto_and_none():
    with pytest.raises(
        ConfigError, match="auto, imperfect_information, none, robust, sample_efficient"
    ):
        resolve_options({"behaviors": {"B": {"self_play": {"preset": "strongest"}}}})


def test_a_run_records_auto_with_its_keys_and_resumes_with_the_same(tmp_path, caplog):
    pytest.importorskip("pyspiel", reason="OpenSpiel is an optional extra (open-spiel)")
    import ghost

    config = str(_leduc(tmp_path, exploitability_every=0))
    with caplog.at_level(logging.INFO, logger="ghost"):
        ghost.train(config, run_id="auto", results_dir=str(tmp_path), max_steps=600)
    assert any(
        "preset 'auto' picked for an imperfect information game" in m for m in caplog.messages
    )
    recorded = load_options(tmp_path / "auto" / "configuration.yaml")
    assert recorded.behaviors["leduc_poker"].self_play.preset == "auto"
    assert _hyperparameters(recorded, "leduc_poker") == CARD_MAGNET
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="ghost"):
        ghost.train(None, run_id="auto", results_dir=str(tmp_path), max_steps=1200, resume=True)
    assert not [m for m in caplog.messages if "changed" in m and "magnet" in m]
    resumed = load_options(tmp_path / "auto" / "configuration.yaml")
    assert _hyperparameters(resumed, "leduc_poker") == CARD_MAGNET


def test_a_written_value_equal_to_the_default_keeps_it(tmp_path):
    pytest.importorskip("pyspiel", reason="OpenSpiel is an optional extra (open-spiel)")
    config = yaml.safe_load(_leduc(tmp_path).read_text())
    hyperparameters = config["behaviors"]["leduc_poker"]["hyperparameters"]
    hyperparameters["magnet_strength"] = 0.0  # ML-Agents' value, written on purpose
    hyperparameters["magnet_rate"] = 0.05
    path = tmp_path / "written.yaml"
    path.write_text(yaml.safe_dump(config))
    for source in (config, str(path)):
        assert _hyperparameters(resolve_options(source), "leduc_poker") == (0.0, 0.05)


@pytest.mark.parametrize("preset", [None, "robust"])
def test_a_network_with_memory_takes_a_preset_without_the_keys_memory_refuses(preset):
    self_play = {} if preset is None else {"preset": preset}
    behavior = {"network_settings": {"memory": {}}, "self_play": self_play}
    options = resolve_options({"behaviors": {"B": behavior}})  # no env_path: robust for both
    settings = options.behaviors["B"]
    assert settings.hyperparameters.magnet_strength == 0.0
    assert not settings.self_play.learn_from_latest
    line = preset_line("B", settings, options.env_settings)
    assert "sets nothing a network with memory takes" in line
