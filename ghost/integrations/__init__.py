"""Our self-play cycle inside other frameworks' trainers.

- ``ghost.integrations.sb3``: Stable-Baselines3 (``pip install 'ghost-trainer[sb3]'``).
- ``ghost.integrations.rllib``: RLlib's new API stack (``pip install 'ghost-trainer[rllib]'``).

Each drives ``ghost.core.ghost_cycle.GhostCycle`` through the framework's public extension points
(environments, callbacks, policy mapping), so window, swaps, team changes and ratings behave as in
``ghost-learn``.
"""
