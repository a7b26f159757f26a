"""A Unity build that fails to start: one clear line saying what is wrong and what to do.

A build that wrote a player log has that line name a copy of the log that still exists after the
run's clean-up, then the log's last lines, indented. The stand-in player (``tests/fake_unity``)
fails in each way a real build does: it exits while loading (``--fake-exit-at-start``), claims an
incompatible ML-Agents API in the handshake (``--fake-communication-version``), or never connects
(``NeverConnects``). A path that is no player (a folder, a text file, a file without the execute
permission) is refused before anything starts; a program that is no Unity player (``true``, a
script that only waits), a port in use and a build that never connects each end the run in one
line, without restarts: a failure at the first start is not a crash.
"""

from __future__ import annotations

import logging
import re
import shutil
import socket
import tempfile
import time
from pathlib import Path

import pytest
import yaml

from envs.exceptions import EnvironmentSourceError, EnvironmentWorkerError
from envs.unity_build import LOG_TAIL_LINES, UnityBuild
from ghost.running import cli

FAKE_UNITY = Path(__file__).resolve().parent / "fake_unity"
NAMED_LOG = re.compile(r"The player's log, (.+), ends with:$")


@pytest.fixture(autouse=True)
def system_tmp(tmp_path, monkeypatch) -> Path:
    """The temporary folder the kept logs go to (worker processes inherit ``TMPDIR``)."""
    folder = tmp_path / "system-tmp"
    folder.mkdir()
    monkeypatch.setenv("TMPDIR", str(folder))
    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again
    return folder


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("localhost", 0))
        return probe.getsockname()[1]


def shows(tail: list[str], lines: list[str]) -> bool:
    """Whether ``tail`` shows ``lines``, long ones cut short with "..."."""
    return len(tail) == len(lines) and all(
        shown == line or (shown.endswith("...") and line.startswith(shown[:-3]))
        for shown, line in zip(tail, lines, strict=True)
    )


def named_log_and_tail(message: str) -> tuple[Path, list[str]]:
    """The log path the summary line names, and the indented lines after it."""
    summary, *tail = message.splitlines()
    match = NAMED_LOG.search(summary)
    assert match, summary
    assert all(line.startswith("    ") for line in tail), tail
    return Path(match.group(1)), [line[4:] for line in tail]


@pytest.mark.parametrize(
    ("build", "args", "timeout_wait", "summary"),
    [
        ("FakePong", ("--fake-exit-at-start", "5"), 5, "return code 5"),
        ("FakePong", ("--fake-communication-version", "2.0.0"), 5, "Unity API: 2.0.0"),
        ("NeverConnects", (), 2, "did not connect"),
    ],
    ids=["exits-early", "bad-handshake", "never-connects"],
)
def test_the_error_shows_the_end_of_a_log_that_outlives_the_run_folder(
    tmp_path, system_tmp, build, args, timeout_wait, summary
):
    run_logs = tmp_path / "run" / "run_logs"
    factory = UnityBuild(
        file_name=str(FAKE_UNITY / build), base_port=free_port(), timeout_wait=timeout_wait,
        env_args=args, log_folder=str(run_logs),
    )  # fmt: skip
    with pytest.raises(EnvironmentSourceError) as error:
        factory(worker_id=0)
    written = (run_logs / "Player-0.log").read_text(encoding="utf-8").splitlines()
    shutil.rmtree(tmp_path / "run")  # what the clean-up of a run without a checkpoint does

    message = str(error.value)
    assert summary in message.splitlines()[0]
    path, tail = named_log_and_tail(message)
    assert path.is_relative_to(system_tmp)
    assert path.is_file() and path.read_text(encoding="utf-8").splitlines() == written
    assert shows(tail, written[-LOG_TAIL_LINES:])
    if build == "FakePong" and "--fake-exit-at-start" in args:
        assert len(written) > LOG_TAIL_LINES and '"event": "fatal"' in tail[-1]


def test_ghost_learn_names_the_kept_log_of_a_build_that_exits_at_start(
    tmp_path, system_tmp, capsys, caplog
):
    config = tmp_path / "pong.yaml"
    config.write_text(yaml.safe_dump({"behaviors": {"Pong": {"self_play": {}}}}))
    results = tmp_path / "results"
    with caplog.at_level(logging.INFO):
        code = cli.main([
            str(config), "--env", str(FAKE_UNITY / "FakePong"), "--results-dir", str(results),
            "--run-id", "run", "--base-port", str(free_port()), "--timeout-wait", "5",
            "--env-args", "--fake-exit-at-start", "5",
        ])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2
    assert not (results / "run").exists()  # nothing to resume: the folder went
    start = err.index("Unity build ")
    path, tail = named_log_and_tail(err[start:].rstrip("\n"))
    try:
        assert path.is_file()
        assert shows(tail, path.read_text(encoding="utf-8").splitlines()[-LOG_TAIL_LINES:])
        assert "Failed to load the game's data folder" in tail[-1]
    finally:
        # a worker started by a forkserver from an earlier test ignores this test's TMPDIR
        if not path.is_relative_to(system_tmp) and path.parent.name.startswith("ghost-unity-"):
            shutil.rmtree(path.parent, ignore_errors=True)


# -- one clear line for every way a --env path fails to start -----------------------------------
def one_error_line(err: str) -> str:
    """``ghost-learn``'s error: one line, the last it prints but for the end of a player log
    quoted after it (indented); no traceback, no restart story."""
    assert "Traceback" not in err and "restarting it" not in err, err
    lines = err.rstrip("\n").splitlines()
    errors = [i for i, line in enumerate(lines) if line.startswith("ghost-learn: error:")]
    assert len(errors) == 1, err
    assert all(line.startswith("    ") for line in lines[errors[0] + 1 :]), err
    return lines[errors[0]]


@pytest.fixture
def learn(tmp_path, capsys, caplog):
    """``learn(*flags)``: ``ghost-learn`` on a Pong config in this process; (exit code, the error
    line, everything logged)."""
    config = tmp_path / "pong.yaml"
    config.write_text(yaml.safe_dump({"behaviors": {"Pong": {"self_play": {}}}}))

    def run(*flags: str) -> tuple[int, str, str]:
        caplog.clear()
        with caplog.at_level(logging.INFO):
            code = cli.main([str(config), "--results-dir", str(tmp_path / "results"),
                             "--run-id", "run", *flags])  # fmt: skip
        return code, one_error_line(capsys.readouterr().err), caplog.text

    return run


def _elf_without_permission(folder: Path) -> Path:
    path = folder / "Game.x86_64"
    shutil.copy(shutil.which("true"), path)
    path.chmod(0o644)
    return path


def _text_file(folder: Path) -> Path:
    path = folder / "notes.txt"
    path.write_text("remember to build the scene\n")
    path.chmod(0o755)
    return path


def _empty_folder(folder: Path) -> Path:
    path = folder / "Builds"
    path.mkdir()
    (path / "UnityPlayer.so").write_bytes(b"")
    return path


def _missing_build(folder: Path) -> Path:
    return folder / "Builds" / "Pong.x86_64"


def _folder_with_a_build(folder: Path) -> Path:
    path = folder / "PongBuild"
    path.mkdir()
    (path / "Pong.x86_64").write_bytes(b"\x7fELF")
    return path


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (_missing_build, "{path!r}: Unity build not found: no such file, and there is no "
                         "folder"),
        (_elf_without_permission, "is not executable (a build copied or unzipped can lose the "
                                  "permission): run chmod +x {path}"),
        (_text_file, "{path!r} is not a program (a text or data file"),
        (_empty_folder, "{path!r} is a folder that holds no Unity build"),
        (_folder_with_a_build, "{path!r} is a folder, not a Unity build's executable: point --env "
                               "at the executable inside it ('{path}/Pong.x86_64')"),
    ],
    ids=["missing", "not-executable", "text-file", "folder-without-a-build", "folder-with-a-build-inside"],
)  # fmt: skip
def test_a_path_that_cannot_start_as_a_player_is_refused_before_anything_starts(
    tmp_path, learn, make, expected
):
    path = str(make(tmp_path))
    code, error, logged = learn("--env", path)
    assert code == 2
    assert expected.format(path=path) in error
    assert "Unity build messages" not in logged  # refused before the run began
    assert not (tmp_path / "results").exists()


def test_a_program_that_exits_without_a_player_log_is_not_a_unity_player(tmp_path, learn):
    port = free_port()
    code, error, _ = learn("--env", shutil.which("true"), "--base-port", str(port),
                           "--timeout-wait", "5")  # fmt: skip
    assert code == 2
    assert f"exited (return code 0) and never connected to port {port}" in error
    assert "does not look like a Unity player" in error and "point --env at" in error


def test_a_program_that_never_connects_or_logs_is_not_a_unity_player(tmp_path, learn):
    silent = tmp_path / "Silent.x86_64"
    silent.write_text("#!/bin/sh\nexec sleep 60\n")
    silent.chmod(0o755)
    port = free_port()
    started = time.monotonic()
    code, error, _ = learn("--env", str(silent), "--base-port", str(port), "--timeout-wait", "1")
    assert code == 2
    assert f"never connected: it did not connect to port {port} within 1 s" in error
    assert "does not look like a Unity player" in error
    assert time.monotonic() - started < 30  # killed at once, not waited for


def test_a_port_in_use_is_one_line_naming_the_port_and_the_fix(tmp_path, learn):
    with socket.socket() as other_run:
        other_run.bind(("localhost", 0))
        other_run.listen()
        port = other_run.getsockname()[1]
        code, error, _ = learn("--env", str(FAKE_UNITY / "FakePong"), "--base-port", str(port),
                               "--timeout-wait", "5")  # fmt: skip
    assert code == 2
    assert f"port {port} is in use, maybe by another training run" in error
    assert "--base-port" in error


def test_a_build_that_never_connects_is_not_restarted(tmp_path, learn):
    """The first start failing is no crash: one try, one line (with the log's end after it),
    whatever max_lifetime_restarts allows."""
    port = free_port()
    started = time.monotonic()
    code, error, logged = learn("--env", str(FAKE_UNITY / "NeverConnects"), "--base-port",
                                str(port), "--timeout-wait", "2", "--max-lifetime-restarts", "5",
                                "--restarts-rate-limit-n", "-1")  # fmt: skip
    assert code == 2
    assert f"did not connect to port {port} within 2 s" in error
    assert "restarting" not in logged and "not restarted again" not in error
    assert "Environment timed out shutting down" not in logged
    assert time.monotonic() - started < 2 * 2 + 20  # one wait of timeout_wait, not several


def test_a_worker_that_fails_at_its_first_start_stops_the_pool_without_a_restart(caplog):
    from envs.workers import SubprocessStepper
    from tests import worker_envs

    with caplog.at_level(logging.ERROR), pytest.raises(EnvironmentWorkerError) as error:
        SubprocessStepper(factory=worker_envs.make_broken_env, num_envs=1, seed=0,
                          max_lifetime_restarts=-1, restarts_rate_limit_n=-1)  # fmt: skip
    assert str(error.value).startswith("Environment worker 0 failed during startup:\nTraceback")
    assert "cannot build environment 0" in str(error.value)
    assert "restarting" not in caplog.text
