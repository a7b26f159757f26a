"""``ghost-tune``: search the trainer and self-play settings of a game with Optuna.

The flags are read here; ``ghost.tuning.command`` builds the study's settings from them, creates
or continues the study, runs its trials, then prints and writes the report. How it ends (exit
codes, errors) is ``ghost.command_line``'s.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ghost.command_line import EXIT_USER_ERROR, VersionAction, run_command
from ghost.exceptions import ConfigError
from ghost.tuning import PROG

#: flags that describe a study: given only with CONFIG or --env, which make one
STUDY_FLAGS = {"--space": "space", "--space-only": "space_only", "--yardstick": "yardstick",
               "--steps": "steps", "--seeds-per-trial": "seeds_per_trial", "--reports": "reports",
               "--games": "games", "--exploiter-steps": "exploiter_steps"}  # fmt: skip

_EPILOG = """\
yardsticks (--yardstick):
  auto             exploitability where it is exact, else scripted:medium for built-in games,
                   else exploiter
  exploitability   exact exploitability (two-player zero-sum OpenSpiel games, built-in matrix
                   games); lower is better; reported at every evaluation, so trials are pruned
  scripted:LEVEL   built-in games: the score against a scripted level (win 1, draw 0.5);
                   higher is better; reported at every evaluation
  exploiter        any game: a fresh learner trained --exploiter-steps against the final policy;
                   its score, lower is better; measured at the end of a trial only

search space (--space FILE): a YAML mapping of key paths, laid over the built-in space
  hyperparameters.learning_rate: {low: 1.0e-5, high: 1.0e-3, log: true}
  self_play.window: {low: 3, high: 30}
  network_settings.hidden_units: {choices: [32, 64, 128]}
  hyperparameters.magnet_strength: null          # leaves a built-in key out

examples:
  ghost-tune --env openspiel:kuhn_poker --trials 20 --steps 20000
  ghost-tune config/tennis.yaml --trials 50 --steps 200000 --jobs 2 --yardstick scripted:weak
  ghost-tune config/leduc_poker.yaml --study-name leduc --storage postgresql://host/optuna
  ghost-tune --summary --study-name kuhn_poker

Results go to <results-dir>/<study>/: study.db (the storage, unless --storage), trials/ (each
trial's runs and logs), summary.txt, trials.csv, importance.png and best.yaml, which
ghost-learn trains as it is. The same command again continues the study.
"""


def build_parser() -> argparse.ArgumentParser:
    """The flags of ``ghost-tune`` (``--help`` explains them)."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Search trainer and self-play settings with Optuna: each trial trains the "
        "game with values drawn from the search space and is judged by one yardstick; bad "
        "trials are pruned early. Progress: one line per finished trial; at the end a table "
        "(best first), the parameter importance and best.yaml.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "config",
        nargs="?",
        metavar="CONFIG",
        help="trainer YAML to start from (default: the shipped config of --env)",
    )
    _add_what_to_tune(parser.add_argument_group("what to tune"))
    _add_budget(parser.add_argument_group("budget"))
    _add_where(parser.add_argument_group("where"))
    parser.add_argument(
        "--summary",
        action="store_true",
        help="print (and write) the report of an existing study; run nothing",
    )
    parser.add_argument("--debug", action="store_true", help="debug log lines and tracebacks")
    parser.add_argument("--version", action=VersionAction)
    return parser


def _add_what_to_tune(what: argparse._ArgumentGroup) -> None:
    """The game, the search space and the yardstick trials are judged by."""
    what.add_argument(
        "--env",
        metavar="GAME",
        help="the game (env_settings.env_path): tennis, openspiel:kuhn_poker, ...",
    )
    what.add_argument(
        "--space",
        metavar="FILE",
        help="YAML of key path -> {low, high, log} or {choices}, laid over the "
        "built-in space of the game's kind",
    )
    what.add_argument(
        "--space-only",
        action="store_true",
        help="search only the keys of --space, not the built-in space",
    )
    what.add_argument(
        "--yardstick",
        default="auto",
        metavar="{auto,exploitability,scripted:LEVEL,exploiter}",
        help="what a trial is judged by (default: auto; see below)",
    )


def _add_budget(budget: argparse._ArgumentGroup) -> None:
    """How many trials, how long each trains and how often it is judged (and maybe pruned)."""
    budget.add_argument(
        "--trials",
        type=int,
        default=20,
        metavar="N",
        help="size of the study: run trials until it holds N, counting those of "
        "earlier commands (default: 20)",
    )
    budget.add_argument(
        "--steps",
        type=int,
        metavar="STEPS",
        help="trainer steps of each run (default: the config's max_steps)",
    )
    budget.add_argument(
        "--seeds-per-trial",
        type=int,
        default=1,
        metavar="K",
        help="runs per trial, seeds S..S+K-1 (S: the config's seed); the trial's "
        "value is their mean (default: 1)",
    )
    budget.add_argument(
        "--reports",
        type=int,
        default=4,
        metavar="N",
        help="evaluations during a run, the points where a trial may be pruned (default: 4)",
    )
    budget.add_argument(
        "--games",
        type=int,
        default=100,
        metavar="N",
        help="games per evaluation against a scripted level or an exploiter (default: 100)",
    )
    budget.add_argument(
        "--exploiter-steps",
        type=int,
        metavar="N",
        help="training steps of an exploiter (default: half of --steps)",
    )
    budget.add_argument(
        "--pruner",
        default="median",
        choices=("median", "none"),
        help="median: stop a trial worse than the median of earlier trials at "
        "the same evaluation (default); none: never",
    )


def _add_where(where: argparse._ArgumentGroup) -> None:
    """The study's name, where its results and storage go, and how many workers run it."""
    where.add_argument(
        "--study-name", metavar="NAME", help="the study (default: the config's or the game's name)"
    )
    where.add_argument(
        "--results-dir",
        default="results",
        metavar="DIR",
        help="results go to DIR/<study>/ (default: results)",
    )
    where.add_argument(
        "--storage",
        metavar="URL",
        help="Optuna storage shared by every worker: a database URL "
        "(sqlite:///x.db, postgresql://...) or a journal file path (default: "
        "DIR/<study>/study.db)",
    )
    where.add_argument(
        "--jobs",
        type=int,
        default=1,
        metavar="J",
        help="worker processes on this machine (default: 1)",
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``ghost-tune`` with ``argv`` (default: the command line); the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        import optuna  # noqa: F401 - an optional extra
    except ImportError:
        print(f"{PROG}: error: Optuna is not installed; pip install 'ghost-trainer[tune]'",
              file=sys.stderr)  # fmt: skip
        return EXIT_USER_ERROR
    from ghost.tuning.command import run

    def body() -> int:
        check_study_flags(parser, args)
        return run(args)

    return run_command(PROG, body, debug=lambda: args.debug)


def check_study_flags(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse flags describing a study where no study is made (no CONFIG or --env: the study
    continues, or is summarized, with the settings it was made with)."""
    if args.config is not None or args.env is not None:
        return
    given = [flag for flag, dest in STUDY_FLAGS.items()
             if getattr(args, dest) != parser.get_default(dest)]  # fmt: skip
    if given:
        raise ConfigError(
            f"{', '.join(given)} describe(s) a study, which is made only with CONFIG or --env "
            "GAME; an existing study keeps the settings it was made with (drop the flag, or "
            "give CONFIG/--env to check that they are the same)"
        )


if __name__ == "__main__":
    sys.exit(main())
