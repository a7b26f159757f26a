"""``summary_freq`` no configuration wrote scales with ``max_steps`` (``ghost.config.summary_freq``),
so a short run reports; a written one is kept as written."""

from __future__ import annotations

import logging

import attrs
import pytest

import ghost
from ghost.config.loader import (
    MAX_STEPS_KEY,
    load_options,
    options_from_dict,
    resolve_options,
    write_options,
)
from ghost.config.summary_freq import default_summary_freq
from ghost.evaluation.cli import main as ghost_eval
from ghost.evaluation.report import ELO_TAG, REWARD_TAG, read_curves


@pytest.mark.parametrize(
    "max_steps, every",
    [
        (0, 1), (50, 50), (600, 100), (5000, 500), (20000, 2000), (25000, 2000),
        (123456, 10000), (300000, 30000), (500000, 50000), (50_000_000, 50000),
    ],
)  # fmt: skip
def test_the_default_is_a_readable_tenth_of_max_steps_up_to_ml_agents_default(max_steps, every):
    assert default_summary_freq(max_steps) == every


def _behavior(options, name: str = "Tennis") -> int:  # type: ignore[no-untyped-def]
    return options.behaviors[name].summary_freq


def test_unwritten_summary_freq_scales_and_a_written_one_is_kept():
    config = {"behaviors": {"Tennis": {"max_steps": 20000}, "Soccer": {"max_steps": 20000,
              "summary_freq": 50000}}}  # fmt: skip
    options = resolve_options(config)
    assert _behavior(options) == 2000
    assert _behavior(options, "Soccer") == 50000  # written, even as ML-Agents' default


def test_default_settings_writing_it_counts_for_every_behavior():
    config = {
        "default_settings": {"summary_freq": 40000},
        "behaviors": {"Tennis": {"max_steps": 20000}},
    }
    options = resolve_options(config)
    assert _behavior(options) == 40000
    assert options.default_settings.summary_freq == 40000


def test_max_steps_flag_scales_it_too():
    options = resolve_options({"behaviors": {"Tennis": {}}}, {MAX_STEPS_KEY: 20000})
    assert _behavior(options) == 2000
    # no config at all: the default_settings the flag makes
    options = resolve_options(None, {MAX_STEPS_KEY: 5000})
    assert options.default_settings.summary_freq == 500
    # without the flag a default behavior keeps ML-Agents' 50000 (a tenth of 500000)
    assert _behavior(resolve_options({"behaviors": {"Tennis": {}}})) == 50000


def test_a_shipped_config_keeps_the_summary_freq_it_writes():
    options = resolve_options(
        None, {"env_settings.env_path": "tennis", MAX_STEPS_KEY: 20000}
    )  # config/tennis.yaml writes summary_freq: 10000
    assert _behavior(options) == 10000


def test_an_override_of_summary_freq_is_written():
    options = resolve_options(
        {"behaviors": {"Tennis": {"max_steps": 20000}}}, {"behaviors.Tennis.summary_freq": 7000}
    )
    assert _behavior(options) == 7000


def test_structured_settings_scale_only_ml_agents_default():
    options = options_from_dict({"behaviors": {"Tennis": {"max_steps": 20000},
                                               "Soccer": {"max_steps": 20000, "summary_freq": 123}}})  # fmt: skip
    resolved = resolve_options(options)
    assert _behavior(resolved) == 2000
    assert _behavior(resolved, "Soccer") == 123


def test_the_choice_is_said_once_per_behavior(caplog):
    with caplog.at_level(logging.INFO, logger="ghost.config.summary_freq"):
        resolve_options({"behaviors": {"Tennis": {"max_steps": 20000}}})
    said = [r.getMessage() for r in caplog.records if r.name == "ghost.config.summary_freq"]
    assert said == [
        "behaviors.Tennis.summary_freq: 2000, about a tenth of max_steps 20000 (not written; "
        "ML-Agents' default is 50000)"
    ]


# -- a short run reports ---------------------------------------------------------------------------
SHORT = {
    "behaviors": {
        "Tennis": {
            "hyperparameters": {"batch_size": 64, "buffer_size": 256},
            "network_settings": {"hidden_units": 16},
            "max_steps": 3000,
            "self_play": {"save_steps": 500, "team_change": 1000, "swap_steps": 250},
        }
    },
    "env_settings": {"env_path": "tennis", "seed": 0},
}


@pytest.mark.usefixtures("one_torch_thread")
def test_a_short_run_without_summary_freq_has_curves_to_report(tmp_path, capsys):
    ghost.train(SHORT, run_id="short", results_dir=tmp_path, verbose=0)
    run = tmp_path / "short"
    assert load_options(run / "configuration.yaml").behaviors["Tennis"].summary_freq == 300
    curves = {curve.tag: curve for curve in read_curves(run)}
    assert len(curves[ELO_TAG].steps) >= 8  # about ten summaries (steps arrive in batches)
    assert len(curves[REWARD_TAG].steps) >= 5  # those with a finished episode
    out = tmp_path / "short.png"
    assert ghost_eval(["report", str(run), str(out)]) == 0
    assert out.stat().st_size > 0


def test_resuming_keeps_the_recorded_value(tmp_path):
    config = {"behaviors": {"Tennis": {"max_steps": 20000}}, "env_settings": {"env_path": "tennis"}}
    first = resolve_options(config, {"checkpoint_settings.results_dir": str(tmp_path),
                                     "checkpoint_settings.run_id": "r"})  # fmt: skip
    run = tmp_path / "r"
    run.mkdir()
    recorded = attrs.evolve(
        first, behaviors={"Tennis": attrs.evolve(first.behaviors["Tennis"], summary_freq=999)}
    )
    write_options(recorded, run / "configuration.yaml")
    resumed = resolve_options(None, {"checkpoint_settings.results_dir": str(tmp_path),
                                     "checkpoint_settings.run_id": "r",
                                     "checkpoint_settings.resume": True,
                                     MAX_STEPS_KEY: 40000})  # fmt: skip
    assert _behavior(resumed) == 999  # the run's own record is kept as written
