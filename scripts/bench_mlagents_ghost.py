"""ML-Agents' ghost against ours, both inside ``mlagents-learn``, on the stand-in Pong build.

For each seed the same trainer YAML runs twice in the ML-Agents environment (``.venv-mlagents``,
built by ``.ci/mlagents-venv``): ``trainer_type: ppo`` (ML-Agents' GhostTrainer) and
``trainer_type: ghost_ppo`` (ours); the order alternates per seed. Reported per run: wall time of
the whole ``mlagents-learn`` process, the Elo curve (``Self-play/ELO`` in TensorBoard), and the win
rate of the final ``Pong.onnx`` against a scripted paddle that chases the ball half the time and
moves at random otherwise (timeouts count half). Both runs export ONNX with torch's TorchScript
exporter (ML-Agents 1.1 needs it on torch >= 2.9).

usage: python scripts/bench_mlagents_ghost.py [--steps 20000] [--seeds 1 2] [--areas 8]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnxruntime
import yaml
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "fake_unity"))
from fake_games import Pong  # noqa: E402

LAUNCH = (
    "import functools, sys, torch; "
    "torch.onnx.export = functools.partial(torch.onnx.export, dynamo=False); "
    "from mlagents.trainers.learn import main; sys.exit(main())"
)


def config(trainer_type: str, steps: int) -> dict:
    return {
        "behaviors": {
            "Pong": {
                "trainer_type": trainer_type,
                "hyperparameters": {
                    "batch_size": 256,
                    "buffer_size": 2048,
                    "num_epoch": 3,
                    "learning_rate": 3.0e-4,
                },  # fmt: skip
                "network_settings": {"hidden_units": 64, "num_layers": 2},
                "max_steps": steps,
                "time_horizon": 64,
                "summary_freq": 2000,
                "checkpoint_interval": 5000,
                "self_play": {
                    "save_steps": 2000,
                    "team_change": 8000,
                    "swap_steps": 1000,
                    "window": 5,
                },  # fmt: skip
            }
        }
    }


def train(venv: Path, folder: Path, trainer_type: str, steps: int, seed: int, areas: int):
    path = folder / f"{trainer_type}-{seed}.yaml"
    path.write_text(yaml.safe_dump(config(trainer_type, steps)))
    run_id = f"{trainer_type}-{seed}"
    command = [
        str(venv / "bin" / "python"), "-c", LAUNCH, str(path),
        "--env", str(ROOT / "tests" / "fake_unity" / "FakePong.x86_64"), "--run-id", run_id,
        "--results-dir", str(folder), "--no-graphics", "--num-areas", str(areas),
        "--seed", str(seed), "--base-port", str(5900 + seed * 10), "--force",
    ]  # fmt: skip
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=folder)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{run_id} failed:\n{(done.stdout + done.stderr)[-3000:]}")
    return folder / run_id, wall


def elo_curve(run: Path) -> list[float]:
    events = EventAccumulator(str(run / "Pong"))
    events.Reload()
    return [round(event.value, 1) for event in events.Scalars("Self-play/ELO")]


class ScriptedPaddle:
    """Chases the ball with probability ``focus``, else a random move."""

    def __init__(self, rng: np.random.Generator, focus: float = 0.5) -> None:
        self.rng, self.focus = rng, focus

    def act(self, observation: np.ndarray) -> np.ndarray:
        own_y, ball_y = observation[:, 0], observation[:, 3]
        chase = np.where(ball_y > own_y + 0.02, 2, np.where(ball_y < own_y - 0.02, 0, 1))
        random = self.rng.integers(0, 3, len(observation))
        return np.where(self.rng.random(len(observation)) < self.focus, chase, random)


class NoParameters:
    def get_with_default(self, key: str, default: float) -> float:
        return default


def scripted_win_rate(onnx_path: Path, episodes: int = 400, seed: int = 0) -> float:
    """The policy plays both sides in turn against the scripted paddle."""
    session = onnxruntime.InferenceSession(str(onnx_path))
    outputs = {o.name for o in session.get_outputs()}
    action_name = next(
        n for n in ("deterministic_discrete_actions", "discrete_actions") if n in outputs
    )
    rng = np.random.default_rng(seed)
    scripted = ScriptedPaddle(rng)
    score = 0.0
    for policy_team in (0, 1):
        game = Pong(num_areas=episodes // 2, seed=seed + policy_team)
        areas = np.arange(game.num_areas)
        game.reset(areas, NoParameters())
        result = np.full(game.num_areas, np.nan)
        while np.isnan(result).any():
            views, masks = game.observations(), game.action_masks()
            feeds = {"obs_0": views[policy_team][:, 0], "action_masks": (~masks[policy_team][:, 0]).astype(np.float32)}  # fmt: skip
            learned = session.run([action_name], feeds)[0][:, 0]
            other = scripted.act(views[1 - policy_team][:, 0])
            moves = [learned, other] if policy_team == 0 else [other, learned]
            outcome = game.step([(None, m.reshape(-1, 1, 1)) for m in moves])
            reward = outcome.rewards[policy_team][:, 0]
            ended = outcome.ended & np.isnan(result)
            result[ended] = np.where(outcome.interrupted[ended], 0.5, (reward[ended] > 0) * 1.0)
            game.reset(np.flatnonzero(outcome.ended), NoParameters())
        score += result.sum()
    return score / (2 * (episodes // 2))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--areas", type=int, default=8)
    parser.add_argument("--venv", type=Path, default=ROOT / ".venv-mlagents")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-mlagents-ghost-") as tmp:
        for index, seed in enumerate(args.seeds):
            order = ("ppo", "ghost_ppo") if index % 2 == 0 else ("ghost_ppo", "ppo")
            for trainer_type in order:
                run, wall = train(args.venv, Path(tmp), trainer_type, args.steps, seed, args.areas)
                curve = elo_curve(run)
                win = scripted_win_rate(run / "Pong.onnx", seed=seed)
                rows.append({"trainer_type": trainer_type, "seed": seed, "wall_s": round(wall, 1),
                             "elo_curve": curve, "scripted_win_rate": round(win, 3)})  # fmt: skip
                print(json.dumps(rows[-1]), flush=True)
    print("\n| trainer | seed | wall s | Elo curve (every 2000 steps) | win rate vs scripted |")
    print("|---|---|---|---|---|")
    for row in rows:
        curve = " → ".join(f"{v:.0f}" for v in row["elo_curve"])
        print(f"| {row['trainer_type']} | {row['seed']} | {row['wall_s']} | {curve} | "
              f"{row['scripted_win_rate']:.3f} |")  # fmt: skip
    walls = {
        t: sum(r["wall_s"] for r in rows if r["trainer_type"] == t) for t in ("ppo", "ghost_ppo")
    }
    print(
        f"\nwall time ghost_ppo / ppo (ML-Agents' ghost): {walls['ghost_ppo'] / walls['ppo']:.3f}"
    )


if __name__ == "__main__":
    main()
