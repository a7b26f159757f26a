"""Per-call cost of ``TorchPolicy.sample`` acting through torch and through numpy, by size.

One line per network and batch size: microseconds per call through torch and through numpy with
its BLAS on one thread (as ``trainers.fast_acting.limit_blas_threads`` sets it for a run), and
through numpy with its BLAS on as many threads as it starts with; torch's time over each numpy
time; and the path ``trainers.fast_acting.numpy_is_faster`` picks under either thread count.

Each figure is the median of ``--repeats`` timings of up to ``--calls`` calls (fewer where one call
is slow), every call through ``TorchPolicy.sample`` (with agent ids for the memories of an LSTM
actor). Torch and numpy on one thread are timed in turn, so that the machine's load falls on both
alike, before numpy's BLAS ever runs on more threads: once it has, its idle threads keep spinning
for a while and slow whatever runs next. Tennis-like policy: 24 normalized vector inputs,
3 continuous actions; torch on one thread, as ``ghost-learn`` runs it.

    python scripts/bench_acting_path.py            # the tables in docs/benchmarks.md
    python scripts/bench_acting_path.py --memory   # the LSTM actors only
    python scripts/bench_acting_path.py --quick    # three sizes, for a smoke test
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np
import torch
from mlagents_envs.base_env import ActionSpec, BehaviorSpec
from threadpoolctl import threadpool_limits

from envs.specs import vector_observation_spec
from trainers.fast_acting import (
    NumpyActor,
    blas_threads,
    limit_blas_threads,
    numpy_is_faster,
    widest_layer,
)
from trainers.policy import TorchPolicy
from trainers.settings import MemorySettings, NetworkSettings

SPEC = BehaviorSpec([vector_observation_spec(24)], ActionSpec.create_continuous(3))
#: the longest a timing of many calls should take, in seconds (large cells on slow paths)
TIMING_SECONDS = 0.1


def acting(
    memory: int, hidden: int, layers: int, rows: int
) -> tuple[dict[str, Callable[[], object]], int]:
    """A fresh policy of this size, as ``sample`` calls on each path ("torch" and "numpy"), and
    the weights of its widest layer (for the rule)."""
    settings = NetworkSettings(
        hidden_units=hidden,
        num_layers=layers,
        normalize=True,
        memory=MemorySettings(memory_size=memory) if memory else None,
    )
    policy = TorchPolicy(behavior_spec=SPEC, network_settings=settings)
    obs = [np.random.default_rng(0).normal(size=(rows, 24)).astype(np.float32)]
    ids = np.arange(rows) if memory else None
    policy.update_normalizer(obs)
    fast = NumpyActor(policy.actor)

    def on(path: NumpyActor | None) -> Callable[[], object]:
        def sample() -> object:
            policy._numpy_actor = lambda _: path  # type: ignore[method-assign]
            return policy.sample(obs, agent_ids=ids)

        return sample

    return {"torch": on(None), "numpy": on(fast)}, widest_layer(policy.actor)


def median_us(paths: dict[str, Callable[[], object]], calls: int, repeats: int) -> dict[str, float]:
    """Median microseconds per call of each path over ``repeats`` timings taken in turn."""
    counts = {}
    for name, act in paths.items():
        start = time.perf_counter()
        act()
        first = time.perf_counter() - start
        counts[name] = max(3, min(calls, int(TIMING_SECONDS / max(first, 1e-6))))
    taken: dict[str, list[float]] = {name: [] for name in paths}
    for _ in range(repeats):
        for name, act in paths.items():
            start = time.perf_counter()
            for _ in range(counts[name]):
                act()
            taken[name].append((time.perf_counter() - start) / counts[name] * 1e6)
    return {name: statistics.median(values) for name, values in taken.items()}


def sizes(args: argparse.Namespace) -> list[tuple[int, int, int, int]]:
    """(memory size, hidden units, layers, rows) of each line."""
    mlp = [
        (0, h, n, r) for h in (32, 64, 128, 256, 512) for n in (1, 2, 3) for r in (1, 8, 32, 128)
    ]
    memory = [(m, 128, 2, r) for m in (32, 128) for r in (1, 8, 32, 128)]
    if args.quick:
        return [(0, 32, 1, 8), (0, 128, 2, 128), (32, 128, 2, 8)]
    return memory if args.memory else mlp + memory


def picks(rows: int, widest: int, threads: int) -> str:
    """The path the rule picks for this size with numpy's BLAS on ``threads``."""
    with threadpool_limits(limits=threads, user_api="blas"):
        return "numpy" if numpy_is_faster(rows=rows, widest=widest) else "torch"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--memory", action="store_true", help="only the actors with an LSTM")
    parser.add_argument("--quick", action="store_true", help="three sizes, few calls")
    args = parser.parse_args()
    if args.quick:
        args.calls, args.repeats = 20, 1
    torch.set_num_threads(1)
    threads = blas_threads()
    limit_blas_threads()
    cells = [(size, *acting(*size)) for size in sizes(args)]
    one = [median_us(paths, args.calls, args.repeats) for _, paths, _ in cells]
    with threadpool_limits(limits=threads, user_api="blas"):
        many = [median_us({"numpy": p["numpy"]}, args.calls, args.repeats) for _, p, _ in cells]
    print(
        "| memory | hidden | layers | rows | torch µs | numpy µs | torch/numpy "
        f"| numpy µs, {threads} BLAS threads | torch/numpy, {threads} threads "
        f"| rule picks | rule picks, {threads} threads |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---|:---|")
    for cell, times, threaded in zip(cells, one, many, strict=True):
        (memory, hidden, layers, rows), _, widest = cell
        torch_us, numpy_us, many_us = times["torch"], times["numpy"], threaded["numpy"]
        print(
            f"| {memory or '-'} | {hidden} | {layers} | {rows} | {torch_us:.0f} | {numpy_us:.0f} "
            f"| {torch_us / numpy_us:.1f} | {many_us:.0f} | {torch_us / many_us:.1f} "
            f"| {picks(rows, widest, 1)} | {picks(rows, widest, threads)} |"
        )


if __name__ == "__main__":
    main()
