"""What the ``ghost-eval`` commands share: their options, POLICY read from the command line, and
the output one call collects from its commands.

The parsers are built here and in the command modules without importing torch, so that
``--help`` answers at once; the handlers import what they play with.
"""

from __future__ import annotations

import argparse
import json
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from ghost.command_line import positive_int
from ghost.exceptions import CheckpointError, ConfigError

if TYPE_CHECKING:
    from ghost.evaluation.progress import ProgressLine

PROG = "ghost-eval"
SNAPSHOTS = "snapshots"

#: what POLICY and OPPONENT may be, at the end of the commands' help
PLAYERS = """\
POLICY is a policy file (final <Behavior>.pt, checkpoint or snapshot) or a run folder
(results/<run-id>: its final policy); RUN is a run folder. OPPONENT is a scripted level of the
game (random, weak, medium, strong; rock_paper_scissors/biased_rps: random, equilibrium, rock,
paper, scissors, rock_heavy; OpenSpiel/PettingZoo: random, one_ply), another policy file or run
folder. Results are counted from POLICY's side; interrupted episodes are left out of the rates.
Runs on a Unity build or a module:callable environment play in it again (the run's
env_settings; --env if it moved): OPPONENT is a policy file or run folder, and POLICY plays each
team in turn."""


@attrs.define
class Output:
    """What the commands of one ``ghost-eval`` call found: one JSON object, or blocks of text."""

    data: dict[str, Any] = attrs.field(factory=dict)
    text: list[str] = attrs.field(factory=list)

    def emit(self, *, as_json: bool) -> int:
        """Print the JSON object (``as_json``) or the text blocks; the exit code, 0."""
        print(json.dumps(self.data, indent=2) if as_json else "\n\n".join(self.text))
        return 0


# -- options -------------------------------------------------------------------------------------
def new_command(
    commands: Any,
    name: str,
    *,
    summary: str,
    description: str,
    examples: str,
    aliases: Sequence[str] = (),
) -> argparse.ArgumentParser:
    """A subcommand's parser.

    Args:
        commands: the subparsers of ``ghost-eval``.
        name: the command's name.
        summary: its line in ``ghost-eval --help``.
        description: what its own ``--help`` says first.
        examples: what its own ``--help`` shows below the options.
        aliases: other names of the command (a former name that scripts still call).

    Returns:
        The command's parser.
    """
    parser = commands.add_parser(
        name,
        aliases=list(aliases),
        help=summary,
        description=textwrap.fill(description, 79),
        epilog="examples:\n" + examples + "\n\n" + PLAYERS,
        allow_abbrev=False,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.set_defaults(parser=parser)  # its own usage line for options it does not know
    return parser


def add_output_options(parser: argparse.ArgumentParser) -> None:
    """``--json`` and ``--debug``, which every command has."""
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--debug", action="store_true", help="tracebacks for user errors")


def add_play_options(
    parser: argparse.ArgumentParser,
    *,
    episodes: str | None = "matches played",
    deterministic: bool = True,
) -> None:
    """``--episodes`` (with its help text ``episodes``; none when None), ``--seed``,
    ``--num-arenas`` and, with ``deterministic``, ``--deterministic``."""
    if episodes is not None:
        parser.add_argument(
            "--episodes",
            type=positive_int,
            default=200,
            metavar="N",
            help=f"{episodes} (default: 200)",
        )
    parser.add_argument("--seed", type=int, default=0, metavar="S", help="seed (default: 0)")
    games = "--episodes" if episodes is not None else "the games of a pair"
    parser.add_argument(
        "--num-arenas", type=positive_int, metavar="N", help=f"matches played at once (default: {games}, "
        "32 at most)",
    )  # fmt: skip
    if deterministic:
        parser.add_argument(
            "--deterministic",
            action="store_true",
            help="policies take their most likely action instead of sampling",
        )


def add_game_options(parser: argparse.ArgumentParser, *, side: bool = True) -> None:
    """``--game``, the environment options (``add_env_options``) and, with ``side``,
    ``--side``."""
    parser.add_argument("--game", help="built-in game (default: the run's env_settings.env_path)")
    add_env_options(parser)
    if side:
        parser.add_argument(
            "--side",
            metavar="BEHAVIOR",
            help="the behavior POLICY plays, e.g. Goalie or Tennis?team=1 (default: team 0's; "
            "Unity builds and module:callable: each team in turn)",
        )


def add_env_options(parser: argparse.ArgumentParser) -> None:
    """``--env``, ``--base-port`` and ``--no-graphics``: where runs on a Unity build or a
    ``module:callable`` environment play."""
    parser.add_argument(
        "--env",
        metavar="ENV",
        help="Unity build path or module:callable to play in (default: the run's "
        "env_settings.env_path, e.g. when the build moved)",
    )
    parser.add_argument(
        "--base-port",
        type=int,
        metavar="PORT",
        help="port the Unity build listens on (default: the first free one from the run's "
        "base_port + 100)",
    )
    parser.add_argument(
        "--no-graphics", action="store_true", help="start the Unity build without graphics"
    )


def add_against_option(parser: argparse.ArgumentParser, *, snapshots: bool) -> None:
    """The required ``--against``; with ``snapshots`` it may be 'snapshots'."""
    more = ", or 'snapshots' (each snapshot of POLICY's run in turn)" if snapshots else ""
    parser.add_argument(
        "--against",
        metavar="OPPONENT",
        required=True,
        help=f"scripted level, policy file or run folder{more}",
    )


def add_record_options(parser: argparse.ArgumentParser) -> None:
    """``--record`` and ``--record-episodes``: a replay GIF beside the evaluation."""
    parser.add_argument(
        "--record",
        metavar="OUT.gif",
        help="also record a replay GIF of POLICY against OPPONENT in one arena",
    )
    parser.add_argument(
        "--record-episodes",
        type=positive_int,
        metavar="N",
        help="episodes in the replay (default: 3; matrix games: 20 rounds)",
    )


def add_demo_options(parser: argparse.ArgumentParser) -> None:
    """``--record-demo`` and ``--record-side``: one side's demonstrations recorded while the
    match is played."""
    parser.add_argument(
        "--record-demo",
        metavar="FILE",
        help="also record one side's steps of the match into an ML-Agents .demo file (for "
        "behavioral_cloning and GAIL's demo_path); a folder gets <Behavior>.demo",
    )
    parser.add_argument(
        "--record-side",
        metavar="BEHAVIOR",
        help="the side --record-demo records: a behavior (every team of it) or Name?team=N "
        "(default: POLICY's side)",
    )


def add_ray_option(parser: argparse.ArgumentParser, *, what: str) -> None:
    """``--ray-address``: play ``what`` as Ray tasks."""
    parser.add_argument(
        "--ray-address",
        metavar="ADDRESS",
        help=f"play {what} as Ray tasks, all at once, on this Ray cluster (auto, HOST:6379, "
        "ray://HOST:10001, or local for a Ray on this machine); needs the ray extra",
    )


def add_tournament_options(parser: argparse.ArgumentParser) -> None:
    """``--games-per-pair`` and ``--include-levels``."""
    parser.add_argument(
        "--games-per-pair",
        type=positive_int,
        metavar="N",
        help="games each pair plays (default: 40)",
    )
    parser.add_argument(
        "--include-levels",
        default="",
        metavar="LEVELS",
        help="scripted levels to add as players, comma-separated (e.g. medium,strong)",
    )


# -- reading the command line --------------------------------------------------------------------
def resolve_policy(text: str) -> tuple[Any, Path | None]:
    """POLICY as typed: the player (a path, or a scripted level's name, handy to check a game or
    an opponent) and the run folder it lies in, if any."""
    from ghost.evaluation import report
    from ghost.play import matches

    source = Path(text)
    if not source.exists() and matches.looks_like_path(text):
        raise CheckpointError(f"{source}: no such policy file or run folder")
    if not source.exists():
        return text, None
    return source, report.find_run_root(source)


def need_run(args: argparse.Namespace, run_root: Path | None) -> Path:
    """The run folder, or an error naming the command (``args.label``) that needs one."""
    if run_root is None:
        raise ConfigError(
            f"{args.label} needs a run folder (results/<run-id>); {Path(args.policy)} is not one"
        )
    return run_root


def play_options(args: argparse.Namespace) -> dict[str, Any]:
    """The keyword arguments of a venue's games that ``add_play_options`` asked for (its
    ``--num-arenas`` goes to the venue itself).

    Args:
        args: the parsed command line.

    Returns:
        ``episodes``, ``seed`` and ``deterministic``.
    """
    return {"episodes": args.episodes, "seed": args.seed, "deterministic": args.deterministic}


def ray_games(ray_address: str | None) -> Any:
    """The Ray runner of games for ``--ray-address``, or None: one by one, here."""
    if ray_address is None:
        return None
    from ghost.play.game_runner import RayGames

    return RayGames(ray_address)


def progress_line(
    args: argparse.Namespace, label: str, *, unit: str, quiet_for_s: float = 0.0
) -> ProgressLine:
    """The progress of a command's long work on stderr; silent with ``--quiet``, and for
    ``quiet_for_s`` seconds (work that may well be short)."""
    from ghost.evaluation.progress import ProgressLine

    quiet = getattr(args, "quiet", False)
    return ProgressLine(label, unit=unit, quiet=quiet, quiet_for_s=quiet_for_s)


#: a single match shows progress only once it has run this long (most end sooner)
MATCH_QUIET_FOR_S = 2.0
