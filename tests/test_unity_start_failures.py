"""A Unity build that fails to start: the error is one summary line naming a player log that still
exists after the run's clean-up, then the last lines of that log, indented.

The stand-in player (``tests/fake_unity``) fails in each way a real build does: it exits while
loading (``--fake-exit-at-start``), claims an incompatible ML-Agents API in the handshake
(``--fake-communication-version``), or never connects (``NeverConnects``).
"""

from __future__ import annotations

import logging
import re
import shutil
import socket
import tempfile
from pathlib import Path

import pytest
import yaml

from envs.exceptions import EnvironmentSourceError
from envs.unity_build import LOG_TAIL_LINES, UnityBuild

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
    from ghost.running import cli

    config = tmp_path / "pong.yaml"
    config.write_text(yaml.safe_dump({"behaviors": {"Pong": {"self_play": {}}}}))
    results = tmp_path / "results"
    with caplog.at_level(logging.INFO):
        code = cli.main([
            str(config), "--env", str(FAKE_UNITY / "FakePong"), "--results-dir", str(results),
            "--run-id", "run", "--base-port", str(free_port()), "--timeout-wait", "5",
            "--max-lifetime-restarts", "0", "--env-args", "--fake-exit-at-start", "5",
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
