"""``env_settings.backend: ray``: environment workers as Ray actors on a local 2-CPU Ray cluster.

Skipped, with the reason, where the ``ray`` extra is not installed. The same stepper contract as
the worker processes (``tests/test_workers.py``): merged steps, id blocks, restarts; then whole
runs: a seeded run learns what the subprocess backend learns, and the stand-in Unity build runs
inside actors.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from envs.settings import EnvironmentSettings
from ghost.exceptions import EnvironmentSourceError, EnvironmentWorkerError
from ghost.running import cli
from tests.test_unity_build import PONG, SMALL_PPO, free_ports, player_log, scalars
from tests.test_workers import (
    SEED,
    Reference,
    assert_merged,
    echo_stepper_maker,
    identity_actions,
    worker_of,
)
from tests.worker_envs import ECHO_WORKER, STEP, WORKER, make_parameter_env

ray = pytest.importorskip(
    "ray", reason="the ray extra is not installed (pip install 'ghost-trainer[ray]')"
)

from envs.ray_workers import RayStepper  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    """One local Ray cluster (2 CPUs) for the module; actors import ``tests`` from the root."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        logging_level=logging.WARNING,
        runtime_env={"env_vars": {"PYTHONPATH": path}},
    )
    yield
    ray.shutdown()


@pytest.fixture
def make_stepper():
    """Builds RaySteppers over EchoEnvs and closes every one at teardown."""
    steppers: list[RayStepper] = []
    yield echo_stepper_maker(RayStepper, {"max_lifetime_restarts", "wait_fraction"}, steppers)
    for stepper in steppers:
        stepper.close()


def kill(actor) -> None:
    """Kill ``actor`` and wait until it is gone (``ray.kill`` returns before it takes effect)."""
    ray.kill(actor, no_restart=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            ray.get(actor.node_id.remote(), timeout=5)
        except ray.exceptions.RayActorError:
            return
        time.sleep(0.05)
    raise AssertionError(f"actor {actor} still answers 30 s after ray.kill")


def test_lock_step_results_equal_the_in_process_environments(make_stepper):
    options = {"solo_worker": 1, "unmasked_worker": 2}
    stepper = make_stepper(num_envs=3, **options)
    reference = Reference(3, **options)
    result, expected = stepper.reset(), reference.reset()
    for _ in range(6):
        assert_merged(result, expected)
        result, expected = stepper.step(identity_actions(result)), reference.step()
    assert_merged(result, expected)


def test_a_killed_actor_is_replaced_and_its_agents_come_back_as_new_agents(make_stepper, caplog):
    stepper = make_stepper(num_envs=2)
    result = stepper.reset()
    result = stepper.step(identity_actions(result))
    kill(stepper.actors[0])
    with caplog.at_level(logging.ERROR):
        result = stepper.step(identity_actions(result))
    assert "Environment actor 0 failed during step" in caplog.text
    assert stepper.restart_counts == [1, 0]
    ids = np.concatenate([s.decision.agent_id for s in result.values()])
    assert set(worker_of(ids)) == {1}, "the dead actor's agents cannot be in this step"
    result = stepper.step(identity_actions(result))
    ids = np.concatenate([s.decision.agent_id for s in result.values()])
    # the replacement is back, in a new id block (block 2 = worker 0 after one restart)
    assert set(ids // (1 << 32)) == {1, 2}


def test_an_actor_out_of_restarts_stops_the_run_with_the_reason(make_stepper):
    stepper = make_stepper(num_envs=2, max_lifetime_restarts=0)
    result = stepper.reset()
    kill(stepper.actors[1])
    with pytest.raises(EnvironmentWorkerError, match="max_lifetime_restarts is 0"):
        stepper.step(identity_actions(result))


def test_an_environment_that_raises_in_an_actor_is_restarted_with_its_traceback(
    make_stepper, caplog
):
    stepper = make_stepper(num_envs=2, crash_at_step=2, crash_seed=SEED + 1)
    result = stepper.reset()
    with caplog.at_level(logging.ERROR):
        for _ in range(3):
            result = stepper.step(identity_actions(result))
    assert "InjectedCrash: injected step crash in worker 1" in caplog.text
    assert stepper.restart_counts == [0, 1]


def test_an_environment_that_fails_to_take_parameters_is_not_lost():
    stepper = RayStepper(
        factory=make_parameter_env, num_envs=2, seed=SEED, max_lifetime_restarts=1,
        restarts_rate_limit_n=-1,
    )  # fmt: skip
    try:
        result = stepper.reset()
        stepper.set_environment_parameters({"crash": -1.0})
        # the restarted actors get the parameters again and fail again: out of restarts
        with pytest.raises(EnvironmentWorkerError, match="injected parameter crash"):
            stepper.step(identity_actions(result))
    finally:
        stepper.close()


def test_waiting_for_half_lets_the_fast_actor_run_ahead_and_keeps_each_actor_in_order(
    make_stepper,
):
    stepper = make_stepper(
        num_envs=2,
        slow_worker=1,
        slow_step_s=0.05,
        episode_length=100_000,
        wait_fraction=0.5,
    )
    result = stepper.reset()
    last_step = {0: 0, 1: 0}
    for _ in range(2000):
        result = stepper.step(identity_actions(result))
        obs = np.concatenate([s.decision.obs[0] for s in result.values()])
        for worker in np.unique(obs[:, WORKER]).astype(int):
            steps = obs[obs[:, WORKER] == worker, STEP]
            # one answer per environment step: never skipped, never delivered twice
            assert set(steps) == {last_step[worker] + 1}
            last_step[worker] += 1
            # the actions each agent saw were the ones computed for it
            echoed = obs[(obs[:, WORKER] == worker) & (obs[:, STEP] > 1), ECHO_WORKER]
            assert set(echoed) <= {worker}
        if last_step[1] == 3:
            break
    assert last_step[1] == 3, "the slow actor's answers must still arrive"
    assert last_step[0] > 2 * last_step[1], last_step


@pytest.fixture(scope="module")
def tennis_runs(tmp_path_factory, local_ray):
    """The same seeded tennis run on both backends, the Ray one with scheduled evaluation games
    (played as Ray tasks): ``{backend: (run folder, evaluation log lines)}``."""
    root = tmp_path_factory.mktemp("tennis")
    config = {
        "behaviors": {
            "Tennis": {**SMALL_PPO, "max_steps": 1500,
                       "self_play": {"save_steps": 300, "swap_steps": 200, "team_change": 900,
                                     "fixed_opponents": [{"name": "random", "scripted": "random"}]}},
        },
        "env_settings": {"env_path": "tennis", "num_envs": 2, "seed": 5},
    }  # fmt: skip
    runs = {}
    for backend in ("local", "ray"):
        if backend == "ray":
            config["behaviors"]["Tennis"]["self_play"]["evaluation"] = {"every_steps": 500,
                                                                        "games": 10}  # fmt: skip
        path = root / f"{backend}.yaml"
        path.write_text(yaml.safe_dump(config))
        lines = _LogLines("ghost.running.scheduled_evaluation")
        with lines:
            code = cli.main([str(path), "--results-dir", str(root), "--run-id", backend,
                             "--env-backend", backend])  # fmt: skip
        assert code == 0
        runs[backend] = (root / backend, lines.messages)
    return runs


class _LogLines(logging.Handler):
    """Collects the messages of one logger while in a ``with`` block."""

    def __init__(self, name: str) -> None:
        super().__init__(logging.INFO)
        self.logger = logging.getLogger(name)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())

    def __enter__(self) -> _LogLines:
        self.logger.addHandler(self)
        self.level_before = self.logger.level
        self.logger.setLevel(logging.INFO)
        return self

    def __exit__(self, *_: object) -> None:
        self.logger.removeHandler(self)
        self.logger.setLevel(self.level_before)


def test_a_seeded_run_learns_the_same_weights_as_the_subprocess_backend(tennis_runs):
    # the Ray run also played evaluation games as tasks: they do not touch the learner either
    policies = {
        backend: torch.load(run / "Tennis.pt", weights_only=False)
        for backend, (run, _) in tennis_runs.items()
    }
    local, remote = _tensors(policies["local"]), _tensors(policies["ray"])
    assert local and local.keys() == remote.keys()
    for name, tensor in local.items():
        assert torch.equal(tensor, remote[name]), name


def test_scheduled_evaluation_games_played_as_ray_tasks_are_reported(tennis_runs):
    run, lines = tennis_runs["ray"]
    steps = [int(line.split("Step: ")[1].split(".")[0]) for line in lines]
    assert steps == [512, 1024, 1536], lines
    assert all("Evaluation against random: win rate" in line for line in lines)
    assert len(scalars(run, "Tennis", "Evaluation/random Win Rate")) == 3


def test_each_game_runner_hands_back_only_its_own_results():
    # the session gives every behavior its own runner: results must not cross between them
    from ghost.play.game_runner import RayGames

    striker, goalie = RayGames(), RayGames()
    striker.submit("s", dict, side="Striker")
    goalie.submit("g", dict, side="Goalie")
    assert striker.finished(wait=True) == [("s", {"side": "Striker"})]
    assert goalie.finished(wait=True) == [("g", {"side": "Goalie"})]
    assert striker.pending == goalie.pending == 0


def test_league_pairs_played_as_ray_tasks_give_the_same_table(tennis_runs):
    from ghost.evaluation.tournament import play_tournament
    from ghost.play.game_runner import RayGames

    run = tennis_runs["local"][0]
    inline = play_tournament(run, games_per_pair=6, include_levels=["weak"], seed=2)
    remote = play_tournament(run, games_per_pair=6, include_levels=["weak"], seed=2,
                         games=RayGames())  # fmt: skip
    assert len(inline.results) >= 3
    assert [r.to_dict() for r in remote.results] == [r.to_dict() for r in inline.results]


def _tensors(tree, prefix=""):
    found = {}
    if isinstance(tree, dict):
        for key, value in tree.items():
            found.update(_tensors(value, f"{prefix}/{key}"))
    elif torch.is_tensor(tree):
        found[prefix] = tree
    return found


def test_the_stand_in_unity_build_trains_inside_ray_actors(tmp_path):
    base_port = free_ports(2)
    config = {
        "behaviors": {
            "Pong": {**SMALL_PPO, "max_steps": 400,
                     "self_play": {"save_steps": 100, "swap_steps": 50, "team_change": 200}},
        },
        "env_settings": {"timeout_wait": 30, "backend": "ray"},
    }  # fmt: skip
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    code = cli.main([str(path), "--results-dir", str(tmp_path), "--run-id", "run", "--env", PONG,
                     "--num-envs", "2", "--base-port", str(base_port), "--no-graphics"])  # fmt: skip
    assert code == 0
    run = tmp_path / "run"
    assert (run / "Pong.pt").is_file()
    for worker in (0, 1):
        log = player_log(run, worker)
        (start,) = [entry for entry in log if entry["event"] == "start"]
        assert start["port"] == base_port + worker
        assert any(entry["event"] == "quit" for entry in log), "the build was not closed"


def test_snapshot_evaluations_played_as_ray_tasks_give_the_same_rows(tennis_runs):
    from ghost.evaluation.snapshots import evaluate_run
    from ghost.play.game_runner import RayGames

    run = tennis_runs["local"][0]
    inline = evaluate_run(run, "Tennis", opponent="weak", episodes=6, seed=3)
    remote = evaluate_run(run, "Tennis", opponent="weak", episodes=6, seed=3, games=RayGames())
    assert len(inline) >= 3
    assert [r.to_dict() for r in remote] == [r.to_dict() for r in inline]


def test_an_address_where_nothing_listens_is_a_clear_error_at_once():
    from envs.ray_workers import _check_reachable

    port = free_ports(1)
    with pytest.raises(EnvironmentSourceError, match=f"nothing answers at 127.0.0.1:{port}"):
        _check_reachable(f"127.0.0.1:{port}")
    with pytest.raises(EnvironmentSourceError, match="ray start --head"):
        _check_reachable(f"ray://127.0.0.1:{port}")
    _check_reachable("auto")  # left to Ray


def test_a_ray_address_selects_the_ray_backend():
    assert EnvironmentSettings(ray_address="auto").uses_ray
    assert EnvironmentSettings(backend="ray").uses_ray
    assert not EnvironmentSettings().uses_ray
