"""RLlib PPO with our ghost self-play against RLlib's own ways of doing self-play.

Three measurements, every arm with the same PPO settings, the same game adapter
(``GhostMultiAgentEnv``, masked module) and the same number of environment steps per seed:

1. **connect four**: our ghost (``ghost_self_play``) against the scheme of RLlib's example
   ``self_play_with_open_spiel.py``, rebuilt here with callbacks: ``main`` starts against a random
   player; whenever its win rate over the last 100 matches passes 0.95, a frozen copy of ``main``
   joins the pool and later matches draw their opponent uniformly from the copies. Judged by the
   win rate (draws half) of ``main`` in both seats against ``random`` and ``one_ply``.
2. **Leduc poker**: exact exploitability of ``main`` with our ghost and with plain shared-policy
   self-play (both seats are ``main`` and both train it).
3. **overhead**: environment steps per second of RLlib PPO with our ghost and with plain
   shared-policy self-play, same game and steps.

Run: ``python scripts/rllib_self_play.py --seeds 3`` (``--help`` for the budgets). One local env
runner, one torch thread: the figures are for a small shared machine, comparable across arms.
"""

from __future__ import annotations

import argparse
import collections
import json
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

EXAMPLE_THRESHOLD = 0.95  # RLlib example's --win-rate-threshold default
EXAMPLE_WINDOW = 100  # the example's rolling window of match results
MAX_COPIES = 32


# -- shared PPO settings --------------------------------------------------------------------------
def ppo_config(seed: int) -> Any:
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

    return (
        PPOConfig()
        .env_runners(num_env_runners=0, num_envs_per_env_runner=8, rollout_fragment_length=64)
        .training(train_batch_size_per_learner=512, minibatch_size=128, num_epochs=4, lr=5e-4)
        .rl_module(model_config=DefaultModelConfig(fcnet_hiddens=[128, 128]))
        .debugging(seed=seed)
        .reporting(metrics_num_episodes_for_smoothing=100)
    )


def masked_spec(env: Any, config: Any) -> Any:
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    from ghost.integrations.rllib import MaskedPPOTorchRLModule

    agent = env.possible_agents[0]
    return RLModuleSpec(
        module_class=MaskedPPOTorchRLModule,
        observation_space=env.observation_spaces[agent],
        action_space=env.action_spaces[agent],
        model_config=config.model_config,
    )


# -- the arms ---------------------------------------------------------------------------------------
def ghost_arm(game: str, seed: int, self_play: dict[str, Any]) -> Any:
    from ghost.integrations.rllib import ghost_self_play

    return ghost_self_play(
        ppo_config(seed), env=f"openspiel:{game}", self_play=self_play, seed=seed
    ).build_algo()


def shared_policy_arm(game: str, seed: int) -> Any:
    """Plain self-play: every seat is ``main`` and every seat's experience trains it."""
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec

    from ghost.integrations.rllib import GhostMultiAgentEnv

    env_config = {"env": f"openspiel:{game}"}
    probe = GhostMultiAgentEnv(env_config)
    config = ppo_config(seed)
    config.environment(GhostMultiAgentEnv, env_config=env_config, disable_env_checking=True)
    config.multi_agent(policies={"main"}, policy_mapping_fn=_everyone_main)
    config.rl_module(
        rl_module_spec=MultiRLModuleSpec(rl_module_specs={"main": masked_spec(probe, config)})
    )
    probe.close()
    return config.build_algo()


def _everyone_main(agent_id: str, episode: Any, **kwargs: Any) -> str:
    return "main"


def example_arm(game: str, seed: int) -> Any:
    """RLlib's example scheme (see the module docstring), with pre-made frozen slots: slot 0 is
    the random player (all-zero weights: equal logits, so a uniform legal move), slots 1.. the
    frozen copies of ``main``."""
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec

    from ghost.integrations.rllib import GhostMultiAgentEnv

    env_config = {"env": f"openspiel:{game}"}
    probe = GhostMultiAgentEnv(env_config)
    config = ppo_config(seed)
    spec = masked_spec(probe, config)
    probe.close()
    modules = {"main": spec, **{f"frozen_{i}": spec for i in range(MAX_COPIES + 1)}}
    config.environment(GhostMultiAgentEnv, env_config=env_config, disable_env_checking=True)
    config.multi_agent(
        policies=set(modules), policy_mapping_fn=_example_mapping, policies_to_train=["main"]
    )
    config.rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs=modules))
    _EXAMPLE.update(copies=0, results=collections.deque(maxlen=EXAMPLE_WINDOW),
                    rng=np.random.default_rng(seed))  # fmt: skip
    config.callbacks(callbacks_class=FrozenCopies)
    return config.build_algo()


# The example arm runs one local env runner, so its callbacks share this process's state.
_EXAMPLE: dict[str, Any] = {}


def _example_mapping(agent_id: str, episode: Any, **kwargs: Any) -> str:
    from ghost.integrations.rllib import team_of

    try:
        stamp = episode.custom_data
    except AttributeError:  # RLlib asks while still building a continued episode chunk
        return "main"
    if team_of(agent_id) == stamp.get("main_seat", team_of(agent_id)):
        return "main"
    return f"frozen_{stamp['opponent']}"


def _frozen_callback_base() -> type:
    from ray.rllib.callbacks.callbacks import RLlibCallback

    return RLlibCallback


class FrozenCopies(_frozen_callback_base()):
    """The example's schedule: freeze a copy of ``main`` when its win rate passes the threshold."""

    def on_algorithm_init(self, *, algorithm: Any, **kwargs: Any) -> None:
        state = algorithm.learner_group.get_weights(module_ids=["frozen_0"])["frozen_0"]
        self._install(algorithm, "frozen_0", {k: np.zeros_like(v) for k, v in state.items()})

    def on_episode_created(self, *, episode: Any, **kwargs: Any) -> None:
        rng, copies = _EXAMPLE["rng"], _EXAMPLE["copies"]
        episode.custom_data["main_seat"] = int(rng.integers(2))
        episode.custom_data["opponent"] = int(rng.integers(1, copies + 1)) if copies else 0

    def on_episode_end(self, *, episode: Any, **kwargs: Any) -> None:
        from ghost.integrations.rllib import team_of

        infos = episode.get_infos(-1)
        seat = episode.custom_data["main_seat"]
        for agent, info in infos.items():
            if team_of(agent) == seat and "final_reward" in info:
                _EXAMPLE["results"].append(float(info["final_reward"] > 0))

    def on_train_result(self, *, algorithm: Any, result: dict, **kwargs: Any) -> None:
        results = _EXAMPLE["results"]
        win_rate = float(np.mean(results)) if results else 0.0
        if win_rate > EXAMPLE_THRESHOLD and _EXAMPLE["copies"] < MAX_COPIES:
            _EXAMPLE["copies"] += 1
            main = algorithm.learner_group.get_weights(module_ids=["main"])["main"]
            self._install(algorithm, f"frozen_{_EXAMPLE['copies']}", main)
        result["example_pool"] = {"copies": _EXAMPLE["copies"], "win_rate": win_rate}

    @staticmethod
    def _install(algorithm: Any, module_id: str, state: dict[str, Any]) -> None:
        algorithm.learner_group.set_weights({module_id: state})
        algorithm.env_runner_group.foreach_env_runner(
            lambda runner: runner.module[module_id].set_state(state), local_env_runner=True
        )


# -- running and judging ----------------------------------------------------------------------------
def train(algorithm: Any, env_steps: int) -> tuple[float, int]:
    """Train until ``env_steps`` environment steps were sampled: (seconds, steps)."""
    seconds, _, sampled = timed_train(algorithm, env_steps)
    return seconds, sampled


def timed_train(algorithm: Any, env_steps: int) -> tuple[float, float, int]:
    """Train until ``env_steps`` environment steps were sampled: (wall seconds, CPU seconds of
    this process, steps). With one local env runner and learner everything runs in this
    process, so CPU seconds do not count the time other programs took the cores."""
    from ray.rllib.utils.metrics import ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME

    wall, cpu, sampled = time.perf_counter(), time.process_time(), 0
    while sampled < env_steps:
        result = algorithm.train()
        sampled = int(result[ENV_RUNNER_RESULTS][NUM_ENV_STEPS_SAMPLED_LIFETIME])
    return time.perf_counter() - wall, time.process_time() - cpu, sampled


def connect_four(seed: int, steps: int, games: int) -> dict[str, Any]:
    from ghost.integrations.rllib.evaluation import win_rate

    rows = {}
    ghost_settings = {"save_steps": 1000, "swap_steps": 500, "team_change": 4000, "window": 10}
    for arm, build in (
        ("ghost", lambda: ghost_arm("connect_four", seed, ghost_settings)),
        ("rllib_example", lambda: example_arm("connect_four", seed)),
    ):
        algorithm = build()
        seconds, sampled = train(algorithm, steps)
        rows[arm] = {
            "steps": sampled,
            "seconds": seconds,
            "vs_random": win_rate(algorithm, "connect_four", opponent="random", games=games,
                                  seed=seed),
            "vs_one_ply": win_rate(algorithm, "connect_four", opponent="one_ply", games=games,
                                   seed=seed),
        }  # fmt: skip
        if arm == "rllib_example":
            rows[arm]["frozen_copies"] = _EXAMPLE["copies"]
        algorithm.stop()
    return rows


def leduc(seed: int, steps: int) -> dict[str, Any]:
    from ghost.integrations.rllib.evaluation import exploitability_of

    rows = {}
    ghost_settings = {"save_steps": 1000, "swap_steps": 500, "team_change": 4000, "window": 10}
    for arm, build in (
        ("ghost", lambda: ghost_arm("leduc_poker", seed, ghost_settings)),
        ("shared_policy", lambda: shared_policy_arm("leduc_poker", seed)),
    ):
        algorithm = build()
        seconds, sampled = train(algorithm, steps)
        rows[arm] = {
            "steps": sampled,
            "seconds": seconds,
            "steps_per_second": sampled / seconds,
            "exploitability": exploitability_of(algorithm, "leduc_poker"),
        }
        algorithm.stop()
    return rows


def overhead(seed: int, steps: int) -> dict[str, Any]:
    rows = {}
    ghost_settings = {"save_steps": 1000, "swap_steps": 500, "team_change": 4000, "window": 10}
    for arm, build in (
        ("ghost", lambda: ghost_arm("connect_four", seed, ghost_settings)),
        ("shared_policy", lambda: shared_policy_arm("connect_four", seed)),
    ):
        algorithm = build()
        _, _, warm = timed_train(algorithm, 1024)  # first iterations pay for allocation
        wall, cpu, sampled = timed_train(algorithm, steps + warm)
        rows[arm] = {
            "steps": sampled - warm,
            "steps_per_second": (sampled - warm) / wall,
            "steps_per_cpu_second": (sampled - warm) / cpu,
        }
        algorithm.stop()
    return rows


# -- the table --------------------------------------------------------------------------------------
def _mean_sd(values: list[float]) -> str:
    if len(values) == 1:
        return f"{values[0]:.3f}"
    return f"{statistics.mean(values):.3f} ± {statistics.stdev(values):.3f}"


def table(results: dict[str, list[dict[str, Any]]]) -> str:
    lines = []
    c4 = results["connect_four"]
    if c4:
        lines += [f"connect four, {c4[0]['ghost']['steps']} env steps, {len(c4)} seed(s)",
                  f"{'arm':<16} {'vs random':>16} {'vs one_ply':>16}"]  # fmt: skip
        for arm in ("ghost", "rllib_example"):
            lines.append(
                f"{arm:<16} {_mean_sd([r[arm]['vs_random'] for r in c4]):>16} "
                f"{_mean_sd([r[arm]['vs_one_ply'] for r in c4]):>16}"
            )
        copies = [r["rllib_example"]["frozen_copies"] for r in c4]
        lines.append(f"(the example scheme froze {copies} copies of main)")
    lp = results["leduc"]
    if lp:
        lines += ["", f"Leduc poker, {lp[0]['ghost']['steps']} env steps, {len(lp)} seed(s)",
                  f"{'arm':<16} {'exploitability':>16}"]  # fmt: skip
        for arm in ("ghost", "shared_policy"):
            lines.append(f"{arm:<16} {_mean_sd([r[arm]['exploitability'] for r in lp]):>16}")
    ov = results["overhead"]
    if ov:
        lines += ["", f"overhead, connect four, {ov[0]['ghost']['steps']} env steps, "
                      f"{len(ov)} seed(s)",
                  f"{'arm':<16} {'env steps/s':>16} {'per CPU second':>16}"]  # fmt: skip
        for arm in ("ghost", "shared_policy"):
            lines.append(
                f"{arm:<16} {_mean_sd([r[arm]['steps_per_second'] for r in ov]):>16} "
                f"{_mean_sd([r[arm]['steps_per_cpu_second'] for r in ov]):>16}"
            )
        for unit in ("steps_per_second", "steps_per_cpu_second"):
            slower = [100 * (1 - r["ghost"][unit] / r["shared_policy"][unit]) for r in ov]
            lines.append(f"ghost slower by {_mean_sd(slower)} % in {unit} (target <= 10 %)")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--connect-four-steps", type=int, default=30000)
    parser.add_argument("--leduc-steps", type=int, default=30000)
    parser.add_argument("--overhead-steps", type=int, default=10000)
    parser.add_argument("--games", type=int, default=100, help="evaluation games per seat")
    parser.add_argument("--only", choices=("connect_four", "leduc", "overhead"), default=None)
    parser.add_argument("--json", type=Path, default=None, help="also write the raw results here")
    args = parser.parse_args()

    import ray

    torch.set_num_threads(1)
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, configure_logging=False)
    results: dict[str, list[dict[str, Any]]] = {"connect_four": [], "leduc": [], "overhead": []}
    started = time.perf_counter()
    for seed in range(args.seeds):
        if args.only in (None, "connect_four"):
            results["connect_four"].append(connect_four(seed, args.connect_four_steps, args.games))
        if args.only in (None, "leduc"):
            results["leduc"].append(leduc(seed, args.leduc_steps))
        if args.only in (None, "overhead"):
            results["overhead"].append(overhead(seed, args.overhead_steps))
        print(f"seed {seed} done after {time.perf_counter() - started:.0f} s", flush=True)
    print(table(results))
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=1))
    ray.shutdown()


if __name__ == "__main__":
    main()
