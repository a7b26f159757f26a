"""What an environment step costs in-process and through worker processes, without training.

Steps ``scripts/plain_pong.py`` (a user's plain ``BaseEnv``) with every paddle staying put, in
this process and then in 1 and 2 worker processes (``envs.workers.SubprocessStepper``), and
prints the median microseconds a step over ``--repeats`` timings of ``--steps`` steps each. What a
worker adds over in-process is the messages: the actions out, the steps back, and the waiting.

    python scripts/bench_worker_step.py --arenas 4
    PYTHONPATH=/tmp/older-checkout python scripts/bench_worker_step.py   # another checkout's code
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from mlagents_envs.base_env import ActionTuple

sys.path.insert(0, str(Path(__file__).resolve().parent))

import plain_pong  # noqa: E402

from envs.stepping import EnvStepper, InProcessStepper  # noqa: E402
from envs.workers import SubprocessStepper  # noqa: E402


def microseconds_a_step(stepper: EnvStepper, steps: int, repeats: int) -> float:
    """Median over ``repeats`` of the mean time of a step, in microseconds."""
    result = stepper.reset()
    timings = []
    for _ in range(repeats):
        started = time.perf_counter()
        for _ in range(steps):
            actions = {
                behavior_id: ActionTuple(discrete=np.ones((len(s.decision), 1), np.int32))
                for behavior_id, s in result.items()
            }
            result = stepper.step(actions)
        timings.append((time.perf_counter() - started) / steps * 1e6)
    return statistics.median(timings)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--arenas", type=int, default=4, help="tables of each environment")
    parser.add_argument("--steps", type=int, default=2000, help="steps a timing")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    factory = functools.partial(plain_pong.make_env, arenas=args.arenas)
    in_process = InProcessStepper.open(factory, seed=0)
    print(f"in-process: {microseconds_a_step(in_process, args.steps, args.repeats):.0f} µs a step")
    in_process.close()
    for workers in (1, 2):
        pool = SubprocessStepper(factory=factory, num_envs=workers, seed=0)
        try:
            cost = microseconds_a_step(pool, args.steps, args.repeats)
        finally:
            pool.close()
        print(f"{workers} worker(s): {cost:.0f} µs a step")


if __name__ == "__main__":
    main()
