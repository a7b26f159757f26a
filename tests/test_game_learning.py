"""Self-play learns the built-in games with their shipped configs (slow: run with ``-m slow``).

Each test trains ``config/<game>.yaml`` exactly as ``ghost-learn`` does (fixed seed), then plays
the final policy against scripted levels. Thresholds sit below what seeds 0 and 1 reached.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from ghost.play.head_to_head import evaluate
from ghost.running import cli

pytestmark = pytest.mark.slow


def _learn(tmp_path: Path, config: str) -> Path:
    results = tmp_path / "results"
    assert cli.main([f"config/{config}.yaml", "--run-id", config,
                     "--results-dir", str(results)]) == 0  # fmt: skip
    return results / config


def test_tennis_beats_the_medium_level_and_elo_rises(tmp_path, caplog):
    caplog.set_level("INFO")
    run = _learn(tmp_path, "tennis")
    elo = [float(x) for x in re.findall(r"ELO: ([0-9]+\.[0-9])", caplog.text)]
    assert elo and elo[-1] > elo[0] + 200
    result = evaluate(game="tennis", policy=str(run), opponent="medium", episodes=200, seed=1,
                      deterministic=True)  # fmt: skip
    assert result.win_rate > 0.6  # seeds 0/1 reached 0.66/0.73; untrained about 0.37
    weak = evaluate(game="tennis", policy=str(run), opponent="weak", episodes=200, seed=1,
                    deterministic=True)  # fmt: skip
    assert weak.win_rate > 0.85


def _final_exploitability(tmp_path: Path, config: Path, run_id: str) -> float:
    results = tmp_path / "results"
    assert cli.main([str(config), "--run-id", run_id, "--results-dir", str(results)]) == 0
    result = evaluate(game="rock_paper_scissors", policy=str(results / run_id),
                      opponent="equilibrium", episodes=10)  # fmt: skip
    assert result.exploitability is not None
    return result.exploitability


def test_rock_paper_scissors_window_is_less_exploitable_than_naive_self_play(tmp_path):
    shipped = Path("config/rock_paper_scissors.yaml")
    options = yaml.safe_load(shipped.read_text())
    self_play = options["behaviors"]["RockPaperScissors"]["self_play"]
    self_play.update(window=1, play_against_latest_model_ratio=1.0, opponents_per_swap=1)
    self_play["sampling"] = {"strategy": "latest_ratio"}
    naive = tmp_path / "naive.yaml"
    naive.write_text(yaml.safe_dump(options))
    window = _final_exploitability(tmp_path, shipped, "window")
    plain = _final_exploitability(tmp_path, naive, "naive")
    # seed 0: 0.044 with the window against 0.127 for naive self-play (the final policies)
    assert window < 0.1
    assert plain > 2 * window


#: win rate against the medium level each side must beat; seeds 0/1 reached 0.49/0.64 (strikers)
#: and 0.90/0.76 (goalie). The strikers' side stays short of 0.6 on most seeds (see docs/benchmarks.md).
THRESHOLD = {"Striker": 0.4, "Goalie": 0.7}


def test_strikers_vs_goalie_sides_learn_and_elo_rises(tmp_path, caplog):
    caplog.set_level("INFO")
    run = _learn(tmp_path, "strikers_vs_goalie")  # about 4 minutes on 2 cores
    for side in ("Striker", "Goalie"):
        elo = [
            float(x) for x in re.findall(rf"{side}\. Step: .* ELO: ([0-9]+\.[0-9])", caplog.text)
        ]
        assert elo and elo[-1] > elo[0] + 200, side
        result = evaluate(game="strikers_vs_goalie", policy=str(run), opponent="medium",
                          side=side, episodes=200, seed=1, deterministic=True)  # fmt: skip
        assert result.win_rate > THRESHOLD[side], side
