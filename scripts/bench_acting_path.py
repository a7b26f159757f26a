"""Per-call cost of ``TorchPolicy.sample`` acting through torch and through numpy, by size.

One line per (hidden units, layers, batch rows): microseconds per call on each path (median of
``--repeats`` timings of ``--calls`` calls), their ratio, and the path
``trainers.fast_acting.numpy_is_faster`` picks for that size. Tennis-like policy: 24
normalized vector inputs, 3 continuous actions; torch on one thread, as ``ghost-learn`` runs it.

    python scripts/bench_acting_path.py            # the table in docs/benchmarks.md
    python scripts/bench_acting_path.py --quick    # two sizes, for a smoke test
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch
from mlagents_envs.base_env import ActionSpec, BehaviorSpec

from envs.specs import vector_observation_spec
from trainers.fast_acting import NumpyActor, numpy_is_faster
from trainers.policy import TorchPolicy
from trainers.settings import NetworkSettings

SPEC = BehaviorSpec([vector_observation_spec(24)], ActionSpec.create_continuous(3))


def per_call_us(act, obs: list[np.ndarray], calls: int, repeats: int) -> float:
    """Median microseconds per ``act(obs)`` call."""
    act(obs)
    timings = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            act(obs)
        timings.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(timings)


def measure(hidden: int, layers: int, rows: int, calls: int, repeats: int) -> tuple[float, float]:
    """(torch µs, numpy µs) per ``sample`` call for this size."""
    policy = TorchPolicy(
        behavior_spec=SPEC,
        network_settings=NetworkSettings(hidden_units=hidden, num_layers=layers, normalize=True),
    )
    obs = [np.random.default_rng(0).normal(size=(rows, 24)).astype(np.float32)]
    policy.update_normalizer(obs)
    fast = NumpyActor(policy.actor)
    policy._numpy = None  # the torch path, whatever the rule would pick
    torch_us = per_call_us(policy.sample, obs, calls, repeats)
    numpy_us = per_call_us(lambda o: fast.distribution(o).sampled_output(), obs, calls, repeats)
    return torch_us, numpy_us


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="two sizes, few calls")
    args = parser.parse_args()
    torch.set_num_threads(1)
    sizes = [(h, n, r) for h in (32, 64, 128, 256, 512) for n in (1, 2, 3) for r in (1, 8, 32, 128)]
    if args.quick:
        sizes, args.calls, args.repeats = [(32, 1, 8), (128, 2, 32)], 20, 1
    print("| hidden | layers | rows | torch µs | numpy µs | torch/numpy | rule picks |")
    print("|---:|---:|---:|---:|---:|---:|:---|")
    for hidden, layers, rows in sizes:
        torch_us, numpy_us = measure(hidden, layers, rows, args.calls, args.repeats)
        picks = numpy_is_faster(rows=rows, hidden_units=hidden, num_layers=layers, inputs=24)
        print(
            f"| {hidden} | {layers} | {rows} | {torch_us:.0f} | {numpy_us:.0f} | "
            f"{torch_us / numpy_us:.1f} | {'numpy' if picks else 'torch'} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
