"""The run folder's lock: one process per ``<results_dir>/<run_id>``, stale locks taken over.

A second process is refused in one line naming the holder; a holder that died (its pid gone, its
flock free, its lock file half written, or silent too long on another host) is taken over with a
warning; ``RunDirectory.prepare`` checks before ``--resume`` reads or ``--force`` deletes; a run
releases its lock however it ends; and ``ghost-learn`` end to end.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import yaml

from ghost.config.settings import CheckpointSettings
from ghost.exceptions import GhostError
from ghost.running import cli
from ghost.running.run_dir import RunDirectory
from trainers.exceptions import RunLockedError
from trainers.run_files import lock as run_lock
from trainers.run_files.lock import LOCK_FILE_NAME, RunLock

ROOT = Path(__file__).resolve().parents[1]
HOST = socket.gethostname()
GATE_VARIABLE = "GHOST_TEST_RUN_LOCK_GATE"
IN_USE = (
    r"run '{run}' is in use by pid {pid} on host {host} since "
    r"\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d UTC.* \(.*run\.lock\); wait for it to finish or stop it, "
    r"or choose another --run-id"
)

HOLDER = """
import sys
from trainers.run_files.lock import RunLock
lock = RunLock(sys.argv[1]).acquire()
print("locked", flush=True)
sys.stdin.read()
lock.release()
"""


@contextlib.contextmanager
def held_elsewhere(root: Path) -> Iterator[subprocess.Popen]:
    """Another process holding ``root``'s lock until the block ends."""
    root.mkdir(parents=True, exist_ok=True)
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(root)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT,
    )  # fmt: skip
    try:
        assert process.stdout.readline() == "locked\n"
        yield process
    finally:
        process.stdin.close()
        process.wait(timeout=30)


def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", ""])
    process.wait()
    return process.pid


def iso(ago_s: float = 0.0) -> str:
    return (datetime.now(timezone.utc) - timedelta(seconds=ago_s)).isoformat(timespec="seconds")


def write_lock(root: Path, **fields: object) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    record = {"pid": dead_pid(), "host": HOST, "since": iso(3600), "heartbeat": iso(60),
              "command": "ghost-learn old.yaml", **fields}  # fmt: skip
    path = root / LOCK_FILE_NAME
    path.write_text(json.dumps(record))
    return path


def lock_record(root: Path) -> dict:
    return json.loads((root / LOCK_FILE_NAME).read_text())


# -- RunLock ------------------------------------------------------------------------------------
def test_a_live_holder_in_another_process_is_refused_in_one_line(tmp_path):
    root = tmp_path / "tennis-01"
    with held_elsewhere(root) as holder:
        with pytest.raises(RunLockedError) as refused:
            RunLock(root).acquire()
        message = str(refused.value)
        assert "\n" not in message
        assert isinstance(refused.value, GhostError)  # one line and exit code 2 on the CLI
        assert refused.match(IN_USE.format(run="tennis-01", pid=holder.pid, host=HOST))
        record = lock_record(root)  # the holder's file, untouched
        assert (record["pid"], record["host"]) == (holder.pid, HOST)
        assert record["command"].startswith("-c")
        assert datetime.fromisoformat(record["since"]).tzinfo is not None
    assert not (root / LOCK_FILE_NAME).exists()  # the holder released it


def test_a_killed_holder_is_taken_over_with_a_warning(tmp_path, caplog):
    root = tmp_path / "r"
    with held_elsewhere(root) as holder:
        holder.kill()
        holder.wait()
        with caplog.at_level(logging.WARNING, logger="trainers.run_files.lock"):
            lock = RunLock(root).acquire()
    assert f"taking over the stale lock {root / LOCK_FILE_NAME} of pid {holder.pid}" in caplog.text
    assert lock_record(root)["pid"] == os.getpid()
    lock.release()


def test_a_dead_pid_is_stale_even_while_its_file_is_flocked(tmp_path, caplog):
    """A worker forked by the dead holder may keep the flock: on this host the pid decides."""
    path = write_lock(tmp_path / "r", pid=(pid := dead_pid()))
    with open(path) as leftover:
        if run_lock.fcntl is not None:
            run_lock.fcntl.flock(leftover, run_lock.fcntl.LOCK_EX)
        with caplog.at_level(logging.WARNING), RunLock(tmp_path / "r"):
            assert lock_record(tmp_path / "r")["pid"] == os.getpid()
    assert f"of pid {pid} on host {HOST}" in caplog.text and "that process has ended" in caplog.text


@pytest.mark.parametrize("content", [b"", b'{"pid": 12', b"\x00\x00garbage"])
def test_an_unreadable_lock_file_is_taken_over(tmp_path, caplog, content):
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / LOCK_FILE_NAME).write_bytes(content)
    with caplog.at_level(logging.WARNING), RunLock(tmp_path / "r"):
        assert lock_record(tmp_path / "r")["pid"] == os.getpid()
    assert "the file cannot be read" in caplog.text


@pytest.mark.skipif(run_lock.fcntl is None, reason="needs flock")
def test_an_unreadable_lock_file_being_written_is_refused(tmp_path):
    (tmp_path / "r").mkdir()
    path = tmp_path / "r" / LOCK_FILE_NAME
    path.write_bytes(b"")
    with open(path) as writer:
        run_lock.fcntl.flock(writer, run_lock.fcntl.LOCK_EX)
        with pytest.raises(RunLockedError, match="is in use by another process"):
            RunLock(tmp_path / "r").acquire()
    assert path.read_bytes() == b""


def test_another_hosts_lock_is_stale_only_after_its_heartbeat_stops(tmp_path, caplog):
    root = tmp_path / "r"
    write_lock(root, pid=os.getpid(), host="elsewhere", heartbeat=iso(60))
    with pytest.raises(RunLockedError) as refused:
        RunLock(root).acquire()
    assert refused.match(IN_USE.format(run="r", pid=os.getpid(), host="elsewhere"))
    assert refused.match(r"since .* UTC, last heartbeat 6\d s ago \(")
    assert lock_record(root)["host"] == "elsewhere"

    write_lock(root, pid=os.getpid(), host="elsewhere", heartbeat=iso(20 * 60))
    with caplog.at_level(logging.WARNING), RunLock(root):
        assert lock_record(root)["host"] == HOST
    assert "on host elsewhere" in caplog.text and "no heartbeat for 20 min" in caplog.text
    # the interval is the lock's to choose
    write_lock(root, pid=os.getpid(), host="elsewhere", heartbeat=iso(60))
    with RunLock(root, stale_after_s=30):
        pass


def test_heartbeat_is_throttled_and_rewrites_only_the_timestamp(tmp_path, monkeypatch):
    root = tmp_path / "r"
    root.mkdir()
    with RunLock(root, heartbeat_interval_s=3600) as lock:
        before = lock_record(root)
        assert before["since"] == before["heartbeat"]
        assert not lock.heartbeat()  # too soon: nothing written
        monkeypatch.setattr(run_lock, "_now", lambda: "2030-01-02T03:04:05+00:00")
        assert lock.heartbeat(force=True)
        assert lock_record(root) == {**before, "heartbeat": "2030-01-02T03:04:05+00:00"}
    assert not lock.heartbeat(force=True)  # released: nothing to refresh
    assert not (root / LOCK_FILE_NAME).exists()


def test_one_process_shares_its_lock_and_the_last_release_deletes_it(tmp_path):
    root = tmp_path / "r"
    root.mkdir()
    first = RunLock(root).acquire()
    second = RunLock(tmp_path / "." / "r").acquire()  # another behavior of the same run
    assert first.held and second.held
    first.release()
    first.release()  # twice is harmless, and does not give back the other's share
    assert (root / LOCK_FILE_NAME).exists()
    second.release()
    assert not (root / LOCK_FILE_NAME).exists()
    second.release()


def test_released_when_the_block_raises(tmp_path):
    (tmp_path / "r").mkdir()
    with pytest.raises(RuntimeError), RunLock(tmp_path / "r"):
        raise RuntimeError("the run failed")
    assert not (tmp_path / "r" / LOCK_FILE_NAME).exists()
    with RunLock(tmp_path / "r"):  # and free for the next one
        pass


# -- RunDirectory -------------------------------------------------------------------------------
def prepare(tmp_path: Path, **settings: object) -> RunDirectory:
    return RunDirectory.prepare(CheckpointSettings(results_dir=str(tmp_path), **settings))


def earlier_run(root: Path) -> list[Path]:
    files = [root / "configuration.yaml", root / "checkpoint.json",
             root / "Tennis" / "checkpoints" / "Tennis-100.pt"]  # fmt: skip
    for path in files:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("earlier run")
    return files


@pytest.mark.parametrize("flags", [{"resume": True}, {"force": True}, {}])
def test_prepare_refuses_a_live_run_before_touching_it(tmp_path, flags):
    root = tmp_path / "live"
    files = earlier_run(root)
    with held_elsewhere(root) as holder:
        with pytest.raises(RunLockedError, match=f"run 'live' is in use by pid {holder.pid}"):
            prepare(tmp_path, run_id="live", **flags)
        assert all(path.read_text() == "earlier run" for path in files)  # nothing deleted
        assert lock_record(root)["pid"] == holder.pid


def test_prepare_holds_the_lock_until_release(tmp_path):
    run_dir = prepare(tmp_path, run_id="r")
    assert run_dir.lock is not None and run_dir.lock.held
    assert lock_record(tmp_path / "r")["pid"] == os.getpid()
    assert RunDirectory.existing(results_dir=tmp_path, run_id="r").lock is None  # read only
    run_dir.release()
    run_dir.release()
    assert not (tmp_path / "r" / LOCK_FILE_NAME).exists()
    resumed = prepare(tmp_path, run_id="r", resume=True)  # a lock file alone is no run
    assert resumed.resumed and resumed.lock.held
    resumed.release()


def test_force_keeps_the_lock_while_it_deletes(tmp_path, caplog):
    root = tmp_path / "r"
    files = earlier_run(root)
    write_lock(root)  # left by a run that crashed
    with caplog.at_level(logging.WARNING):
        run_dir = prepare(tmp_path, run_id="r", force=True)
    assert "taking over the stale lock" in caplog.text
    assert not any(path.exists() for path in files)
    assert sorted(p.name for p in root.iterdir()) == [LOCK_FILE_NAME, "run_logs"]
    assert lock_record(root)["pid"] == os.getpid()
    run_dir.release()


def test_refused_flags_release_the_lock_and_unused_runs_are_discarded(tmp_path):
    earlier_run(tmp_path / "taken")
    with pytest.raises(GhostError, match="already exists"):
        prepare(tmp_path, run_id="taken")
    assert not (tmp_path / "taken" / LOCK_FILE_NAME).exists()
    run_dir = prepare(tmp_path, run_id="new")
    assert run_dir.discard_if_unused()
    assert not (tmp_path / "new").exists() and not run_dir.lock.held


# -- the ML-Agents plugin ------------------------------------------------------------------------
def test_the_plugins_ghost_trainers_share_one_lock_per_run(tmp_path):
    from ghost.mlagents_plugin import runs

    results = tmp_path / "results"
    pong = runs.run_for(results / "pong" / "Pong")  # ML-Agents' <results>/<run-id>/<Behavior>
    assert runs.run_for(results / "pong" / "Paddle") is pong  # the run's second behavior
    assert lock_record(results / "pong")["pid"] == os.getpid()
    pong.take_team_change()  # every step: the heartbeat, throttled
    with held_elsewhere(results / "live") as holder, pytest.raises(RunLockedError) as refused:
        runs.run_for(results / "live" / "Pong")
    assert refused.match(f"run 'live' is in use by pid {holder.pid}")
    pong.lock.release()  # what the process's exit does
    assert not (results / "pong" / LOCK_FILE_NAME).exists()


# -- a run --------------------------------------------------------------------------------------
TENNIS = {
    "behaviors": {
        "Tennis": {
            "hyperparameters": {"batch_size": 128, "buffer_size": 256},
            "network_settings": {"hidden_units": 16},
            "max_steps": 400,
            "summary_freq": 200,
            "checkpoint_interval": 200,
            "self_play": {"save_steps": 200, "team_change": 400, "swap_steps": 200},
        }
    },
    "env_settings": {"env_path": "tennis", "seed": 3},
}


class LockWatcher:
    """Records at each summary who holds the run's lock; ``fail`` makes the first one raise."""

    def __init__(self, root: Path, *, fail: bool = False) -> None:
        self.root, self.fail, self.holders = root, fail, []

    def on_summary(self, summary):
        self.holders.append(lock_record(self.root)["pid"])
        if self.fail:
            raise RuntimeError("a callback failed")


def test_a_run_holds_its_lock_and_releases_it_however_it_ends(tmp_path, monkeypatch):
    import ghost

    beats = []
    heartbeat = RunLock.heartbeat
    monkeypatch.setattr(RunLock, "heartbeat", lambda self, **kw: beats.append(1) or heartbeat(self))
    watcher = LockWatcher(tmp_path / "ok")
    ghost.train(TENNIS, run_id="ok", results_dir=tmp_path, callbacks=[watcher])
    assert watcher.holders and set(watcher.holders) == {os.getpid()}
    assert beats  # the run's events refresh the heartbeat
    assert not (tmp_path / "ok" / LOCK_FILE_NAME).exists()

    failing = LockWatcher(tmp_path / "failed", fail=True)
    with pytest.raises(RuntimeError, match="a callback failed"):
        ghost.train(TENNIS, run_id="failed", results_dir=tmp_path, callbacks=[failing])
    assert failing.holders == [os.getpid()]
    assert not (tmp_path / "failed" / LOCK_FILE_NAME).exists()


# -- ghost-learn end to end ---------------------------------------------------------------------
def gated_tennis(worker_id: int = 0, seed: int = 0):
    """The built-in tennis, waiting before each step while the file ``$GATE_VARIABLE`` exists."""
    from envs.games import make_game

    game = make_game("tennis", worker_id=worker_id, seed=seed, num_arenas=8)
    gate, step = Path(os.environ[GATE_VARIABLE]), game.step

    def gated_step() -> None:
        while gate.exists():
            time.sleep(0.05)
        step()

    game.step = gated_step
    return game


def test_ghost_learn_refuses_a_second_process_on_a_live_run(tmp_path, capsys):
    config = tmp_path / "tennis.yaml"
    settings = {**TENNIS, "env_settings": {"env_path": f"{__name__}:gated_tennis", "seed": 3}}
    config.write_text(yaml.safe_dump(settings))
    gate = tmp_path / "gate"
    gate.touch()  # the first run holds its lock, waiting, until the refusals are checked
    environment = {**os.environ, GATE_VARIABLE: str(gate), "PYTHONPATH": str(ROOT)}
    flags = [str(config), "--run-id", "e2e", "--results-dir", str(tmp_path / "results")]
    command = [sys.executable, "-m", "ghost.running.cli", *flags]
    first = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tmp_path,
        env=environment,
    )  # fmt: skip
    root = tmp_path / "results" / "e2e"
    try:
        deadline = time.monotonic() + 60
        while not (root / "configuration.yaml").exists() and first.poll() is None:
            assert time.monotonic() < deadline, "the first run did not start"
            time.sleep(0.1)
        assert first.poll() is None, first.communicate()[0][-3000:]
        assert lock_record(root)["pid"] == first.pid

        second = subprocess.run(
            [*command, "--resume"], capture_output=True, text=True, cwd=tmp_path,
            env=environment, timeout=120,
        )  # fmt: skip
        # --force in this process: the same command line, without a second start-up of torch
        forced = cli.main([*flags, "--force"])
        for code, errors in ((second.returncode, second.stderr), (forced, capsys.readouterr().err)):
            assert code == 2, errors[-3000:]
            assert "Traceback" not in errors
            [line] = [line for line in errors.splitlines() if "error" in line]
            assert line.startswith("ghost-learn: error: run 'e2e' is in use by ")
            assert f"pid {first.pid} on host {HOST}" in line
        assert (root / "configuration.yaml").exists()  # --force deleted nothing
        assert lock_record(root)["pid"] == first.pid
    finally:
        gate.unlink()
        output = first.communicate(timeout=180)[0]
    assert first.returncode == 0, output[-3000:]
    assert "Traceback" not in output
    assert (root / "Tennis.pt").is_file()
    assert not (root / LOCK_FILE_NAME).exists()
