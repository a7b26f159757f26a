"""How ``ghost-eval`` prints an evaluation: a W/D/L table, one row per snapshot, or one row per
seat of a turn-based game."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Protocol

from ghost.play.seated_matches import SeatResult


def _number(value: float | None, digits: int = 3) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:.{digits}f}"


def _ci(bounds: tuple[float, float]) -> str:
    return f"[{bounds[0]:.3f}, {bounds[1]:.3f}]"


def _probabilities(values: tuple[float, ...] | None) -> str:
    return "" if values is None else " (" + ", ".join(f"{p:.3f}" for p in values) + ")"


def format_result(result: Any) -> str:
    """A W/D/L table with 95% intervals, the mean score and, for matrix games, exploitability."""
    lines = [
        f"{result.game}: {result.policy} [{', '.join(result.side)}] vs {result.opponent}",
        f"{result.episodes} episodes, seed {result.seed}"
        + (", deterministic" if result.deterministic else ""),
        "",
        f"{'':<12}{'count':>6}  {'rate':>6}  95% CI",
    ]
    for name, count, rate, ci in (
        ("wins", result.wins, result.win_rate, result.win_ci),
        ("draws", result.draws, result.draw_rate, result.draw_ci),
        ("losses", result.losses, result.loss_rate, result.loss_ci),
    ):
        lines.append(f"{name:<12}{count:>6}  {_number(rate):>6}  {_ci(ci)}")
    lines.append(f"{'interrupted':<12}{result.interrupted:>6}  (not in the rates)")
    lines.append(
        f"{'mean score':<12}{'':>6}  {_number(result.score):>6}  {_ci(result.score_ci)}"
        "  (win 1, draw 0.5, loss 0)"
    )
    if result.exploitability is not None or result.opponent_exploitability is not None:
        lines.append("")
        lines.append(
            f"exploitability of the policy:   {_number(result.exploitability, 4)}"
            f"{_probabilities(result.policy_probabilities)}"
        )
        lines.append(
            f"exploitability of the opponent: "
            f"{_number(result.opponent_exploitability, 4)}"
            f"{_probabilities(result.opponent_probabilities)}"
        )
    return "\n".join(lines)


def format_snapshots(title: str, evaluations: Sequence[Any], *, snapshot_is_policy: bool) -> str:
    """One row per snapshot: step, rating, W/D/L, win rate and score with 95% intervals (from
    the policy's side), and for matrix games the snapshot's exploitability."""
    first = evaluations[0].result
    matrix = first.exploitability is not None or first.opponent_exploitability is not None
    lines = [
        title,
        f"{first.episodes} episodes each, seed {first.seed}; W/D/L from {first.policy}'s side"
        if not snapshot_is_policy
        else f"{first.episodes} episodes each, seed {first.seed}; W/D/L from the snapshot's side",
        "",
        f"{'snapshot':>8} {'step':>8} {'rating':>7} {'W':>5} {'D':>5} {'L':>5} {'int':>4}"
        f"  {'win rate':>8} {'95% CI':<16} {'score':>5} {'95% CI':<16}"
        + ("  exploitability" if matrix else ""),
    ]
    lines[-1] = lines[-1].rstrip()
    for evaluation in evaluations:
        r = evaluation.result
        step = "-" if evaluation.step is None else str(evaluation.step)
        own = r.exploitability if snapshot_is_policy else r.opponent_exploitability
        row = (
            f"{evaluation.snapshot_id:>8} {step:>8} {_number(evaluation.rating, 1):>7} "
            f"{r.wins:>5} {r.draws:>5} {r.losses:>5} {r.interrupted:>4}  "
            f"{_number(r.win_rate):>8} {_ci(r.win_ci):<16} {_number(r.score):>5} "
            f"{_ci(r.score_ci):<16}" + (f"  {_number(own, 4):>14}" if matrix else "")
        )
        lines.append(row.rstrip())
    if matrix and not snapshot_is_policy:
        lines.append(
            f"exploitability of {first.policy}: {_number(first.exploitability, 4)}"
            f"{_probabilities(first.policy_probabilities)}"
        )
    return "\n".join(lines)


class SeatResults(Protocol):
    """Per-seat results with the players' labels: ``BothSeats``, or a seated run's
    ``ghost.evaluation.run_evaluation.RunEvaluation``."""

    @property
    def policy(self) -> str: ...

    @property
    def opponent(self) -> str: ...

    @property
    def seats(self) -> tuple[SeatResult, ...]: ...

    @property
    def win_rate(self) -> float: ...

    @property
    def mean_reward(self) -> float: ...


def format_both_seats(result: SeatResults) -> str:
    """A small table: per seat games, W/D/L, win rate and mean reward."""
    lines = [
        f"{result.policy} vs {result.opponent}",
        f"{'seat':>4} {'games':>6} {'W':>6} {'D':>6} {'L':>6} {'win rate':>9} {'mean reward':>12}",
    ]
    for s in result.seats:
        lines.append(
            f"{s.seat:>4} {s.games:>6} {s.wins:>6} {s.draws:>6} {s.losses:>6} "
            f"{s.win_rate:>9.3f} {s.mean_reward:>12.3f}"
        )
    lines.append(f"all seats: win rate {result.win_rate:.3f}, mean reward {result.mean_reward:.3f}")
    return "\n".join(lines)


def format_any(result: Any) -> str:
    """A venue's result as its table: per seat for a seated game (``format_both_seats``), else
    W/D/L with intervals (``format_result``).

    Args:
        result: ``EvaluationResult`` or ``BothSeats``.

    Returns:
        The table.
    """
    return format_both_seats(result) if hasattr(result, "seats") else format_result(result)
