"""The fake Unity player (``tests/fake_unity``) driven by mlagents_envs' own ``UnityEnvironment``.

Each test starts a player process as ML-Agents starts a Linux build (``file_name`` without the
``.x86_64``) on a free port; the launchers run ``#!/usr/bin/env python3``, so ``PATH`` starts with
this venv's ``bin``. The player's side-channel codecs are its own: what mlagents_envs' channels send
must reach its log with the exact values, and what it sends must parse with mlagents_envs' readers.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from mlagents_envs.base_env import (
    ActionSpec,
    ActionTuple,
    BehaviorSpec,
    DimensionProperty,
    ObservationSpec,
    ObservationType,
)
from mlagents_envs.environment import UnityEnvironment
from mlagents_envs.exception import (
    UnityCommunicatorStoppedException,
    UnityEnvironmentException,
    UnityTimeOutException,
)
from mlagents_envs.side_channel.engine_configuration_channel import EngineConfigurationChannel
from mlagents_envs.side_channel.environment_parameters_channel import (
    EnvironmentParametersChannel,
)
from mlagents_envs.side_channel.stats_side_channel import StatsAggregationMethod, StatsSideChannel

from tests.fake_unity import fake_games

FAKE_UNITY = Path(__file__).resolve().parent / "fake_unity"
PONG = ("Pong?team=0", "Pong?team=1")
STRIKER, GOALIE = "Striker?team=0", "Goalie?team=1"


@pytest.fixture(autouse=True)
def venv_python_first_on_path(monkeypatch):
    """The launchers' ``/usr/bin/env python3`` must find this venv's interpreter."""
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("localhost", 0))
        return probe.getsockname()[1]


def start(build: str, log_folder: Path, *, timeout_wait: int = 10, **kwargs) -> UnityEnvironment:
    return UnityEnvironment(
        file_name=str(FAKE_UNITY / build),
        base_port=free_port(),
        worker_id=0,
        no_graphics=True,
        timeout_wait=timeout_wait,
        log_folder=str(log_folder),
        **kwargs,
    )


def reset_step_close(env: UnityEnvironment, steps: int) -> None:
    """Reset, take ``steps`` steps with no actions set, and close, even after an error."""
    try:
        env.reset()
        for _ in range(steps):
            env.step()
    finally:
        env.close()


def log_events(log_folder: Path, event: str | None = None) -> list[dict]:
    lines = (log_folder / "Player-0.log").read_text(encoding="utf-8").splitlines()
    events = [json.loads(line) for line in lines]
    return [e for e in events if event is None or e["event"] == event]


def vector(size: int) -> ObservationSpec:
    return ObservationSpec(
        shape=(size,),
        dimension_property=(DimensionProperty.NONE,),
        observation_type=ObservationType.DEFAULT,
        name=f"VectorSensor_size{size}",
    )


def random_actions(env: UnityEnvironment, rng: np.random.Generator) -> None:
    for name, spec in env.behavior_specs.items():
        n = len(env.get_steps(name)[0])
        continuous = rng.uniform(-1, 1, (n, spec.action_spec.continuous_size)).astype(np.float32)
        branches = spec.action_spec.discrete_branches
        discrete = np.stack([rng.integers(0, b, n) for b in branches], 1) if branches else None
        env.set_actions(name, ActionTuple(continuous=continuous, discrete=discrete))


PONG_SPEC = BehaviorSpec([vector(6)], ActionSpec(0, (3,)))
EXPECTED = {
    "FakePong": ({PONG[0]: PONG_SPEC, PONG[1]: PONG_SPEC}, {PONG[0]: 2, PONG[1]: 2}),
    "FakeStrikers": (
        {
            STRIKER: BehaviorSpec([vector(10)], ActionSpec(2, ())),
            GOALIE: BehaviorSpec([vector(6)], ActionSpec(1, (2,))),
        },
        {STRIKER: 4, GOALIE: 2},
    ),
}


@pytest.mark.parametrize("build", sorted(EXPECTED))
def test_handshake_gives_the_specs_and_every_area_agents(tmp_path, build):
    specs, agents = EXPECTED[build]
    env = start(build, tmp_path, seed=1234, num_areas=2)
    try:
        env.reset()
        assert dict(env.behavior_specs) == specs
        for name, count in agents.items():
            decision, terminal = env.get_steps(name)
            assert (len(decision), len(terminal)) == (count, 0)
        assert env.academy_capabilities.hybridActions and env.academy_capabilities.multiAgentGroups
    finally:
        env.close()
    (started,) = log_events(tmp_path, "start")
    assert started["graphics"] is False and started["batchmode"] is True
    (initialized,) = log_events(tmp_path, "initialized")
    assert (initialized["seed"], initialized["num_areas"]) == (1234, 2)
    assert initialized["communication_version"] == UnityEnvironment.API_VERSION


@pytest.mark.parametrize(
    ("build", "name", "actions", "expected_y"),
    [
        # paddles move 0.06 a step: up for agent 0 (area 0), down for agent 2 (area 1)
        ("FakePong", PONG[0], {0: ([], [2]), 2: ([], [0])}, {0: 0.18, 2: -0.18}),
        # goalies move 0.05 a step, half as fast while diving (the discrete branch)
        ("FakeStrikers", GOALIE, {2: ([1.0], [1]), 5: ([-1.0], [0])}, {2: 0.075, 5: -0.15}),
    ],
)
def test_actions_reach_the_agents_they_were_set_for(tmp_path, build, name, actions, expected_y):
    env = start(build, tmp_path, num_areas=2)
    try:
        env.reset()
        for _ in range(3):
            for agent_id, (continuous, discrete) in actions.items():
                action = ActionTuple(np.array([continuous], np.float32), np.array([discrete]))
                env.set_action_for_agent(name, agent_id, action)
            env.step()
        decision = env.get_steps(name)[0]
        own_y = {agent_id: decision[agent_id].obs[0][0] for agent_id in expected_y}
        assert own_y == pytest.approx(expected_y, abs=1e-5)
    finally:
        env.close()


@pytest.mark.parametrize("respawn", [False, True], ids=["same-agents", "respawned-agents"])
def test_a_reset_mid_run_starts_new_episodes(tmp_path, respawn):
    """C#'s _AgentReset sends no terminal info; agents destroyed on reset send one (not a timeout)."""
    args = ["--fake-respawn-agents"] if respawn else []
    env = start("FakePong", tmp_path, num_areas=2, additional_args=args)
    try:
        env.reset()
        for _ in range(5):
            env.step()
        before = {name: set(env.get_steps(name)[0].agent_id) for name in PONG}
        env.reset()
        for name in PONG:
            decision, terminal = env.get_steps(name)
            if respawn:
                assert set(terminal.agent_id) == before[name] and not terminal.interrupted.any()
                assert before[name].isdisjoint(decision.agent_id) and len(decision) == 2
            else:
                assert len(terminal) == 0 and set(decision.agent_id) == before[name]
    finally:
        env.close()
    assert [event["episode"] for event in log_events(tmp_path, "reset")] == [1, 2]


def test_close_ends_the_player_with_exit_code_0(tmp_path):
    env = start("FakePong", tmp_path)
    process = env._process  # close() waits for it, then forgets it
    reset_step_close(env, 1)
    assert process.returncode == 0
    (quit_event,) = log_events(tmp_path, "quit")
    assert quit_event["exit_code"] == 0 and quit_event["reason"]


def test_pong_agents_keep_their_ids_and_score_plus_minus_one(tmp_path):
    parameters, stats = EnvironmentParametersChannel(), StatsSideChannel()
    parameters.set_float_parameter("ball_speed", 1.5)
    env = start("FakePong", tmp_path, seed=3, num_areas=2, side_channels=[parameters, stats])
    rng = np.random.default_rng(0)
    try:
        env.reset()
        ids = {name: set(env.get_steps(name)[0].agent_id) for name in PONG}
        assert ids == {PONG[0]: {0, 2}, PONG[1]: {1, 3}}  # one counter from 0, area by area
        scored, masked = 0, 0
        for _ in range(200):
            random_actions(env, rng)
            env.step()
            steps = {name: env.get_steps(name) for name in PONG}
            for name, (decision, terminal) in steps.items():
                # an agent whose episode ended decides again at once, under the same id
                assert set(decision.agent_id) == ids[name] >= set(terminal.agent_id)
                # True = masked: "up" at the top wall, "down" at the bottom (own y is obs 0)
                own_y, (mask,) = decision.obs[0][:, 0], decision.action_mask
                assert np.array_equal(mask[:, 2], own_y > 0.79)
                assert np.array_equal(mask[:, 0], own_y < -0.79)
                masked += int(mask.any())
                # a point: +1 to the paddle whose frame shows the ball past the far goal line
                won = ~terminal.interrupted
                ball_x = terminal.obs[0][won, 2]
                assert np.array_equal(terminal.reward[won], np.where(ball_x > 1, 1.0, -1.0))
                assert np.all(np.abs(ball_x) > 1) and np.all(terminal.reward[~won] == 0)
            (_, terminal_0), (_, terminal_1) = steps.values()
            # both paddles of an area end their episode together, with opposite rewards
            assert list(terminal_0.agent_id + 1) == list(terminal_1.agent_id)
            assert np.array_equal(terminal_0.reward, -terminal_1.reward)
            scored += int(np.sum(~terminal_0.interrupted))
        assert scored >= 4 and masked > 0
    finally:
        env.close()
    received = stats.get_and_reset_stats()
    assert set(received["Fake/ball_speed"]) == {(1.5, StatsAggregationMethod.MOST_RECENT)}
    episode_steps = received["Environment/Episode Steps"]
    assert len(episode_steps) >= scored
    assert all(m == StatsAggregationMethod.AVERAGE and 0 < v <= 300 for v, m in episode_steps)


@pytest.mark.parametrize("period", [1, 4])
def test_pong_timeout_interrupts_both_paddles(tmp_path, period):
    """With a decision period K, one ``env.step()`` covers K game steps (actions repeat)."""
    parameters = EnvironmentParametersChannel()
    parameters.set_float_parameter("ball_speed", 0.0)  # the ball never reaches a goal
    args = ["--fake-decision-period", str(period)]
    env = start("FakePong", tmp_path, num_areas=2, side_channels=[parameters], additional_args=args)
    try:
        env.reset()
        for step in range(1, fake_games.Pong.MAX_STEP // period + 1):
            env.step()
            terminals = [env.get_steps(name)[1] for name in PONG]
            if step < fake_games.Pong.MAX_STEP // period:
                assert all(len(t) == 0 for t in terminals)
        for terminal in terminals:
            assert len(terminal) == 2 and terminal.interrupted.all()
            assert np.all(terminal.reward == 0)
    finally:
        env.close()


def test_strikers_respawned_agents_get_new_ids_and_keep_their_group(tmp_path):
    args = ["--fake-respawn-agents"]
    env = start("FakeStrikers", tmp_path, seed=5, num_areas=2, additional_args=args)
    rng = np.random.default_rng(1)
    seen, ended, episodes = set(), set(), 0
    try:
        env.reset()
        for _ in range(fake_games.Strikers.MAX_STEP + 20):
            random_actions(env, rng)
            env.step()
            (strikers, striker_ends), (goalies, goalie_ends) = map(env.get_steps, (STRIKER, GOALIE))
            ids = {*strikers.agent_id, *goalies.agent_id}
            ending = {*striker_ends.agent_id, *goalie_ends.agent_id}
            assert not (ids | ending) & ended  # an ended agent never comes back
            if ending:
                assert not ids & ending and ids - seen  # new agents decide in the same step
                episodes += 1
            seen |= ids | ending
            ended |= ending
            # one group per area (ids from 1), both strikers in it, kept across episodes
            assert sorted(strikers.group_id) == [1, 1, 2, 2] and set(goalies.group_id) == {0}
            if len(striker_ends):
                assert sorted(striker_ends.group_id) == [1, 1, 2, 2]
                assert set(goalie_ends.group_id) == {0}
                # the strikers' group reward and the goalie's reward say who won, oppositely
                assert set(np.abs(striker_ends.group_reward)) == {1.0}
                assert striker_ends.group_reward.sum() == -2 * goalie_ends.reward.sum()
                assert not striker_ends.interrupted.any()  # running the clock out is a win
        assert episodes >= 1
    finally:
        env.close()


def test_side_channels_reach_the_player_log_with_exact_values(tmp_path):
    engine, parameters = EngineConfigurationChannel(), EnvironmentParametersChannel()
    engine.set_configuration_parameters(
        width=84,
        height=48,
        quality_level=3,
        time_scale=20.0,
        target_frame_rate=-1,
        capture_frame_rate=60,
    )
    parameters.set_float_parameter("ball_speed", 1.25)
    parameters.set_uniform_sampler_parameters("spin", 0.5, 2.0, seed=7)
    parameters.set_gaussian_sampler_parameters("noise", 1.0, 0.25, seed=3)
    parameters.set_multirangeuniform_sampler_parameters("gap", [(0.0, 1.0), (2.0, 3.0)], seed=5)
    stats = StatsSideChannel()
    env = start("FakePong", tmp_path, num_areas=2, side_channels=[engine, parameters, stats])
    reset_step_close(env, 3)
    settings = [
        {key: value for key, value in event.items() if key not in ("event", "time")}
        for event in log_events(tmp_path, "engine_configuration")
    ]
    assert settings == [
        {"setting": "screen_resolution", "width": 84, "height": 48},
        {"setting": "quality_level", "quality_level": 3},
        {"setting": "time_scale", "time_scale": 20.0},
        {"setting": "target_frame_rate", "target_frame_rate": -1},
        {"setting": "capture_frame_rate", "capture_frame_rate": 60},
    ]
    received = {
        event["key"]: {key: value for key, value in event.items() if key not in ("event", "time")}
        for event in log_events(tmp_path, "environment_parameter")
    }
    assert received == {
        "ball_speed": {"key": "ball_speed", "kind": "float", "value": 1.25},
        "spin": {"key": "spin", "kind": "uniform", "seed": 7, "min": 0.5, "max": 2.0},
        "noise": {"key": "noise", "kind": "gaussian", "seed": 3, "mean": 1.0, "st_dev": 0.25},
        "gap": {
            "key": "gap",
            "kind": "multirange_uniform",
            "seed": 5,
            "intervals": [[0.0, 1.0], [2.0, 3.0]],
        },
    }
    (analytics,) = log_events(tmp_path, "training_analytics")
    assert analytics["message"] == "TrainingEnvironmentInitialized"
    values = {key: [v for v, _ in values] for key, values in stats.get_and_reset_stats().items()}
    assert set(values["Fake/ball_speed"]) == {1.25}
    # the game does not read "spin": the player reads it once per area reset, a new draw each time
    assert all(0.5 <= v <= 2.0 for v in values["Fake/spin"]) and len(set(values["Fake/spin"])) == 2
    assert all(0 <= v <= 1 or 2 <= v <= 3 for v in values["Fake/gap"])


def test_crash_after_steps_then_the_restarted_build_runs_on(tmp_path):
    marker = tmp_path / "crashed"
    args = ["--fake-crash-after-steps", "5", "--fake-crash-marker", str(marker)]
    # timeout_wait < 10: mlagents_envs checks the process between polls of 0 s, not 1 s
    env = start("FakePong", tmp_path, timeout_wait=5, additional_args=args)
    process = env._process
    try:
        env.reset()
        with pytest.raises((UnityEnvironmentException, UnityCommunicatorStoppedException)):
            for _ in range(10):
                env.step()
    finally:
        env.close()
    assert process.returncode == 3 and marker.exists()
    (crash,) = log_events(tmp_path, "crash")
    assert crash["step"] == 5
    reset_step_close(start("FakePong", tmp_path, additional_args=args), 10)
    # the log is appended to: both runs started, only the first crashed
    assert len(log_events(tmp_path, "start")) == 2 and len(log_events(tmp_path, "crash")) == 1


def test_a_build_that_never_connects_times_out(tmp_path):
    with pytest.raises(UnityTimeOutException):
        start("NeverConnects", tmp_path, timeout_wait=2)
    (started,) = log_events(tmp_path, "start")
    assert started["port"] is not None


def test_without_a_trainer_port_the_build_exits_1(tmp_path):
    log = tmp_path / "player.log"
    command = [str(FAKE_UNITY / "FakePong.x86_64"), "-batchmode", "-logFile", str(log), "-foo"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=30)
    assert result.returncode == 1 and "--mlagents-port" in result.stderr
    events = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert [e["event"] for e in events] == ["start", "quit"]
    assert events[0]["ignored_args"] == ["-foo"]


class Defaults:
    """Environment parameters when the trainer sent none."""

    def get_with_default(self, key: str, default: float) -> float:
        return default


def play(game, choose, steps: int) -> list[np.ndarray]:
    """Run ``game`` in-process for ``steps``; ``choose(game, b, rng)`` gives behavior b's actions."""
    rng = np.random.default_rng(0)
    game.reset(np.arange(game.num_areas), Defaults())
    rewards = [np.zeros(layout.agents_per_area) for layout in game.behaviors]
    for _ in range(steps):
        outcome = game.step([choose(game, b, rng) for b in range(len(game.behaviors))])
        for total, reward in zip(rewards, outcome.rewards, strict=True):
            total += reward.sum(axis=0)
        game.reset(np.flatnonzero(outcome.ended), Defaults())
    return rewards


def random_choice(game, b, rng):
    layout, areas = game.behaviors[b], game.num_areas
    shape = (areas, layout.agents_per_area)
    branches = np.array(layout.discrete_branches, np.int64)
    continuous = rng.uniform(-1, 1, (*shape, layout.continuous_size))
    return continuous, rng.integers(0, branches, (*shape, len(branches)))


def test_a_paddle_that_follows_the_ball_beats_a_random_one():
    def follow_or_random(game, b, rng):
        if b == 1:
            return random_choice(game, b, rng)
        up_or_down = 1 + np.sign(game.ball[:, 1] - game.paddle_y[:, 0]).astype(np.int64)
        return np.zeros((game.num_areas, 1, 0)), up_or_down.reshape(-1, 1, 1)

    follower, randomer = play(fake_games.Pong(num_areas=16, seed=0), follow_or_random, 3000)
    assert follower[0] > 100 and randomer[0] == -follower[0]


@pytest.mark.parametrize("game_class", [fake_games.Pong, fake_games.Strikers])
def test_games_are_deterministic_given_the_seed(game_class):
    def observations(seed):
        game = game_class(num_areas=3, seed=seed)
        play(game, random_choice, 250)
        return np.concatenate([obs.ravel() for obs in game.observations()])

    assert np.array_equal(observations(1), observations(1))
    assert not np.array_equal(observations(1), observations(2))
