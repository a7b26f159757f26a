"""``ghost-eval``: evaluate trained policies in a game, rate a run's players, test how exploitable
a policy is, record a replay, plot a run.

One command per task, each with its own parser and handler: ``match`` and ``snapshots``
(``cli_commands``), ``tournament`` (also called by its former name, ``league``) and
``report`` (the same module), ``exploitability`` and
``exploit`` (``cli_robustness``). The old flag form (``ghost-eval RUN --league``) still works
through ``cli_legacy``, with a note naming the new form. A user mistake ends as one line on
stderr and exit code 2 (``ghost.command_line``).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from envs.exceptions import did_you_mean
from ghost.command_line import VersionAction, run_command, setup_logging
from ghost.evaluation import cli_legacy
from ghost.evaluation.cli_commands import (
    TOURNAMENT_ALIAS,
    add_match,
    add_report,
    add_snapshots,
    add_tournament,
)
from ghost.evaluation.cli_common import PROG, Output
from ghost.evaluation.cli_robustness import add_exploit, add_exploitability

COMMANDS = {
    "match": add_match,
    "snapshots": add_snapshots,
    "tournament": add_tournament,
    "exploitability": add_exploitability,
    "exploit": add_exploit,
    "report": add_report,
}

#: every word that starts a command: the commands and the former name of ``tournament``
NAMES = (*COMMANDS, TOURNAMENT_ALIAS)

_EPILOG = f"""\
examples:
  ghost-eval match results/tennis --against strong          final policy vs a scripted level
  ghost-eval match results/tennis --against snapshots       final policy vs each of its snapshots
  ghost-eval snapshots results/tennis --against medium      the run's progress vs a level
  ghost-eval tournament results/tennis --include-levels medium,strong   rate the run's players
  ghost-eval exploitability results/leduc                   exact, final policy and snapshots
  ghost-eval exploit results/c4 --steps 200000              train a best response, score it
  ghost-eval report results/tennis tennis.png               Elo and reward curves of the run

'{PROG} COMMAND --help' explains a command and its options."""


def build_parser() -> argparse.ArgumentParser:
    """The ``ghost-eval`` argument parser: one subcommand per task."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Evaluate trained policies in a game, rate a run's players, test how\n"
        "exploitable a policy is, record a replay, plot a run's training curves.",
        allow_abbrev=False,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action=VersionAction)
    commands = parser.add_subparsers(
        title="commands", dest="command", metavar="COMMAND", required=True
    )
    for add_command in COMMANDS.values():
        add_command(commands)
    for command in {id(parser): parser for parser in commands.choices.values()}.values():
        add_quiet_option(command)  # once per parser: an alias names the same one
    return parser


def add_quiet_option(parser: argparse.ArgumentParser) -> None:
    """``--quiet``: no progress lines on stderr (the results and errors still print)."""
    parser.add_argument(
        "--quiet", action="store_true", help="no progress lines on stderr during long work"
    )


def _legacy_parser() -> argparse.ArgumentParser:
    parser = cli_legacy.build_parser()
    add_quiet_option(parser)
    return parser


def _misspelt_command(argv: Sequence[str]) -> str | None:
    """The one-line complaint for a first word that is close to a command but neither a command
    nor an existing run folder (``ghost-eval matc RUN``), or None."""
    if not argv or argv[0].startswith("-") or argv[0] in NAMES or Path(argv[0]).exists():
        return None
    hint = did_you_mean(argv[0], COMMANDS)
    if not hint:
        return None
    return f"unknown command {argv[0]!r}; {hint} (commands: {', '.join(COMMANDS)})"


def is_flag_form(argv: Sequence[str]) -> bool:
    """Whether ``argv`` is the old flag form: it does not start with a command (or ``--help``,
    ``--version``)."""
    return bool(argv) and argv[0] not in NAMES and argv[0] not in ("-h", "--help", "--version")


def run(steps: Sequence[argparse.Namespace]) -> int:
    """Carry out parsed commands (one, or a few from the flag form) and print what they found."""
    # imported here, not at the top, so that --help answers without loading torch
    import torch

    from trainers.fast_acting import limit_blas_threads

    # batches of a few dozen observations: extra threads only contend (as in ghost-learn on CPU)
    torch.set_num_threads(1)
    limit_blas_threads()  # numpy acts for small policies (trainers.fast_acting)
    output = Output()
    for args in steps:
        args.handler(args, output)
    return output.emit(as_json=steps[0].json)


def _unknown_options(parser: argparse.ArgumentParser, argv: Sequence[str]) -> None:
    """Refuse an option the command does not have before argparse checks the required ones:
    ``match RUN --againts strong`` is a misspelt flag, not a missing ``--against``."""
    if not argv or argv[0] not in NAMES:
        return
    command = next(
        action.choices[argv[0]]
        for action in parser._actions
        if isinstance(action, argparse._SubParsersAction)
    )
    known = command._option_string_actions
    for word in argv[1:]:
        flag = word.split("=", 1)[0]
        if flag.startswith("--") and flag != "--" and flag not in known:
            hint = did_you_mean(flag, [option for option in known if option.startswith("--")])
            command.error(f"unrecognized argument {flag}" + (f"; {hint}" if hint else ""))


def _parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = build_parser()
    _unknown_options(parser, argv)
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # said by the command's parser, whose usage lists the options it has
        args.parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``ghost-eval``; returns the process exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    misspelt = _misspelt_command(argv)
    if misspelt is not None:
        build_parser().error(misspelt)
    flag_form = is_flag_form(argv)
    args = _legacy_parser().parse_args(argv) if flag_form else _parse(argv)
    setup_logging(args.debug, level=logging.WARNING)

    def body() -> int:
        return run(cli_legacy.route(args) if flag_form else [args])

    return run_command(PROG, body, debug=lambda: args.debug)


if __name__ == "__main__":
    sys.exit(main())
