"""``ghost-eval`` for runs on OpenSpiel and PettingZoo games.

- ``--against LEVEL|POLICY``: the run's final policy in every seat in turn against a scripted
  level (``random``; ``one_ply`` for connect four and tic-tac-toe) or another policy;
- ``--exploitability``: exact exploitability (two-player zero-sum OpenSpiel games) of the final
  policy and of every snapshot;
- ``exploit --steps STEPS`` (``ghost.evaluation.exploiter``): a fresh learner trained against the
  frozen final policy; its results are the exploitability estimate for games too big to
  enumerate.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from envs.openspiel import OpenSpielSource, load_game, seat_behaviors
from ghost.evaluation.run_evaluation import RunEvaluation
from ghost.exceptions import ConfigError
from ghost.play.exploitability import table_probabilities
from ghost.play.run_record import RunRecord
from ghost.play.seated_matches import SeatedVenue, run_players, seat_names
from trainers.policy import load_policy


def run_env_path(run_root: Path) -> str | None:
    """The run's ``env_settings.env_path`` when it is an OpenSpiel or PettingZoo game.

    Args:
        run_root: the run folder.

    Returns:
        ``RunRecord.seated_env_path``.
    """
    return RunRecord(run_root).seated_env_path


def evaluate_run(
    run_root: Path, opponent: str, *, games: int, seed: int, deterministic: bool
) -> RunEvaluation:
    """The run's final policy in each seat against ``opponent`` (``SeatedVenue.play``).

    Args:
        run_root: the run folder.
        opponent: a scripted level, a policy file or a run folder.
        games: finished games per seat.
        seed: seeds the game and the scripted levels.
        deterministic: the run's policy takes its most likely action.

    Returns:
        The per-seat results.
    """
    env_path = run_env_path(run_root)
    assert env_path is not None
    both = SeatedVenue(env_path=env_path).play(
        policy=run_root, opponent=opponent, episodes=games, seed=seed, deterministic=deterministic
    )
    return RunEvaluation.of_seats(Path(run_root), both)


def exploitability_rows(run_root: Path) -> list[dict[str, Any]]:
    """``--exploitability``: the final policy's and every snapshot's exact exploitability.

    A snapshot of a behavior that plays every seat is scored as it is; a snapshot of one seat's
    behavior (``seats: separate``) is paired with the other seats' final policies, and its
    ``best_response`` value (what a best responder wins against that seat) is its own score.
    """
    # imported here: OpenSpiel (an optional extra) is only needed for OpenSpiel runs
    from envs.exploitability import InfoStateTable, exploitability

    run = RunRecord(run_root)
    env_path = run.seated_env_path
    if env_path is None or not run.described_env.capabilities.exact_exploitability:
        raise ConfigError(
            f"--exploitability needs a run on an OpenSpiel game (--env openspiel:...); "
            f"{run_root} trained on {env_path or 'something else'}"
        )
    source = run.env_source()
    assert isinstance(source, OpenSpielSource)
    game = load_game(source.game)
    seats = seat_behaviors(game, source.seats)
    table = InfoStateTable.build(game, observation=source.observation)
    final = run_players(run_root, seat_names(seats))
    rows = [_row("final", None, exploitability(table, table_probabilities(table, final)))]
    for name in sorted({behavior.name for behavior in seats}):
        for snapshot in run.snapshots(name):
            policy = load_policy(snapshot.path)
            line_up = {
                seat: policy if behavior.name == name else final[seat]
                for seat, behavior in enumerate(seats)
            }
            result = exploitability(table, table_probabilities(table, line_up))
            rows.append(_row(f"{name} #{snapshot.snapshot_id}", snapshot.step, result))
    return rows


def _row(label: str, step: int | None, result: Any) -> dict[str, Any]:
    return {
        "policy": label,
        "step": step,
        "exploitability": result.exploitability,
        "nash_conv": result.nash_conv,
        "best_response_values": list(result.best_response_values),
    }


def format_exploitability(run_root: Path, rows: list[dict[str, Any]]) -> str:
    """The ``--exploitability`` table."""
    lines = [
        f"exact exploitability (NashConv / 2) of {run_root}",
        f"{'policy':<24} {'step':>9} {'exploitability':>15} {'BR seat 0':>10} {'BR seat 1':>10}",
    ]
    for row in rows:
        step = "-" if row["step"] is None else str(row["step"])
        br = row["best_response_values"]
        lines.append(
            f"{row['policy']:<24} {step:>9} {row['exploitability']:>15.4f} {br[0]:>10.4f} "
            f"{br[1]:>10.4f}"
        )
    lines.append("BR seat p: what a best responder sitting in seat p wins against the others")
    return "\n".join(lines)
