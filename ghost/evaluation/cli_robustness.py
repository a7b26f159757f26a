"""``ghost-eval exploitability`` and ``ghost-eval exploit``: how far a run's policy is from
unexploitable, exactly (small OpenSpiel games) or by training a best response against it."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ghost.command_line import positive_int
from ghost.evaluation.cli_common import (
    Output,
    add_output_options,
    add_play_options,
    new_command,
    progress_line,
    resolve_policy,
)
from ghost.exceptions import ConfigError


# -- exploitability ------------------------------------------------------------------------------
def add_exploitability(commands: Any) -> None:
    parser = new_command(
        commands,
        "exploitability",
        summary="exact exploitability of a run's final policy and snapshots (OpenSpiel)",
        description="Compute the exact exploitability (NashConv / 2) of RUN's final policy and "
        "of every snapshot. Runs on two-player zero-sum OpenSpiel games.",
        examples="""\
  ghost-eval exploitability results/leduc
  ghost-eval exploitability results/leduc --json""",
    )
    parser.add_argument("policy", metavar="RUN", help="run folder")
    add_output_options(parser)
    parser.set_defaults(handler=exploitability, label="ghost-eval exploitability")


def exploitability(args: argparse.Namespace, out: Output) -> None:
    """``ghost-eval exploitability``: one row per policy of RUN."""
    from ghost.evaluation import seated_runs

    _, run_root = resolve_policy(args.policy)
    if run_root is None or seated_runs.run_env_path(run_root) is None:
        raise ConfigError(
            f"{args.label} needs the folder of a run on an OpenSpiel or PettingZoo game "
            f"(--env openspiel:... / pettingzoo:...); {args.policy} is not one"
        )
    rows = seated_runs.exploitability_rows(run_root)
    out.data["exploitability"] = rows
    out.text.append(seated_runs.format_exploitability(run_root, rows))


# -- exploit -------------------------------------------------------------------------------------
def add_exploit(commands: Any) -> None:
    parser = new_command(
        commands,
        "exploit",
        summary="train a best response against a run's frozen policy and score it",
        description="Train a fresh learner for --steps steps against RUN's frozen final policy, "
        "then play it --episodes games per seat or side: the exploitability estimate of games "
        "too big to enumerate. Runs on built-in, OpenSpiel and PettingZoo games; in "
        "strikers_vs_goalie one exploiter per side. Training progress on stderr.",
        examples="""\
  ghost-eval exploit results/c4 --steps 200000              a best response, every seat
  ghost-eval exploit results/tennis --steps 100000 --episodes 400   the same, every side""",
    )
    parser.add_argument("policy", metavar="RUN", help="run folder")
    parser.add_argument(
        "--steps",
        type=positive_int,
        required=True,
        metavar="STEPS",
        help="the exploiter's training steps",
    )
    add_play_options(parser, episodes="games per seat or side", deterministic=False)
    add_output_options(parser)
    parser.set_defaults(handler=exploit, label="ghost-eval exploit")


def exploit(args: argparse.Namespace, out: Output) -> None:
    """``ghost-eval exploit``: an exploiter trained against RUN, then scored."""
    from ghost.evaluation import exploiter, report, seated_runs
    from ghost.evaluation.cli_format import format_both_seats

    _, run_root = resolve_policy(args.policy)
    seated = run_root is not None and seated_runs.run_env_path(run_root) is not None
    builtin = run_root is not None and report.run_game(run_root) is not None
    if run_root is None or not (seated or builtin):
        raise ConfigError(
            f"{args.label} needs the folder of a run on a built-in game (--env tennis, ...) or "
            f"on an OpenSpiel or PettingZoo game (--env openspiel:... / pettingzoo:...); "
            f"{args.policy} is neither"
        )
    if builtin:
        return _builtin_exploit(args, run_root, out)
    with progress_line(args, "exploiter", unit="steps") as progress:
        folder = exploiter.train_exploiter(run_root, args.steps, seed=args.seed, progress=progress)
    result = exploiter.score_exploiter(run_root, folder, games=args.episodes, seed=args.seed)
    out.data["exploiter"] = {"run": str(folder), "steps": args.steps, **result.to_dict()}
    out.text.append(
        f"exploiter trained {args.steps} steps ({folder}), then played "
        f"{args.episodes} games per seat against the frozen policy:\n"
        + format_both_seats(result)
        + f"\nexploitability estimate (exploiter's mean reward): {result.mean_reward:.4f}"
    )


def _builtin_exploit(args: argparse.Namespace, run_root: Path, out: Output) -> None:
    """A run on a built-in game: one exploiter per side, one row per side."""
    from ghost.evaluation.builtin_exploiter import exploit_run, format_exploits

    with progress_line(args, "exploiter", unit="steps") as progress:
        exploits = exploit_run(
            run_root, args.steps, episodes=args.episodes, seed=args.seed,
            num_arenas=args.num_arenas, progress=progress,
        )  # fmt: skip
    out.data["exploiter"] = {
        "run": str(exploits[0].exploiter_run),
        "steps": args.steps,
        "sides": [exploit.to_dict() for exploit in exploits],
    }
    out.text.append(format_exploits(run_root, exploits))
