"""Throughput of the Ray backend against worker processes, for a slow environment.

The environment is built-in tennis with ``--arenas`` matches whose every ``step()`` first sleeps
``--delay-ms`` (2 ms by default): a stand-in for a Unity build, whose step costs milliseconds. For
each number of environments, each backend steps them with random actions (drawn before timing)
for ``--seconds`` and reports environment steps (rounds) per second and agent decisions per
second, and the CPU time the stepping costs the trainer's own process per round. Backends: ``subprocess`` (worker processes, lock-step), ``ray`` (actors, lock-step) and
``ray-half`` (actors, ``ray_wait_fraction`` 0.5). ``--delay-ms 0`` measures the transport alone.

usage: python scripts/bench_ray.py [--envs 1 2 4 8 16] [--delay-ms 2] [--arenas 4]
                                   [--seconds 3] [--backends subprocess ray ray-half] [--json F]
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import logging
import os
import sys
import time
from typing import Any

import numpy as np
from mlagents_envs.base_env import ActionTuple, BaseEnv

SCRIPTS = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(SCRIPTS))
sys.path.insert(0, SCRIPTS)

from envs.games import make_game  # noqa: E402

ACTION_POOL = 16


class DelayedEnv(BaseEnv):
    """``inner`` with every ``step()`` taking ``delay_s`` longer (a sleep: no CPU used)."""

    def __init__(self, inner: BaseEnv, delay_s: float) -> None:
        self.inner = inner
        self.delay_s = delay_s

    def step(self) -> None:
        time.sleep(self.delay_s)
        self.inner.step()

    def reset(self) -> None:
        self.inner.reset()

    def close(self) -> None:
        self.inner.close()

    @property
    def behavior_specs(self) -> Any:
        return self.inner.behavior_specs

    def set_actions(self, behavior_name: str, action: ActionTuple) -> None:
        self.inner.set_actions(behavior_name, action)

    def set_action_for_agent(self, behavior_name: str, agent_id: Any, action: ActionTuple) -> None:
        self.inner.set_action_for_agent(behavior_name, agent_id, action)

    def get_steps(self, behavior_name: str) -> Any:
        return self.inner.get_steps(behavior_name)

    def arena_of(self, behavior_name: str, agent_ids: np.ndarray) -> np.ndarray:
        return self.inner.arena_of(behavior_name, agent_ids)


def delayed_tennis(*, worker_id: int, seed: int, delay_s: float, arenas: int) -> BaseEnv:
    """Built-in tennis with ``arenas`` matches and ``delay_s`` added to each step."""
    return DelayedEnv(
        make_game("tennis", worker_id=worker_id, seed=seed, num_arenas=arenas), delay_s
    )


def make_stepper(backend: str, factory: Any, num_envs: int) -> Any:
    options = {"factory": factory, "num_envs": num_envs, "seed": 0}
    if backend == "subprocess":
        from envs.workers import SubprocessStepper

        return SubprocessStepper(**options)
    from envs.ray_workers import RayStepper

    return RayStepper(wait_fraction=0.5 if backend == "ray-half" else 1.0, **options)


def random_actions(specs: dict, rows: dict, rng: np.random.Generator) -> dict:
    actions = {}
    for behavior_id, spec in specs.items():
        n = rows[behavior_id]
        continuous = rng.uniform(-1, 1, size=(n, spec.action_spec.continuous_size))
        discrete = np.zeros((n, 0), dtype=np.int32)
        actions[behavior_id] = ActionTuple(continuous=continuous.astype(np.float32),
                                           discrete=discrete)  # fmt: skip
    return actions


def measure(stepper: Any, seconds: float, rng: np.random.Generator) -> dict[str, float]:
    """Step with random actions for ``seconds`` (after 20 warm-up steps)."""
    result = stepper.reset()
    specs = stepper.behavior_specs
    pool: dict[tuple, list] = {}
    draws = itertools.count()

    def actions_for(result: dict) -> dict:
        rows = {bid: len(steps.decision) for bid, steps in result.items()}
        key = tuple(sorted((str(b), n) for b, n in rows.items()))
        if key not in pool:
            pool[key] = [random_actions(specs, rows, rng) for _ in range(ACTION_POOL)]
        return pool[key][next(draws) % ACTION_POOL]

    for _ in range(20):
        result = stepper.step(actions_for(result))
    rounds = decisions = 0
    start, cpu_start = time.perf_counter(), time.process_time()
    while (elapsed := time.perf_counter() - start) < seconds:
        result = stepper.step(actions_for(result))
        rounds += 1
        decisions += sum(len(steps.decision) for steps in result.values())
    # CPU time of this (the trainer's) process: what stepping costs the trainer itself
    driver_cpu = time.process_time() - cpu_start
    return {"rounds_per_s": rounds / elapsed, "decisions_per_s": decisions / elapsed,
            "ms_per_round": 1000 * elapsed / rounds,
            "driver_cpu_ms_per_round": 1000 * driver_cpu / rounds}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--envs", type=int, nargs="+", default=[1, 2, 4, 8, 16])
    parser.add_argument("--delay-ms", type=float, default=2.0)
    parser.add_argument("--arenas", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--backends", nargs="+", default=["subprocess", "ray", "ray-half"],
                        choices=["subprocess", "ray", "ray-half"])  # fmt: skip
    parser.add_argument("--json", help="also append each measurement to this JSONL file")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    if any(b.startswith("ray") for b in args.backends):
        import ray

        ray.init(include_dashboard=False, logging_level=logging.WARNING,
                 runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(sys.path[:2])}})  # fmt: skip
    import bench_ray  # this file as a module: workers and actors import the factory by name

    factory = functools.partial(bench_ray.delayed_tennis, delay_s=args.delay_ms / 1000,
                                arenas=args.arenas)  # fmt: skip
    rng = np.random.default_rng(0)
    print(f"delay {args.delay_ms} ms/step, {args.arenas} arenas (= {2 * args.arenas} agents) "
          f"per environment, {os.cpu_count()} CPUs")  # fmt: skip
    print("| envs | " + " | ".join(f"{b} rounds/s | {b} decisions/s | {b} trainer CPU ms/round"
                                   for b in args.backends) + " |")  # fmt: skip
    print("|---" * (1 + 3 * len(args.backends)) + "|")
    for num_envs in args.envs:
        cells = []
        for backend in args.backends:
            stepper = make_stepper(backend, factory, num_envs)
            try:
                row = measure(stepper, args.seconds, rng)
            finally:
                stepper.close()
            cells += [f"{row['rounds_per_s']:.0f}", f"{row['decisions_per_s']:.0f}",
                      f"{row['driver_cpu_ms_per_round']:.2f}"]  # fmt: skip
            if args.json:
                with open(args.json, "a", encoding="utf-8") as handle:
                    record = {"backend": backend, "envs": num_envs, "delay_ms": args.delay_ms,
                              "arenas": args.arenas, **row}  # fmt: skip
                    handle.write(json.dumps(record) + "\n")
        print(f"| {num_envs} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
