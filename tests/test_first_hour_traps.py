"""Traps a new user met in the first hour with ``ghost-learn``, each kept shut by a test.

- a key written on purpose keeps its value where a preset fills keys in, also at match time
  (self-play turned on by default) and also where it equals the default; a network with memory
  never gets a preset key it refuses, and a refusal names the behavior, the key, the value,
  where the value came from and the fix;
- ``--check`` refuses exactly what training refuses at its start, with the same words, and
  prints the preset keys training uses;
- the ``team_change >= max_steps`` warning is kept for real misconfigurations, not for a trial
  shortened with ``--max-steps``;
- ``--inference`` on a new run says its policies are untrained;
- ``--resume`` of a run that does not exist says so and names the runs that do;
- files get ``0o666`` less the umask, and ``run_logs/console.log`` keeps what the console showed.
"""

from __future__ import annotations

import logging
import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from mlagents_envs.base_env import (
    ActionSpec,
    BehaviorSpec,
    DimensionProperty,
    ObservationSpec,
    ObservationType,
)

from envs.behavior_id import BehaviorId
from envs.exceptions import GhostError
from envs.specs import vector_observation_spec
from ghost.config.loader import load_options, resolve_options
from ghost.running import cli
from ghost.running.start_checks import check_start
from tests.conftest import FakeEntryPoint
from tests.fake_envs import FakeEnv, make_asymmetric
from trainers.hyperparameters import POCASettings, PPOSettings, SACSettings
from trainers.run_files.atomic import atomic_write_text
from trainers.run_files.console_log import ConsoleLog
from trainers.run_files.lock import RunLock

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

from malformed_inputs import GOOD_CONFIG  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

ERROR = "ghost-learn: error: "


# -- environments for the start checks ------------------------------------------------------------
_GOAL = ObservationSpec(
    shape=(2,),
    dimension_property=vector_observation_spec(2).dimension_property,
    observation_type=ObservationType.GOAL_SIGNAL,
    name="goal",
)
_SMALL_IMAGE = ObservationSpec(
    shape=(8, 8, 3),
    dimension_property=(DimensionProperty.TRANSLATIONAL_EQUIVARIANCE,) * 2
    + (DimensionProperty.NONE,),
    observation_type=ObservationType.DEFAULT,
    name="camera",
)


def _duel_of(observations: list[ObservationSpec]) -> FakeEnv:
    behavior = BehaviorSpec(observations, ActionSpec(2, ()))
    return FakeEnv({"Duel?team=0": behavior, "Duel?team=1": behavior})


def goal_duel(worker_id: int = 0, seed: int = 0) -> FakeEnv:
    """A duel whose agents see a goal signal (``goal_conditioning_type: hyper`` refuses it)."""
    return _duel_of([vector_observation_spec(4), _GOAL])


def small_image_duel(worker_id: int = 0, seed: int = 0) -> FakeEnv:
    """A duel seen through an 8x8 camera: too small for the ``simple`` encoder."""
    return _duel_of([_SMALL_IMAGE])


# -- helpers --------------------------------------------------------------------------------------
def learn(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def error_of(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith(ERROR)]
    assert len(lines) == 1, err
    return lines[0][len(ERROR) :]


def write(path: Path, config: dict) -> Path:
    path.write_text(yaml.safe_dump(config))
    return path


def tiny(**behavior: object) -> dict:
    """``GOOD_CONFIG``'s tiny healthy duel with ``behavior`` keys laid over its settings (a
    ``self_play`` of None drops the section)."""
    settings = {**GOOD_CONFIG["default_settings"], **behavior}
    if settings.get("self_play", {}) is None:
        settings.pop("self_play")
    return {"behaviors": {"Duel": settings}, "env_settings": dict(GOOD_CONFIG["env_settings"])}


@pytest.fixture
def umask() -> Iterator[object]:
    """``umask(value)`` sets the process umask for the test; the old one is restored after."""
    old = os.umask(0o022)
    os.umask(old)
    yield lambda value: os.umask(value)
    os.umask(old)


# -- 1. written keys, presets and memory ----------------------------------------------------------
def test_a_written_default_survives_preset_auto_at_match_time(tmp_path, capsys):
    # no self_play section: self-play goes on at match time with preset auto (robust here)
    config = write(tmp_path / "c.yaml", tiny(self_play=None, hyperparameters={
        "batch_size": 32, "buffer_size": 128, "magnet_strength": 0}))  # fmt: skip
    results = ["--results-dir", tmp_path / "results", "--run-id", "r"]
    code, out, err = learn(capsys, config, *results, "--check")
    assert code == 0, err
    assert "hyperparameters.magnet_strength = 0.0 (yours; the preset's: 0.3)" in out
    assert learn(capsys, config, *results)[0] == 0
    recorded = load_options(tmp_path / "results" / "r" / "configuration.yaml").behaviors["Duel"]
    assert recorded.hyperparameters.magnet_strength == 0.0
    assert recorded.self_play.learn_from_latest  # what the preset set and nobody wrote


def test_default_settings_written_keys_count_for_the_behaviors_that_inherit_them():
    options = resolve_options({
        "default_settings": {"hyperparameters": {"magnet_strength": 0}},
        "behaviors": {"Duel": {"self_play": {"preset": "robust"}}, "Other": {"self_play": {}}},
    })  # fmt: skip
    assert options.behaviors["Other"].hyperparameters.magnet_strength == 0.0  # auto: robust
    assert options.behaviors["Other"].self_play.learn_from_latest


def test_memory_with_a_written_magnet_names_key_value_origin_and_fix(tmp_path, capsys):
    config = write(tmp_path / "c.yaml", tiny(
        hyperparameters={"magnet_strength": 0.3},
        network_settings={"hidden_units": 8, "memory": {"memory_size": 16}},
    ))  # fmt: skip
    code, _, err = learn(capsys, config, "--results-dir", tmp_path, "--check")
    assert code == 2
    assert error_of(err) == (
        f"{config}: behaviors.Duel.network_settings.memory: hyperparameters.magnet_strength = 0.3 "
        "(written) is not supported with a network with memory yet; write "
        "hyperparameters.magnet_strength: 0, or remove the memory section"
    )


def test_memory_taking_another_behavior_s_self_play_section(tmp_path, fake_registry):
    memory = {"network_settings": {"memory": {"memory_size": 16}}}
    specs = {BehaviorId.parse(name): s for name, s in make_asymmetric().behavior_specs.items()}
    # the section's preset set learn_from_latest: the goalie, with memory, leaves it out
    options = resolve_options({"behaviors": {"Striker": {"self_play": {}}, "Goalie": memory}})
    matched = check_start(options, specs)
    assert matched["Striker"].self_play.learn_from_latest
    assert not matched["Goalie"].self_play.learn_from_latest
    # written in the lender's section: refused, saying where it came from
    written = {"Striker": {"self_play": {"learn_from_latest": True}}, "Goalie": memory}
    with pytest.raises(GhostError) as caught:
        check_start(resolve_options({"behaviors": written}), specs)
    assert str(caught.value) == (
        "behaviors.Goalie.network_settings.memory: self_play.learn_from_latest = True (written "
        "in behaviors.Striker.self_play, which Goalie takes: it has no self_play section) is not "
        "supported with a network with memory yet; write self_play.learn_from_latest: false, or "
        "remove the memory section"
    )


def test_memory_with_self_play_on_by_default_trains(tmp_path, capsys):
    config = write(
        tmp_path / "c.yaml",
        tiny(self_play=None, network_settings={"hidden_units": 8, "memory": {"memory_size": 16}}),
    )
    code, out, err = learn(capsys, config, "--results-dir", tmp_path, "--max-steps", "200")
    assert code == 0, err


@pytest.mark.parametrize("section", ["behaviors", "default_settings"])
def test_resuming_a_run_self_play_was_turned_on_for_reports_no_change(
    tmp_path, capsys, caplog, section
):
    config = tiny(self_play=None, max_steps=200)
    if section == "default_settings":
        config = {
            "default_settings": config["behaviors"]["Duel"],
            "env_settings": config["env_settings"],
        }
    path = write(tmp_path / "c.yaml", config)
    flags = ["--results-dir", tmp_path, "--run-id", "r"]
    assert learn(capsys, path, *flags)[0] == 0
    with caplog.at_level(logging.INFO):
        assert learn(capsys, path, *flags, "--resume", "--max-steps", "400")[0] == 0
    [changed] = [
        r.getMessage() for r in caplog.records if "Configuration changed" in r.getMessage()
    ]
    lines = changed.splitlines()[1:]  # the only change: --max-steps
    assert "  behaviors.Duel.max_steps: 200 -> 400" in lines
    assert all(line.endswith("max_steps: 200 -> 400") for line in lines)


# -- 2. --check refuses what training refuses, in the same words ----------------------------------
def _self_play(**keys: object) -> dict:
    return {**GOOD_CONFIG["default_settings"]["self_play"], **keys}


PARITY = {
    "scripted opponent outside a built-in game": (
        tiny(self_play=_self_play(fixed_opponents=[{"name": "m", "scripted": "medium"}])),
        (), "needs a built-in game",
    ),
    "missing opponent policy file": (
        tiny(self_play=_self_play(fixed_opponents=[{"name": "p", "policy": "nope/Duel.pt"}])),
        (), "policy file nope/Duel.pt does not exist",
    ),
    "evaluation outside a built-in game": (
        tiny(self_play=_self_play(evaluation={})), (), "plays a built-in game",
    ),
    "goal signal with hyper conditioning": (
        tiny(), ("--env", "tests.test_first_hour_traps:goal_duel"),
        "goal_conditioning_type = 'hyper'",
    ),
    "image too small for the encoder": (
        tiny(), ("--env", "tests.test_first_hour_traps:small_image_duel"),
        "needs images of at least 20x20",
    ),
    "memory in a shared self_play section": (
        {"behaviors": {"Striker": {"self_play": {"learn_from_latest": True}},
                       "Goalie": {"network_settings": {"memory": {"memory_size": 16}}}}},
        ("--env", "tests.fake_envs:make_asymmetric"), "(written in behaviors.Striker.self_play",
    ),
    "--initialize-from a missing run": (
        tiny(), ("--initialize-from", "gone"), "cannot initialize from run 'gone'",
    ),
    "run id taken without --resume or --force": (
        tiny(), ("--run-id", "taken"), "run 'taken' already exists",
    ),
}  # fmt: skip


@pytest.mark.parametrize(("config", "flags", "expect"), PARITY.values(), ids=list(PARITY))
def test_check_refuses_what_training_refuses_with_the_same_message(
    tmp_path, capsys, config, flags, expect
):
    taken = tmp_path / "results" / "taken"
    taken.mkdir(parents=True)
    (taken / "configuration.yaml").write_text("{}\n")
    path = write(tmp_path / "c.yaml", config)
    argv = [path, "--results-dir", tmp_path / "results", *flags]
    if "--run-id" not in flags:
        argv += ["--run-id", "r"]
    checked, _, check_err = learn(capsys, *argv, "--check")
    trained, _, train_err = learn(capsys, *argv)
    assert (checked, trained) == (2, 2), (check_err, train_err)
    assert expect in error_of(check_err)
    assert error_of(check_err) == error_of(train_err)
    assert not (tmp_path / "results" / "r").exists()


def test_check_refuses_learn_from_latest_with_a_trainer_that_cannot_forget(
    tmp_path, capsys, use_entry_points
):
    class Forgetless:
        """A plugin trainer without ``forget_partial``."""

    trainers = {"ppo": Forgetless, "sac": Forgetless, "poca": Forgetless}
    hyperparameters = {"ppo": PPOSettings, "sac": SACSettings, "poca": POCASettings}
    use_entry_points(FakeEntryPoint("builtin", lambda: (trainers, hyperparameters)))
    path = write(tmp_path / "c.yaml", tiny(self_play=_self_play(learn_from_latest=True)))
    code, _, err = learn(capsys, path, "--results-dir", tmp_path, "--check")
    assert code == 2
    assert "self_play.learn_from_latest: trainer Forgetless cannot drop" in error_of(err)


def test_check_prints_the_preset_keys_training_records(tmp_path, capsys):
    path = write(tmp_path / "c.yaml", tiny(self_play=None))
    results = ["--results-dir", tmp_path / "results", "--run-id", "r"]
    code, out, err = learn(capsys, path, *results, "--check")
    assert code == 0, err
    [line] = [line for line in out.splitlines() if line.startswith("  preset:")]
    assert "preset 'robust'" in line
    assert learn(capsys, path, *results)[0] == 0
    console = (tmp_path / "results" / "r" / "run_logs" / "console.log").read_text()
    text = line.split("preset:", 1)[1].strip()
    assert f"behaviors.Duel: {text}" in console  # training logged the very same line
    recorded = load_options(tmp_path / "results" / "r" / "configuration.yaml").behaviors["Duel"]
    for assignment in text.split(" sets ", 1)[1].split(", "):
        key, value = assignment.split(" = ")
        holder: object = recorded
        for part in key.split("."):
            holder = getattr(holder, part)
        assert repr(holder) == value, key
    self_play = recorded.self_play
    assert (
        f"on (save_steps {self_play.save_steps}, team_change {self_play.steps_per_team}, "
        f"swap_steps {self_play.swap_steps}, window {self_play.window}, "
        f"latest ratio {self_play.play_against_latest_model_ratio})"
    ) in out


# -- 3. team_change >= max_steps ------------------------------------------------------------------
def test_a_documented_trial_prints_no_team_change_warning(tmp_path, capsys, caplog):
    # README: ghost-learn --env tennis --max-steps 20000 --run-id tennis-trial (fewer steps here)
    with caplog.at_level(logging.WARNING):
        code, _, err = learn(capsys, "--env", "tennis", "--max-steps", "300",
                             "--results-dir", tmp_path, "--run-id", "tennis-trial")  # fmt: skip
    assert code == 0, err
    assert not [r for r in caplog.records if "team_change" in r.getMessage()]


def test_a_real_team_change_misconfiguration_still_warns_in_one_line(tmp_path, capsys, caplog):
    config = write(tmp_path / "c.yaml", tiny(max_steps=400, self_play=_self_play(team_change=400)))
    with caplog.at_level(logging.WARNING):
        code, _, err = learn(capsys, config, "--results-dir", tmp_path)
    assert code == 0, err
    [warning] = [r.getMessage() for r in caplog.records if "team_change" in r.getMessage()]
    assert "\n" not in warning
    assert warning.startswith("behaviors.Duel.self_play.team_change (400) is not below max_steps")


# -- 4. --inference on a new run ------------------------------------------------------------------
def test_inference_on_a_new_run_says_its_policies_are_untrained(tmp_path, capsys, caplog):
    config = write(tmp_path / "c.yaml", tiny(max_steps=200))
    flags = ["--results-dir", tmp_path, "--run-id", "r"]
    with caplog.at_level(logging.WARNING):
        assert learn(capsys, config, *flags, "--inference")[0] == 0
    untrained = [r.getMessage() for r in caplog.records if "untrained" in r.getMessage()]
    assert untrained == [
        "--inference on a new run: no checkpoint or policy file to load, so the policies of Duel "
        "act with untrained (random) weights; add --resume to watch a trained run, or "
        "--initialize-from RUN_ID"
    ]
    assert learn(capsys, config, *flags, "--force")[0] == 0
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert learn(capsys, config, *flags, "--resume", "--inference")[0] == 0
    assert not [r for r in caplog.records if "untrained" in r.getMessage()]


# -- 5. --resume of a run that does not exist ------------------------------------------------------
def test_resume_of_a_missing_run_names_the_runs_that_exist(tmp_path, capsys):
    for number in range(7):
        run = tmp_path / f"run-{number}"
        run.mkdir()
        (run / "configuration.yaml").write_text("{}\n")
        os.utime(run, (1000 + number, 1000 + number))
    code, _, err = learn(capsys, "--resume", "--run-id", "nosuch", "--results-dir", tmp_path)
    assert code == 2
    assert error_of(err) == (
        f"cannot resume run 'nosuch': it does not exist under {tmp_path} (runs there: run-6, "
        "run-5, run-4, run-3, run-2 and 2 more); check --run-id and --results-dir, or start it "
        "without --resume"
    )
    code, _, err = learn(capsys, "--resume", "--run-id", "nosuch", "--results-dir", tmp_path / "x")
    assert code == 2 and f"(there is no folder {tmp_path / 'x'})" in error_of(err)


# -- 9. file modes and the console log --------------------------------------------------------------
def _modes(root: Path) -> dict[str, int]:
    return {
        str(path.relative_to(root)): stat.S_IMODE(path.stat().st_mode)
        for path in root.rglob("*")
        if path.is_file()
    }


def test_run_files_get_the_umask_s_permissions(tmp_path, capsys, umask):
    umask(0o022)
    config = write(tmp_path / "c.yaml", tiny())
    assert learn(capsys, config, "--results-dir", tmp_path / "results", "--run-id", "r")[0] == 0
    modes = _modes(tmp_path / "results" / "r")
    for name in ("configuration.yaml", "checkpoint.json", "Duel.pt", "run_logs/console.log",
                 "run_logs/training_status.json"):  # fmt: skip
        assert name in modes
    assert any(name.startswith("Duel/checkpoints/") for name in modes)
    assert any(name.startswith("Duel/snapshots/") for name in modes)
    assert {name: mode for name, mode in modes.items() if mode != 0o644} == {}
    umask(0o002)
    atomic_write_text(tmp_path / "shared.txt", "x")
    assert stat.S_IMODE((tmp_path / "shared.txt").stat().st_mode) == 0o664


def test_the_lock_file_is_readable_by_others_and_written_by_its_holder(tmp_path, umask):
    umask(0o002)
    with RunLock(tmp_path, run_name="r") as lock:
        assert stat.S_IMODE(lock.path.stat().st_mode) == 0o644


def test_the_console_log_keeps_every_session_of_a_run(tmp_path, capsys):
    config = write(tmp_path / "c.yaml", tiny())
    flags = ["--results-dir", tmp_path, "--run-id", "r"]
    assert learn(capsys, config, *flags)[0] == 0
    assert learn(capsys, config, *flags, "--resume", "--max-steps", "800")[0] == 0
    text = (tmp_path / "r" / "run_logs" / "console.log").read_text()
    started, resumed = text.split("-------- session resumed ")
    assert started.startswith("-------- session started ")
    for session in (started, resumed):
        assert "[INFO] trainers.stats: Duel. Step: " in session
        assert "[INFO] trainers.checkpoints: Checkpoint written: Duel step" in session
    assert resumed.splitlines()[0].endswith(" --------")  # its time and command line between
    assert "Duel step 800" in resumed and "Duel step 800" not in started


def test_the_console_log_ends_with_what_stopped_the_run(tmp_path):
    log = ConsoleLog(tmp_path / "console.log")
    logging.getLogger("ghost").warning("before the end")
    log.close(GhostError("the environment broke"))
    logging.getLogger("ghost").warning("after the end")
    lines = (tmp_path / "console.log").read_text().splitlines()
    assert lines[1].endswith("[WARNING] ghost: before the end")
    assert lines[-1] == "error: the environment broke"
    assert len(lines) == 3


def test_malformed_inputs_hold_these_traps():
    from malformed_inputs import MALFORMED_INPUTS

    labels = {case.label for case in MALFORMED_INPUTS}
    assert {"--resume of a missing run, no config", "memory with learn_from_latest"} <= labels
