"""``ghost-eval``: evaluate a trained policy in a built-in game, record a replay, plot a run.

A user mistake ends as one line on stderr and exit code 2 (``ghost.command_line``).

Size: ``build_parser`` is one flat table of flags (84 lines) and the module holds every
``ghost-eval`` mode's formatting; splitting either would scatter one command's text.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ghost.command_line import run_command, setup_logging
from ghost.exceptions import CheckpointError, ConfigError

PROG = "ghost-eval"
SNAPSHOTS = "snapshots"

_EPILOG = """\
examples:
  ghost-eval results/tennis --against strong              final policy vs the scripted level
  ghost-eval results/tennis/Tennis.pt --game tennis --against results/other/Tennis.pt --json
  ghost-eval results/tennis --against snapshots           final policy vs each of its snapshots
  ghost-eval results/tennis --against medium --each-snapshot   the run's progress vs a level
  ghost-eval results/svg --side Goalie --against strong   the goalie of an asymmetric game
  ghost-eval results/tennis --against strong --record tennis.gif
  ghost-eval results/tennis --report tennis.png           Elo and reward curves of the run
  ghost-eval results/tennis --league --include-levels medium,strong   rate the run's players
  ghost-eval results/leduc --exploitability               exact, final policy and snapshots
  ghost-eval results/c4 --against one_ply                 OpenSpiel/PettingZoo: every seat
  ghost-eval results/c4 --exploiter 200000                train a best response, score it
  ghost-eval results/tennis --exploiter 100000 --episodes 400   the same, every side

POLICY is a policy file (final <Behavior>.pt, checkpoint or snapshot) or a run folder
(results/<run-id>: its final policy). OPPONENT is a scripted level of the game (random, weak,
medium, strong; rock_paper_scissors/biased_rps: random, equilibrium, rock, paper, scissors,
rock_heavy), another policy file or run folder, or 'snapshots'. Results are counted from POLICY's
side; interrupted episodes are left out of the rates.
"""


def build_parser() -> argparse.ArgumentParser:
    """The ``ghost-eval`` argument parser."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Evaluate a policy against a scripted level, another policy or a run's "
        "snapshots in a built-in game; record a replay GIF; plot a run's training curves.",
        allow_abbrev=False,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("policy", metavar="POLICY", help="policy file or run folder")
    parser.add_argument("--game", help="built-in game (default: the run's env_settings.env_path)")
    parser.add_argument(
        "--against",
        metavar="OPPONENT",
        help="scripted level, policy file, run folder, or 'snapshots'",
    )
    parser.add_argument(
        "--episodes",
        type=int,
        default=200,
        metavar="N",
        help="matches per evaluation (default: 200)",
    )
    parser.add_argument("--seed", type=int, default=0, metavar="S", help="seed (default: 0)")
    parser.add_argument(
        "--side",
        metavar="BEHAVIOR",
        help="the behavior POLICY plays, e.g. Goalie or Tennis?team=1 (default: team 0's)",
    )
    parser.add_argument(
        "--num-arenas",
        type=int,
        metavar="N",
        help="matches played at once (default: min(episodes, 32))",
    )
    parser.add_argument(
        "--deterministic",
        action="store_true",
        help="POLICY takes its most likely action instead of sampling",
    )
    parser.add_argument(
        "--each-snapshot",
        action="store_true",
        help="evaluate every snapshot of the run (POLICY a run folder) against "
        "OPPONENT instead of its final policy",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--record",
        metavar="OUT.gif",
        help="also record a replay of POLICY against OPPONENT in one arena",
    )
    parser.add_argument(
        "--record-episodes",
        type=int,
        metavar="N",
        help="episodes in the replay (default: 3; matrix games: 20 rounds)",
    )
    parser.add_argument(
        "--report",
        metavar="OUT.png",
        help="draw the run's Elo and cumulative reward curves (needs matplotlib)",
    )
    parser.add_argument(
        "--league",
        action="store_true",
        help="round robin between the run's snapshots, final policy and fixed opponents "
        "(POLICY a run folder); prints Elo (Bradley-Terry fit) and OpenSkill ratings",
    )
    parser.add_argument(
        "--games-per-pair",
        type=int,
        metavar="N",
        help="--league: games each pair plays (default: 40)",
    )
    parser.add_argument(
        "--include-levels",
        default="",
        metavar="LEVELS",
        help="--league: scripted levels to add as players, comma-separated (e.g. medium,strong)",
    )
    parser.add_argument(
        "--ray-address",
        metavar="ADDRESS",
        help="--league, --each-snapshot, --against snapshots: play the pairs or snapshots as Ray "
        "tasks, all at once, on this Ray cluster (auto, HOST:6379, ray://HOST:10001, or local "
        "for a Ray on this machine); needs the ray extra",
    )
    parser.add_argument(
        "--exploitability",
        action="store_true",
        help="exact exploitability (NashConv / 2) of the final policy and every snapshot "
        "(runs on two-player zero-sum OpenSpiel games)",
    )
    parser.add_argument(
        "--exploiter",
        type=int,
        metavar="STEPS",
        help="train a fresh learner for STEPS steps against the frozen final policy, then play "
        "it --episodes games per seat or side: the exploitability estimate of games too big "
        "to enumerate (runs on built-in, OpenSpiel and PettingZoo games; in strikers_vs_goalie "
        "one exploiter per side)",
    )
    parser.add_argument("--debug", action="store_true", help="tracebacks for user errors")
    return parser


# -- formatting ----------------------------------------------------------------------------------
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


# -- the command -------------------------------------------------------------------------------
def run(args: argparse.Namespace) -> int:
    """Carry out parsed ``ghost-eval`` arguments; prints the results."""
    # imported here, not at the top, so that --help answers without loading torch
    import torch

    from ghost.evaluation import head_to_head as evaluation
    from ghost.evaluation import matches, report

    # batches of a few dozen observations: extra threads only contend (as in ghost-learn on CPU)
    torch.set_num_threads(1)

    source = Path(args.policy)
    if not source.exists() and matches.looks_like_path(args.policy):
        raise CheckpointError(f"{source}: no such policy file or run folder")
    # a scripted level may stand in for POLICY too, handy to check a game or an opponent
    run_root = report.find_run_root(source) if source.exists() else None
    policy: Any = source if source.exists() else args.policy
    output: dict[str, Any] = {}
    text: list[str] = []
    if args.report:
        if run_root is None:
            raise ConfigError(
                f"--report needs a run folder (results/<run-id>); {source} is not one"
            )
        path = report.write_report(run_root, args.report)
        output["report"] = str(path)
        text.append(f"report: {path}")
    if args.league:
        return _league(args, source, run_root, output, text)
    if args.ray_address and not (args.each_snapshot or args.against == SNAPSHOTS):
        raise ConfigError(
            "--ray-address plays many evaluations at once: it goes with --league, "
            "--each-snapshot or --against snapshots"
        )
    if args.exploitability or args.exploiter is not None:
        return _robustness(args, run_root, output, text)
    if args.against is not None and run_root is not None and not args.game:
        from ghost.evaluation.seated_runs import run_env_path

        if run_env_path(run_root) is not None:
            return _seated_against(args, run_root, output, text)
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
        return _emit(args, output, text)
    game = args.game or (report.run_game(run_root) if run_root is not None else None)
    if game is None:
        raise ConfigError(
            f"cannot tell the game of {source}; pass --game (one of "
            f"{', '.join(sorted(matches.BUILTIN_GAMES))})"
        )
    matches.check_game(game)
    if args.each_snapshot or args.against == SNAPSHOTS:
        replay_opponent = _evaluate_snapshots(args, game, policy, run_root, output, text)
    else:
        replay_opponent = args.against
        result = evaluation.evaluate(
            game=game, policy=policy, opponent=args.against, side=args.side, **_common(args)
        )
        output.update(result.to_dict())
        text.append(format_result(result))
    if args.record:
        _record(args, game, policy, replay_opponent, output, text)
    return _emit(args, output, text)


def _common(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "episodes": args.episodes,
        "seed": args.seed,
        "num_arenas": args.num_arenas,
        "deterministic": args.deterministic,
    }


def _evaluate_snapshots(
    args: argparse.Namespace,
    game: str,
    policy: Any,
    run_root: Path | None,
    output: dict[str, Any],
    text: list[str],
) -> Any:
    """``--each-snapshot`` or ``--against snapshots``; returns the opponent for ``--record``."""
    from ghost.evaluation import head_to_head as evaluation
    from ghost.evaluation import matches, report

    if run_root is None:
        raise ConfigError(f"{args.policy} is not inside a run folder, which has the snapshots")
    if args.each_snapshot:
        if args.against == SNAPSHOTS:
            raise ConfigError(
                "--each-snapshot plays the snapshots; --against must be another player, "
                "not 'snapshots'"
            )
        behavior = matches.policy_behavior(game, args.side)
        rows = evaluation.evaluate_run(
            run_root, behavior, opponent=args.against, game=game,
            games=_ray_games(args.ray_address), **_common(args),
        )  # fmt: skip
        title = f"{game}: each snapshot of {behavior} in {run_root} vs {rows[0].result.opponent}"
        replay_opponent = args.against
    else:
        rows = evaluation.evaluate_against_snapshots(
            game=game, policy=policy, run_dir=run_root, side=args.side,
            games=_ray_games(args.ray_address), **_common(args),
        )  # fmt: skip
        title = f"{game}: {rows[0].result.policy} vs each snapshot of {run_root}"
        snapshots = report.run_snapshots(run_root, matches.opponent_behavior(game, args.side))
        replay_opponent = str(snapshots[-1].path)  # the newest
    output["game"] = game
    output["evaluations"] = [row.to_dict() for row in rows]
    text.append(format_snapshots(title, rows, snapshot_is_policy=args.each_snapshot))
    return replay_opponent


def _league(
    args: argparse.Namespace,
    source: Path,
    run_root: Path | None,
    output: dict[str, Any],
    text: list[str],
) -> int:
    from ghost.evaluation.league import format_league, play_league

    if run_root is None:
        raise ConfigError(f"--league needs a run folder (results/<run-id>); {source} is not one")
    if args.against or args.each_snapshot or args.record or args.side:
        raise ConfigError(
            "--league plays the run's own players against each other; leave out --against, "
            "--each-snapshot, --record and --side (add scripted levels with --include-levels)"
        )
    tty = sys.stderr.isatty()

    def progress(done: int, total: int, result: Any) -> None:
        line = f"league: {done}/{total} pairs ({result.player} vs {result.opponent})"
        if tty:  # one line, rewritten in place
            line = "\r" + line + "\033[K"
        print(line, file=sys.stderr, end="\n" if not tty or done == total else "", flush=True)

    table = play_league(
        run_root,
        games_per_pair=40 if args.games_per_pair is None else args.games_per_pair,
        include_levels=[level.strip() for level in args.include_levels.split(",") if level.strip()],
        seed=args.seed,
        game=args.game,
        num_arenas=args.num_arenas,
        deterministic=args.deterministic,
        progress=progress,
        games=_ray_games(args.ray_address),
    )
    output["league"] = table.to_dict()
    text.append(format_league(table))
    return _emit(args, output, text)


def _ray_games(ray_address: str | None) -> Any:
    if ray_address is None:
        return None
    from ghost.evaluation.game_runner import RayGames

    return RayGames(ray_address)


def _robustness(
    args: argparse.Namespace, run_root: Path | None, output: dict[str, Any], text: list[str]
) -> int:
    """``--exploitability`` (OpenSpiel games) and ``--exploiter`` (built-in games too)."""
    from ghost.evaluation import exploiter, report, seated_runs
    from ghost.evaluation.seated import format_both_seats

    seated = run_root is not None and seated_runs.run_env_path(run_root) is not None
    builtin = run_root is not None and report.run_game(run_root) is not None
    if args.exploitability and not seated:
        raise ConfigError(
            "--exploitability needs the folder of a run on an OpenSpiel or PettingZoo game "
            f"(--env openspiel:... / pettingzoo:...); {args.policy} is not one"
        )
    if args.exploiter is not None and not (seated or builtin):
        raise ConfigError(
            "--exploiter needs the folder of a run on a built-in game (--env tennis, ...) or on "
            f"an OpenSpiel or PettingZoo game (--env openspiel:... / pettingzoo:...); "
            f"{args.policy} is neither"
        )
    if args.exploitability:
        assert run_root is not None
        rows = seated_runs.exploitability_rows(run_root)
        output["exploitability"] = rows
        text.append(seated_runs.format_exploitability(run_root, rows))
    if args.exploiter is None:
        return _emit(args, output, text)
    assert run_root is not None
    logging.getLogger().setLevel(logging.INFO)  # the exploiter's training progress
    if builtin:
        return _builtin_exploiter(args, run_root, output, text)
    folder = exploiter.train_exploiter(run_root, args.exploiter, seed=args.seed)
    result = exploiter.score_exploiter(run_root, folder, games=args.episodes, seed=args.seed)
    output["exploiter"] = {"run": str(folder), "steps": args.exploiter, **result.to_dict()}
    text.append(
        f"exploiter trained {args.exploiter} steps ({folder}), then played "
        f"{args.episodes} games per seat against the frozen policy:\n"
        + format_both_seats(result)
        + f"\nexploitability estimate (exploiter's mean reward): {result.mean_reward:.4f}"
    )
    return _emit(args, output, text)


def _builtin_exploiter(
    args: argparse.Namespace, run_root: Path, output: dict[str, Any], text: list[str]
) -> int:
    """``--exploiter`` on a built-in game's run: one row per side."""
    from ghost.evaluation.builtin_exploiter import exploit_run, format_exploits

    exploits = exploit_run(
        run_root, args.exploiter, episodes=args.episodes, seed=args.seed,
        num_arenas=args.num_arenas,
    )  # fmt: skip
    output["exploiter"] = {
        "run": str(exploits[0].exploiter_run),
        "steps": args.exploiter,
        "sides": [exploit.to_dict() for exploit in exploits],
    }
    text.append(format_exploits(run_root, exploits))
    return _emit(args, output, text)


def _seated_against(
    args: argparse.Namespace, run_root: Path, output: dict[str, Any], text: list[str]
) -> int:
    """``--against`` in an OpenSpiel/PettingZoo run: the final policy in every seat."""
    from ghost.evaluation import seated_runs
    from ghost.evaluation.seated import format_both_seats

    if args.each_snapshot or args.record or args.side or args.against == SNAPSHOTS:
        raise ConfigError(
            "in OpenSpiel/PettingZoo runs --against plays the final policy in every seat; "
            "--each-snapshot, --record, --side and 'snapshots' are for built-in games"
        )
    result = seated_runs.evaluate_run(
        run_root, args.against, games=args.episodes, seed=args.seed,
        deterministic=args.deterministic,
    )  # fmt: skip
    output.update(result.to_dict())
    text.append(format_both_seats(result))
    return _emit(args, output, text)


def _record(
    args: argparse.Namespace,
    game: str,
    policy: Any,
    opponent: Any,
    output: dict[str, Any],
    text: list[str],
) -> None:
    from ghost.evaluation.replay import record_match

    replay = record_match(
        game=game,
        policy=policy,
        opponent=opponent,
        path=args.record,
        side=args.side,
        seed=args.seed,
        episodes=args.record_episodes,
        deterministic=args.deterministic,
    )
    output["replay"] = {
        "path": str(replay.path),
        "frames": replay.frames,
        "results": list(replay.results),
    }
    text.append(f"replay: {replay.path} ({replay.frames} frames, {len(replay.results)} episodes)")


def _emit(args: argparse.Namespace, output: dict[str, Any], text: list[str]) -> int:
    if args.json:
        print(json.dumps(output, indent=2))
    else:
        print("\n\n".join(text))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``ghost-eval``; returns the process exit code."""
    args = build_parser().parse_args(argv)
    setup_logging(args.debug, level=logging.WARNING)
    return run_command(PROG, lambda: run(args), debug=lambda: args.debug)


if __name__ == "__main__":
    sys.exit(main())
