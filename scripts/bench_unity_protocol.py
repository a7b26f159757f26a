"""What a step over the ML-Agents protocol costs: the stand-in Unity player, stepped directly.

Starts ``tests/fake_unity/FakePong`` as training does (``envs.unity_environment``) for each
``--areas`` value, steps it with random legal actions, and prints milliseconds per environment
step, agent steps per second, and our side's CPU time per agent step (this process, gRPC threads
included; the player is another process), so the fixed cost per exchange and the cost per agent
separate.

Columns:

- ``new``: this environment on both sides (trainer and player);
- ``new, player py``: the player forced onto protobuf's pure-Python parser
  (``PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python`` in its environment only). A real build's side
  is C#, so this isolates what our side gained;
- ``old`` (with ``--old-python``): another environment's interpreter on both sides, e.g. a
  worktree of an earlier commit with its own venv.

Each area count runs every column back to back, so machine noise hits them alike.

    python scripts/bench_unity_protocol.py --steps 500 --areas 1 4 16 64 \
        --old-python /tmp/ghost-old/.venv/bin/python
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

BUILD = Path(__file__).resolve().parent.parent / "tests" / "fake_unity" / "FakePong"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def measure(areas: int, steps: int, *, player_protobuf: str | None = None) -> dict[str, float]:
    """Step the stand-in build ``steps`` times: ms per step, agent steps/s, our CPU µs per agent."""
    # (an older checkout's interpreter runs this too: only what every version has)
    from google.protobuf.internal import api_implementation
    from mlagents_envs.base_env import ActionTuple

    from envs.settings import EngineSettings
    from envs.unity_environment import UnityBuildEnvironment

    ours = api_implementation.Type()  # parsing in this process is fixed from here on
    # the stand-in build starts with `#!/usr/bin/env python3`: make that this interpreter
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]
    if player_protobuf:
        os.environ["PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION"] = player_protobuf
    env = UnityBuildEnvironment(engine=EngineSettings(), file_name=str(BUILD),
                                base_port=free_port(), no_graphics=True, num_areas=areas,
                                timeout_wait=30)  # fmt: skip
    rng = np.random.default_rng(0)
    try:
        env.reset()
        agent_steps = 0
        started, cpu_started = time.perf_counter(), time.process_time()
        for _ in range(steps):
            for name in env.behavior_specs:
                decision, _ = env.get_steps(name)
                agent_steps += len(decision)
                allowed = ~decision.action_mask[0]
                # a random legal branch per agent, for all agents at once
                choice = np.argmax(np.where(allowed, rng.random(allowed.shape), -1.0), axis=1)
                env.set_actions(name, ActionTuple(discrete=choice.reshape(-1, 1)))
            env.step()
        elapsed = time.perf_counter() - started
        cpu = time.process_time() - cpu_started
    finally:
        env.close()
    return {
        "ms_per_step": 1000 * elapsed / steps,
        "agent_steps_per_s": agent_steps / elapsed,
        "our_cpu_us_per_agent_step": 1e6 * cpu / agent_steps,
        "backend": ours,
    }


def measure_elsewhere(python: str, areas: int, steps: int, player: str | None) -> dict:
    """``measure`` run by another interpreter (its own environment on both sides)."""
    command = [python, __file__, "--measure", str(areas), "--steps", str(steps)]
    if player:
        command += ["--player-protobuf", player]
    env = {**os.environ, "PATH": os.path.dirname(python) + os.pathsep + os.environ["PATH"]}
    env.pop("PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION", None)
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{python} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--areas", type=int, nargs="+", default=[1, 16])
    parser.add_argument("--old-python", help="interpreter of the environment to compare against")
    parser.add_argument("--measure", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--player-protobuf", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure is not None:
        result = measure(args.measure, args.steps, player_protobuf=args.player_protobuf)
        print(json.dumps(result))
        return
    columns = [("new", sys.executable, None), ("new, player py", sys.executable, "python")]
    if args.old_python:
        columns.insert(0, ("old", args.old_python, None))
    header = f"{'areas':>5} {'column':<15} {'backend':>7} {'ms/step':>8} {'agent steps/s':>13}"
    print(header + f" {'our CPU us/agent step':>21}")
    for areas in args.areas:
        results = {}
        for label, python, player in columns:
            result = measure_elsewhere(python, areas, args.steps, player)
            results[label] = result
            print(f"{areas:>5} {label:<15} {result['backend']:>7} {result['ms_per_step']:>8.2f} "
                  f"{result['agent_steps_per_s']:>13.0f} "
                  f"{result['our_cpu_us_per_agent_step']:>21.1f}", flush=True)  # fmt: skip
        if "old" in results:
            old = results["old"]["our_cpu_us_per_agent_step"]
            ours = results["new, player py"]["our_cpu_us_per_agent_step"]
            speed = results["new"]["agent_steps_per_s"] / results["old"]["agent_steps_per_s"]
            print(f"{'':>5} our side's cost per agent {old / ours:.1f}x lower; both sides on the "
                  f"new stack {speed:.1f}x the agent steps/s")  # fmt: skip


if __name__ == "__main__":
    main()
