"""Training in the Unity Editor: ``ghost-learn`` with no ``--env`` listens on the Editor's port,
says so once, and trains when Play is pressed, as ``mlagents-learn`` does.

The stand-in player (``tests/fake_unity/FakePong``) plays the Editor's part: started by hand with
``--mlagents-port`` on the port ``ghost-learn`` listens on, it connects as the Editor does when
Play is pressed (the Editor is a gRPC client, as a build is).
"""

from __future__ import annotations

import json
import logging
import os
import queue
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from envs.exceptions import EnvironmentSourceError
from envs.settings import EngineSettings, EnvironmentSettings
from envs.unity_editor import DEFAULT_EDITOR_PORT, UnityEditor, editor_factory
from ghost.config.environment import env_factory_for
from ghost.config.settings import RunOptions
from ghost.running import cli

ROOT = Path(__file__).resolve().parent.parent
PONG_PLAYER = ROOT / "tests" / "fake_unity" / "FakePong.x86_64"
LISTENING = (
    "Listening on port {port}. Start training by pressing the Play button in the Unity Editor."
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")

SMALL_PONG = {
    "behaviors": {
        "Pong": {
            "trainer_type": "ppo",
            "hyperparameters": {"batch_size": 32, "buffer_size": 64, "num_epoch": 1},
            "network_settings": {"hidden_units": 16, "num_layers": 1},
            "max_steps": 400,
            "summary_freq": 100,
            "checkpoint_interval": 200,
            "self_play": {"save_steps": 100, "swap_steps": 50, "team_change": 200, "window": 3},
        }
    }
}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("localhost", 0))
        return probe.getsockname()[1]


@pytest.fixture
def config(tmp_path) -> Path:
    path = tmp_path / "pong.yaml"
    path.write_text(yaml.safe_dump(SMALL_PONG))
    return path


def press_play(port: int, *args: str, log: Path | None = None) -> subprocess.Popen:
    """The stand-in player connecting to ``port`` as the Editor does when Play is pressed."""
    logging_args = ["-logFile", str(log)] if log is not None else []
    return subprocess.Popen(
        [str(PONG_PLAYER), "--mlagents-port", str(port), *logging_args, *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def lines_of(process: subprocess.Popen) -> queue.Queue:
    """The process's output lines as they come (None at the end), read on a thread of its own."""
    lines: queue.Queue = queue.Queue()

    def read() -> None:
        for line in process.stdout:
            lines.put(line.rstrip("\n"))
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    return lines


def wait_for(lines: queue.Queue, text: str, seen: list[str], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            break
        if line is None:
            break
        seen.append(line)
        if text in line:
            return
    pytest.fail(f"no line with {text!r} within {timeout} s; output:\n" + "\n".join(seen))


def rest_of(lines: queue.Queue, seen: list[str], timeout: float) -> list[str]:
    deadline = time.monotonic() + timeout
    while (line := lines.get(timeout=max(0.1, deadline - time.monotonic()))) is not None:
        seen.append(line)
    return seen


def checkpoint_step(run: Path, behavior: str) -> int:
    return json.loads((run / "checkpoint.json").read_text())["behaviors"][behavior]["step"]


@pytest.fixture
def players() -> Iterator[list[subprocess.Popen]]:
    """Player processes a test starts, stopped at its end whatever happened."""
    started: list[subprocess.Popen] = []
    yield started
    for player in started:
        if player.poll() is None:
            player.kill()
        player.wait()


# -- the Editor flow, as a user runs it ------------------------------------------------------------
def test_ghost_learn_without_env_trains_when_play_is_pressed(config, tmp_path, players):
    port = free_port()
    results = tmp_path / "results"
    environment = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1")
    learn = subprocess.Popen(
        [sys.executable, "-m", "ghost.running.cli", str(config), "--run-id", "editor",
         "--results-dir", str(results), "--base-port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT, env=environment,
    )  # fmt: skip
    try:
        lines, seen = lines_of(learn), []
        wait_for(lines, "Listening on port", seen, timeout=120)
        players.append(press_play(port, log=tmp_path / "Editor.log"))
        output = rest_of(lines, seen, timeout=180)
        assert learn.wait(timeout=30) == 0, "\n".join(output)
    finally:
        if learn.poll() is None:
            learn.kill()
    assert output.count(f"[INFO] envs.unity_environment: {LISTENING.format(port=port)}") == 1
    assert not any("Traceback" in line for line in output)
    run = results / "editor"
    assert checkpoint_step(run, "Pong") >= 400
    assert (run / "Pong.pt").is_file()
    # the player saw a whole session: handshake, training, and the trainer's goodbye
    log = [json.loads(line) for line in (tmp_path / "Editor.log").read_text().splitlines()]
    events = [entry["event"] for entry in log]
    assert events[0] == "start" and "initialized" in events and events[-1] == "quit"
    assert (
        yaml.safe_load((run / "configuration.yaml").read_text())["env_settings"]["env_path"] is None
    )


def test_leaving_play_mode_stops_with_a_checkpoint_and_resume_goes_on(
    config, tmp_path, capsys, caplog, players
):
    """The Editor leaving Play mode ends the run with one line and a checkpoint; the same command
    with --resume listens again and continues when Play is pressed again."""
    port = free_port()
    flags = [str(config), "--run-id", "editor", "--results-dir", str(tmp_path / "results"),
             "--base-port", str(port), "--max-steps", "3000"]  # fmt: skip
    # the player retries until the port opens, as a person pressing Play a little late
    players.append(press_play(port, "--fake-leave-play-after-steps", "300"))
    with caplog.at_level(logging.INFO):
        code = cli.main(flags)
    err = capsys.readouterr().err
    assert code == 2
    (error,) = [line for line in err.splitlines() if line.startswith("ghost-learn: error:")]
    assert "the Unity Editor left Play mode" in error and "--resume" in error
    assert "Traceback" not in err
    run = tmp_path / "results" / "editor"
    stopped_at = checkpoint_step(run, "Pong")
    assert stopped_at > 0

    players.append(press_play(port))
    caplog.clear()
    with caplog.at_level(logging.INFO):
        code = cli.main([*flags[:-1], "600", "--resume"])
    assert code == 0, capsys.readouterr().err
    assert LISTENING.format(port=port) in caplog.text
    assert checkpoint_step(run, "Pong") >= 600 > stopped_at


def test_check_reads_the_scene_when_play_is_pressed(config, capsys, players):
    port = free_port()
    players.append(press_play(port))
    code = cli.main([str(config), "--check", "--base-port", str(port)])
    out = capsys.readouterr().out
    assert code == 0
    assert f"environment: the Unity Editor (port {port})" in out
    assert "behavior Pong" in out and "check passed" in out


# -- one line when the Editor cannot be trained in -------------------------------------------------
def one_error_line(err: str) -> str:
    """The error, which must be the only line ghost-learn prints about it (no traceback)."""
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if line.startswith("ghost-learn: error:")]
    assert len(errors) == 1, err
    assert err.rstrip("\n").endswith(errors[0]), err  # nothing follows it
    return errors[0]


def test_nobody_pressing_play_gives_up_after_timeout_wait(config, tmp_path, capsys, caplog):
    port = free_port()
    started = time.monotonic()
    with caplog.at_level(logging.INFO):
        code = cli.main([str(config), "--run-id", "editor", "--results-dir",
                         str(tmp_path / "results"), "--base-port", str(port),
                         "--timeout-wait", "1"])  # fmt: skip
    waited = time.monotonic() - started
    error = one_error_line(capsys.readouterr().err)
    assert code == 2
    assert f"no Unity Editor connected to port {port} within 1 s" in error
    assert "--timeout-wait" in error and "press Play" in error
    assert caplog.text.count("Listening on port") == 1
    assert waited < 30  # once, not again after a restart
    assert not (tmp_path / "results" / "editor").exists()  # nothing to resume: no folder left


def test_a_port_in_use_is_one_line(config, tmp_path, capsys):
    with socket.socket() as other_run:
        other_run.bind(("localhost", 0))
        other_run.listen()
        port = other_run.getsockname()[1]
        code = cli.main([str(config), "--results-dir", str(tmp_path / "results"),
                         "--base-port", str(port), "--timeout-wait", "1"])  # fmt: skip
    error = one_error_line(capsys.readouterr().err)
    assert code == 2
    assert f"port {port} is in use" in error and "--base-port" in error


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (
            ["--num-envs", "2"],
            "num_envs is 2, but with no --env the run trains in the Unity Editor",
        ),
        (["--env-backend", "ray"], "not to a Ray actor"),
    ],
    ids=["several-envs", "ray"],
)
def test_what_the_editor_cannot_do_is_refused(config, tmp_path, capsys, flags, expected):
    code = cli.main([str(config), "--results-dir", str(tmp_path / "results"), *flags])
    error = one_error_line(capsys.readouterr().err)
    assert code == 2 and expected in error
    assert not (tmp_path / "results").exists()


def test_resuming_a_run_that_does_not_exist_says_so_without_listening(tmp_path, capsys, caplog):
    with caplog.at_level(logging.INFO):
        code = cli.main(["--resume", "--run-id", "nosuch", "--results-dir", str(tmp_path)])
    error = one_error_line(capsys.readouterr().err)
    assert code == 2 and "nosuch" in error
    assert "Listening on port" not in caplog.text


# -- the factory -------------------------------------------------------------------------------
def test_a_run_that_names_no_environment_trains_in_the_editor():
    factory = env_factory_for(RunOptions(env_settings=EnvironmentSettings(timeout_wait=7)))
    assert factory == UnityEditor(port=DEFAULT_EDITOR_PORT, timeout_wait=7)
    assert not getattr(factory, "runs_in_worker", False)  # stepped where its log line shows


def test_the_editor_port_is_5004_unless_base_port_moves_it():
    assert editor_factory(EnvironmentSettings(), None).port == 5004
    assert editor_factory(EnvironmentSettings(base_port=6123), None).port == 6123
    engine = EngineSettings(time_scale=3.0)
    factory = editor_factory(EnvironmentSettings(num_areas=4), engine)
    assert (factory.num_areas, factory.engine) == (4, engine)


def test_the_editor_is_one_environment():
    with pytest.raises(EnvironmentSourceError, match="one environment"):
        UnityEditor()(worker_id=1)
