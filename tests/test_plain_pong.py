"""The benchmarks' plain ``BaseEnv`` Pong (``scripts/plain_pong.py``) keeps the BaseEnv contract:
points end episodes with +1 for the scorer and -1 for the other paddle, and the same seed gives the
same game in-process and in a worker process."""

from __future__ import annotations

import numpy as np
from mlagents_envs.base_env import ActionTuple

from envs.step_checks import check_behavior_steps
from envs.stepping import InProcessStepper
from envs.workers import SubprocessStepper
from scripts.plain_pong import four_arenas


def play(stepper, steps: int) -> list:
    """Every step's result under random moves (the same moves for the same agents)."""
    rng = np.random.default_rng(0)
    result = stepper.reset()
    seen = [result]
    for _ in range(steps):
        actions = {
            behavior_id: ActionTuple(discrete=rng.integers(0, 3, (len(s.decision), 1), np.int32))
            for behavior_id, s in result.items()
        }
        result = stepper.step(actions)
        seen.append(result)
    return seen


def test_points_end_episodes_and_a_worker_plays_the_same_game():
    in_process = InProcessStepper.open(four_arenas, seed=3)
    worker = SubprocessStepper(factory=four_arenas, num_envs=1, seed=3)
    try:
        here, there = play(in_process, 300), play(worker, 300)
    finally:
        in_process.close()
        worker.close()
    points = 0
    for mine, theirs in zip(here, there, strict=True):
        for behavior_id, steps in mine.items():
            spec = in_process.behavior_specs[behavior_id]
            check_behavior_steps(behavior_id, spec, steps.decision, steps.terminal)
            other = theirs[behavior_id]
            np.testing.assert_array_equal(steps.decision.obs[0], other.decision.obs[0])
            np.testing.assert_array_equal(steps.terminal.reward, other.terminal.reward)
            scored = steps.terminal.reward[~steps.terminal.interrupted]
            assert set(scored.tolist()) <= {-1.0, 1.0}
            points += len(scored)
    assert points > 0
