"""Self-play inside Stable-Baselines3: ``GhostVecEnv`` (the learning team as a VecEnv) and
``GhostCallback`` (ghost-trainer's snapshot window, swaps, team changes, Elo and resume).

    env = GhostVecEnv("tennis", self_play={"save_steps": 20000}, seed=0)
    model = PPO("MlpPolicy", env, seed=0)
    model.learn(200_000, callback=GhostCallback(save_path="run/model"))

See ``docs/stable-baselines3.md``.
"""

try:
    import stable_baselines3  # noqa: F401
except ImportError as error:  # pragma: no cover - exercised with SB3 hidden
    raise ImportError(
        "ghost.integrations.sb3 needs Stable-Baselines3: pip install 'ghost-trainer[sb3]'"
    ) from error

from ghost.integrations.sb3.callback import ELO, GhostCallback
from ghost.integrations.sb3.player import SB3Player
from ghost.integrations.sb3.state_files import self_play_folder
from ghost.integrations.sb3.vec_env import GhostVecEnv

__all__ = ["ELO", "GhostCallback", "GhostVecEnv", "SB3Player", "self_play_folder"]
