"""ghost-trainer: self-play training for adversarial games on the ML-Agents BaseEnv API.

``ghost.train(config, env=..., run_id=...)`` runs a training session from Python (see
``ghost.running.api``); ``SelfPlayCallback`` receives its events. The package's layers:
``ghost.core`` (self-play bookkeeping), ``ghost.config`` (the run configuration),
``ghost.running`` (sessions, the API, ``ghost-learn``), ``ghost.evaluation`` (``ghost-eval``).
"""

from __future__ import annotations

from typing import Any

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
