"""``ghost-eval match``, ``snapshots``, ``tournament`` and ``report``: each command's parser and
handler.

A handler takes the parsed arguments and the call's ``Output``, and adds what it found.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ghost.command_line import output_file
from ghost.evaluation.cli_common import (
    MATCH_QUIET_FOR_S,
    PROG,
    SNAPSHOTS,
    Output,
    add_against_option,
    add_demo_options,
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
from ghost.evaluation.cli_format import format_any, format_snapshots
from ghost.evaluation.pictures import PAYOFFS_FILE, PLOTS_HINT, RATINGS_FILE
from ghost.evaluation.progress import ProgressLine
from ghost.exceptions import ConfigError

if TYPE_CHECKING:
    from ghost.play.demo_recording import DemoRequest


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
  ghost-eval match medium --game tennis --against medium --record-demo tennis_medium.demo
                                                 a scripted level's demonstrations, for BC/GAIL
  ghost-eval match results/c4 --against one_ply             OpenSpiel/PettingZoo: every seat
  ghost-eval match results/pong --against results/pong2     Unity build/module:callable run""",
    )
    parser.add_argument("policy", metavar="POLICY", help="policy file or run folder")
    add_against_option(parser, snapshots=True)
    add_game_options(parser)
    add_play_options(parser)
    add_record_options(parser)
    add_demo_options(parser)
    add_ray_option(parser, what="the snapshots of --against snapshots")
    add_output_options(parser)
    parser.set_defaults(handler=match, label="ghost-eval match")


def match(args: argparse.Namespace, out: Output) -> None:
    """``ghost-eval match``: POLICY against a level, a policy, or each snapshot of its run.

    Args:
        args: the parsed command line.
        out: what the call prints; gets the result.
    """
    from ghost.evaluation import cli_venue

    policy, run_root = resolve_policy(args.policy)
    record_demo = _demo_request(args)
    if cli_venue.plays_env(args, run_root):  # a Unity build or module:callable run
        cli_venue.check_env_command(args, run_root, against=args.against, snapshots=True)
    elif args.ray_address and args.against != SNAPSHOTS:
        raise ConfigError(
            "--ray-address plays many evaluations at once: it goes with --against snapshots, "
            "ghost-eval snapshots or ghost-eval tournament"
        )
    elif cli_venue.is_seated(args, run_root):
        if args.record or args.side or args.against == SNAPSHOTS:
            raise ConfigError(
                "in OpenSpiel/PettingZoo runs, match plays the final policy in every seat; "
                "--record, --side and --against snapshots are for built-in games"
            )
        policy = run_root  # its final policy of every seat's behavior
    with closing(cli_venue.open_for(args, run_root)) as venue:
        if venue.builtin_game is not None:
            _note_finals(out, [policy, args.against], venue.builtin_game)
        if args.against == SNAPSHOTS:
            opponent = _against_snapshots(args, venue, policy, run_root, out)
        else:
            opponent = args.against
            with progress_line(
                args, "match", unit="episodes", quiet_for_s=MATCH_QUIET_FOR_S
            ) as line:
                result = venue.play(
                    policy=policy, opponent=args.against, episodes=args.episodes,
                    seed=args.seed, side=args.side, deterministic=args.deterministic,
                    progress=line, record_demo=record_demo,
                )  # fmt: skip
            out.data.update(result.to_dict())
            out.text.append(format_any(result))
            if record_demo is not None:
                out.text.append(result.demo.line)
    if args.record:
        _record(args, venue.label, policy, opponent, out)


def _demo_request(args: argparse.Namespace) -> DemoRequest | None:
    """``--record-demo`` and ``--record-side`` as a ``DemoRequest`` (None: no recording); the
    flag form of ``ghost-eval`` has neither.

    Raises:
        ConfigError: ``--record-side`` alone, or ``--record-demo`` with ``--against snapshots``.
    """
    from ghost.play.demo_recording import DemoRequest

    path, side = getattr(args, "record_demo", None), getattr(args, "record_side", None)
    if path is None:
        if side is not None:
            raise ConfigError(f"--record-side {side} goes with --record-demo FILE")
        return None
    if args.against == SNAPSHOTS:
        raise ConfigError(
            "--record-demo records one match; --against snapshots plays one per snapshot (pass "
            "one snapshot file as OPPONENT instead)"
        )
    return DemoRequest(path=path, side=side)


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
    args: argparse.Namespace, venue: Any, policy: Any, run_root: Path | None, out: Output
) -> str | None:
    """POLICY against each snapshot of its run; the newest snapshot, the opponent of a replay."""
    from ghost.evaluation.snapshots import play_snapshots
    from ghost.play.run_record import RunRecord

    if run_root is None and venue.builtin_game is not None:
        raise ConfigError(f"{args.policy} is not inside a run folder, which has the snapshots")
    run_root = need_run(args, run_root)
    with progress_line(args, "snapshots", unit="snapshots") as progress:
        evaluations = play_snapshots(
            venue, run_root, other=policy, snapshots_play="opponent", side=args.side,
            games=ray_games(args.ray_address), progress=progress, **play_options(args),
        )  # fmt: skip
    behaviors = [b for b, _ in venue.snapshot_sides(snapshots_play="opponent", side=args.side)]
    _add_snapshots(out, venue, evaluations, run_root=run_root, behavior=behaviors[0],
                   snapshot_is_policy=False)  # fmt: skip
    return str(RunRecord(run_root).snapshots(behaviors[0])[-1].path)


def _add_snapshots(
    out: Output,
    venue: Any,
    evaluations: list[Any],
    *,
    run_root: Path,
    behavior: str,
    snapshot_is_policy: bool,
) -> None:
    """One table per behavior with snapshots. In a built-in game (one behavior) the title names
    the behavior and the run, and JSON holds its rows; elsewhere each row in JSON names the
    snapshots it came from (``snapshots_of``)."""
    out.data["game"] = venue.label
    if venue.builtin_game is not None:
        (evaluation,) = evaluations
        first = evaluation[0].result
        title = (
            f"{venue.label}: each snapshot of {behavior} in {run_root} vs {first.opponent}"
            if snapshot_is_policy
            else f"{venue.label}: {first.policy} vs each snapshot of {run_root}"
        )
        out.data["evaluations"] = [row.to_dict() for row in evaluation]
        out.text.append(format_snapshots(title, evaluation, snapshot_is_policy=snapshot_is_policy))
        return
    out.data["evaluations"] = []
    for evaluation in evaluations:
        title = f"{venue.label}: {evaluation.policy} vs {evaluation.opponent}"
        out.text.append(format_snapshots(title, evaluation, snapshot_is_policy=snapshot_is_policy))
        snapshots_of = evaluation.policy if snapshot_is_policy else evaluation.opponent
        out.data["evaluations"] += [
            {**row.to_dict(), "snapshots_of": snapshots_of} for row in evaluation
        ]


def _record(args: argparse.Namespace, game: str, policy: Any, opponent: Any, out: Output) -> None:
    """``--record``: a replay GIF of POLICY against OPPONENT in one arena of ``game``."""
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
    """``ghost-eval snapshots``: each snapshot of RUN against OPPONENT.

    Args:
        args: the parsed command line.
        out: what the call prints; gets one row per snapshot.
    """
    from ghost.evaluation import cli_venue
    from ghost.evaluation.snapshots import play_snapshots

    policy, run_root = resolve_policy(args.policy)
    env = cli_venue.plays_env(args, run_root)  # a Unity build or module:callable run
    against = args.against if args.against is not None or run_root is None else str(run_root)
    if env:
        cli_venue.check_env_command(
            args, need_run(args, run_root), against=against, snapshots=False
        )
    _check_snapshots_command(args, run_root, env=env)
    with closing(cli_venue.open_for(args, run_root)) as venue:
        if run_root is None:
            raise ConfigError(f"{args.policy} is not inside a run folder, which has the snapshots")
        if venue.builtin_game is not None:
            _note_finals(out, [against], venue.builtin_game)
        with progress_line(args, "snapshots", unit="snapshots") as progress:
            evaluations = play_snapshots(
                venue, run_root, other=against, snapshots_play="policy", side=args.side,
                games=ray_games(args.ray_address), progress=progress, **play_options(args),
            )  # fmt: skip
        sides = venue.snapshot_sides(snapshots_play="policy", side=args.side)
        _add_snapshots(out, venue, evaluations, run_root=run_root, behavior=sides[0][0],
                       snapshot_is_policy=True)  # fmt: skip
    if args.record:
        _record(args, venue.label, policy, against, out)


def _check_snapshots_command(args: argparse.Namespace, run_root: Path | None, *, env: bool) -> None:
    """``--against snapshots`` and seated runs are refused, each in one line."""
    from ghost.evaluation import cli_venue

    if args.against == SNAPSHOTS:
        raise ConfigError(
            "ghost-eval snapshots plays the run's snapshots; --against must be another player, "
            "not 'snapshots' (for the final policy vs each snapshot: ghost-eval match RUN "
            "--against snapshots)"
        )
    if not env and cli_venue.is_seated(args, run_root):
        raise ConfigError(
            "snapshots is for runs on built-in games; in OpenSpiel/PettingZoo runs use "
            "ghost-eval match RUN --against OPPONENT or ghost-eval exploitability RUN"
        )


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
    from ghost.evaluation.pictures import missing_matplotlib
    from ghost.evaluation.tournament import format_tournament

    _, run_root = resolve_policy(args.policy)
    plots = getattr(args, "plots", None)  # the flag form has no --plots
    missing = missing_matplotlib() if plots is not None else None
    if missing is not None:  # said before the games, which can take long; the tables still come
        print(f"{PROG}: note: {missing}; the tables follow", file=sys.stderr)
    elif plots is not None:
        _make_plots_folder(Path(plots))
    word = _json_word(args)
    with progress_line(args, "tournament", unit="pairs") as line:
        table = _hold_tournament(args, run_root, out, progress=_pair_progress(line))
    out.data[word] = table.to_dict()
    out.text.append(format_tournament(table))
    _keep_and_draw_tournament(out, run_root, word=word, plots=None if missing else plots)


def _hold_tournament(
    args: argparse.Namespace, run_root: Path | None, out: Output, *, progress: Any
) -> Any:
    """The tournament of RUN (and the other RUNs of a Unity build or ``module:callable``
    environment) in its venue."""
    from ghost.evaluation import cli_venue
    from ghost.evaluation.tournament import hold_tournament, tournament_game

    if cli_venue.plays_env(args, run_root):
        runs = cli_venue.tournament_runs(args, run_root)
    else:
        runs = [need_run(args, run_root)]
        if cli_venue.is_seated(args, runs[0]):
            raise ConfigError(
                "tournaments are for runs on built-in games, Unity builds and module:callable "
                "environments; in OpenSpiel/PettingZoo runs use ghost-eval match RUN --against "
                "OPPONENT or ghost-eval exploitability RUN"
            )
        args.game = tournament_game(runs[0], args.game)  # the run's game, said as before
        _note_finals(out, runs, args.game)
    with closing(cli_venue.open_for(args, runs[0])) as venue:
        return hold_tournament(
            venue, runs,
            games_per_pair=40 if args.games_per_pair is None else args.games_per_pair,
            include_levels=[lv.strip() for lv in args.include_levels.split(",") if lv.strip()],
            seed=args.seed, deterministic=args.deterministic, progress=progress,
            games=ray_games(args.ray_address),
        )  # fmt: skip


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
