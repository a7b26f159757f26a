"""ghost-trainer: self-play training for adversarial games on the ML-Agents BaseEnv API.

``ghost.train(config, env=..., run_id=...)`` runs a training session from Python (see
``ghost.running.api``); ``SelfPlayCallback`` receives its events. The package's layers, bottom
first (a layer imports those below it, never one above, not even inside a function):

1. ``ghost.core``: self-play bookkeeping (torch-free);
2. ``ghost.config``: the run configuration;
3. ``ghost.play``: games between policies and a results folder read back (``RunRecord``);
4. ``ghost.running``: sessions, the API, ``ghost-learn``;
5. ``ghost.evaluation``: ``ghost-eval`` (its exploiters train through ``ghost.running``);
6. ``ghost.tuning``: ``ghost-tune``, searching settings with trials scored by ``ghost.evaluation``.

``ghost.mlagents_plugin`` stands apart, on ``core`` and ``config`` only; ``ghost.exceptions``
and ``ghost.command_line`` lie beneath them all. ``tests/test_layers.py`` keeps the order.

``__version__`` is written here and nowhere else: the build reads it (pyproject.toml) without
importing the package, and every command's ``--version`` prints it.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.2.0"

__all__ = ["SelfPlayCallback", "TrainingResult", "train"]

_EXPORTS = {
    "train": "ghost.running.api",
    "TrainingResult": "ghost.running.api",
    "SelfPlayCallback": "ghost.running.callbacks",
}


def __getattr__(name: str) -> Any:
    # on first use: ``import ghost.core`` must not pull in torch and the training loop
    if name not in _EXPORTS:
        raise AttributeError(f"module 'ghost' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_EXPORTS[name]), name)
