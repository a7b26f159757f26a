"""The files of a run, below every host: its folder layout, its lock, atomic writes, loading
without running pickled code, and its logs.

ghost-learn's training loop, the ``mlagents-learn`` plugin, Stable-Baselines3 and RLlib all write
and read run files through these modules. They import nothing of ``ghost`` and no trainer: of
``trainers`` only the exceptions, the data types a checkpoint may hold (which safe loading allows)
and the names of statistics. ``tests/test_layers.py`` keeps it that way.
"""
