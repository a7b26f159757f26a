"""``ghost-learn`` against ``mlagents-learn`` on a Unity build: the same YAML, side by side.

Both commands train the stand-in Pong build (``tests/fake_unity/FakePong.x86_64``) with one
trainer YAML (``trainer_type: ppo`` with a ``self_play`` section), ``--num-envs`` workers and
``--num-areas`` areas per build, for ``--steps`` trainer steps. ML-Agents 1.1 runs from its peer
venv (``bash ../shared/peers/setup-mlagents.sh`` once) with its own GhostTrainer; ghost-trainer
from this environment. The order alternates per repeat so machine noise hits both alike.

The stand-in player stands for a build's C# side: both trainers talk to the same player
interpreter (this environment's ``python3``, protobuf with its compiled backend), so only the
trainers differ. Reported: wall time of each whole command (start-up, training, export) and the
ratio of ML-Agents' wall time to ours.

    python scripts/bench_unity_learn.py --steps 200000 --areas 16 --num-envs 2 \
        [--old-python /tmp/ghost-old/.venv/bin/python]
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
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "tests" / "fake_unity" / "FakePong.x86_64"
PEER_PYTHON = os.environ.get("PEER_PYTHON", "/tmp/peer-mlagents/bin/python")
# ML-Agents 1.1 exports ONNX with torch.onnx.export, whose default on torch >= 2.9 needs onnxscript
PEER_LAUNCH = (
    "import functools, sys, torch; "
    "torch.onnx.export = functools.partial(torch.onnx.export, dynamo=False); "
    "from mlagents.trainers.learn import main; sys.exit(main())"
)


def trainer_yaml(steps: int) -> dict:
    """One config for both: ML-Agents' format, PPO with self-play."""
    return {
        "behaviors": {
            "Pong": {
                "trainer_type": "ppo",
                "hyperparameters": {
                    "batch_size": 256,
                    "buffer_size": 4096,
                    "num_epoch": 3,
                    "learning_rate": 3.0e-4,
                },  # fmt: skip
                "network_settings": {"hidden_units": 64, "num_layers": 2},
                "max_steps": steps,
                "time_horizon": 64,
                "summary_freq": 20000,
                "checkpoint_interval": 100000,
                "self_play": {
                    "save_steps": 10000,
                    "team_change": 40000,
                    "swap_steps": 5000,
                    "window": 10,
                },  # fmt: skip
            }
        }
    }


def run(which: str, config: Path, folder: Path, args: argparse.Namespace, port: int) -> float:
    """Wall seconds of one whole training command."""
    common = [str(config), "--env", str(BUILD), "--num-envs", str(args.num_envs),
              "--num-areas", str(args.areas), "--no-graphics", "--seed", "1",
              "--base-port", str(port), "--results-dir", str(folder),
              "--run-id", "".join(c if c.isalnum() else "-" for c in which),
              "--force"]  # fmt: skip
    if which == "ml-agents":
        command = [PEER_PYTHON, "-c", PEER_LAUNCH, *common]
    elif which == "ghost-trainer (old)":
        command = [str(Path(args.old_python).parent / "ghost-learn"), *common]
    else:
        command = [str(Path(sys.executable).parent / "ghost-learn"), *common]
    # the player's `#!/usr/bin/env python3` is this environment's interpreter for both
    env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]}
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=folder, env=env)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{which} failed:\n{(done.stdout + done.stderr)[-3000:]}")
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=200_000)
    parser.add_argument("--areas", type=int, default=16)
    parser.add_argument("--num-envs", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument(
        "--old-python", help="also run the ghost-learn of another environment (its interpreter)"
    )
    args = parser.parse_args()
    walls: dict[str, list[float]] = {"ghost-trainer": [], "ml-agents": []}
    if args.old_python:
        walls["ghost-trainer (old)"] = []
    with tempfile.TemporaryDirectory(prefix="bench-unity-learn-") as tmp:
        folder = Path(tmp)
        config = folder / "pong.yaml"
        config.write_text(yaml.safe_dump(trainer_yaml(args.steps)))
        for repeat in range(args.repeats):
            order = list(walls)
            if repeat % 2:
                order.reverse()
            for which in order:
                wall = run(which, config, folder, args, port=6100 + 20 * repeat)
                walls[which].append(wall)
                print(json.dumps({"trainer": which, "repeat": repeat, "wall_s": round(wall, 1),
                                  "steps": args.steps, "areas": args.areas,
                                  "num_envs": args.num_envs}), flush=True)  # fmt: skip
    ours, theirs = (statistics.median(walls[k]) for k in ("ghost-trainer", "ml-agents"))
    print(f"median wall: ghost-learn {ours:.1f} s, mlagents-learn {theirs:.1f} s; "
          f"ML-Agents / ours = {theirs / ours:.2f}x")  # fmt: skip
    if args.old_python:
        old = statistics.median(walls["ghost-trainer (old)"])
        print(f"median wall of the old ghost-learn {old:.1f} s; old / new = {old / ours:.2f}x")


if __name__ == "__main__":
    main()
