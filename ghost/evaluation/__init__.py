"""Evaluation, leagues, replays and reports of trained policies (``ghost-eval``)."""

from ghost.evaluation.snapshots import evaluate_against_snapshots, evaluate_run
from ghost.play.head_to_head import EvaluationResult, evaluate, wilson_interval

__all__ = [
    "EvaluationResult",
    "evaluate",
    "evaluate_against_snapshots",
    "evaluate_run",
    "wilson_interval",
]
