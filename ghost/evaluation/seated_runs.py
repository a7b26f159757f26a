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

import attrs

from envs.behavior_id import BehaviorId
from envs.board_players import scripted_levels
from envs.openspiel import OpenSpielSource, load_game, seat_behaviors
from envs.seated_game import Seat, SeatedGame
from envs.sources import resolve_env
from ghost.evaluation.run_evaluation import RunEvaluation
from ghost.evaluation.seated import Player, evaluate_both_seats
from ghost.exceptions import ConfigError
from ghost.play.exploitability import table_probabilities
from ghost.play.run_record import RunRecord
from trainers.policy import load_policy


def run_env_path(run_root: Path) -> str | None:
    """The run's ``env_settings.env_path`` when it is an OpenSpiel or PettingZoo game
    (``RunRecord.seated_env_path``)."""
    return RunRecord(run_root).seated_env_path


def seat_names(seats: list[BehaviorId] | tuple[Seat, ...]) -> list[str]:
    """The behavior name (``Name``) of each seat."""
    return [s.behavior.name if isinstance(s, Seat) else s.name for s in seats]


def _open(env_path: str, copies: int, seed: int = 0) -> SeatedGame:
    """The game of ``env_path`` with ``copies`` tables."""
    return attrs.evolve(resolve_env(env_path), copies=copies)(worker_id=0, seed=seed)


def run_players(run_root: Path, names: list[str]) -> dict[int, Player]:
    """Seat → the run's final policy of that seat's behavior (``names``: one per seat)."""
    run = RunRecord(run_root)
    loaded: dict[str, Player] = {}
    for name in names:
        if name not in loaded:
            loaded[name] = run.final_policy(name)
    return {seat: loaded[name] for seat, name in enumerate(names)}


def opponent_players(spec: str, seats: tuple[Seat, ...], *, seed: int) -> dict[int, Player]:
    """Seat → player for ``spec``: a scripted level, a policy file, or a run folder."""
    path = Path(spec)
    if path.is_dir():
        return run_players(path, seat_names(seats))
    if path.is_file():
        policy = load_policy(path)
        return dict.fromkeys(range(len(seats)), policy)
    game = seats[0].behavior.name
    levels = scripted_levels(game)
    if spec not in levels:
        raise ConfigError(
            f"opponent {spec!r} is not a policy file, a run folder or a scripted level of "
            f"{game} ({', '.join(levels)})"
        )
    return {
        index: levels[spec](action_spec=seat.action_spec, seed=seed + index)
        for index, seat in enumerate(seats)
    }


def evaluate_run(
    run_root: Path, opponent: str, *, games: int, seed: int, deterministic: bool
) -> RunEvaluation:
    """``--against``: the run's final policy in each seat against ``opponent``."""
    env_path = run_env_path(run_root)
    assert env_path is not None
    copies = min(games, 64)
    probe = _open(env_path, 1)
    seats = probe.seats
    probe.close()
    both = evaluate_both_seats(
        lambda seed: _open(env_path, copies, seed),
        policy=run_players(run_root, seat_names(seats)),
        opponent=opponent_players(opponent, seats, seed=seed),
        games=games,
        seed=seed,
        labels=(str(run_root), opponent),
        deterministic=deterministic,
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
