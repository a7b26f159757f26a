"""``--env`` resolution: built-in games, module:callable, Unity builds, and the errors."""

from __future__ import annotations

import pickle
import sys
import types

import pytest
from mlagents_envs.base_env import BaseEnv

from envs import sources
from envs.settings import EngineSettings, EnvironmentSettings
from envs.sources import BuiltinGame, CallableEnv, resolve_env
from envs.unity_build import UnityBuild
from ghost.config.environment import env_factory_for
from ghost.config.settings import RunOptions
from ghost.exceptions import EnvironmentSourceError
from tests.fake_envs import FakeEnv


@pytest.fixture
def fake_games(monkeypatch):
    """A stand-in ``envs.games`` with one game, recording how it was made."""
    calls = []

    def make_game(name, *, worker_id=0, seed=0, **kwargs):
        calls.append((name, worker_id, seed))
        return FakeEnv({}, worker_id=worker_id, seed=seed)

    module = types.ModuleType("envs.games")
    module.BUILTIN_GAMES = {"tennis": None, "soccer": None}
    module.make_game = make_game
    monkeypatch.setitem(sys.modules, "envs.games", module)
    return calls


def test_module_callable_makes_a_picklable_factory():
    factory = resolve_env("tests.fake_envs:make_duel")
    assert factory == CallableEnv(
        module="tests.fake_envs", attribute="make_duel", search_path=factory.search_path
    )
    clone = pickle.loads(pickle.dumps(factory))
    env = clone(worker_id=3, seed=11)
    assert isinstance(env, BaseEnv)
    assert (env.worker_id, env.seed) == (3, 11)


@pytest.mark.parametrize(
    ("name", "worker_id", "seed"),
    [("make_duel", 2, 5), ("make_solo", 0, 5), ("make_no_args", 0, 0), ("make_asymmetric", 2, 5)],
)
def test_only_accepted_arguments_are_passed(name, worker_id, seed):
    env = resolve_env(f"tests.fake_envs:{name}")(worker_id=2, seed=5)
    assert (env.worker_id, env.seed) == (worker_id, seed)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("tests.no_such_module:make", "module 'tests.no_such_module' not found"),
        ("tests.fake_envs:make_dual", "has no attribute 'make_dual'; did you mean 'make_duel'?"),
        ("tests.fake_envs:NOT_CALLABLE", "is a int, not callable"),
        ("no/such/build", "Unity build not found"),
        ("tenis", "names no environment"),
    ],
)
def test_bad_sources_are_explained(spec, expected):
    with pytest.raises(EnvironmentSourceError) as caught:
        resolve_env(spec)
    assert expected in str(caught.value)


def test_factory_must_return_a_base_env():
    factory = resolve_env("tests.fake_envs:not_an_env")
    with pytest.raises(EnvironmentSourceError, match="returned a dict, not an mlagents_envs"):
        factory(worker_id=0, seed=0)


def test_missing_env_says_how_to_give_one(fake_games):
    with pytest.raises(EnvironmentSourceError) as caught:
        resolve_env(None)
    assert "--env" in str(caught.value) and "env_settings.env_path" in str(caught.value)
    assert "soccer, tennis" in str(caught.value)


def test_builtin_game(fake_games):
    factory = resolve_env("tennis")
    assert factory == BuiltinGame(name="tennis")
    env = pickle.loads(pickle.dumps(factory))(worker_id=1, seed=9)
    assert isinstance(env, FakeEnv)
    assert fake_games == [("tennis", 1, 9)]
    with pytest.raises(EnvironmentSourceError, match="did you mean the built-in game 'tennis'"):
        resolve_env("tenis")


def test_num_areas_sizes_a_builtin_game():
    from envs.games import make_game

    factory = resolve_env("tennis", env_settings=EnvironmentSettings(num_areas=4))
    assert factory == BuiltinGame(name="tennis", arenas=4) and "4 arenas" in factory.describe()
    assert factory(worker_id=0, seed=0).num_arenas == 4
    default = resolve_env("tennis", env_settings=EnvironmentSettings(num_areas=1))
    assert default(worker_id=0, seed=0).num_arenas == make_game("tennis").num_arenas == 32


def test_unity_build_path(tmp_path, monkeypatch):
    build = tmp_path / "Tennis.x86_64"
    build.write_bytes(b"\x7fELF")  # a program, as resolve_env checks
    build.chmod(0o755)
    created = {}

    class FakeUnityEnvironment(FakeEnv):
        def __init__(self, **kwargs):
            created.update(kwargs)
            super().__init__({})

    monkeypatch.setattr("envs.unity_build._environment_class", lambda: FakeUnityEnvironment)
    factory = resolve_env(
        str(tmp_path / "Tennis"),
        env_settings=EnvironmentSettings(base_port=6000, env_args=["--x"], timeout_wait=5),
        engine_settings=EngineSettings(time_scale=4.0, no_graphics_monitor=True),
    )
    assert isinstance(factory, UnityBuild) and factory.runs_in_worker
    factory = pickle.loads(pickle.dumps(factory))
    factory(worker_id=0, seed=3)
    assert created["no_graphics"] is False  # worker 0 renders under --no-graphics-monitor
    factory(worker_id=2, seed=3)
    assert created["file_name"] == str(tmp_path / "Tennis")
    assert (created["worker_id"], created["seed"], created["base_port"]) == (2, 3, 6000)
    assert created["no_graphics"] is True
    assert created["additional_args"] == ["--x"] and created["timeout_wait"] == 5
    assert created["engine"].time_scale == 4.0


def test_env_factory_for_reads_env_path():
    options = RunOptions(env_settings=EnvironmentSettings(env_path="tests.fake_envs:make_solo"))
    assert env_factory_for(options).spec == "tests.fake_envs:make_solo"


def test_without_games_module_builtin_names_are_none(monkeypatch):
    monkeypatch.setitem(sys.modules, "envs.games", None)  # import fails like a missing module
    assert sources._builtin_games() == {}
