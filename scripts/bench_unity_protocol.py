"""What a step over the ML-Agents protocol costs: the stand-in Unity player, stepped directly.

Starts ``tests/fake_unity/FakePong`` as training does (``envs.unity_environment``) for each ``--areas``
value, steps it with random legal actions, and prints milliseconds per environment step and agent
steps per second side by side, so the fixed cost per exchange and the cost per agent separate.

    python scripts/bench_unity_protocol.py --steps 500 --areas 1 16
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import time
from pathlib import Path

import numpy as np
from mlagents_envs.base_env import ActionTuple

from envs.settings import EngineSettings
from envs.unity_environment import UnityBuildEnvironment

BUILD = Path(__file__).resolve().parent.parent / "tests" / "fake_unity" / "FakePong"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def measure(areas: int, steps: int) -> tuple[float, float]:
    """(ms per environment step, agent steps per second) over ``steps`` steps."""
    env = UnityBuildEnvironment(engine=EngineSettings(), file_name=str(BUILD),
                                base_port=free_port(), no_graphics=True, num_areas=areas,
                                timeout_wait=30)  # fmt: skip
    rng = np.random.default_rng(0)
    try:
        env.reset()
        agent_steps = 0
        started = time.perf_counter()
        for _ in range(steps):
            for name in env.behavior_specs:
                decision, _ = env.get_steps(name)
                agent_steps += len(decision)
                allowed = ~decision.action_mask[0]
                choice = [rng.choice(np.flatnonzero(row)) for row in allowed]
                env.set_actions(name, ActionTuple(discrete=np.array(choice).reshape(-1, 1)))
            env.step()
        elapsed = time.perf_counter() - started
    finally:
        env.close()
    return 1000 * elapsed / steps, agent_steps / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--areas", type=int, nargs="+", default=[1, 16])
    args = parser.parse_args()
    # the stand-in build starts with `#!/usr/bin/env python3`: make that this interpreter
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]
    print(f"{'areas':>6} {'ms/step':>9} {'agent steps/s':>14}")
    for areas in args.areas:
        ms, rate = measure(areas, args.steps)
        print(f"{areas:>6} {ms:>9.2f} {rate:>14.0f}")


if __name__ == "__main__":
    main()
