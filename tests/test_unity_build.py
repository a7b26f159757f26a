"""``ghost-learn --env <Unity build>`` over the real ML-Agents protocol, against the stand-in player.

``tests/fake_unity`` holds executables that play Unity's side of the protocol (gRPC client,
communication API 1.5.0): ``FakePong`` (one behavior, two teams) and ``FakeStrikers`` (two
strikers in a group against a goalie with hybrid actions). Each test starts real player processes
the way a real build is started and reads their player logs (``run_logs/Player-<worker>.log``).
"""

from __future__ import annotations

import json
import logging
import random
import socket
from pathlib import Path

import pytest
import yaml
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from ghost.running import cli

ROOT = Path(__file__).resolve().parent.parent
PONG = str(ROOT / "tests" / "fake_unity" / "FakePong")
STRIKERS = str(ROOT / "tests" / "fake_unity" / "FakeStrikers")
NEVER_CONNECTS = str(ROOT / "tests" / "fake_unity" / "NeverConnects")

pytestmark = pytest.mark.usefixtures("one_torch_thread")

SMALL_PPO = {
    "trainer_type": "ppo",
    "hyperparameters": {"batch_size": 32, "buffer_size": 64, "num_epoch": 1},
    "network_settings": {"hidden_units": 16, "num_layers": 1},
    "summary_freq": 100,
    "checkpoint_interval": 200,
}


def free_ports(count: int) -> int:
    """A base port with ``count`` free ports from it (ML-Agents uses base_port + worker_id)."""
    for _ in range(200):
        base = random.randint(20000, 40000)
        sockets = []
        try:
            for offset in range(count):
                s = socket.socket()
                sockets.append(s)
                s.bind(("localhost", base + offset))
            return base
        except OSError:
            continue
        finally:
            for s in sockets:
                s.close()
    raise RuntimeError("no free ports")


@pytest.fixture
def learn(capsys, caplog, tmp_path):
    """``learn(config, *flags)``: run ``ghost-learn`` in this process; (exit code, its output)."""

    def run(config: dict, *flags: str) -> tuple[int, str]:
        path = tmp_path / "config.yaml"
        path.write_text(yaml.safe_dump(config))
        with caplog.at_level(logging.INFO):
            code = cli.main([str(path), "--results-dir", str(tmp_path / "results"),
                             "--run-id", "run", *flags])  # fmt: skip
        captured = capsys.readouterr()
        return code, captured.out + captured.err + caplog.text

    return run


def player_log(run: Path, worker: int) -> list[dict]:
    lines = (run / "run_logs" / f"Player-{worker}.log").read_text().splitlines()
    return [json.loads(line) for line in lines]


def events(log: list[dict], kind: str) -> list[dict]:
    return [entry for entry in log if entry["event"] == kind]


def scalars(run: Path, behavior: str, tag: str) -> list[float]:
    accumulator = EventAccumulator(str(run / behavior))
    accumulator.Reload()
    if tag not in accumulator.Tags()["scalars"]:
        return []
    return [event.value for event in accumulator.Scalars(tag)]


def test_pong_self_play_over_the_protocol_with_two_builds(learn, tmp_path):
    base_port = free_ports(2)
    config = {
        "behaviors": {
            "Pong": {**SMALL_PPO, "max_steps": 800,
                     "self_play": {"save_steps": 100, "swap_steps": 50, "team_change": 400,
                                   "window": 3}},
        },
        "env_settings": {"num_areas": 2, "timeout_wait": 30},
        "environment_parameters": {
            "ball_speed": {"sampler_type": "uniform",
                           "sampler_parameters": {"min_value": 0.8, "max_value": 1.2, "seed": 3}},
            "paddle_size": 0.25,
        },
    }  # fmt: skip
    code, text = learn(
        config, "--env", PONG, "--num-envs", "2", "--base-port", str(base_port),
        "--no-graphics", "--time-scale", "7", "--width", "160", "--height", "90",
        "--quality-level", "2", "--target-frame-rate", "30", "--capture-frame-rate", "25",
    )  # fmt: skip
    assert code == 0, text
    # every process on the compiled parser: the trainer says so, the players log theirs
    assert "Unity build messages: protobuf" in text and "python backend" not in text
    run = tmp_path / "results" / "run"
    assert (run / "Pong.pt").is_file()
    for worker in (0, 1):
        log = player_log(run, worker)
        (start,) = events(log, "start")
        assert start["protobuf"] in ("upb", "cpp")
        assert start["port"] == base_port + worker
        assert start["graphics"] is False and start["batchmode"] is True
        (initialized,) = events(log, "initialized")
        assert initialized["num_areas"] == 2
        engine = {e["setting"]: e for e in events(log, "engine_configuration")}
        assert (engine["screen_resolution"]["width"], engine["screen_resolution"]["height"]) == (
            160, 90,
        )  # fmt: skip
        assert engine["quality_level"]["quality_level"] == 2
        assert engine["time_scale"]["time_scale"] == pytest.approx(7.0)
        assert engine["target_frame_rate"]["target_frame_rate"] == 30
        assert engine["capture_frame_rate"]["capture_frame_rate"] == 25
        parameters = {e["key"]: e for e in events(log, "environment_parameter")}
        assert parameters["ball_speed"]["kind"] == "uniform"
        speed = parameters["ball_speed"]
        assert (speed["min"], speed["max"]) == pytest.approx((0.8, 1.2))
        assert parameters["ball_speed"]["seed"] == 3
        assert parameters["paddle_size"] == {**parameters["paddle_size"], "kind": "float",
                                             "value": 0.25}  # fmt: skip
        assert events(log, "quit"), "the build was not closed"
    # matches were rated, and the player's stats reached TensorBoard
    elo = scalars(run, "Pong", "Self-play/ELO")
    assert elo and any(value != 1200.0 for value in elo)
    assert scalars(run, "Pong", "Environment/Episode Steps")
    speeds = scalars(run, "Pong", "Fake/ball_speed")
    assert speeds and all(0.8 <= value <= 1.2 for value in speeds)
    assert scalars(run, "Pong", "Fake/paddle_size") == pytest.approx([0.25] * len(speeds))


def test_strikers_vs_goalie_with_a_curriculum_sent_to_the_build(learn, tmp_path):
    base_port = free_ports(2)

    # one turn each, long enough for 200-step episodes to end inside it: 250 environment steps
    # (2 workers x 2 strikers, or x 1 goalie, learn per step)
    def behavior(steps: int) -> dict:
        self_play = {"save_steps": 200, "swap_steps": 100, "team_change": steps}
        return {**SMALL_PPO, "max_steps": steps, "summary_freq": 250, "self_play": self_play}

    config = {
        "behaviors": {"Striker": behavior(1000), "Goalie": behavior(500)},
        "env_settings": {"num_areas": 1, "timeout_wait": 30},
        "environment_parameters": {
            "goal_width": {"curriculum": [
                {"name": "Wide", "value": 1.2,
                 "completion_criteria": {"measure": "progress", "behavior": "Striker",
                                         "threshold": 0.2}},
                {"name": "Narrow", "value": 0.5},
            ]},
        },
    }  # fmt: skip
    # respawned agents: every episode under a new agent id, as games that re-create agents do
    code, text = learn(config, "--env", STRIKERS, "--num-envs", "2", "--base-port",
                       str(base_port), "--no-graphics", "--env-args", "--fake-respawn-agents")  # fmt: skip
    assert code == 0, text
    run = tmp_path / "results" / "run"
    assert (run / "Striker.pt").is_file() and (run / "Goalie.pt").is_file()
    assert "Lesson complete. Parameter 'goal_width' is in lesson 'Narrow'" in text
    for worker in (0, 1):
        sent = [e["value"] for e in events(player_log(run, worker), "environment_parameter")]
        assert sent[0] == pytest.approx(1.2) and sent[-1] == pytest.approx(0.5)
    widths = scalars(run, "Striker", "Fake/goal_width")
    assert widths[0] == pytest.approx(1.2) and widths[-1] == pytest.approx(0.5)
    lessons = {
        b: scalars(run, b, "Environment/Lesson Number/goal_width") for b in config["behaviors"]
    }
    assert set(lessons["Striker"] + lessons["Goalie"]) == {0, 1}  # the goalie learned in lesson 0
    assert lessons["Striker"][-1] == 1
    # episodes under ever new agent ids were assembled and rated
    for behavior in ("Striker", "Goalie"):
        assert scalars(run, behavior, "Environment/Cumulative Reward"), behavior
        assert any(value != 1200.0 for value in scalars(run, behavior, "Self-play/ELO")), behavior


def test_a_build_that_crashes_is_restarted_and_training_finishes(learn, tmp_path):
    base_port = free_ports(1)
    marker = tmp_path / "crashed-once"
    config = {
        "behaviors": {"Pong": {**SMALL_PPO, "max_steps": 400, "self_play": {}}},
        "env_settings": {"timeout_wait": 30, "max_lifetime_restarts": 1},
    }
    code, text = learn(
        config, "--env", PONG, "--base-port", str(base_port), "--no-graphics",
        "--env-args", "--fake-crash-after-steps", "40", "--fake-crash-marker", str(marker),
    )  # fmt: skip
    assert code == 0, text
    assert marker.is_file()  # it did crash
    assert "Environment worker 0 failed during step; restarting it (restart 1" in text
    log = player_log(tmp_path / "results" / "run", 0)
    assert len(events(log, "crash")) == 1 and len(events(log, "start")) == 2
    assert (tmp_path / "results" / "run" / "Pong.pt").is_file()


def test_a_build_that_keeps_crashing_stops_the_run_after_max_lifetime_restarts(learn, tmp_path):
    config = {
        "behaviors": {"Pong": {**SMALL_PPO, "max_steps": 4000, "self_play": {}}},
        "env_settings": {"timeout_wait": 30, "max_lifetime_restarts": 1,
                         "restarts_rate_limit_n": -1},
    }  # fmt: skip
    code, text = learn(
        config, "--env", PONG, "--base-port", str(free_ports(1)),
        "--no-graphics", "--env-args", "--fake-crash-after-steps", "10",
    )  # fmt: skip
    assert code == 2
    assert (
        "is not restarted again: it has been restarted 1 times and max_lifetime_restarts is 1"
        in text
    )
    assert "--resume" in text  # the checkpoint written on the way out is named


def test_a_build_that_never_connects_times_out_with_a_clear_message(learn, tmp_path):
    base_port = free_ports(1)
    config = {"behaviors": {"Pong": {**SMALL_PPO, "self_play": {}}}}
    code, text = learn(config, "--env", NEVER_CONNECTS, "--base-port",
                       str(base_port), "--timeout-wait", "2", "--max-lifetime-restarts", "0")  # fmt: skip
    assert code == 2
    assert f"did not connect to port {base_port} within 2 s" in text
    assert "--timeout-wait" in text and "Player-0.log" in text
    assert not (tmp_path / "results" / "run").exists()  # nothing to resume: no folder left
