"""ghost-trainer inside ML-Agents' ``mlagents-learn``: trainer types ``ghost_ppo``, ``ghost_sac``
and ``ghost_poca``.

Each wraps ML-Agents' own PPO, SAC or POCA trainer in a ghost trainer built on this project's
self-play core (``ghost.core``): per-match ratings with a real K, any number of teams, the sampling
strategies and fixed opponents of ``self_play``, opponents spread over environment workers,
snapshots on disk and a resume that restores them. An ML-Agents user changes
``trainer_type: ppo`` to ``trainer_type: ghost_ppo``.

ML-Agents loads ``registration.trainer_types`` through its ``mlagents.trainer_type`` entry-point
group. Nothing else in this project imports this package, and it imports ML-Agents only here.
"""
