"""Training throughput of one config with its networks on different devices, side by side.

Each point is a fresh ``ghost.train`` process that trains ``--steps`` steps of every behavior with
``torch_settings.device`` and ``acting_device`` set as the point says (``UPDATE[/ACTING]``:
``cpu``, ``auto``, ``cuda`` (acting on the CPU), ``cuda/cuda`` (everything on the GPU)). It reports
trainer steps per second over the training (start-up excluded, CUDA's initialization included) and
the GPU memory the run peaked at. Points alternate ``--repeats`` times so that machine noise hits
them alike::

    python scripts/bench_devices.py --env envs.soccer:make_env \\
        --config SoccerTwos-poca.yaml --steps 60000 --points cpu auto cuda/cuda

Prints one Markdown row per run and, per point, the median and its ratio to the first point's.
"""

from __future__ import annotations

import argparse
import statistics

from fresh_process import run_point

POINT = r"""
import json, sys, tempfile
import torch
import ghost

config, env, steps, update, acting = sys.argv[1:6]
overrides = {"torch_settings.device": update}
if acting != "-":
    overrides["torch_settings.acting_device"] = acting
with tempfile.TemporaryDirectory() as results:
    result = ghost.train(config, env=env, run_id="point", results_dir=results, seed=0,
                         max_steps=int(steps), overrides=overrides, verbose=0)
peak = torch.cuda.max_memory_allocated() / 2**20 if torch.cuda.is_available() else 0.0
print("POINT " + json.dumps({
    "steps_per_s": sum(result.steps.values()) / result.wall_time_s,
    "wall_s": result.wall_time_s, "gpu_peak_mib": peak}))
"""


def measure(config: str, env: str, steps: int, point: str) -> dict:
    """Run one point (``UPDATE[/ACTING]``) in a fresh process; its figures."""
    update, _, acting = point.partition("/")
    return run_point(POINT, [config, env, str(steps), update, acting or "-"], point)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, help="trainer YAML")
    parser.add_argument("--env", required=True, help="built-in game or module:callable")
    parser.add_argument("--steps", type=int, default=60_000, help="steps of every behavior")
    parser.add_argument("--points", nargs="+", default=["cpu", "auto", "cuda/cuda"],
                        help="UPDATE[/ACTING] device pairs (default: cpu auto cuda/cuda)")  # fmt: skip
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    runs: dict[str, list[float]] = {point: [] for point in args.points}
    print("| point | trainer steps/s | wall (s) | GPU peak (MiB) |")
    print("|---|---|---|---|")
    for _ in range(args.repeats):
        for point in args.points:
            figures = measure(args.config, args.env, args.steps, point)
            runs[point].append(figures["steps_per_s"])
            print(
                f"| {point} | {figures['steps_per_s']:,.0f} | {figures['wall_s']:.1f} "
                f"| {figures['gpu_peak_mib']:,.0f} |",
                flush=True,
            )
    base = statistics.median(runs[args.points[0]])
    for point, values in runs.items():
        median = statistics.median(values)
        print(f"{point}: median {median:,.0f} steps/s, {median / base:.2f}x {args.points[0]}")


if __name__ == "__main__":
    main()
