"""``ghost-eval match``, ``snapshots``, ``tournament`` and ``report``: each command's parser and handler.

A handler takes the parsed arguments and the call's ``Output``, and adds what it found.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ghost.command_line import output_file
from ghost.evaluation.cli_common import (
    MATCH_QUIET_FOR_S,
    PROG,
    SNAPSHOTS,
    Output,
    add_against_option,
    add_game_options,
    add_output_options,
    add_play_options,
    add_ray_option,
    add_record_options,
    add_tournament_options,
    need_run,
    new_command,
    play_options,
    progress_line,
    ray_games,
    resolve_policy,
)
from ghost.evaluation.cli_format import format_result, format_snapshots
from ghost.evaluation.pictures import PAYOFFS_FILE, PLOTS_HINT, RATINGS_FILE
from ghost.evaluation.progress import ProgressLine
from ghost.exceptions import ConfigError


# -- match ---------------------------------------------------------------------------------------
def add_match(commands: Any) -> None:
    parser = new_command(
        commands,
        "match",
        summary="POLICY against an opponent: a W/D/L table with 95%% intervals",
        description="Play POLICY against OPPONENT in a built-in game and print wins, draws and "
        "losses with 95% Wilson intervals (matrix games: also the exact exploitability). In a "
        "run on an OpenSpiel or PettingZoo game the final policy plays every seat in turn.",
        examples="""\
  ghost-eval match results/tennis --against strong          final policy vs a scripted level
  ghost-eval match results/tennis/Tennis.pt --game tennis --against results/other --json
  ghost-eval match results/tennis --against snapshots       final policy vs each of its snapshots
  ghost-eval match results/svg --side Goalie --against strong   one side of an asymmetric game
  ghost-eval match results/tennis --against strong --record tennis.gif   and a GIF replay
  ghost-eval match results/c4 --against one_ply             OpenSpiel/PettingZoo: every seat
  ghost-eval match results/pong --against results/pong2     Unity build/module:callable run""",
    )
    parser.add_argument("policy", metavar="POLICY", help="policy file or run folder")
    add_against_option(parser, snapshots=True)
    add_game_options(parser)
    add_play_options(parser)
    add_record_options(parser)
    add_ray_option(parser, what="the snapshots of --against snapshots")
    add_output_options(parser)
    parser.set_defaults(handler=match, label="ghost-eval match")


def match(args: argparse.Namespace, out: Output) -> None:
    """``ghost-eval match``: POLICY against a level, a policy, or each snapshot of its run."""
    from ghost.evaluation import cli_env
    from ghost.play import head_to_head

    policy, run_root = resolve_policy(args.policy)
    if cli_env.plays_env(args, run_root):  # a Unity build or module:callable run
        return cli_env.match(args, run_root, out)
    if args.ray_address and args.against != SNAPSHOTS:
        raise ConfigError(
            "--ray-address plays many evaluations at once: it goes with --against snapshots, "
            "ghost-eval snapshots or ghost-eval tournament"
        )
    if _seated(args, run_root):
        assert run_root is not None
        return _seated_match(args, run_root, out)
    game = _game(args, run_root)
    _note_finals(out, [policy, args.against], game)
    if args.against == SNAPSHOTS:
        replay_opponent = _against_snapshots(args, game, policy, run_root, out)
    else:
        replay_opponent = args.against
        with progress_line(args, "match", unit="episodes", quiet_for_s=MATCH_QUIET_FOR_S) as line:
            result = head_to_head.evaluate(
                game=game, policy=policy, opponent=args.against, side=args.side,
                progress=line, **play_options(args),
            )  # fmt: skip
        out.data.update(result.to_dict())
        out.text.append(format_result(result))
    if args.record:
        _record(args, game, policy, replay_opponent, out)


def _seated(args: argparse.Namespace, run_root: Path | None) -> bool:
    """Whether POLICY is a run on an OpenSpiel or PettingZoo game (and no --game says otherwise)."""
    if run_root is None or args.game:
        return False
    from ghost.evaluation.seated_runs import run_env_path

    return run_env_path(run_root) is not None


def _seated_match(args: argparse.Namespace, run_root: Path, out: Output) -> None:
    """A run on an OpenSpiel/PettingZoo game: its final policy in every seat in turn."""
    from ghost.evaluation import seated_runs
    from ghost.evaluation.seated import format_both_seats

    if args.record or args.side or args.against == SNAPSHOTS:
        raise ConfigError(
            "in OpenSpiel/PettingZoo runs, match plays the final policy in every seat; "
            "--record, --side and --against snapshots are for built-in games"
        )
    result = seated_runs.evaluate_run(
        run_root, args.against, games=args.episodes, seed=args.seed,
        deterministic=args.deterministic,
    )  # fmt: skip
    out.data.update(result.to_dict())
    out.text.append(format_both_seats(result))


def _game(args: argparse.Namespace, run_root: Path | None) -> str:
    """--game, or the game of POLICY's run; checked."""
    from ghost.evaluation import report
    from ghost.play import matches
    from ghost.play.run_record import RunRecord

    game = args.game or (report.run_game(run_root) if run_root is not None else None)
    if game is None:
        games = ", ".join(sorted(matches.BUILTIN_GAMES))
        note = RunRecord(run_root).host.game_note if run_root is not None else None
        raise ConfigError(
            f"cannot tell the game of {Path(args.policy)}: {note} (built-in games: {games})"
            if note
            else f"cannot tell the game of {Path(args.policy)}; pass --game (one of {games}) or "
            "--env (a Unity build or module:callable)"
        )
    matches.check_game(game)
    return game


def _note_finals(out: Output, players: list[Any], game: str) -> None:
    """Say on stderr (and under ``notes`` in JSON) what stands for the final policy of each run
    folder among ``players`` whose host keeps none that can be read safely (RLlib)."""
    from envs.games import make_game
    from ghost.play.run_record import RunRecord

    folders = [Path(p) for p in players if isinstance(p, str | Path) and Path(p).is_dir()]
    folders = [folder for folder in folders if RunRecord(folder).host.final_is_snapshot]
    if not folders:
        return
    env = make_game(game, num_arenas=1)
    try:
        behaviors = sorted({role.name for role in env.ROLES})
    finally:
        env.close()
    notes: list[str] = []
    for folder in folders:
        run = RunRecord(folder)
        for behavior in behaviors:
            notes += [note for note in run.notes(behavior) if note not in notes]
    _note(out, notes)


def _note(out: Output, notes: list[str]) -> None:
    for note in notes:
        print(f"{PROG}: note: {note}", file=sys.stderr)
    if notes:
        out.data.setdefault("notes", []).extend(notes)


def _against_snapshots(
    args: argparse.Namespace, game: str, policy: Any, run_root: Path | None, out: Output
) -> str:
    """POLICY against each snapshot of its run; the newest snapshot, the opponent of a replay."""
    from ghost.evaluation import report
    from ghost.evaluation.snapshots import evaluate_against_snapshots
    from ghost.play import matches

    if run_root is None:
        raise ConfigError(f"{args.policy} is not inside a run folder, which has the snapshots")
    with progress_line(args, "snapshots", unit="snapshots") as progress:
        rows = evaluate_against_snapshots(
            game=game, policy=policy, run_dir=run_root, side=args.side,
            games=ray_games(args.ray_address), progress=progress, **play_options(args),
        )  # fmt: skip
    title = f"{game}: {rows[0].result.policy} vs each snapshot of {run_root}"
    out.data["game"] = game
    out.data["evaluations"] = [row.to_dict() for row in rows]
    out.text.append(format_snapshots(title, rows, snapshot_is_policy=False))
    snapshots = report.run_snapshots(run_root, matches.opponent_behavior(game, args.side))
    return str(snapshots[-1].path)


def _record(args: argparse.Namespace, game: str, policy: Any, opponent: Any, out: Output) -> None:
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
    out.data["replay"] = {
        "path": str(replay.path),
        "frames": replay.frames,
        "results": list(replay.results),
    }
    out.text.append(
        f"replay: {replay.path} ({replay.frames} frames, {len(replay.results)} episodes)"
    )


# -- snapshots -----------------------------------------------------------------------------------
def add_snapshots(commands: Any) -> None:
    parser = new_command(
        commands,
        "snapshots",
        summary="each snapshot of a run against an opponent: the run's progress",
        description="Play every snapshot of RUN against OPPONENT (built-in games) and print one "
        "row per snapshot: its step and rating, W/D/L, win rate and score with 95% intervals, "
        "from the snapshot's side. "
        "RUN may also be a run of mlagents-learn with our plugin, of Stable-Baselines3 "
        "(model.zip with model.self_play/) or an RLlib checkpoint; the last two record no "
        "game: pass --game.",
        examples="""\
  ghost-eval snapshots results/tennis --against medium      the run's progress vs a level
  ghost-eval snapshots results/svg --side Goalie --against strong --json
  ghost-eval snapshots results/tennis --against medium --ray-address auto   on a Ray cluster
  ghost-eval snapshots sb3-run --game tennis --against medium   a Stable-Baselines3 run""",
    )
    parser.add_argument("policy", metavar="RUN", help="run folder")
    parser.add_argument(
        "--against", metavar="OPPONENT",
        help="scripted level, policy file or run folder (default: RUN's final policy)",
    )  # fmt: skip
    add_game_options(parser)
    add_play_options(parser)
    add_record_options(parser)
    add_ray_option(parser, what="the snapshots")
    add_output_options(parser)
    parser.set_defaults(handler=snapshots, label="ghost-eval snapshots")


def snapshots(args: argparse.Namespace, out: Output) -> None:
    """``ghost-eval snapshots``: each snapshot of RUN against OPPONENT."""
    from ghost.evaluation import cli_env
    from ghost.evaluation.snapshots import evaluate_run
    from ghost.play import matches

    policy, run_root = resolve_policy(args.policy)
    if cli_env.plays_env(args, run_root):  # a Unity build or module:callable run
        return cli_env.snapshots(args, run_root, out)
    if args.against == SNAPSHOTS:
        raise ConfigError(
            "ghost-eval snapshots plays the run's snapshots; --against must be another player, "
            "not 'snapshots' (for the final policy vs each snapshot: ghost-eval match RUN "
            "--against snapshots)"
        )
    if _seated(args, run_root):
        raise ConfigError(
            "snapshots is for runs on built-in games; in OpenSpiel/PettingZoo runs use "
            "ghost-eval match RUN --against OPPONENT or ghost-eval exploitability RUN"
        )
    game = _game(args, run_root)
    if run_root is None:
        raise ConfigError(f"{args.policy} is not inside a run folder, which has the snapshots")
    against = args.against if args.against is not None else str(run_root)
    behavior = matches.policy_behavior(game, args.side)
    _note_finals(out, [against], game)
    with progress_line(args, "snapshots", unit="snapshots") as progress:
        rows = evaluate_run(
            run_root, behavior, opponent=against, game=game,
            games=ray_games(args.ray_address), progress=progress, **play_options(args),
        )  # fmt: skip
    title = f"{game}: each snapshot of {behavior} in {run_root} vs {rows[0].result.opponent}"
    out.data["game"] = game
    out.data["evaluations"] = [row.to_dict() for row in rows]
    out.text.append(format_snapshots(title, rows, snapshot_is_policy=True))
    if args.record:
        _record(args, game, policy, against, out)


# -- tournament ----------------------------------------------------------------------------------
#: the tournament's former name, still a command: users' scripts call ``ghost-eval league``
TOURNAMENT_ALIAS = "league"


def add_tournament(commands: Any) -> None:
    """Add ``ghost-eval tournament`` (alias ``league``) to ``commands``."""
    parser = new_command(
        commands,
        "tournament",
        aliases=[TOURNAMENT_ALIAS],
        summary="a round robin of a run's players: Elo and OpenSkill ratings",
        description="Play a round robin between RUN's snapshots, its final policy, the fixed "
        "opponents of its self_play section and any --include-levels; print Elo (a "
        "Bradley-Terry fit) and OpenSkill ratings and the pairwise score matrix. Progress on "
        "stderr. "
        "RUN may also be a run of mlagents-learn with our plugin, of Stable-Baselines3 "
        "(model.zip with model.self_play/) or an RLlib checkpoint; the last two record no "
        "game: pass --game. 'ghost-eval league' is the same command under its former name.",
        examples="""\
  ghost-eval tournament results/tennis --include-levels medium,strong   ratings + matrix
  ghost-eval tournament results/tennis --games-per-pair 100 --json      more games, JSON
  ghost-eval tournament results/tennis --ray-address auto        the pairs on a Ray cluster
  ghost-eval tournament results/tennis --plots plots/   payoff heatmap + ratings with intervals
  ghost-eval tournament results/pong results/pong2   two runs on a Unity build or module:callable
  ghost-eval tournament rllib-checkpoint --game tennis   an RLlib checkpoint's snapshots""",
    )
    parser.add_argument("policy", metavar="RUN", help="run folder")
    parser.add_argument(
        "others", metavar="RUN", nargs="*",
        help="more run folders in the tournament (Unity builds and module:callable environments)",
    )  # fmt: skip
    add_tournament_options(parser)
    add_game_options(parser, side=False)
    add_play_options(parser, episodes=None)
    add_ray_option(parser, what="the pairs")
    parser.add_argument(
        "--plots",
        metavar="DIR",
        help=f"also draw the payoff heatmap ({PAYOFFS_FILE}) and the ratings with their "
        f"intervals ({RATINGS_FILE}) into this folder; needs matplotlib",
    )
    add_output_options(parser)
    parser.set_defaults(handler=tournament, label="ghost-eval tournament")


def _json_word(args: argparse.Namespace) -> str:
    """The key of the tournament in ``--json`` output: ``tournament``, or ``league`` when called
    by its former name (``ghost-eval league``, the flag form's ``--league``), as scripts read it."""
    return "tournament" if getattr(args, "command", None) == "tournament" else TOURNAMENT_ALIAS


def tournament(args: argparse.Namespace, out: Output) -> None:
    """``ghost-eval tournament``: a round robin of RUN's players, rated; kept in RUN's run_logs
    and, with --plots, drawn.

    Args:
        args: the parsed command line.
        out: what the call prints; gets the table and, in JSON, the tournament's plain form.
    """
    from ghost.evaluation import cli_env
    from ghost.evaluation.pictures import missing_matplotlib
    from ghost.evaluation.tournament import format_tournament, play_tournament

    _, run_root = resolve_policy(args.policy)
    plots = getattr(args, "plots", None)  # the flag form has no --plots
    missing = missing_matplotlib() if plots is not None else None
    if missing is not None:  # said before the games, which can take long; the tables still come
        print(f"{PROG}: note: {missing}; the tables follow", file=sys.stderr)
    elif plots is not None:
        _make_plots_folder(Path(plots))
    word = _json_word(args)
    with progress_line(args, "tournament", unit="pairs") as line:
        if cli_env.plays_env(args, run_root):  # a Unity build or module:callable run
            table = cli_env.tournament(args, run_root, progress=_pair_progress(line))
        else:
            _note_tournament_finals(out, need_run(args, run_root), args.game)
            table = play_tournament(
                need_run(args, run_root),
                games_per_pair=40 if args.games_per_pair is None else args.games_per_pair,
                include_levels=[lv.strip() for lv in args.include_levels.split(",") if lv.strip()],
                seed=args.seed,
                game=args.game,
                num_arenas=args.num_arenas,
                deterministic=args.deterministic,
                progress=_pair_progress(line),
                games=ray_games(args.ray_address),
            )
    out.data[word] = table.to_dict()
    out.text.append(format_tournament(table))
    _keep_and_draw_tournament(out, run_root, word=word, plots=None if missing else plots)


def _note_tournament_finals(out: Output, run_root: Path, game: str | None) -> None:
    """The final-policy notes of the run (``_note_finals``), when its game is known."""
    from ghost.play import matches
    from ghost.play.run_record import RunRecord

    game = game or RunRecord(run_root).builtin_game
    if game in matches.BUILTIN_GAMES:  # else play_tournament says what is wrong
        _note_finals(out, [run_root], game)


def _make_plots_folder(folder: Path) -> None:
    """Create --plots DIR before the games, so that a folder that cannot be made is said first."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ConfigError(
            f"--plots {folder}: cannot make that folder ({error.strerror or error}); pass a "
            "folder to draw the pictures into"
        ) from error


def _keep_and_draw_tournament(
    out: Output, run_root: Path | None, *, word: str, plots: str | None
) -> None:
    """Keep the tournament (``out.data[word]``) in RUN's run_logs (for ``ghost-eval report``);
    draw it into ``plots``."""
    from ghost.evaluation import report as run_report
    from ghost.evaluation.pictures import write_tournament_pictures_into

    lines = []
    if run_root is not None:
        kept = run_report.save_tournament_result(run_root, out.data[word])
        if kept is not None:
            out.data[f"{word}_file"] = str(kept)
            lines.append(f"tournament kept in {kept} (ghost-eval report RUN draws it)")
    if plots is not None:
        pictures = write_tournament_pictures_into(out.data[word], plots)
        out.data["pictures"] = [str(path) for path in pictures]
        lines.append(f"pictures: {', '.join(map(str, pictures))}")
    if lines:
        out.text.append("\n".join(lines))


def _pair_progress(line: ProgressLine) -> Callable[[int, int, Any], None]:
    """A tournament's ``progress`` callback: ``line``, naming the pair that just finished."""

    def progress(done: int, total: int, result: Any) -> None:
        line.update(done, total, f"{result.player} vs {result.opponent}")

    return progress


# -- report --------------------------------------------------------------------------------------
def add_report(commands: Any) -> None:
    parser = new_command(
        commands,
        "report",
        summary="draw a run's Elo and reward curves into a PNG (needs matplotlib)",
        description="Draw RUN's Elo and cumulative reward curves, read from its TensorBoard "
        "logs, into OUT.png; when RUN has played a tournament (ghost-eval tournament RUN), "
        "also its payoff heatmap and ratings into OUT-tournament-payoffs.png and "
        "OUT-tournament-ratings.png. "
        "RUN may be a run of any host (mlagents-learn, Stable-Baselines3: its tensorboard_log, "
        "RLlib: no logs in a checkpoint, so the snapshots' ratings); a line says what is not "
        f"drawn. Needs matplotlib: {PLOTS_HINT}.",
        examples="""\
  ghost-eval report results/tennis tennis.png""",
    )
    parser.add_argument("policy", metavar="RUN", help="run folder")
    parser.add_argument(
        "image",
        metavar="OUT.png",
        help="the picture to write, or a folder to write RUN-report.png into",
    )
    add_output_options(parser)
    parser.set_defaults(handler=report, label="ghost-eval report")


def report(args: argparse.Namespace, out: Output) -> None:
    """``ghost-eval report``: RUN's training curves, drawn."""
    from ghost.evaluation import report as run_report

    _, run_root = resolve_policy(args.policy)
    from ghost.play.run_record import RunRecord

    run = need_run(args, run_root)
    name = RunRecord(run).host.name.removesuffix(".zip")  # an SB3 model's name
    image = output_file(args.image, f"{name}-report.png")
    path = run_report.write_report(run, image)
    _note(out, run_report.report_notes(run))
    pictures = run_report.write_tournament_report(run, path)
    out.data["report"] = str(path)
    out.data["league_pictures"] = [str(picture) for picture in pictures]
    out.text.append("\n".join([f"report: {path}", *(f"tournament: {p}" for p in pictures)]))
