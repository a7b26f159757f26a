"""Which venue a ``ghost-eval`` command plays in, and what each kind of environment refuses.

``open_for`` opens the venue (``ghost.play.venues.open_venue``): the Unity build or
``module:callable`` environment POLICY's run trained on, or that ``--env`` names (its recorded
``env_settings``, ``--env``, ``--base-port`` and ``--no-graphics`` replacing what changed); the
run's OpenSpiel or PettingZoo game; else the built-in game of ``--game`` or of the run. There are
no scripted levels and no arenas to choose outside built-in games: ``--against`` and the
tournament's players are policy files and run folders, and the environment plays the areas the
run recorded; the checks here say so before anything starts.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import Any

from envs.env_kinds import describe_env
from envs.games import BUILTIN_GAMES
from ghost.evaluation.cli_common import SNAPSHOTS, need_run, resolve_policy
from ghost.exceptions import ConfigError
from ghost.play.matches import check_game
from ghost.play.run_environment import EnvOverrides
from ghost.play.run_record import RunRecord
from ghost.play.venue import Venue
from ghost.play.venues import open_venue

logger = logging.getLogger(__name__)

_UNITY_FLAGS = ("base_port", "no_graphics")


def _flags(args: argparse.Namespace, *dests: str) -> list[str]:
    """The options among ``dests`` (``num_arenas``) given on the command line, as typed."""
    return [f"--{dest.replace('_', '-')}" for dest in dests if getattr(args, dest, None)]


def _other_runs(args: argparse.Namespace) -> list[str]:
    return list(getattr(args, "others", None) or [])


def plays_env(args: argparse.Namespace, run_root: Path | None) -> bool:
    """Whether the command plays in a Unity build or ``module:callable`` environment: POLICY's
    run trained on one, or ``--env`` names one (and ``--game`` does not name a built-in game).

    Raises:
        ConfigError: flags that go with one kind of environment given for another.
    """
    env = getattr(args, "env", None)
    run = RunRecord(run_root) if run_root is not None else None
    if env:
        _check_env_flag(env, game=args.game, run=run)
        return True
    if not args.game and run is not None and run.base_env_path is not None:
        return True
    given = _flags(args, *_UNITY_FLAGS)
    if given:
        raise ConfigError(f"{' and '.join(given)}: for runs on a Unity build, not {args.policy}")
    if _other_runs(args):
        raise ConfigError(
            "a tournament of several runs is played in a Unity build or module:callable "
            "environment; for a built-in, OpenSpiel or PettingZoo game pass one RUN (other "
            "runs' policies can join as its self_play.fixed_opponents)"
        )
    return False


def _check_env_flag(env: str, *, game: str | None, run: RunRecord | None) -> None:
    """``--env`` names a Unity build or ``module:callable``, for a run on one (or no run)."""
    what = "--env names a Unity build or module:callable"
    if game:
        raise ConfigError(f"{what} and --game a built-in game; pass one of them")
    capabilities = describe_env(env).capabilities
    if capabilities.arenas:
        raise ConfigError(f"{what}; for the built-in game {env} pass --game {env}")
    if capabilities.seated:
        raise ConfigError(f"{what}; {env} is played from a run trained on it (its env_path)")
    if run is not None and run.env_path is not None and run.base_env_path is None:
        raise ConfigError(
            f"{what}; {run.root} trained on {run.env_path}, which plays without it (a built-in "
            "game: --game)"
        )


def _refuse(args: argparse.Namespace, *dests: str) -> None:
    """A ``ConfigError`` naming those of the built-in games' options ``dests`` given."""
    given = _flags(args, *dests)
    if given:
        raise ConfigError(
            f"{', '.join(given)}: for built-in games only; a Unity build or module:callable "
            "environment plays the areas its run recorded (env_settings.num_areas)"
        )


def _check_player(text: str, *, label: str, snapshots: bool) -> None:
    """One line naming what ``--against`` accepts here when ``text`` is none of it."""
    if Path(text).exists() or (snapshots and text == SNAPSHOTS):
        return
    accepted = "a run folder or a policy file (a final <Behavior>.pt or a snapshot)"
    accepted += ", or 'snapshots'" if snapshots else ""
    raise ConfigError(
        f"--against {text}: no such file or folder; in {label} --against takes {accepted} "
        "(scripted opponents exist only for built-in games)"
    )


def _env_label(args: argparse.Namespace, run_root: Path | None) -> str:
    """The environment as the user named it, for messages given before it is opened."""
    if args.env:
        return str(args.env)
    return (RunRecord(run_root).env_path if run_root is not None else None) or "this environment"


def _check_common(args: argparse.Namespace) -> None:
    """Built-in games' flags are refused, and ``--record`` and ``--ray-address`` too."""
    _refuse(args, "num_arenas")
    if getattr(args, "record", None) or getattr(args, "ray_address", None):
        raise ConfigError(
            "--record and --ray-address are for built-in games; a Unity build or "
            "module:callable environment plays here, one game after the other"
        )


# -- opening the venue ----------------------------------------------------------------------------
def is_seated(args: argparse.Namespace, run_root: Path | None) -> bool:
    """Whether POLICY is a run on an OpenSpiel or PettingZoo game (and no --game says
    otherwise).

    Args:
        args: the parsed command line.
        run_root: POLICY's run folder, if any.

    Returns:
        Whether the command plays a seated game.
    """
    if run_root is None or args.game:
        return False
    return RunRecord(run_root).seated_env_path is not None


def open_for(args: argparse.Namespace, run_root: Path | None) -> Venue:
    """The venue the command plays in: the run's Unity build or ``module:callable`` environment
    (``--env`` etc. applied), its OpenSpiel or PettingZoo game, or the built-in game of
    ``--game`` or of the run.

    Args:
        args: the parsed command line.
        run_root: the run folder whose environment is played, if any.

    Returns:
        The venue, open (close it when done).

    Raises:
        ConfigError: flags of another kind of environment, or no game to tell.
    """
    run = RunRecord(run_root) if run_root is not None else None
    if plays_env(args, run_root):
        overrides = EnvOverrides(
            env_path=args.env, base_port=args.base_port, no_graphics=args.no_graphics
        )
        return open_venue(args.env, run=run, overrides=overrides, seed=args.seed)
    if is_seated(args, run_root):
        assert run is not None
        return open_venue(run.seated_env_path)
    return open_venue(_builtin_game(args, run_root), num_arenas=getattr(args, "num_arenas", None))


def _builtin_game(args: argparse.Namespace, run_root: Path | None) -> str:
    """--game, or the built-in game of POLICY's run; checked."""
    game = args.game or (RunRecord(run_root).builtin_game if run_root is not None else None)
    if game is None:
        games = ", ".join(sorted(BUILTIN_GAMES))
        note = RunRecord(run_root).host.game_note if run_root is not None else None
        raise ConfigError(
            f"cannot tell the game of {Path(args.policy)}: {note} (built-in games: {games})"
            if note
            else f"cannot tell the game of {Path(args.policy)}; pass --game (one of {games}) or "
            "--env (a Unity build or module:callable)"
        )
    check_game(game)
    return game


def check_env_command(
    args: argparse.Namespace, run_root: Path | None, *, against: Any, snapshots: bool
) -> None:
    """What a Unity build or ``module:callable`` environment refuses: built-in games' flags,
    ``--record``, ``--ray-address``, and an ``--against`` that is no file or folder.

    Args:
        args: the parsed command line.
        run_root: POLICY's run folder, if any.
        against: the opponent as typed (None: none to check).
        snapshots: whether ``--against snapshots`` is accepted (``match``).

    Raises:
        ConfigError: one of those.
    """
    _check_common(args)
    if against is not None:
        _check_player(against, label=_env_label(args, run_root), snapshots=args.command == "match")


def tournament_runs(args: argparse.Namespace, run_root: Path | None) -> list[Path]:
    """RUN and the other RUNs of a tournament in a Unity build or ``module:callable``
    environment, checked.

    Args:
        args: the parsed command line.
        run_root: RUN's run folder.

    Returns:
        The run folders, RUN first.

    Raises:
        ConfigError: ``--include-levels`` (no scripted levels here), or an other RUN that is no
            run folder.
    """
    _check_common(args)
    if args.include_levels.strip():
        raise ConfigError(
            f"--include-levels: scripted levels exist only for built-in games; in "
            f"{_env_label(args, run_root)} add other runs instead (ghost-eval tournament RUN "
            "OTHER_RUN)"
        )
    runs = [need_run(args, run_root)]
    for other in _other_runs(args):
        _, other_root = resolve_policy(other)
        if other_root is None:
            raise ConfigError(f"{args.label}: {other} is not a run folder (results/<run-id>)")
        runs.append(other_root)
    _warn_other_environments(runs)
    return runs


def _warn_other_environments(runs: list[Path]) -> None:
    """A warning for each run that trained elsewhere than the first (the tournament plays there)."""
    first = RunRecord(runs[0]).env_path
    for run in runs[1:]:
        env_path = RunRecord(run).env_path
        if env_path != first:
            logger.warning(
                "the tournament plays in %s (the first run's environment); %s trained on %s",
                first,
                run,
                env_path,
            )
