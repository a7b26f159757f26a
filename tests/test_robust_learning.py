"""Slow learning runs (``pytest -m slow``) that pin what ``self_play.preset: robust`` gains over the
ML-Agents-style self-play section on the fastest yardstick: Leduc poker's exact exploitability at
500k steps (``scripts/robustness.py --yardsticks leduc``)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.slow

from ghost.running import cli  # noqa: E402

MLAGENTS_KEYS = ("save_steps", "team_change", "swap_steps", "window")


def leduc(tmp_path, name: str, **self_play) -> float:
    """Train ``config/leduc_poker.yaml`` with only ML-Agents' self-play keys (plus
    ``self_play``) for 500k steps at seed 0; the final policy's exploitability."""
    pytest.importorskip("pyspiel", reason="OpenSpiel is an optional extra")
    options = yaml.safe_load(Path("config/leduc_poker.yaml").read_text(encoding="utf-8"))
    behavior = options["behaviors"]["leduc_poker"]
    shipped = behavior["self_play"]
    behavior["self_play"] = {key: shipped[key] for key in MLAGENTS_KEYS if key in shipped} | {
        "exploitability_every": 250_000,
        **self_play,
    }
    behavior["max_steps"] = 500_000
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(options))
    args = [str(path), "--run-id", name, "--results-dir", str(tmp_path), "--seed", "0"]
    assert cli.main(args) == 0
    rows = (tmp_path / name / "run_logs" / "exploitability.csv").read_text().splitlines()
    return float(rows[-1].split(",")[1])


def test_the_robust_preset_is_less_exploitable_than_mlagents_style_self_play_on_leduc(tmp_path):
    robust = leduc(tmp_path, "robust", preset="robust")
    default = leduc(tmp_path, "default", preset="none")  # ML-Agents' settings, not auto
    # seed 0 measured: robust 0.86, default 1.01 (uniform play: 2.37)
    assert robust < 0.95
    assert robust < default - 0.05


def test_the_imperfect_information_preset_cuts_leduc_exploitability_by_a_third(tmp_path):
    tuned = leduc(tmp_path, "imperfect_information", preset="imperfect_information")
    # seed 0 measured: 0.62; the ML-Agents-style default 1.01, `robust` 0.86
    assert tuned < 0.72
