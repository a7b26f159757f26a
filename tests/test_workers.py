"""SubprocessStepper: merging, id ranges, action routing, crash recovery and shutdown."""

from __future__ import annotations

import functools
import gc
import logging
import multiprocessing
import os
import signal
import time

import numpy as np
import pytest
from mlagents_envs.base_env import ActionTuple

from envs.behavior_id import BehaviorId
from envs.stepping import AGENT_ID_STRIDE, ARENA_STRIDE, collect_steps
from envs.workers import SubprocessStepper
from ghost.exceptions import EnvironmentWorkerError
from tests import worker_envs
from tests.worker_envs import EchoEnv, make_echo_env

SEED = 11
TEAM0 = BehaviorId("Echo", 0)
TEAM1 = BehaviorId("Echo", 1)
SOLO = BehaviorId("Solo", 0)
_STEPPER_KEYS = {"max_lifetime_restarts", "restarts_rate_limit_period_s", "start_method"}
START_METHODS = [m for m in ("forkserver", "spawn") if m in multiprocessing.get_all_start_methods()]


def echo_stepper_maker(stepper_class, stepper_keys, steppers: list):
    """``make(num_envs=2, **options)``: a ``stepper_class`` over EchoEnvs with test defaults;
    options named in ``stepper_keys`` go to the stepper, the others to ``EchoEnv``. Every
    stepper made is appended to ``steppers`` (for the fixture to close)."""

    def make(*, num_envs=2, restarts_rate_limit_n=-1, **options):
        factory_options = {k: options.pop(k) for k in list(options) if k not in stepper_keys}
        stepper = stepper_class(
            factory=functools.partial(make_echo_env, **factory_options),
            num_envs=num_envs,
            seed=SEED,
            restarts_rate_limit_n=restarts_rate_limit_n,
            **options,
        )
        steppers.append(stepper)
        return stepper

    return make


@pytest.fixture
def make_stepper():
    """Builds SubprocessSteppers with test defaults and closes every one at teardown."""
    steppers: list[SubprocessStepper] = []
    yield echo_stepper_maker(SubprocessStepper, _STEPPER_KEYS, steppers)
    for stepper in steppers:
        stepper.close()


def identity_actions(result) -> dict[BehaviorId, ActionTuple]:
    """Actions that name their agent: continuous (worker, local id), discrete local id % 3."""
    actions = {}
    for behavior_id, steps in result.items():
        worker, local = np.divmod(steps.decision.agent_id, AGENT_ID_STRIDE)
        actions[behavior_id] = ActionTuple(
            continuous=np.stack([worker, local], axis=1).astype(np.float32),
            discrete=(local % 3).astype(np.int32)[:, None],
        )
    return actions


def worker_of(ids: np.ndarray, num_envs: int = 2) -> np.ndarray:
    """The worker an agent id comes from (a restart moves a worker to a new id block)."""
    return (ids // AGENT_ID_STRIDE) % num_envs


class Reference:
    """The same EchoEnvs stepped in this process with the actions ``identity_actions`` sends."""

    def __init__(self, num_envs: int, **options) -> None:
        self.envs = [EchoEnv(worker_id=i, seed=SEED + i, **options) for i in range(num_envs)]
        self.names = [{BehaviorId.parse(n): n for n in env.behavior_specs} for env in self.envs]
        self.last: list = []

    def reset(self) -> list:
        for env in self.envs:
            env.reset()
        return self._collect()

    def step(self) -> list:
        for worker, env in enumerate(self.envs):
            for behavior_id, steps in self.last[worker].items():
                local = steps.decision.agent_id.astype(np.int64)
                if len(local):
                    continuous = np.stack([np.full(len(local), worker), local], axis=1)
                    action = ActionTuple(
                        continuous=continuous.astype(np.float32),
                        discrete=(local % 3).astype(np.int32)[:, None],
                    )
                    env.set_actions(self.names[worker][behavior_id], action)
            env.step()
        return self._collect()

    def _collect(self) -> list:
        self.last = [
            collect_steps(env, names, worker)
            for worker, (env, names) in enumerate(zip(self.envs, self.names, strict=True))
        ]
        return self.last


@pytest.mark.parametrize("start_method", START_METHODS)
def test_merged_steps_equal_the_concatenation_of_in_process_envs(make_stepper, start_method):
    options = {"solo_worker": 1, "unmasked_worker": 2}
    stepper = make_stepper(num_envs=3, start_method=start_method, **options)
    reference = Reference(3, **options)

    result, expected = stepper.reset(), reference.reset()
    for _ in range(9):
        assert_merged(result, expected)
        result, expected = stepper.step(identity_actions(result)), reference.step()
    assert_merged(result, expected)
    assert stepper.behavior_specs == {
        BehaviorId.parse(raw): spec
        for env in reference.envs
        for raw, spec in env.behavior_specs.items()
    }


def assert_merged(result, expected_per_worker) -> None:
    behavior_ids = {bid for steps in expected_per_worker for bid in steps}
    assert set(result) == behavior_ids
    for behavior_id in behavior_ids:
        parts = [(w, s[behavior_id]) for w, s in enumerate(expected_per_worker) if behavior_id in s]
        merged = result[behavior_id]
        for kind in ("decision", "terminal"):
            got = getattr(merged, kind)
            want = [(w, getattr(s, kind)) for w, s in parts]
            np.testing.assert_array_equal(got.obs[0], np.concatenate([s.obs[0] for _, s in want]))
            np.testing.assert_array_equal(got.reward, np.concatenate([s.reward for _, s in want]))
            np.testing.assert_array_equal(
                got.group_reward, np.concatenate([s.group_reward for _, s in want])
            )
            ids = np.concatenate(
                [s.agent_id.astype(np.int64) + w * AGENT_ID_STRIDE for w, s in want]
            )
            assert got.agent_id.dtype == np.int64
            np.testing.assert_array_equal(got.agent_id, ids)
            groups = np.concatenate(
                [
                    np.where(s.group_id != 0, s.group_id.astype(np.int64) + w * AGENT_ID_STRIDE, 0)
                    for w, s in want
                ]
            )
            np.testing.assert_array_equal(got.group_id, groups)
            arenas = np.concatenate([getattr(s, f"{kind}_arenas") for _, s in parts])
            np.testing.assert_array_equal(getattr(merged, f"{kind}_arenas"), arenas)
        np.testing.assert_array_equal(
            merged.terminal.interrupted,
            np.concatenate([s.terminal.interrupted for _, s in parts]),
        )
        masks = [s.decision.action_mask for _, s in parts]
        if all(m is None for m in masks):
            assert merged.decision.action_mask is None
        else:
            padded = [
                m[0] if m is not None else np.zeros((len(s.decision), 3), dtype=bool)
                for m, (_, s) in zip(masks, parts, strict=True)
            ]
            np.testing.assert_array_equal(merged.decision.action_mask[0], np.concatenate(padded))


def test_agent_ids_are_unique_and_name_their_worker(make_stepper):
    stepper = make_stepper(num_envs=3)
    result = stepper.reset()
    for _ in range(6):
        for steps in result.values():
            for part in (steps.decision, steps.terminal):
                ids = part.agent_id
                assert len(np.unique(ids)) == len(ids)
                np.testing.assert_array_equal(worker_of(ids, 3), part.obs[0][:, worker_envs.WORKER])
                np.testing.assert_array_equal(
                    ids % AGENT_ID_STRIDE, part.obs[0][:, worker_envs.LOCAL_ID]
                )
                grouped = part.group_id != 0
                np.testing.assert_array_equal(
                    worker_of(part.group_id[grouped], 3), worker_of(ids[grouped], 3)
                )
        assert np.any(result[TEAM0].decision.group_id != 0)
        assert np.all(result[TEAM1].decision.group_id == 0)
        result = stepper.step(identity_actions(result))


def test_actions_reach_the_worker_and_agent_they_were_computed_for(make_stepper):
    stepper = make_stepper(num_envs=3, solo_worker=2)
    result = stepper.reset()
    echoed = 0
    for _ in range(8):
        result = stepper.step(identity_actions(result))
        for steps in result.values():
            obs, ids = steps.decision.obs[0], steps.decision.agent_id
            acted = obs[:, worker_envs.ECHO_WORKER] >= 0
            echoed += int(acted.sum())
            np.testing.assert_array_equal(
                obs[acted, worker_envs.ECHO_WORKER], worker_of(ids[acted], 3)
            )
            local = ids[acted] % AGENT_ID_STRIDE
            np.testing.assert_array_equal(obs[acted, worker_envs.ECHO_ID], local)
            np.testing.assert_array_equal(obs[acted, worker_envs.ECHO_DISCRETE], local % 3)
    assert echoed > 50
    assert set(worker_of(result[SOLO].decision.agent_id, 3)) <= {2}


def test_arena_keys_combine_worker_and_local_arena(make_stepper):
    stepper = make_stepper(num_envs=2, agents_per_team=4, arenas=2)
    result = stepper.reset()
    for steps in result.values():
        if steps.behavior_id == SOLO:
            continue
        local_ids = steps.decision.agent_id % AGENT_ID_STRIDE
        expected = worker_of(steps.decision.agent_id) * ARENA_STRIDE + (local_ids % 4) % 2
        np.testing.assert_array_equal(steps.decision_arenas, expected)
        assert len(np.unique(steps.decision_arenas)) == 4


def test_actions_with_the_wrong_number_of_rows_are_refused(make_stepper):
    stepper = make_stepper()
    result = stepper.reset()
    actions = identity_actions(result)
    actions[TEAM0] = ActionTuple(continuous=np.zeros((1, 2), np.float32))
    with pytest.raises(ValueError, match=r"Echo\?team=0 have 1 rows but .* had 6 agents"):
        stepper.step(actions)
    stepper.step(identity_actions(result))  # nothing was sent: the stepper is still usable


def test_a_worker_that_raises_is_logged_restarted_and_rejoins(make_stepper, caplog):
    # Worker 1 crashes in its 3rd step, but only under its first seed.
    stepper = make_stepper(num_envs=2, crash_at_step=3, crash_seed=SEED + 1, solo_worker=1)
    result = stepper.reset()
    first_pids = stepper.worker_pids
    with caplog.at_level(logging.ERROR, logger="envs.workers"):
        for _ in range(3):
            result = stepper.step(identity_actions(result))

    assert stepper.restart_counts == [0, 1]
    assert stepper.worker_pids[0] == first_pids[0] and stepper.worker_pids[1] != first_pids[1]
    (record,) = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert "Environment worker 1 failed during step" in record.getMessage()
    assert "InjectedCrash: injected step crash in worker 1" in record.getMessage()
    assert "Traceback (most recent call last)" in record.getMessage()
    assert set(result) == {TEAM0, TEAM1, SOLO}
    assert len(result[SOLO].decision) == len(result[SOLO].terminal) == 0
    for steps in (result[TEAM0], result[TEAM1]):
        assert set(worker_of(steps.decision.agent_id)) == {0}

    result = stepper.step(identity_actions(result))
    rejoined = result[TEAM0].decision
    from_1 = worker_of(rejoined.agent_id) == 1
    assert from_1.sum() == 3
    assert np.all(rejoined.obs[0][from_1, worker_envs.STEP] == 0)  # fresh from reset
    assert np.all(rejoined.obs[0][from_1, worker_envs.SEED] == SEED + 1 + 2)  # a new seed
    assert len(result[SOLO].decision) == 1
    for _ in range(4):
        result = stepper.step(identity_actions(result))
    assert set(worker_of(result[TEAM1].decision.agent_id)) == {0, 1}


def test_a_worker_that_raises_in_reset_is_restarted_within_reset(make_stepper, caplog):
    stepper = make_stepper(num_envs=2, crash_in_reset=True, crash_seed=SEED)
    with caplog.at_level(logging.ERROR, logger="envs.workers"):
        result = stepper.reset()
    assert stepper.restart_counts == [1, 0]
    assert "injected reset crash in worker 0" in caplog.text
    assert set(worker_of(result[TEAM0].decision.agent_id)) == {0, 1}


def test_exceeding_max_lifetime_restarts_raises(make_stepper, caplog):
    stepper = make_stepper(num_envs=2, crash_at_step=1, max_lifetime_restarts=2)
    result = stepper.reset()
    with pytest.raises(EnvironmentWorkerError) as raised, caplog.at_level(logging.ERROR):
        for _ in range(10):
            result = stepper.step(identity_actions(result))
    message = str(raised.value)
    assert "Environment worker 0 failed during step" in message
    assert "restarted 2 times and max_lifetime_restarts is 2" in message
    assert "InjectedCrash: injected step crash in worker 0" in message
    assert stepper.restart_counts[0] == 2


def test_restarting_faster_than_the_rate_limit_raises(make_stepper):
    stepper = make_stepper(num_envs=1, crash_at_step=1, restarts_rate_limit_n=1)
    result = stepper.reset()
    with pytest.raises(EnvironmentWorkerError, match="restarts_rate_limit_n is 1"):
        for _ in range(10):
            result = stepper.step(identity_actions(result))
    assert stepper.restart_counts == [1]


def test_restarts_further_apart_than_the_rate_window_are_allowed(make_stepper):
    stepper = make_stepper(
        num_envs=1, crash_at_step=1, restarts_rate_limit_n=1, restarts_rate_limit_period_s=0.05
    )
    result = stepper.reset()
    for _ in range(6):
        time.sleep(0.06)
        result = stepper.step(identity_actions(result))
    assert stepper.restart_counts == [3]


def test_unlimited_restarts_keep_going(make_stepper):
    stepper = make_stepper(num_envs=1, crash_at_step=1, max_lifetime_restarts=-1)
    result = stepper.reset()
    for _ in range(8):
        result = stepper.step(identity_actions(result))
    assert stepper.restart_counts == [4]


def test_a_factory_that_always_fails_raises_from_the_constructor():
    with pytest.raises(
        EnvironmentWorkerError,
        match="worker 0 failed during startup(.|\n)*cannot build environment 0",
    ):
        SubprocessStepper(
            factory=worker_envs.make_broken_env, num_envs=2, seed=0, max_lifetime_restarts=1
        )
    assert not _worker_children()


def test_a_killed_worker_is_detected_and_restarted(make_stepper, caplog):
    stepper = make_stepper(num_envs=2)
    result = stepper.step(identity_actions(stepper.reset()))
    victim = stepper.worker_pids[1]
    os.kill(victim, signal.SIGKILL)
    with caplog.at_level(logging.ERROR, logger="envs.workers"):
        result = stepper.step(identity_actions(result))
    assert "Environment worker 1 failed during step" in caplog.text
    assert "killed by signal SIGKILL" in caplog.text
    assert stepper.restart_counts == [0, 1]
    assert set(worker_of(result[TEAM0].decision.agent_id)) == {0}
    result = stepper.step(identity_actions(result))
    assert set(worker_of(result[TEAM0].decision.agent_id)) == {0, 1}
    # the restarted worker's agents are new agents: block 1 + 1 restart * 2 workers
    assert set((result[TEAM0].decision.agent_id // AGENT_ID_STRIDE).tolist()) == {0, 3}
    assert not _alive(victim)


def test_close_leaves_no_worker_processes_and_is_idempotent(make_stepper):
    stepper = make_stepper(num_envs=3)
    stepper.step(identity_actions(stepper.reset()))
    pids = stepper.worker_pids
    stepper.close()
    stepper.close()
    assert not any(_alive(pid) for pid in pids)
    assert not _worker_children()
    with pytest.raises(RuntimeError, match="closed"):
        stepper.reset()


def test_a_forgotten_stepper_closes_its_workers_when_collected():
    stepper = SubprocessStepper(factory=make_echo_env, num_envs=2, seed=0)
    pids = stepper.worker_pids
    del stepper
    gc.collect()
    assert not any(_alive(pid) for pid in pids)


def _worker_children() -> list:
    return [p for p in multiprocessing.active_children() if p.name.startswith("ghost-env-worker")]


def _alive(pid: int, within_s: float = 2.0) -> bool:
    """Whether ``pid`` still exists after up to ``within_s`` (the fork server reaps asynchronously)."""
    deadline = time.monotonic() + within_s
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        if time.monotonic() > deadline:
            return True
        time.sleep(0.01)
