"""Self-play inside Stable-Baselines3: SB3's own PPO learns built-in Tennis against past selves.

``GhostVecEnv`` is the learning team's agents as an SB3 ``VecEnv`` (the other team plays
snapshots of the learner inside ``step``); ``GhostCallback`` runs ghost-trainer's self-play cycle
(snapshots, swaps, team changes, Elo) from SB3's ``learn``. ``SB3Player`` then seats the trained
model in ``ghost.evaluation`` against a scripted level. Needs ``pip install 'ghost-trainer[sb3]'``.

Run: ``python examples/sb3_self_play.py`` (seconds); ``--steps 500000`` for a real run. Guide:
docs/stable-baselines3.md.
"""

import argparse

import torch
from stable_baselines3 import PPO

from ghost.evaluation import evaluate
from ghost.integrations.sb3 import GhostCallback, GhostVecEnv, SB3Player

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=6000, help="SB3 timesteps (learner steps)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    self_play = {"save_steps": 2000, "swap_steps": 1000, "team_change": 4000, "window": 5}
    env = GhostVecEnv("tennis", num_arenas=8, seed=0, self_play=self_play)
    model = PPO("MlpPolicy", env, seed=0, n_steps=64, batch_size=256, n_epochs=3)
    model.learn(
        total_timesteps=args.steps, callback=GhostCallback(save_path="results/sb3-tennis/model")
    )
    window = [snapshot.snapshot_id for snapshot in env.state.window]
    print(f"Elo {env.state.rating:.0f}, swaps {env.state.swaps}, window {window}")

    player = SB3Player(model, env.behavior_spec.action_spec)
    match = evaluate(game="tennis", policy=player, opponent="weak", episodes=20)
    games = f"{match.wins} wins in {match.decided} decided games"
    print(f"against weak: win rate {match.win_rate:.2f} ({games})")
