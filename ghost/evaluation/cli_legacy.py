"""The flag form of ``ghost-eval`` (``ghost-eval POLICY --against ...``, ``RUN --league``, ...),
kept for old scripts: parsed as before, then handed to the commands with a note naming the new
form on stderr. Its combinations and their error messages are the old ones."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from ghost.evaluation import cli_commands, cli_robustness
from ghost.evaluation.cli_common import (
    PROG,
    SNAPSHOTS,
    add_game_options,
    add_output_options,
    add_play_options,
    add_ray_option,
    add_record_options,
    add_tournament_options,
)
from ghost.exceptions import ConfigError


def build_parser() -> argparse.ArgumentParser:
    """The old, flat parser: every command's options at once, and a flag per mode."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description=f"The old flag form of {PROG}, kept for scripts; see '{PROG} --help' for "
        f"the commands that replace it ({PROG} match, snapshots, tournament, report, ...).",
        allow_abbrev=False,
    )
    parser.add_argument("policy", metavar="POLICY", help="policy file or run folder")
    parser.add_argument("--against", metavar="OPPONENT", help="now: match --against")
    add_game_options(parser)
    add_play_options(parser)
    add_record_options(parser)
    add_tournament_options(parser)
    add_ray_option(parser, what="the pairs or snapshots")
    add_output_options(parser)
    parser.add_argument("--each-snapshot", action="store_true", help="now: snapshots")
    parser.add_argument("--report", metavar="OUT.png", help="now: report RUN OUT.png")
    parser.add_argument("--league", action="store_true", help="now: tournament")
    parser.add_argument("--exploitability", action="store_true", help="now: exploitability")
    parser.add_argument("--exploiter", type=int, metavar="STEPS", help="now: exploit --steps")
    return parser


def route(args: argparse.Namespace) -> list[argparse.Namespace]:
    """The commands the flags ask for, in order, each as its parsed arguments; prints the note."""
    steps = _report(args) + _modes(args)
    forms = " and ".join(f"'{step.form}'" for step in steps)
    print(f"{PROG}: note: the flag form is deprecated; use {forms}", file=sys.stderr)
    return steps


def _step(
    args: argparse.Namespace, handler: Callable[..., Any], label: str, form: str, **extra: Any
) -> argparse.Namespace:
    return argparse.Namespace(
        **vars(args), handler=handler, label=label, form=f"{PROG} {form}", **extra
    )


def _report(args: argparse.Namespace) -> list[argparse.Namespace]:
    if not args.report:
        return []
    form = f"report {args.policy} {args.report}"
    return [_step(args, cli_commands.report, "--report", form, image=args.report)]


def _modes(args: argparse.Namespace) -> list[argparse.Namespace]:
    """What comes after --report: a tournament, a robustness check, or an evaluation."""
    if args.league:
        if args.against or args.each_snapshot or args.record or args.side:
            raise ConfigError(
                "--league plays the run's own players against each other; leave out --against, "
                "--each-snapshot, --record and --side (add scripted levels with --include-levels)"
            )
        form = f"tournament {args.policy} ..."
        return [_step(args, cli_commands.tournament, "--league", form)]
    if args.ray_address and not (args.each_snapshot or args.against == SNAPSHOTS):
        raise ConfigError(
            "--ray-address plays many evaluations at once: it goes with --league, "
            "--each-snapshot or --against snapshots"
        )
    if args.exploitability or args.exploiter is not None:
        return _robustness(args)
    if args.include_levels or args.games_per_pair is not None:
        raise ConfigError("--games-per-pair and --include-levels need --league")
    if args.against is None:
        if args.record or args.each_snapshot:
            raise ConfigError("--record and --each-snapshot need --against OPPONENT")
        if not args.report:
            raise ConfigError(
                "nothing to do: pass --against OPPONENT (a scripted level, a policy file or "
                "'snapshots'), or --report OUT.png"
            )
        return []
    if args.each_snapshot:
        form = f"snapshots {args.policy} --against {args.against} ..."
        return [_step(args, cli_commands.snapshots, "--each-snapshot", form)]
    form = f"match {args.policy} --against {args.against} ..."
    return [_step(args, cli_commands.match, "--against", form)]


def _robustness(args: argparse.Namespace) -> list[argparse.Namespace]:
    steps = []
    if args.exploitability:
        form = f"exploitability {args.policy}"
        steps.append(_step(args, cli_robustness.exploitability, "--exploitability", form))
    if args.exploiter is not None:
        form = f"exploit {args.policy} --steps {args.exploiter} ..."
        steps.append(_step(args, cli_robustness.exploit, "--exploiter", form, steps=args.exploiter))
    return steps
