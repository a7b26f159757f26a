"""Each opponent sampling strategy declares its own keys: a strategy registered here, with a key of
its own, is configured from YAML (and by the other hosts' ``self_play=`` readers) with no edit
anywhere else; keys of another strategy say whose they are; earlier configuration.yaml files,
which recorded every built-in key whatever the strategy, still read back."""

from __future__ import annotations

import attrs
import numpy as np
import pytest
import yaml

from envs.validators import positive
from ghost.config.loader import dump_options, options_from_dict
from ghost.core import sampling
from ghost.core.opponents import Opponent, Pool
from ghost.core.sampling import (
    MixtureWeights,
    NoOptions,
    OpponentSampler,
    PFSPOptions,
    SamplingSettings,
    exploiter_pfsp_exponent,
    make_sampler,
    register_sampler,
    sampler_names,
)
from ghost.core.settings import SelfPlaySettings
from ghost.core.snapshots import Snapshot
from ghost.core.win_rates import WinRates
from ghost.exceptions import ConfigError
from tests.conftest import FakeEntryPoint

#: what ``configuration.yaml`` held before strategies declared their own keys: every built-in key
EARLIER_RECORD = {
    "pfsp_weighting": "hard",
    "pfsp_exponent": 2.0,
    "mixture": {"latest": 0.5, "window": 0.5, "fixed": 0.0},
    "win_rate_window": 200,
}


@pytest.fixture
def newest_strategy(monkeypatch):
    """Registers strategy ``newest`` (uniform over the ``count`` newest snapshots) for one test,
    as a plugin's one file would."""
    monkeypatch.setattr(sampling, "_SAMPLERS", dict(sampling._SAMPLERS))

    @attrs.frozen(kw_only=True)
    class NewestOptions:
        count: int = attrs.field(default=2, validator=positive)

    @register_sampler("newest")
    class NewestSampler(OpponentSampler):
        options_class = NewestOptions

        def draw(self, pool: Pool, win_rates: WinRates, rng: np.random.Generator) -> Opponent:
            return self.uniform(pool.window[-self.options.count :], pool.latest, rng)

    return NewestOptions


def _options(sampling_section, **behavior):
    return options_from_dict(
        {"behaviors": {"Duel": {**behavior, "self_play": {"sampling": sampling_section}}}}
    )


def _sampling(sampling_section) -> SamplingSettings:
    self_play = _options(sampling_section).behaviors["Duel"].self_play
    assert self_play is not None
    return self_play.sampling


def _pool(window: int = 4) -> Pool:
    snapshot = lambda i: Snapshot(snapshot_id=i, step=i, rating=1200.0, weights={})  # noqa: E731
    return Pool(
        latest=Opponent(snapshot=snapshot(-1)),
        window=[Opponent(snapshot=snapshot(i)) for i in range(window)],
        fixed=[],
    )


def test_a_registered_strategy_is_configured_by_its_own_key(newest_strategy):
    assert "newest" in sampler_names()
    options = _options({"strategy": "newest", "count": 1, "win_rate_window": 50})
    self_play = options.behaviors["Duel"].self_play
    assert self_play.sampling.options == newest_strategy(count=1)
    assert self_play.sampling.count == 1 and self_play.sampling.win_rate_window == 50
    sampler = make_sampler(self_play)
    rng = np.random.default_rng(0)
    assert {sampler.draw(_pool(), WinRates(10), rng).key for _ in range(50)} == {"snapshot-3"}
    # configuration.yaml writes it flat, as the user did, and reads it back
    written = yaml.safe_load(dump_options(options))["behaviors"]["Duel"]["self_play"]["sampling"]
    assert written == {"strategy": "newest", "count": 1, "win_rate_window": 50}
    assert options_from_dict(yaml.safe_load(dump_options(options))) == options
    assert _sampling({"strategy": "newest"}).count == 2  # its default
    assert SamplingSettings(strategy="newest", count=3).options == newest_strategy(count=3)


def test_a_registered_strategys_key_is_checked_and_placed(newest_strategy):
    with pytest.raises(ConfigError, match=r"sampling\.count = 0: must be > 0"):
        _sampling({"strategy": "newest", "count": 0})
    with pytest.raises(ConfigError, match=r"sampling\.count = 3: a key of strategy newest, while "
                       r"this section's strategy is pfsp; write `strategy: newest`"):  # fmt: skip
        _sampling({"strategy": "pfsp", "count": 3})
    with pytest.raises(ConfigError, match=r"sampling\.pfsp_exponent = 3\.0: a key of strategy "
                       r"pfsp, while this section's strategy is newest"):  # fmt: skip
        _sampling({"strategy": "newest", "pfsp_exponent": 3.0})
    with pytest.raises(ConfigError, match="did you mean 'count'.*valid keys with strategy newest: "
                       "strategy, count, win_rate_window"):  # fmt: skip
        _sampling({"strategy": "newest", "cuont": 3})
    with pytest.raises(TypeError, match="'count' is a key of strategy newest, not of strategy "
                       "'uniform'"):  # fmt: skip
        SamplingSettings(strategy="uniform", count=3)


def test_a_misspelt_key_of_another_strategy_names_it():
    with pytest.raises(ConfigError, match=r"did you mean 'pfsp_exponent' \(a key of strategy pfsp\)"
                       r"\? valid keys with strategy uniform: strategy, win_rate_window"):  # fmt: skip
        _sampling({"strategy": "uniform", "pfsp_exponnent": 3.0})


def test_options_must_be_attrs_and_leave_the_shared_keys_alone():
    class Plain:
        pass

    @attrs.frozen
    class Clashing:
        win_rate_window: int = 3

    for options_class, message in [
        (Plain, "must be an attrs class"),
        (Clashing, "win_rate_window"),
    ]:
        sampler = type("Sampler", (OpponentSampler,), {"options_class": options_class})
        with pytest.raises(TypeError, match=message):
            register_sampler("broken")(sampler)
    assert "broken" not in sampler_names()


@pytest.mark.parametrize("strategy", ["latest_ratio", "uniform", "pfsp", "mixture"])
def test_an_earlier_configuration_record_reads_back(strategy):
    """Earlier versions wrote every built-in key; at their defaults the other strategies' keys
    change nothing and are read past, so resuming such a run works."""
    assert _sampling({"strategy": strategy, **EARLIER_RECORD}) == _sampling({"strategy": strategy})


def test_an_earlier_record_with_another_strategys_key_set_says_whose_it_is():
    record = {**EARLIER_RECORD, "strategy": "uniform", "pfsp_exponent": 3.0}
    with pytest.raises(ConfigError, match="a key of strategy pfsp"):
        _sampling(record)


@pytest.mark.parametrize(
    ("section", "options"),
    [
        ({"strategy": "latest_ratio"}, NoOptions()),
        ({"strategy": "pfsp", "pfsp_weighting": "variance", "pfsp_exponent": 3.0},
         PFSPOptions(pfsp_weighting=sampling.PFSPWeighting.VARIANCE, pfsp_exponent=3.0)),
        ({"strategy": "mixture", "mixture": {"latest": 0.25, "window": 0.75}},
         sampling.MixtureOptions(mixture=MixtureWeights(latest=0.25, window=0.75))),
    ],
)  # fmt: skip
def test_built_in_strategies_round_trip_flat(section, options):
    made = _options(section)
    assert made.behaviors["Duel"].self_play.sampling.options == options
    written = yaml.safe_load(dump_options(made))["behaviors"]["Duel"]["self_play"]["sampling"]
    assert list(written) == ["strategy", *attrs.fields_dict(type(options)), "win_rate_window"]
    assert options_from_dict(yaml.safe_load(dump_options(made))) == made


def test_a_behavior_with_another_strategy_inherits_only_the_shared_keys():
    options = options_from_dict({
        "default_settings": {"self_play": {"sampling": {
            "strategy": "pfsp", "pfsp_exponent": 3.0, "win_rate_window": 50}}},
        "behaviors": {
            "Other": {"self_play": {"sampling": {"strategy": "uniform"}}},
            "Same": {"self_play": {"sampling": {"pfsp_weighting": "variance"}}},
        },
    })  # fmt: skip
    other = options.behaviors["Other"].self_play.sampling
    same = options.behaviors["Same"].self_play.sampling
    assert other == SamplingSettings(strategy="uniform", win_rate_window=50)
    assert (same.strategy, same.pfsp_exponent, same.win_rate_window) == ("pfsp", 3.0, 50)


def test_evolving_to_another_strategy_takes_that_strategys_keys():
    pfsp = SamplingSettings(strategy="pfsp", pfsp_exponent=3.0, win_rate_window=40)
    mixture = MixtureWeights(latest=0.0, window=0.0, fixed=1.0)
    evolved = attrs.evolve(pfsp, strategy="mixture", mixture=mixture)
    assert evolved == SamplingSettings(strategy="mixture", mixture=mixture, win_rate_window=40)
    assert attrs.evolve(pfsp, pfsp_exponent=4.0).options == PFSPOptions(pfsp_exponent=4.0)
    with pytest.raises(AttributeError, match="'pfsp_exponent' \\(a key of strategy pfsp\\)"):
        _ = evolved.pfsp_exponent


def test_a_strategy_checks_its_keys_against_the_rest_of_self_play():
    with pytest.raises(ConfigError, match="mixture.fixed > 0 needs at least one fixed_opponents"):
        _sampling({"strategy": "mixture", "mixture": {"latest": 0.5, "window": 0.0, "fixed": 0.5}})


def test_league_exploiters_draw_with_pfsps_exponent_or_its_default():
    assert exploiter_pfsp_exponent(SamplingSettings(strategy="pfsp", pfsp_exponent=3.0)) == 3.0
    assert exploiter_pfsp_exponent(SamplingSettings()) == PFSPOptions().pfsp_exponent


@pytest.mark.parametrize("host", ["sb3", "rllib"])
def test_other_hosts_self_play_readers_take_a_registered_strategy(newest_strategy, host):
    pytest.importorskip({"sb3": "stable_baselines3", "rllib": "ray.rllib"}[host])
    if host == "sb3":
        from ghost.integrations.sb3.settings import self_play_settings
    else:
        from ghost.integrations.rllib.settings import self_play_settings
    settings = self_play_settings({"sampling": {"strategy": "newest", "count": 1}}, behavior="Duel")
    assert settings == SelfPlaySettings(sampling=SamplingSettings(strategy="newest", count=1))
    with pytest.raises(ConfigError, match=r"self_play\.sampling\.count = 1: a key of strategy"):
        self_play_settings({"sampling": {"count": 1}}, behavior="Duel")


@attrs.frozen(kw_only=True)
class EveryOtherOptions:
    start: int = attrs.field(default=0, validator=[attrs.validators.ge(0), attrs.validators.le(1)])


class EveryOtherSampler(OpponentSampler):
    """An entry-point plugin's strategy: the snapshots at even (or odd) window places."""

    options_class = EveryOtherOptions

    def draw(self, pool: Pool, win_rates: WinRates, rng: np.random.Generator) -> Opponent:
        return self.uniform(pool.window[self.options.start :: 2], pool.latest, rng)


def test_an_entry_point_strategy_brings_its_keys(monkeypatch):
    plugin = FakeEntryPoint("every_other", EveryOtherSampler)  # load() gives the class
    real = sampling.metadata.entry_points
    monkeypatch.setattr(
        sampling.metadata,
        "entry_points",
        lambda group: [plugin] if group == sampling.ENTRY_POINT_GROUP else real(group=group),
    )
    self_play = _options({"strategy": "every_other", "start": 1}).behaviors["Duel"].self_play
    rng = np.random.default_rng(0)
    drawn = {make_sampler(self_play).draw(_pool(), WinRates(10), rng).key for _ in range(50)}
    assert drawn == {"snapshot-1", "snapshot-3"}
    with pytest.raises(ConfigError, match=r"sampling\.start = 2: must be <= 1"):
        _sampling({"strategy": "every_other", "start": 2})
