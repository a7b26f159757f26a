"""Start-up times (issue 36): ``ghost-learn --help``, and a 2k-step run to its first environment
step and to its end, each the median of ``--repeats`` fresh processes::

    python scripts/bench_startup.py --repeats 5

The first environment step is timed inside the process (from interpreter start, read from
``/proc/self/stat``), by wrapping ``InProcessStepper.step`` before ``ghost-learn`` runs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

FIRST_STEP_PROBE = r"""
import json, os, sys, time

def since_start():
    ticks = os.sysconf("SC_CLK_TCK")
    with open("/proc/self/stat") as stat:
        started = int(stat.read().rsplit(")", 1)[1].split()[19]) / ticks
    with open("/proc/uptime") as uptime:
        return float(uptime.read().split()[0]) - started

import envs.stepping as stepping
original = stepping.InProcessStepper.step
marks = {}
def step(self, *args, **kwargs):
    marks.setdefault("first_step_s", since_start())
    return original(self, *args, **kwargs)
stepping.InProcessStepper.step = step
from ghost.running.cli import main
sys.argv = ["ghost-learn", *sys.argv[1:]]
try:
    main()
except SystemExit:
    pass
marks["end_s"] = since_start()
print("MARKS " + json.dumps(marks))
"""


def time_help() -> float:
    started = time.perf_counter()
    subprocess.run(["ghost-learn", "--help"], check=True, capture_output=True)
    return time.perf_counter() - started


def time_run(folder: str, index: int) -> dict[str, float]:
    args = ["--env", "tennis", "--max-steps", "2000", "--run-id", f"startup-{index}",
            "--results-dir", folder]  # fmt: skip
    result = subprocess.run(
        [sys.executable, "-c", FIRST_STEP_PROBE, *args], capture_output=True, text=True, check=True
    )
    line = next(line for line in result.stdout.splitlines() if line.startswith("MARKS "))
    marks = json.loads(line[len("MARKS ") :])
    if "first_step_s" not in marks:
        raise RuntimeError(f"the run never stepped its environment:\n{result.stderr[-2000:]}")
    return marks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]
    helps = [time_help() for _ in range(args.repeats)]
    with tempfile.TemporaryDirectory() as folder:
        runs = [time_run(folder, index) for index in range(args.repeats)]
    print(f"ghost-learn --help:                 {statistics.median(helps):.2f} s (median of "
          f"{args.repeats}; {min(helps):.2f}-{max(helps):.2f})")  # fmt: skip
    for key, label in (
        ("first_step_s", "2k-step run, first env step:"),
        ("end_s", "2k-step run, end:"),
    ):
        values = [run[key] for run in runs]
        print(
            f"{label:35s} {statistics.median(values):.2f} s ({min(values):.2f}-{max(values):.2f})"
        )


if __name__ == "__main__":
    main()
