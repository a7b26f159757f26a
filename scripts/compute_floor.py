"""The compute floor of a self-play PPO run, and our speed as a fraction of it.

The floor is the agent steps per second a run would make if a step cost only its network
arithmetic, on one thread: no environment, no assembly, no Python around the networks. For an
MLP of ``--widths`` units × ``--layers`` on tennis's spec with ``scripts/bench_tennis.yaml``'s
update (buffer, minibatch, epochs), it times with the trainer's own networks:

- **acting**: one ``TorchPolicy.sample`` (the numpy path, BLAS on one thread, as ``ghost-learn``
  acts) over ``--rows`` agents, per agent;
- **the update**, per learner step: over a buffer of random rows, a no-grad critic pass over every
  row (the values behind the advantages), then ``num_epoch`` passes of minibatches: actor and
  critic forward, PPO's clipped loss with the entropy bonus and the value loss, backward and an
  Adam step (``trainers.adam``).

In self-play the other team acts through a snapshot and is not trained, so half the agent steps
are the learner's: an agent step costs one acting row plus half a learner step's update. With
``--ours`` each width is also trained for ``--steps`` trainer steps by
``scripts/bench_vs_mlagents.py``'s own runner (``--repeats`` fresh processes, median), and the
table gives that as a fraction of the floor::

    python scripts/compute_floor.py --widths 64 128 --ours --repeats 3
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from bench_vs_mlagents import run_ours  # noqa: E402

from envs.games import make_game  # noqa: E402
from trainers.adam import Adam  # noqa: E402
from trainers.fast_acting import limit_blas_threads  # noqa: E402
from trainers.networks import ValueNetwork  # noqa: E402
from trainers.policy import TorchPolicy  # noqa: E402
from trainers.settings import NetworkSettings  # noqa: E402

CONFIG = ROOT / "scripts" / "bench_tennis.yaml"
ENV = "envs.tennis:make_env"


def networks(width: int, layers: int) -> tuple[TorchPolicy, ValueNetwork, list]:
    """The learner's policy and critic for tennis's spec, and its observation specs."""
    env = make_game("tennis", num_arenas=1)
    spec = env.behavior_specs["Tennis?team=0"]
    env.close()
    settings = NetworkSettings(normalize=True, hidden_units=width, num_layers=layers)
    policy = TorchPolicy(behavior_spec=spec, network_settings=settings)
    critic = ValueNetwork(list(spec.observation_specs), settings)
    return policy, critic, list(spec.observation_specs)


def acting_seconds_per_row(policy: TorchPolicy, obs_size: int, rows: int, calls: int) -> float:
    """Seconds per agent of one ``sample`` over ``rows`` agents (median of 5 timings)."""
    obs = [np.random.default_rng(0).standard_normal((rows, obs_size)).astype(np.float32)]
    policy.sample(obs)  # builds the numpy copy
    timings = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(calls):
            policy.sample(obs)
        timings.append((time.perf_counter() - start) / calls / rows)
    return statistics.median(timings)


def update_seconds_per_step(
    policy: TorchPolicy, critic: ValueNetwork, obs_size: int, hyper: dict
) -> float:
    """Seconds per learner step of PPO's update arithmetic on a buffer of random rows."""
    buffer, batch, epochs = hyper["buffer_size"], hyper["batch_size"], hyper["num_epoch"]
    rng = np.random.default_rng(0)
    obs = torch.as_tensor(rng.standard_normal((buffer, obs_size)), dtype=torch.float32)
    actions = torch.as_tensor(rng.standard_normal((buffer, 2)), dtype=torch.float32)
    old_log_probs = torch.zeros(buffer, 2)
    advantages, returns = torch.randn(buffer), torch.randn(buffer)
    optimizer = Adam([*policy.actor.parameters(), *critic.parameters()], lr=3e-4)
    timings = []
    for _ in range(3):
        start = time.perf_counter()
        with torch.no_grad():
            critic([obs])
        for _ in range(epochs):
            order = torch.randperm(buffer)
            for first in range(0, buffer - batch + 1, batch):
                rows = order[first : first + batch]
                dist = policy.actor([obs[rows]])
                ratio = torch.exp(
                    dist.log_prob_components(actions[rows], None) - old_log_probs[rows]
                )
                advantage = advantages[rows].unsqueeze(1)
                surrogate = torch.min(ratio * advantage, ratio.clamp(0.8, 1.2) * advantage)
                value_loss = (critic([obs[rows]]) - returns[rows]).pow(2).mean()
                loss = -surrogate.mean() - 0.005 * dist.bonus_entropy().mean() + 0.5 * value_loss
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
        timings.append((time.perf_counter() - start) / buffer)
    return statistics.median(timings)


def our_rate(width: int, layers: int, steps: int, repeats: int) -> float:
    """Median agent steps per second of ``bench_tennis.yaml`` at ``width`` × ``layers``."""
    config = yaml.safe_load(CONFIG.read_text())
    network = config["behaviors"]["Tennis"]["network_settings"]
    network.update(hidden_units=width, num_layers=layers)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "config.yaml"
        path.write_text(yaml.safe_dump(config))
        rates = [run_ours(str(path), ENV, steps)["agent_steps_per_s"] for _ in range(repeats)]
    return statistics.median(rates)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--widths", type=int, nargs="+", default=[64, 128])
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--rows", type=int, default=1024, help="agents per acting call")
    parser.add_argument("--ours", action="store_true", help="also train and give the fraction")
    parser.add_argument("--steps", type=int, default=100_000, help="--ours: trainer steps")
    parser.add_argument("--repeats", type=int, default=3, help="--ours: runs per width")
    args = parser.parse_args()
    torch.set_num_threads(1)
    limit_blas_threads()
    hyper = yaml.safe_load(CONFIG.read_text())["behaviors"]["Tennis"]["hyperparameters"]
    print("| MLP | acting µs/agent | update µs/learner step | floor agent steps/s | ours | share |")
    print("|---|---:|---:|---:|---:|---:|")
    for width in args.widths:
        torch.manual_seed(0)
        policy, critic, specs = networks(width, args.layers)
        obs_size = specs[0].shape[0]
        acting = acting_seconds_per_row(policy, obs_size, args.rows, calls=20)
        update = update_seconds_per_step(policy, critic, obs_size, hyper)
        floor = 1.0 / (acting + update / 2)
        ours = our_rate(width, args.layers, args.steps, args.repeats) if args.ours else None
        shown = "–" if ours is None else f"{ours:,.0f} | {ours / floor:.0%}"
        print(f"| {width}×{args.layers} | {acting * 1e6:.2f} | {update * 1e6:.2f} | "
              f"{floor:,.0f} | {shown} |")  # fmt: skip


if __name__ == "__main__":
    main()
