"""Every host's ``self_play=`` argument is read once (``ghost.config.host_self_play``): the same
forms and strict errors for Stable-Baselines3 and RLlib, each refusing what it cannot run."""

from __future__ import annotations

import pytest

from ghost.config.host_self_play import host_self_play_settings
from ghost.exceptions import ConfigError
from ghost.integrations.rllib.settings import REFUSALS as RLLIB
from ghost.integrations.sb3.settings import REFUSALS as SB3

HOSTS = {"Stable-Baselines3": SB3, "RLlib": RLLIB}


def read(value, host: str, behavior: str | None = "Duel"):
    return host_self_play_settings(value, host=host, refusals=HOSTS[host], behavior=behavior)


@pytest.mark.parametrize("host", HOSTS)
def test_every_form_reads_alike(tmp_path, host):
    section = tmp_path / "section.yaml"
    section.write_text("self_play:\n  window: 4\n")
    keys = tmp_path / "keys.yaml"
    keys.write_text("window: 4\n")
    trainer = tmp_path / "trainer.yaml"
    trainer.write_text("default_settings:\n  self_play:\n    window: 4\n")
    for value in ({"window": 4}, section, keys, trainer):
        assert read(value, host).window == 4
    assert read(None, host).window == 10  # every default


@pytest.mark.parametrize("host", HOSTS)
def test_a_typo_names_its_path_and_a_refused_key_the_host(host):
    with pytest.raises(ConfigError, match=r"self_play\.swap_step .*did you mean 'swap_steps'"):
        read({"swap_step": 10}, host)
    with pytest.raises(ConfigError, match=rf"self_play\.preset: not supported with {host}"):
        read({"preset": "robust"}, host)


def test_each_host_refuses_what_it_cannot_run_and_nothing_else():
    with pytest.raises(ConfigError, match="self_play.league: not supported with Stable"):
        read({"league": {"main_exploiters": 1}}, "Stable-Baselines3")
    assert read({"league": {"main_exploiters": 1}}, "RLlib").league.main_exploiters == 1
    fixed = {"fixed_opponents": [{"name": "m", "scripted": "medium"}]}
    with pytest.raises(ConfigError, match="self_play.fixed_opponents: not supported with RLlib"):
        read(fixed, "RLlib")
    assert len(read(fixed, "Stable-Baselines3").fixed_opponents) == 1
