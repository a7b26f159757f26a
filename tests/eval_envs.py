"""Environments with winners for the ``ghost-eval`` tests, reachable as ``tests.eval_envs:<name>``.

Both are ``tests.team_envs.TeamArenaEnv`` (one agent per behavior and arena; whoever hits its
target more often in an episode gets +1, the others -1, a tie 0), built by module-level functions
so a run trained on one records ``env_settings.env_path: tests.eval_envs:<name>``.
"""

from __future__ import annotations

from tests.team_envs import TeamArenaEnv


def make_arena_duel(worker_id: int = 0, seed: int = 0) -> TeamArenaEnv:
    """A symmetric game: ``Arena?team=0`` against ``Arena?team=1``, 4 arenas, 4-step episodes."""
    return TeamArenaEnv(
        behaviors=("Arena?team=0", "Arena?team=1"),
        num_arenas=4,
        episode_length=4,
        seed=seed + 1000 * worker_id,
    )


def make_hunt(worker_id: int = 0, seed: int = 0) -> TeamArenaEnv:
    """An asymmetric game: ``Hunter?team=0`` against ``Prey?team=1``, 4 arenas, 4-step episodes."""
    return TeamArenaEnv(
        behaviors=("Hunter?team=0", "Prey?team=1"),
        num_arenas=4,
        episode_length=4,
        seed=seed + 1000 * worker_id,
    )
