"""Evaluation, tournaments, replays and reports of trained policies (``ghost-eval``)."""

from __future__ import annotations

from typing import Any

__all__ = [
    "EvaluationResult",
    "evaluate",
    "evaluate_against_snapshots",
    "evaluate_run",
    "wilson_interval",
]

_EXPORTS = {
    "evaluate_against_snapshots": "ghost.evaluation.snapshots",
    "evaluate_run": "ghost.evaluation.snapshots",
    "EvaluationResult": "ghost.play.head_to_head",
    "evaluate": "ghost.play.head_to_head",
    "wilson_interval": "ghost.play.head_to_head",
}


def __getattr__(name: str) -> Any:
    # on first use: ``ghost-eval --help`` and ``--version`` answer without loading torch
    if name not in _EXPORTS:
        raise AttributeError(f"module 'ghost.evaluation' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_EXPORTS[name]), name)
