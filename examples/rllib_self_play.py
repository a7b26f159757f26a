"""Self-play inside RLlib: RLlib's own PPO learns Leduc poker against past selves.

``ghost_self_play(config, env=..., self_play=...)`` wires a ``PPOConfig``: the game as a
``MultiAgentEnv``, a learning module ``"main"`` and frozen ghost modules holding snapshots, the
policy mapping and a callback that runs ghost-trainer's self-play cycle after every training
iteration. RLlib does all the learning. Needs ``pip install 'ghost-trainer[rllib]'`` and OpenSpiel
(``pip install 'ghost-trainer[openspiel]'``).

Run: ``python examples/rllib_self_play.py`` (RLlib takes a while to start);
``--steps 200000`` for a real run. Guide: docs/rllib.md.
"""

import argparse

import ray
import torch
from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

from ghost.integrations.rllib import ghost_self_play, self_play_of
from ghost.integrations.rllib.evaluation import exploitability_of

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000, help="learner steps")
    args = parser.parse_args()
    torch.set_num_threads(1)
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)

    config = (
        PPOConfig()
        .env_runners(num_env_runners=0, num_envs_per_env_runner=4, rollout_fragment_length=64)
        .training(train_batch_size_per_learner=256, minibatch_size=128, num_epochs=4)
        .rl_module(model_config=DefaultModelConfig(fcnet_hiddens=[64, 64]))
    )
    self_play = {"save_steps": 500, "swap_steps": 250, "team_change": 2000, "window": 5}
    config = ghost_self_play(config, env="openspiel:leduc_poker", self_play=self_play, seed=0)
    algorithm = config.build_algo()
    while self_play_of(algorithm).learner_steps < args.steps:
        report = algorithm.train()["Self-play"]
        steps, elo, team = report["learner_steps"], report["ELO"], report["learning_team"]
        print(
            f"learner steps {steps}: Elo {elo:.0f}, team {team} learns, window {report['window']}"
        )
    print(f"exploitability {exploitability_of(algorithm, 'leduc_poker'):.3f} (0 is unexploitable)")
    algorithm.stop()
    ray.shutdown()
