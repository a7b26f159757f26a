"""``ghost-eval match``, ``snapshots`` and ``tournament`` for runs on a Unity build or a
``module:callable`` environment.

The commands' handlers (``ghost.evaluation.cli_commands``) ask ``plays_env`` first; when it says
yes they hand over to ``match``, ``snapshots`` or ``tournament`` here. These open the environment the
run trained on once (``ghost.play.run_environment``: its recorded ``env_settings``, ``--env``,
``--base-port`` and ``--no-graphics`` replacing what changed) and play every game of the command
in it (``ghost.play.base_env_matches``). There are no scripted levels and no arenas to choose
outside built-in games: ``--against`` and the tournament's players are policy files and run folders,
and the environment plays the areas the run recorded.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from envs.env_kinds import describe_env
from ghost.evaluation.cli_common import (
    MATCH_QUIET_FOR_S,
    SNAPSHOTS,
    Output,
    need_run,
    progress_line,
    resolve_policy,
)
from ghost.exceptions import ConfigError
from ghost.play.run_record import RunRecord

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

    :raises ConfigError: flags that go with one kind of environment given for another.
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


def _open(args: argparse.Namespace, run_root: Path | None) -> Any:
    """The environment of POLICY's run (``--env`` etc. applied), opened: an ``EnvGames``."""
    from ghost.play.base_env_matches import EnvGames
    from ghost.play.run_environment import EnvOverrides

    overrides = EnvOverrides(
        env_path=args.env, base_port=args.base_port, no_graphics=args.no_graphics
    )
    return EnvGames.of_run(run_root, overrides=overrides, seed=args.seed)


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


# -- the commands --------------------------------------------------------------------------------
def match(args: argparse.Namespace, run_root: Path | None, out: Output) -> None:
    """``ghost-eval match``: POLICY against OPPONENT, or against each snapshot of its run."""
    from ghost.evaluation.cli_format import format_result

    _check_common(args)
    _check_player(args.against, label=_env_label(args, run_root), snapshots=True)
    policy, _ = resolve_policy(args.policy)
    if args.against == SNAPSHOTS:
        return _against_snapshots(args, policy, need_run(args, run_root), out)
    with (
        _open(args, run_root) as games,
        progress_line(args, "match", unit="episodes", quiet_for_s=MATCH_QUIET_FOR_S) as line,
    ):
        result = games.head_to_head(
            policy=policy, opponent=args.against, episodes=args.episodes, seed=args.seed,
            side=args.side, deterministic=args.deterministic, progress=line,
        )  # fmt: skip
    out.data.update(result.to_dict())
    out.text.append(format_result(result))


def _against_snapshots(args: argparse.Namespace, policy: Any, run_root: Path, out: Output) -> None:
    """``match --against snapshots``: POLICY against each snapshot of its run."""
    with _open(args, run_root) as games:
        evaluations = _snapshots_of(games, args, run_root, other=policy, snapshots_play="opponent")
    _add_snapshots(out, games.label, evaluations, snapshot_is_policy=False)


def snapshots(args: argparse.Namespace, run_root: Path | None, out: Output) -> None:
    """``ghost-eval snapshots``: each snapshot of RUN against OPPONENT (default: RUN's final
    policy)."""
    _check_common(args)
    run_root = need_run(args, run_root)
    against = args.against if args.against is not None else str(run_root)
    _check_player(against, label=_env_label(args, run_root), snapshots=False)
    with _open(args, run_root) as games:
        evaluations = _snapshots_of(games, args, run_root, other=against, snapshots_play="policy")
    _add_snapshots(out, games.label, evaluations, snapshot_is_policy=True)


def _snapshots_of(
    games: Any, args: argparse.Namespace, run_root: Path, *, other: Any, snapshots_play: Any
) -> list[Any]:
    """``env_evaluation.evaluate_snapshots`` of RUN's snapshots with the command's options."""
    from ghost.evaluation.env_evaluation import evaluate_snapshots

    return evaluate_snapshots(
        games, run_root, other=other, snapshots_play=snapshots_play, episodes=args.episodes,
        seed=args.seed, side=args.side, deterministic=args.deterministic,
    )  # fmt: skip


def _add_snapshots(
    out: Output, label: str, evaluations: list[Any], *, snapshot_is_policy: bool
) -> None:
    """One table per behavior with snapshots; in JSON one list of rows, each naming its run's
    behavior."""
    from ghost.evaluation.cli_format import format_snapshots

    out.data["game"] = label
    out.data["evaluations"] = []
    for evaluation in evaluations:
        title = f"{label}: {evaluation.policy} vs {evaluation.opponent}"
        out.text.append(format_snapshots(title, evaluation, snapshot_is_policy=snapshot_is_policy))
        out.data["evaluations"] += [
            {**row.to_dict(), "snapshots_of": evaluation.policy if snapshot_is_policy
             else evaluation.opponent}
            for row in evaluation
        ]  # fmt: skip


def tournament(
    args: argparse.Namespace,
    run_root: Path | None,
    *,
    progress: Callable[..., None] | None = None,
) -> Any:
    """``ghost-eval tournament``: a round robin of the players of RUN and any other RUNs, rated."""
    from ghost.evaluation.env_evaluation import play_env_tournament

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
    with _open(args, runs[0]) as games:
        return play_env_tournament(
            games, runs, games_per_pair=40 if args.games_per_pair is None else args.games_per_pair,
            seed=args.seed, deterministic=args.deterministic, progress=progress,
        )  # fmt: skip


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
