"""Environment kinds: every ``env_path`` form read once, by the one kind that claims it, and a new
kind is one class plus ``register_kind``."""

from __future__ import annotations

import subprocess
import sys

import pytest

from envs.env_kinds import (
    Capabilities,
    EnvironmentKind,
    GameKind,
    describe_env,
    env_kinds,
    register_kind,
)
from envs.env_kinds import registry as kind_registry
from envs.env_kinds.python_callable import CallableEnv
from envs.exceptions import EnvironmentSourceError
from envs.game_kind import BOARD
from envs.settings import EnvironmentSettings
from envs.sources import resolve_env
from envs.unity_editor import UnityEditor
from ghost.config.game_kinds import kind_of
from ghost.config.presets import auto_choice
from tests.fake_envs import FakeEnv

#: one text of every form, and the kind that must claim it
FORMS = [
    ("tennis", "builtin"),
    ("rock_paper_scissors", "builtin"),
    ("tests.fake_envs:make_duel", "module:callable"),
    ("my_envs:make_env", "module:callable"),
    ("my_envs:Games.make", "module:callable"),
    ("openspiel:kuhn_poker", "openspiel"),
    ("openspiel:goofspiel(num_cards=4)", "openspiel"),
    ("openspiel", "openspiel"),
    ("pettingzoo:pettingzoo.classic.connect_four_v3", "pettingzoo"),
    ("builds/Tennis.x86_64", "unity_build"),
    ("builds/Tennis", "unity_build"),
    ("tenis", "unity_build"),
    (None, "unity_editor"),
    ("", "unity_editor"),
]


@pytest.mark.parametrize(("text", "name"), FORMS)
def test_every_form_is_claimed_by_exactly_one_kind(text, name):
    claimants = [kind for kind in env_kinds() if not kind.catch_all and kind.recognises(text)]
    catch_all = [kind for kind in env_kinds() if kind.catch_all]
    assert len(catch_all) == 1
    assert [kind.name for kind in claimants or catch_all] == [name]
    assert describe_env(text).kind.name == name


def test_a_prefixed_kind_names_its_target():
    assert describe_env("openspiel:goofspiel(num_cards=4)").target == "goofspiel(num_cards=4)"
    assert describe_env("pettingzoo:a.b_v3").target == "a.b_v3"
    assert describe_env("my_envs:make_env").target == "my_envs:make_env"


#: kind → (arenas, seated, base_env, exact_exploitability, replays)
CAPABILITIES = {
    "builtin": (True, False, False, True, True),
    "module:callable": (False, False, True, False, False),
    "openspiel": (False, True, False, True, False),
    "pettingzoo": (False, True, False, False, False),
    "unity_build": (False, False, True, False, False),
    "unity_editor": (False, False, True, False, False),
}


def test_each_kind_declares_what_it_can_do():
    assert {kind.name for kind in env_kinds()} == set(CAPABILITIES)
    for kind in env_kinds():
        can = kind.capabilities
        flags = (can.arenas, can.seated, can.base_env, can.exact_exploitability, can.replays)
        assert flags == CAPABILITIES[kind.name], kind.name


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("rock_paper_scissors", None),
        ("biased_rps", None),
        ("tennis", "'tennis' is not a matrix game"),
        ("my_envs:make_env", "is neither an OpenSpiel game nor a built-in matrix game"),
        ("pettingzoo:pettingzoo.classic.rps_v2", "neither an OpenSpiel game"),
    ],
)
def test_exact_exploitability_is_asked_of_the_source(text, problem):
    found = describe_env(text).exact_exploitability_problem()
    assert found == problem if problem is None else problem in found


def test_exact_exploitability_of_openspiel_games_is_openspiels_check():
    pytest.importorskip("pyspiel", reason="OpenSpiel is an optional extra (open-spiel)")
    assert describe_env("openspiel:kuhn_poker").exact_exploitability_problem() is None
    problem = describe_env("openspiel:kuhn_poker(players=3)").exact_exploitability_problem()
    assert "it has 3 players, exactly 2 are required" in problem


def test_no_env_path_is_the_unity_editor_and_nothing_starts():
    editor = describe_env(None)
    assert isinstance(editor.factory(env_settings=EnvironmentSettings()), UnityEditor)
    assert editor.game_kind() == GameKind("unknown", "no env_path names the game")
    with pytest.raises(EnvironmentSourceError, match="no environment given"):
        resolve_env(None)  # resolve_env itself still asks for one


def test_openspiel_and_pettingzoo_load_only_when_used():
    script = (
        "import sys\n"
        "from envs.env_kinds import describe_env\n"
        "from envs.sources import resolve_env\n"
        "from ghost.config.game_kinds import game_kind\n"
        "for text in ('openspiel:kuhn_poker', 'pettingzoo:pettingzoo.classic.rps_v2'):\n"
        "    describe_env(text).capabilities\n"
        "resolve_env('tennis'); game_kind('tennis'); game_kind('pettingzoo:x.chess_v6')\n"
        "print(sorted(m for m in ('pyspiel', 'pettingzoo') if m in sys.modules))\n"
    )
    found = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout
    assert found.strip() == "[]"


# -- a kind of our own: one class and a registration --------------------------------------------
class FakeDuels(EnvironmentKind):
    """``myprefix:<name>``: ``tests.fake_envs.make_<name>``, a board game."""

    name = "fake_duels"
    prefix = "myprefix"
    capabilities = Capabilities(base_env=True)

    def form(self) -> str:
        return "myprefix:<game>"

    def factory(self, env, *, env_settings, engine_settings):
        source = CallableEnv(module="tests.fake_envs", attribute=f"make_{env.target}")
        source.load()
        return source

    def game_kind(self, env):
        return GameKind(BOARD, f"fake duel {env.target!r}")


@pytest.fixture
def fake_duels(monkeypatch):
    """``FakeDuels`` registered for one test only."""
    monkeypatch.setattr(kind_registry, "_KINDS", list(kind_registry._KINDS))
    return register_kind(FakeDuels())


def test_a_registered_kind_is_resolved_told_and_listed(fake_duels):
    factory = resolve_env("myprefix:duel")
    assert isinstance(factory(worker_id=1, seed=2), FakeEnv)
    assert describe_env("myprefix:duel").kind is fake_duels  # not read as module:callable
    assert kind_of("myprefix:duel") == GameKind(BOARD, "fake duel 'duel'")
    assert "a board game (fake duel 'duel')" in auto_choice("myprefix:duel").describe()
    with pytest.raises(EnvironmentSourceError) as caught:
        resolve_env("tenis")
    assert "pettingzoo:<module>, myprefix:<game>, or the path of a Unity build" in str(caught.value)
    with pytest.raises(EnvironmentSourceError, match="names no game; write .* or myprefix:<game>"):
        resolve_env("myprefix:")


def test_a_kind_cannot_take_a_name_or_prefix_already_taken(fake_duels):
    with pytest.raises(ValueError, match="'myprefix' already belongs to the kind 'fake_duels'"):
        register_kind(type("Other", (FakeDuels,), {"name": "other"})())
    with pytest.raises(ValueError, match="named 'fake_duels' is already registered"):
        register_kind(type("Again", (FakeDuels,), {"prefix": "again"})())
    catch_all = type("AnyText", (FakeDuels,), {"name": "any", "prefix": None, "catch_all": True})
    with pytest.raises(ValueError, match="'unity_build' already takes every text"):
        register_kind(catch_all())
