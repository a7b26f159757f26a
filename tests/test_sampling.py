"""Opponent sampling strategies, fixed opponents, win rates and the payoff table."""

from __future__ import annotations

import csv

import numpy as np
import pytest
import torch

from envs.stepping import InProcessStepper
from ghost.config.loader import options_from_dict
from ghost.core.opponents import FixedOpponent, Opponent
from ghost.core.sampling import Pool, make_sampler, pfsp_weights, sampler_names
from ghost.core.settings import (
    FixedOpponentSettings,
    MixtureWeights,
    PFSPWeighting,
    SamplingSettings,
    SelfPlaySettings,
)
from ghost.core.snapshots import Snapshot
from ghost.core.win_rates import WinRates
from ghost.exceptions import ConfigError
from ghost.running.session import SelfPlaySession
from trainers.run_files.layout import RunLayout

DRAWS = 20000


def _pool(window: int = 4, fixed: int = 2) -> Pool:
    snapshot = lambda i: Snapshot(snapshot_id=i, step=i, rating=1200.0, weights={})  # noqa: E731
    return Pool(
        latest=Opponent(snapshot=snapshot(-1)),
        window=[Opponent(snapshot=snapshot(i)) for i in range(window)],
        fixed=[
            Opponent(fixed=FixedOpponent(name=f"f{i}", policy=None, rating=1200.0))
            for i in range(fixed)
        ],  # fmt: skip
    )


def _shares(self_play: SelfPlaySettings, pool: Pool, win_rates: WinRates | None = None) -> dict:
    sampler = make_sampler(self_play)
    rng = np.random.default_rng(0)
    rates = win_rates or WinRates(100)
    keys = [sampler.draw(pool, rates, rng).key for _ in range(DRAWS)]
    return {key: keys.count(key) / DRAWS for key in set(keys)}


def _close(share: float, probability: float) -> bool:
    """Within 4.5 binomial standard deviations (a false alarm about once in 150,000)."""
    return abs(share - probability) <= 4.5 * np.sqrt(probability * (1 - probability) / DRAWS)


def test_builtin_strategies_are_registered():
    assert {"latest_ratio", "uniform", "pfsp", "mixture"} <= set(sampler_names())


def test_latest_ratio_is_ml_agents_rule_over_window_and_fixed():
    shares = _shares(SelfPlaySettings(play_against_latest_model_ratio=0.4), _pool())
    assert _close(shares["latest"], 0.4)
    for key in ["snapshot-0", "snapshot-3", "fixed:f0", "fixed:f1"]:
        assert _close(shares[key], 0.6 / 6)


def test_uniform_never_draws_latest_when_there_is_a_pool():
    shares = _shares(SelfPlaySettings(sampling=SamplingSettings(strategy="uniform")), _pool())
    assert "latest" not in shares
    assert all(_close(share, 1 / 6) for share in shares.values())
    empty = _shares(SelfPlaySettings(sampling=SamplingSettings(strategy="uniform")), _pool(0, 0))
    assert empty == {"latest": 1.0}


@pytest.mark.parametrize("weighting", [PFSPWeighting.HARD, PFSPWeighting.VARIANCE])
def test_pfsp_draws_follow_its_weighting_of_win_rates(weighting):
    pool = _pool(window=3, fixed=1)
    rates = WinRates(100)
    learner_scores = {"snapshot-0": 0.9, "snapshot-1": 0.5, "snapshot-2": 0.2}  # fixed: unplayed
    for key, p in learner_scores.items():
        for i in range(100):
            rates.record(key, 0, 1.0 if i < round(100 * p) else 0.0)
    settings = SelfPlaySettings(
        sampling=SamplingSettings(strategy="pfsp", pfsp_weighting=weighting, pfsp_exponent=2.0)
    )
    shares = _shares(settings, pool, rates)
    p = np.array([0.9, 0.5, 0.2, 0.5])  # an unplayed member counts as an even match
    expected = (1 - p) ** 2 if weighting is PFSPWeighting.HARD else p * (1 - p)
    expected = expected / expected.sum()
    for key, probability in zip(["snapshot-0", "snapshot-1", "snapshot-2", "fixed:f0"], expected,
                                strict=True):  # fmt: skip
        assert _close(shares.get(key, 0.0), probability), (key, shares)
    if weighting is PFSPWeighting.HARD:  # most games go to the opponent the learner loses to
        assert max(shares, key=shares.get) == "snapshot-2"


def test_pfsp_weights_fall_back_to_uniform():
    np.testing.assert_allclose(pfsp_weights(np.array([1.0, 1.0]), PFSPWeighting.HARD, 2.0), 0.5)


def test_mixture_uses_its_fixed_probabilities_and_passes_on_empty_shares():
    settings = SelfPlaySettings(
        sampling=SamplingSettings(
            strategy="mixture", mixture=MixtureWeights(latest=0.2, window=0.3, fixed=0.5)
        ),
        fixed_opponents=[FixedOpponentSettings(name="f0", scripted="weak")],
    )
    shares = _shares(settings, _pool(window=3, fixed=2))
    assert _close(shares["latest"], 0.2)
    assert _close(shares["snapshot-1"], 0.1) and _close(shares["fixed:f1"], 0.25)
    no_fixed = _shares(settings, _pool(window=3, fixed=0))
    assert _close(no_fixed["latest"], 0.2 / 0.5)


@pytest.mark.parametrize(
    ("self_play", "message"),
    [
        ({"sampling": {"strategy": "pfps"}}, "strategy = 'pfps': unknown opponent sampling strategy"),
        ({"sampling": {"strategy": "mixture", "mixture": {"latest": 0.5, "window": 0.4}}},
         "must sum to 1"),
        ({"fixed_opponents": [{"name": "x"}]}, "exactly one of `scripted:`"),
        ({"fixed_opponents": [{"name": "x", "scripted": "medium"}] * 2}, "must be unique"),
        ({"evaluation": {"opponents": ["ghost"]}}, "are not fixed opponents"),
    ],
)  # fmt: skip
def test_bad_sampling_configs_fail_with_clear_messages(self_play, message):
    with pytest.raises(ConfigError, match=message) as raised:
        options_from_dict({"behaviors": {"Tennis": {"self_play": self_play}}})
    assert "behaviors.Tennis.self_play" in str(raised.value)


def _tennis_options(tmp_path, fixed, **self_play):
    return options_from_dict({
        "behaviors": {"Tennis": {
            "hyperparameters": {"batch_size": 256, "buffer_size": 1024},
            "network_settings": {"hidden_units": 16},
            "max_steps": 4000, "summary_freq": 2000, "checkpoint_interval": 2000,
            "self_play": {"save_steps": 500, "swap_steps": 200, "fixed_opponents": fixed,
                          **self_play},
        }},
        "env_settings": {"env_path": "tennis"},
    })  # fmt: skip


def _session(tmp_path, options) -> SelfPlaySession:
    from envs.games import make_game

    torch.set_num_threads(1)
    return SelfPlaySession(options=options, stepper=InProcessStepper(make_game("tennis")),
                           layout=RunLayout(tmp_path))  # fmt: skip


def test_missing_fixed_opponent_file_fails_before_training(tmp_path):
    options = _tennis_options(tmp_path, [{"name": "old", "policy": str(tmp_path / "none.pt")}])
    session = _session(tmp_path, options)
    with pytest.raises(ConfigError, match="fixed opponent 'old': policy file .* does not exist"):
        session.start(resume=False)
    assert not (tmp_path / "checkpoint.json").exists()


def test_unknown_scripted_level_fails_before_training(tmp_path):
    session = _session(tmp_path, _tennis_options(tmp_path, [{"name": "x", "scripted": "expert"}]))
    with pytest.raises(ConfigError, match="fixed opponent 'x'.*valid levels"):
        session.start(resume=False)


def test_fixed_opponents_play_are_rated_and_land_in_the_payoff_table(tmp_path):
    from trainers.policy import TorchPolicy

    # a fixed opponent from a policy file, and a scripted one whose rating is not pinned
    env_spec = next(iter(_session(tmp_path / "probe", _tennis_options(tmp_path, []))
                         .stepper.behavior_specs.values()))  # fmt: skip
    from trainers.settings import NetworkSettings

    TorchPolicy(behavior_spec=env_spec, network_settings=NetworkSettings(hidden_units=8)).save(
        tmp_path / "frozen.pt"
    )
    fixed = [{"name": "frozen", "policy": str(tmp_path / "frozen.pt"), "rating": 1500.0},
             {"name": "weak", "scripted": "weak", "pin_rating": False}]  # fmt: skip
    options = _tennis_options(tmp_path, fixed, sampling={"strategy": "uniform"})
    session = _session(tmp_path / "run", options)
    session.run()
    ghost = session.trainers["Tennis"]
    assert ghost.state.draw_counts["fixed:frozen"] > 0 and ghost.state.draw_counts["fixed:weak"] > 0
    frozen, weak = ghost.fixed_opponents
    assert frozen.rating == 1500.0  # pinned
    assert weak.rating != 1200.0  # rated as it played
    assert ghost.state.win_rates.games("fixed:weak") > 0
    with open(tmp_path / "run" / "Tennis" / "payoff.csv", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    assert rows[0][0] == "learner version" and "fixed:weak" in rows[0]
    column = rows[0].index("fixed:weak")
    assert any(row[column] for row in rows[1:])


def test_scheduled_evaluation_is_logged_apart_from_training(tmp_path, caplog):
    fixed = [{"name": "random", "scripted": "random"}, {"name": "strong", "scripted": "strong"}]
    options = _tennis_options(
        tmp_path, fixed, evaluation={"every_steps": 2000, "games": 20, "opponents": ["random"]}
    )
    session = _session(tmp_path / "run", options)
    with caplog.at_level("INFO", logger="ghost.running.scheduled_evaluation"):
        session.run()
    ghost = session.trainers["Tennis"]
    lines = [r.getMessage() for r in caplog.records if "Evaluation against" in r.getMessage()]
    assert len(lines) == 2 and all("against random" in line for line in lines)  # steps 2000, 4000
    assert "Evaluation/random Win Rate" in ghost.trainer.stats.latest
    assert "Evaluation/strong Win Rate" not in ghost.trainer.stats.latest
    # evaluation games are kept apart: the same run without evaluation trains identically
    plain = _session(tmp_path / "plain", _tennis_options(tmp_path, fixed))
    plain.run()
    other = plain.trainers["Tennis"]
    assert other.step == ghost.step and other.rating == ghost.rating
    assert dict(other.state.draw_counts) == dict(ghost.state.draw_counts)
    for key, value in other.learner.get_weights().items():
        torch.testing.assert_close(ghost.learner.get_weights()[key], value)
