"""The host contract (``tests/host_contract.py``) held against every host of the self-play cycle.

One scenario, the same expectations: a first leg with several turns, swaps and snapshots, a save
and a kill, a restore that must give back exactly what was saved, and a second leg that goes on
counting. Each host's three sessions run once per module (a fixture), then each check is a test.
The plugin needs ``.venv-mlagents`` (skipped without it unless ``GHOST_REQUIRE_MLAGENTS`` is set);
RLlib's sessions start Ray and are slow.
"""

from __future__ import annotations

import pytest

from tests import host_contract
from tests.host_contract import CHECKS, Legs

#: (host, check) → why that host breaks that check today: xfail(strict=True), so a fix shows up
KNOWN_BREAKS: dict[tuple[str, str], str] = {}


def checks_of(host: str) -> list:
    """Every check for ``host``, with its known break (if any) marked."""
    params = []
    for check in CHECKS:
        reason = KNOWN_BREAKS.get((host, check))
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        params.append(pytest.param(check, marks=marks, id=check))
    return params


def report(legs: Legs) -> Legs:
    print(f"\n{legs.figures()}")  # shown with -s: the figures each host produced
    return legs


@pytest.fixture(scope="module")
def ghost_learn(tmp_path_factory) -> Legs:
    return report(host_contract.ghost_learn_legs(tmp_path_factory.mktemp("ghost-learn")))


@pytest.fixture(scope="module")
def sb3(tmp_path_factory) -> Legs:
    pytest.importorskip("stable_baselines3", reason="Stable-Baselines3 is an optional extra")
    return report(host_contract.sb3_legs(tmp_path_factory.mktemp("sb3")))


@pytest.fixture(scope="module")
def rllib(tmp_path_factory) -> Legs:
    pytest.importorskip("ray.rllib", reason="RLlib is an optional extra")
    return report(host_contract.rllib_legs(tmp_path_factory.mktemp("rllib")))


@pytest.fixture(scope="module")
def mlagents_run(mlagents, tmp_path_factory) -> Legs:
    return report(host_contract.mlagents_legs(mlagents, tmp_path_factory.mktemp("mlagents")))


@pytest.mark.parametrize("check", checks_of(host_contract.GHOST_LEARN))
def test_ghost_learn_keeps_the_host_contract(ghost_learn, check):
    CHECKS[check](ghost_learn)


@pytest.mark.parametrize("check", checks_of(host_contract.SB3))
def test_stable_baselines3_keeps_the_host_contract(sb3, check):
    CHECKS[check](sb3)


@pytest.mark.parametrize("check", checks_of(host_contract.MLAGENTS))
def test_mlagents_plugin_keeps_the_host_contract(mlagents_run, check):
    CHECKS[check](mlagents_run)


@pytest.mark.slow
@pytest.mark.parametrize("check", checks_of(host_contract.RLLIB))
def test_rllib_keeps_the_host_contract(rllib, check):
    CHECKS[check](rllib)
