"""Messages to and from worker processes (``envs.wire``, ``envs.worker_process.send``/``receive``)
arrive as they were sent: every array's values, dtype and shape, writable, whatever the steps
hold."""

from __future__ import annotations

import multiprocessing

import numpy as np
import pytest
from mlagents_envs.base_env import DecisionSteps, TerminalSteps

from envs.behavior_id import BehaviorId
from envs.stepping import BehaviorSteps
from envs.wire import pack, unpack
from envs.worker_process import OK, PARAMETERS, RESET, STEP, receive, send

PLAYER, KEEPER = BehaviorId("Player", 0), BehaviorId("Keeper", 1)


def rich_steps() -> dict[BehaviorId, BehaviorSteps]:
    """Two behaviors: images, big-endian and strided observations, action masks, groups, one
    ending episode; the other with no masks and no terminal steps."""
    rng = np.random.default_rng(0)
    image = rng.integers(0, 255, (3, 4, 5, 2), dtype=np.uint8)
    strided = rng.normal(size=(3, 14)).astype(np.float64)[:, ::2]
    big_endian = rng.normal(size=(3, 2)).astype(">f4")
    player = BehaviorSteps(
        behavior_id=PLAYER,
        decision=DecisionSteps(
            [image, strided, big_endian],
            rng.normal(size=3).astype(np.float32),
            np.array([4, 9, 2], np.int64),
            [np.array([[True, False, False]] * 3), np.zeros((3, 2), bool)],
            np.array([1, 1, 0], np.int32),
            np.array([0.5, 0.5, 0.0], np.float32),
        ),
        terminal=TerminalSteps(
            [image[:1], strided[:1], big_endian[:1]],
            np.array([1.0], np.float32),
            np.array([True]),
            np.array([7], np.int64),
            np.array([1], np.int32),
            np.array([0.25], np.float32),
        ),
        decision_arenas=np.array([0, 1, 1], np.int64),
        terminal_arenas=np.array([1], np.int64),
    )
    keeper = BehaviorSteps(
        behavior_id=KEEPER,
        decision=DecisionSteps(
            [rng.normal(size=(2, 6)).astype(np.float32)],
            np.zeros(2, np.float32),
            np.array([1, 3], np.int32),
            None,
            np.zeros(2, np.int32),
            np.zeros(2, np.float32),
        ),
        terminal=TerminalSteps(
            [np.zeros((0, 6), np.float32)],
            np.zeros(0, np.float32),
            np.zeros(0, bool),
            np.zeros(0, np.int32),
            np.zeros(0, np.int32),
            np.zeros(0, np.float32),
        ),
        decision_arenas=np.array([0, 1], np.int64),
        terminal_arenas=np.zeros(0, np.int64),
    )
    return {PLAYER: player, KEEPER: keeper}


def assert_same_arrays(mine: object, theirs: object) -> None:
    mine_array, their_array = np.asarray(mine), np.asarray(theirs)
    assert mine_array.dtype == their_array.dtype
    np.testing.assert_array_equal(mine_array, their_array)
    assert mine_array.flags.writeable


def assert_same_steps(mine: BehaviorSteps, theirs: BehaviorSteps) -> None:
    assert mine.behavior_id == theirs.behavior_id
    for part in ("decision", "terminal"):
        got, sent = getattr(mine, part), getattr(theirs, part)
        assert len(got.obs) == len(sent.obs)
        for got_obs, sent_obs in zip(got.obs, sent.obs, strict=True):
            assert_same_arrays(got_obs, sent_obs)
        fields = ["reward", "agent_id", "group_id", "group_reward"]
        fields += ["interrupted"] if part == "terminal" else []
        for field in fields:
            assert_same_arrays(getattr(got, field), getattr(sent, field))
    if theirs.decision.action_mask is None:
        assert mine.decision.action_mask is None
    else:
        for got_mask, sent_mask in zip(
            mine.decision.action_mask, theirs.decision.action_mask, strict=True
        ):
            assert_same_arrays(got_mask, sent_mask)
    assert_same_arrays(mine.decision_arenas, theirs.decision_arenas)
    assert_same_arrays(mine.terminal_arenas, theirs.terminal_arenas)


def across_a_pipe(message: tuple[str, object]) -> tuple[str, object]:
    here, there = multiprocessing.Pipe()
    try:
        send(here, message)
        return receive(there)
    finally:
        here.close()
        there.close()


def test_a_step_answer_arrives_whole():
    steps = rich_steps()
    stats = {"Environment/Score": [(1.5, "average")]}
    kind, (specs, received, received_stats) = across_a_pipe((OK, (None, steps, stats)))
    assert kind == OK and specs is None and received_stats == stats
    assert list(received) == [PLAYER, KEEPER]
    for behavior_id, behavior_steps in steps.items():
        assert_same_steps(received[behavior_id], behavior_steps)
    # the decision steps still answer ML-Agents' lookups by agent id
    assert received[PLAYER].decision[9].reward == steps[PLAYER].decision[9].reward


def test_step_actions_and_other_commands_arrive_whole():
    actions = {
        PLAYER: (np.arange(6, dtype=np.float32).reshape(3, 2), np.array([[1], [0], [2]], np.int32)),
        KEEPER: (None, np.array([[3, 1], [0, 0]], np.int32)),
    }
    kind, received = across_a_pipe((STEP, actions))
    assert kind == STEP and list(received) == [PLAYER, KEEPER]
    for behavior_id, (continuous, discrete) in actions.items():
        got_continuous, got_discrete = received[behavior_id]
        if continuous is None:
            assert got_continuous is None
        else:
            assert_same_arrays(got_continuous, continuous)
        assert_same_arrays(got_discrete, discrete)
    assert across_a_pipe((RESET, None)) == (RESET, None)
    assert across_a_pipe((PARAMETERS, {"gravity": 9.8})) == (PARAMETERS, {"gravity": 9.8})


def test_arrays_of_python_objects_travel_pickled():
    steps = rich_steps()
    odd = np.empty(2, dtype=object)
    odd[:] = ["a", "b"]
    keeper = steps[KEEPER]
    steps[KEEPER] = BehaviorSteps(
        behavior_id=KEEPER,
        decision=DecisionSteps(
            keeper.decision.obs,
            odd,
            keeper.decision.agent_id,
            None,
            keeper.decision.group_id,
            keeper.decision.group_reward,
        ),  # fmt: skip
        terminal=keeper.terminal,
        decision_arenas=keeper.decision_arenas,
        terminal_arenas=keeper.terminal_arenas,
    )
    _, (_, received, _) = across_a_pipe((OK, (None, steps, None)))
    assert list(received[KEEPER].decision.reward) == ["a", "b"]
    assert_same_steps(received[PLAYER], steps[PLAYER])


@pytest.mark.parametrize("sizes", [[3, 1, 7], [0, 5], [16, 0, 0, 2]])
def test_every_array_starts_aligned(sizes):
    arrays = [np.arange(size, dtype=np.uint8) for size in sizes] + [np.ones(3, np.float64)]
    skeleton, received = unpack(pack("skeleton", arrays))  # type: ignore[arg-type]
    assert skeleton == "skeleton"
    for got, sent in zip(received, arrays, strict=True):
        assert got.ctypes.data % 8 == 0
        assert_same_arrays(got, sent)
