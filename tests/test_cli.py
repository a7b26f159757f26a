"""``ghost-learn``: flags, --check, the run folder, and one-line errors without tracebacks."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import types
from pathlib import Path

import pytest

from ghost.config.loader import load_options
from ghost.config.settings import CheckpointSettings
from ghost.exceptions import RunDirectoryError
from ghost.running import api, cli
from ghost.running.run_dir import RunDirectory
from tests.conftest import REFERENCE_CONFIGS, needs_reference_configs
from trainers.run_files.layout import safe_name

pytestmark = pytest.mark.usefixtures("fake_registry")

ROOT = Path(__file__).resolve().parents[1]
FLAGS = [
    "--env", "--run-id", "--resume", "--force", "--initialize-from", "--seed", "--num-envs",
    "--results-dir", "--inference", "--torch-device", "--base-port", "--env-args",
    "--time-scale", "--no-graphics", "--width", "--height", "--debug", "--check",
]  # fmt: skip

DUEL_SELF_PLAY = {"behaviors": {"Duel": {"self_play": {"save_steps": 500}, "max_steps": 1000}}}


@pytest.fixture
def training(monkeypatch):
    """Replace ``run_training`` (what the CLI reaches through ``ghost.train``'s machinery) by a
    recorder of what it receives."""
    calls = []

    def record(options, *, env_factory, run_dir, callbacks=()):
        calls.append((options, env_factory, run_dir))
        return types.SimpleNamespace(stopped_early=False)

    monkeypatch.setattr(api, "run_training", record)
    return calls


def run_cli(capsys, *argv):
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def ghost_learn_command() -> list[str]:
    script = shutil.which("ghost-learn")
    return [script] if script else [sys.executable, "-m", "ghost.running.cli"]


# -- help ---------------------------------------------------------------------------------------
def test_help_in_a_subprocess_lists_the_flags():
    result = subprocess.run(
        [*ghost_learn_command(), "--help"], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert result.returncode == 0
    for flag in FLAGS:
        assert flag in result.stdout
    assert "env_settings.seed" in result.stdout  # each flag names the key it overrides


def test_help_in_process(capsys):
    with pytest.raises(SystemExit) as caught:
        cli.main(["--help"])
    assert caught.value.code == 0
    out = capsys.readouterr().out
    for flag in FLAGS:
        assert flag in out


# -- --check ------------------------------------------------------------------------------------
def test_check_prints_a_summary(capsys, write_yaml):
    config = write_yaml(DUEL_SELF_PLAY)
    code, out, err = run_cli(capsys, config, "--env", "tests.fake_envs:make_duel", "--check")
    assert code == 0, err
    assert "behavior Duel" in out
    assert "teams:        0, 1" in out
    assert "trainer:      ppo" in out
    assert "self_play:    on (save_steps 500, team_change 2500" in out
    assert "observations: (6,)" in out
    assert "actions:      continuous 2" in out
    assert "check passed" in out and "Nothing was trained" in out


def test_check_asymmetric_with_discrete_actions(capsys, write_yaml):
    config = write_yaml({"default_settings": {"self_play": {}}})
    code, out, err = run_cli(capsys, config, "--env", "tests.fake_envs:make_asymmetric", "--check")
    assert code == 0, err
    assert "behavior Striker" in out and "behavior Goalie" in out
    assert "discrete branches (3, 3)" in out


def test_two_teams_without_self_play_self_play_with_the_defaults(capsys, write_yaml, caplog):
    config = write_yaml({"behaviors": {"Duel": {"max_steps": 10}}})
    with caplog.at_level("INFO"):
        code, out, err = run_cli(capsys, config, "--env", "tests.fake_envs:make_duel", "--check")
    assert code == 0, err
    assert "self_play:    on (save_steps 20000, team_change 100000" in out
    assert (
        "behaviors.Duel has no self_play section but the environment has opposing teams "
        "(teams 0, 1): self-play is on with ML-Agents' default settings" in caplog.text
    )


def test_no_config_trains_a_game_with_its_shipped_config(capsys, caplog, tmp_path):
    with caplog.at_level("INFO"):
        code, out, err = run_cli(capsys, "--env", "tennis", "--check", "--max-steps", "5000")
    assert code == 0, err
    assert "No config given: training tennis with the shipped config" in caplog.text
    assert "tennis.yaml" in caplog.text
    assert "trainer:      ppo (max_steps 5000)" in out
    assert "save_steps 10000, team_change 40000" in out  # config/tennis.yaml's, not the defaults


@pytest.mark.parametrize("value", ["0", "-3", "many"])
def test_max_steps_must_be_a_positive_whole_number(capsys, value):
    code, out, err = run_cli(capsys, "--env", "tennis", "--check", "--max-steps", value)
    assert code == 2 and err.strip() == (
        f"ghost-learn: error: --max-steps = {value!r}: must be a whole number > 0"
    )


def test_check_without_config_uses_defaults(capsys):
    code, out, err = run_cli(capsys, "--env", "tests.fake_envs:make_solo", "--check")
    assert code == 0, err
    assert "behavior Solo" in out and "self_play:    off" in out


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ("tests.fake_envs:make_mismatched", "team 1 reports other observations"),
        ("tests.fake_envs:make_empty", "reports no behaviors"),
        ("tests.fake_envs:not_an_env", "not an mlagents_envs.base_env.BaseEnv"),
    ],
)
def test_check_environment_problems(capsys, write_yaml, env, message):
    config = write_yaml({"default_settings": {"self_play": {}}})
    code, _, err = run_cli(capsys, config, "--env", env, "--check")
    assert code == 2
    assert message in err


@needs_reference_configs
def test_check_accepts_the_poca_reference_config(capsys):
    code, out, err = run_cli(
        capsys, REFERENCE_CONFIGS / "SoccerTwos-poca.yaml", "--env", "soccer", "--check"
    )
    assert code == 0, err
    assert "SoccerTwos" in out


# -- user errors ----------------------------------------------------------------------------------
def test_config_typo_is_one_line(capsys, write_yaml):
    config = write_yaml({"behaviors": {"Duel": {"self_play": {"swap_step": 10}}}})
    code, _, err = run_cli(capsys, config, "--env", "tests.fake_envs:make_duel")
    assert code == 2
    assert err.startswith("ghost-learn: error: ")
    assert "behaviors.Duel.self_play.swap_step" in err and "'swap_steps'" in err
    assert "Traceback" not in err


def test_flag_values_are_checked_like_yaml(capsys):
    code, _, err = run_cli(capsys, "--env", "tests.fake_envs:make_solo", "--num-envs", "0")
    assert code == 2 and "--num-envs = '0': must be > 0" in err
    code, _, err = run_cli(capsys, "--env", "tests.fake_envs:make_solo", "--seed", "x")
    assert code == 2 and "--seed = 'x': expected a whole number" in err


def test_no_environment_anywhere_waits_for_the_unity_editor(capsys, write_yaml):
    # as mlagents-learn: no --env trains in the Editor (tests/test_unity_editor.py)
    with socket.socket() as probe:
        probe.bind(("localhost", 0))
        port = probe.getsockname()[1]
    code, _, err = run_cli(capsys, write_yaml(DUEL_SELF_PLAY), "--check", "--base-port", port,
                           "--timeout-wait", "1")  # fmt: skip
    assert code == 2
    assert f"no Unity Editor connected to port {port} within 1 s" in err and "--env" in err


def test_user_error_in_a_subprocess_has_no_traceback(write_yaml):
    config = write_yaml(
        {"behaviors": {"Duel": {"self_play": {"play_against_current_self_ratio": 1}}}}
    )
    result = subprocess.run(
        [*ghost_learn_command(), str(config), "--check"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "did you mean 'play_against_latest_model_ratio'" in result.stderr


# -- training runs (run_training replaced) ------------------------------------------------------
def test_training_gets_options_factory_and_run_dir(capsys, write_yaml, tmp_path, training):
    results = tmp_path / "results"
    config = write_yaml(
        {**DUEL_SELF_PLAY, "env_settings": {"env_path": "tests.fake_envs:make_duel", "seed": 4}}
    )
    code, _, err = run_cli(
        capsys, config, "--run-id", "r1", "--results-dir", results, "--num-envs", "2",
        "--deterministic", "--torch-device", "cpu",
    )  # fmt: skip
    assert code == 0, err
    [(options, factory, run_dir)] = training
    assert options.env_settings.num_envs == 2 and options.torch_settings.device == "cpu"
    assert options.behaviors["Duel"].network_settings.deterministic
    assert factory(worker_id=0, seed=0).behavior_specs.keys() == {"Duel?team=0", "Duel?team=1"}
    assert run_dir == RunDirectory(root=results / "r1", created=True)
    assert (results / "r1" / "run_logs").is_dir()
    assert load_options(results / "r1" / "configuration.yaml") == options


def test_seed_minus_one_is_drawn_and_recorded(capsys, tmp_path, training):
    args = ["--env", "tests.fake_envs:make_solo", "--results-dir", tmp_path, "--run-id", "s"]
    assert run_cli(capsys, *args)[0] == 0
    seed = training[-1][0].env_settings.seed
    assert seed >= 0
    assert load_options(tmp_path / "s" / "configuration.yaml").env_settings.seed == seed
    assert run_cli(capsys, *args, "--resume")[0] == 0
    assert training[-1][0].env_settings.seed == seed  # a resumed run keeps its seed
    assert training[-1][2].resumed


def test_builtin_game_named_in_the_config_needs_no_env_flag(
    capsys, write_yaml, tmp_path, training, monkeypatch
):
    games = types.ModuleType("envs.games")
    games.BUILTIN_GAMES = {"duel": None}
    games.make_game = lambda name, *, worker_id=0, seed=0: None
    monkeypatch.setitem(sys.modules, "envs.games", games)
    config = write_yaml({**DUEL_SELF_PLAY, "env_settings": {"env_path": "duel"}})
    code, _, err = run_cli(capsys, config, "--run-id", "g", "--results-dir", tmp_path)
    assert code == 0, err
    assert training[0][1].describe() == "built-in game 'duel'"


def test_existing_run_needs_resume_or_force(capsys, tmp_path, training):
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "configuration.yaml").write_text("{}")
    args = ["--env", "tests.fake_envs:make_solo", "--results-dir", tmp_path, "--run-id", "taken"]
    code, _, err = run_cli(capsys, *args)
    assert code == 2
    assert "--resume" in err and "--force" in err and "Traceback" not in err
    assert not training
    (tmp_path / "taken" / "old.txt").write_text("old")
    assert run_cli(capsys, *args, "--force")[0] == 0
    assert not (tmp_path / "taken" / "old.txt").exists()
    assert len(training) == 1


def test_resume_of_a_missing_run(capsys, tmp_path, training):
    code, _, err = run_cli(
        capsys, "--env", "tests.fake_envs:make_solo", "--results-dir", tmp_path, "--resume"
    )
    assert code == 2 and "cannot resume run 'ppo'" in err and "without --resume" in err


@pytest.mark.parametrize(
    ("yaml_settings", "flags", "resume", "initialize_from", "warning"),
    [
        ({"resume": True}, {"checkpoint_settings.initialize_from": "old"}, False, "old",
         "--initialize-from given: ignoring resume from the configuration"),
        ({"initialize_from": "old"}, {"checkpoint_settings.resume": True}, True, None,
         "both resume and initialize_from='old' are set: resuming"),
        ({}, {"checkpoint_settings.resume": True, "checkpoint_settings.initialize_from": "old"},
         True, None, "resuming, ignoring initialize_from"),
        ({"resume": True, "initialize_from": "old"}, {}, True, None, "resuming"),
    ],
    ids=["init-flag-beats-yaml-resume", "resume-flag-beats-yaml-init", "both-flags",
         "both-in-yaml"],
)  # fmt: skip
def test_resume_and_initialize_from_together(
    write_yaml, caplog, yaml_settings, flags, resume, initialize_from, warning
):
    config = write_yaml({"checkpoint_settings": yaml_settings})
    with caplog.at_level("WARNING"):
        options = cli.load_run_options(str(config), flags)
    assert options.checkpoint_settings.resume is resume
    assert options.checkpoint_settings.initialize_from == initialize_from
    assert warning in caplog.text


def test_check_draws_a_seed_for_itself_only(write_yaml, tmp_path):
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "configuration.yaml").write_text("env_settings: {seed: 7}\n")
    flags = {"checkpoint_settings.results_dir": str(tmp_path), "checkpoint_settings.run_id": "r",
             "checkpoint_settings.resume": True}  # fmt: skip
    assert cli.load_run_options(None, flags).env_settings.seed == 7  # the recorded seed
    assert cli.load_run_options(None, {**flags, "env_settings.seed": "5"}).env_settings.seed == 5
    checked = cli.load_run_options(None, flags, check=True).env_settings.seed
    assert 0 <= checked < 10_000


# -- the run folder -----------------------------------------------------------------------------
def prepare(tmp_path, **settings) -> RunDirectory:
    return RunDirectory.prepare(CheckpointSettings(results_dir=str(tmp_path), **settings))


def test_run_directory_paths(tmp_path):
    run_dir = prepare(tmp_path, run_id="r")
    layout = run_dir.layout
    assert run_dir.root == tmp_path / "r" and layout.run_logs_dir.is_dir()
    assert layout.configuration_path == tmp_path / "r" / "configuration.yaml"
    assert layout.behavior_dir("Tennis") == tmp_path / "r" / "Tennis"
    assert layout.checkpoint_path("Tennis", 30) == tmp_path / "r/Tennis/checkpoints/Tennis-30.pt"
    assert layout.snapshot_path("Tennis", 2) == tmp_path / "r/Tennis/snapshots/snapshot-2.pt"
    assert layout.final_policy_path("Tennis") == tmp_path / "r" / "Tennis.pt"
    assert layout.final_policy_path("A/B:c") == tmp_path / "r" / "A_B_c.pt"
    assert safe_name("..") == "_"


def test_run_directory_refusals(tmp_path):
    with pytest.raises(RunDirectoryError, match="contradict"):
        prepare(tmp_path, run_id="r", resume=True, force=True)
    with pytest.raises(ValueError, match="must name one folder"):
        prepare(tmp_path, run_id="../escape")
    with pytest.raises(RunDirectoryError, match="cannot initialize from run 'old'"):
        prepare(tmp_path, run_id="r", initialize_from="old")
    (tmp_path / "old").mkdir()
    assert prepare(tmp_path, run_id="r", initialize_from="old").initialize_from == tmp_path / "old"
