"""A run's snapshots against one player, in any venue: its progress, or a policy against its past.

``play_snapshots`` plays every snapshot of a run against one player (``snapshots_play="policy"``:
a scripted level, the run's final policy), or one player against every snapshot
(``"opponent"``), in any ``ghost.play.venue.Venue``: the venue says which behaviors' snapshots
play and on what side. The snapshots, their steps and ratings come from
``ghost.play.run_record.RunRecord``, whichever host trained the run (ghost-learn,
mlagents-learn, SB3, RLlib: ``ghost.play.run_layouts``). ``evaluate_run`` and
``evaluate_against_snapshots`` are the same for a built-in game, from Python.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from envs.games import BUILTIN_GAMES
from ghost.evaluation.progress import play_all
from ghost.evaluation.run_evaluation import RunEvaluation, SnapshotEvaluation
from ghost.exceptions import ConfigError, RunDirectoryError
from ghost.play.arena_venue import ArenaVenue
from ghost.play.game_runner import GameRunner, InlineGames
from ghost.play.run_record import RunRecord, SnapshotInfo
from ghost.play.venue import SnapshotsPlay, Venue

logger = logging.getLogger(__name__)

#: told ``(done, total)`` as evaluations finish
Progress = Callable[[int, int], None]


def play_snapshots(
    venue: Venue,
    run_dir: str | Path,
    *,
    other: Any,
    snapshots_play: SnapshotsPlay,
    side: str | None = None,
    episodes: int = 200,
    seed: int = 0,
    deterministic: bool = False,
    games: GameRunner | None = None,
    progress: Progress | None = None,
) -> list[RunEvaluation]:
    """Every snapshot of ``run_dir`` against ``other``, oldest first: one ``RunEvaluation`` per
    behavior whose snapshots the venue plays (``Venue.snapshot_sides``).

    Args:
        venue: where the games are played.
        run_dir: the run folder.
        other: the player the snapshots meet.
        snapshots_play: ``"policy"``: each snapshot is the evaluated policy and ``other`` its
            opponent; ``"opponent"``: ``other`` is the evaluated policy, each snapshot its
            opponent.
        side: the behavior the evaluated policy plays (default: the venue's).
        episodes: games per snapshot.
        seed: seeds every snapshot's games alike.
        deterministic: the evaluated policy takes its most likely action.
        games: where the games are played (``RayGames``: all at once, as Ray tasks); default
            one after the other here.
        progress: told ``(snapshots done, snapshots in all)`` as each one finishes.

    Returns:
        The evaluations, one per behavior with snapshots.

    Raises:
        RunDirectoryError: the run has no snapshots to play.
    """
    plans = _plans(venue, RunRecord(run_dir), snapshots_play=snapshots_play, side=side)
    shared = {"episodes": episodes, "seed": seed, "deterministic": deterministic}
    calls = [
        {**shared, "side": play_side, **_players(snapshot.path, other, snapshots_play)}
        for _, play_side, snapshots in plans
        for snapshot in snapshots
    ]
    told = None if progress is None else lambda done, total, _: progress(done, total)
    results = iter(play_all(games or InlineGames(), venue.play, calls, progress=told))
    evaluations = [
        _evaluation(venue, Path(run_dir), behavior, snapshots, results, snapshots_play)
        for behavior, _, snapshots in plans
        if snapshots
    ]
    if not evaluations:
        raise RunDirectoryError(
            f"run {run_dir} has no snapshots of {', '.join(venue.behaviors)} to play"
            + (f" on side {side}" if side else "")
            + "; snapshots exist only for behaviors trained with self_play"
        )
    return evaluations


def _players(snapshot: Path, other: Any, snapshots_play: SnapshotsPlay) -> dict[str, Any]:
    """``policy`` and ``opponent`` of one snapshot's games."""
    if snapshots_play == "policy":
        return {"policy": snapshot, "opponent": other}
    return {"policy": other, "opponent": snapshot}


def _plans(
    venue: Venue, run: RunRecord, *, snapshots_play: SnapshotsPlay, side: str | None
) -> list[tuple[str, Any, list[SnapshotInfo]]]:
    """``(behavior, side, its snapshots)`` for each behavior the venue plays the snapshots of; a
    behavior without snapshots is left out (in a built-in game, its error is raised)."""
    plans = []
    for behavior, play_side in venue.snapshot_sides(snapshots_play=snapshots_play, side=side):
        try:
            plans.append((behavior, play_side, run.snapshots(behavior)))
        except RunDirectoryError as error:
            if venue.builtin_game is not None:
                raise
            logger.info("%s", error)
    return plans


def _evaluation(
    venue: Venue,
    run_dir: Path,
    behavior: str,
    snapshots: list[SnapshotInfo],
    results: Any,
    snapshots_play: SnapshotsPlay,
) -> RunEvaluation:
    """The rows of ``behavior``'s snapshots (their results taken from ``results`` in order),
    labelled: the run on the snapshots' side (and the behavior, where a venue may play several),
    the other player as the games named it."""
    rows = tuple(
        SnapshotEvaluation(snapshot.snapshot_id, snapshot.step, snapshot.rating, next(results))
        for snapshot in snapshots
    )
    own = str(run_dir) if venue.builtin_game is not None else f"{run_dir} ({behavior} snapshots)"
    first = rows[0].result
    policy, opponent = (own, first.opponent) if snapshots_play == "policy" else (first.policy, own)
    return RunEvaluation(run=run_dir, policy=policy, opponent=opponent, snapshots=rows)


def run_game(run_dir: Path, game: str | None) -> str:
    """``game``, or else the built-in game the run trained on.

    Args:
        run_dir: the run folder.
        game: the built-in game, when given.

    Returns:
        The game.

    Raises:
        ConfigError: the run did not train on a built-in game and none is given.
    """
    if game is not None:
        return game
    run = RunRecord(run_dir)
    if run.base_env_path is not None:
        raise ConfigError(
            f"run {run_dir} trained on {run.base_env_path}, not a built-in game: play its "
            "snapshots with ghost-eval snapshots RUN, or in Python with "
            "ghost.evaluation.snapshots.play_snapshots in ghost.play.venues.open_venue's venue"
        )
    if run.builtin_game is None:
        why = run.host.game_note or (
            "its configuration.yaml env_settings.env_path is not a built-in game; pass game= / "
            "--game"
        )
        raise ConfigError(
            f"cannot tell the game of run {run_dir}: {why} (one of "
            f"{', '.join(sorted(BUILTIN_GAMES))})"
        )
    return run.builtin_game


def evaluate_run(
    run_dir: str | Path,
    behavior: str,
    *,
    opponent: Any,
    game: str | None = None,
    episodes: int = 200,
    seed: int = 0,
    num_arenas: int | None = None,
    deterministic: bool = False,
    games: GameRunner | None = None,
    progress: Progress | None = None,
) -> RunEvaluation:
    """Every snapshot of ``behavior`` in a run on a built-in game against one ``opponent``,
    oldest first (``play_snapshots``): the run's progress, against a scripted level say.

    Args:
        run_dir: the run folder.
        behavior: the behavior whose snapshots play (its side: ``Goalie``, ``Tennis?team=1``).
        opponent: the player they meet.
        game: the built-in game; default the run's ``env_settings.env_path``.
        episodes: games per snapshot.
        seed: seeds every snapshot's games alike.
        num_arenas: matches played at once; default ``min(episodes, 32)``.
        deterministic: the snapshots take their most likely action.
        games: where the games are played (``RayGames``: as Ray tasks).
        progress: told ``(snapshots done, snapshots in all)`` as each one finishes.

    Returns:
        One row per snapshot; steps and ratings from the run's latest checkpoint (``None``
        without one).
    """
    run_dir = Path(run_dir)
    venue = ArenaVenue.of_game(run_game(run_dir, game), num_arenas=num_arenas)
    return play_snapshots(
        venue, run_dir, other=opponent, snapshots_play="policy", side=behavior,
        episodes=episodes, seed=seed, deterministic=deterministic, games=games, progress=progress,
    )[0]  # fmt: skip


def evaluate_against_snapshots(
    *,
    game: str,
    policy: Any,
    run_dir: str | Path,
    side: str | None = None,
    episodes: int = 200,
    seed: int = 0,
    num_arenas: int | None = None,
    deterministic: bool = False,
    games: GameRunner | None = None,
    progress: Progress | None = None,
) -> RunEvaluation:
    """``policy`` against every snapshot of a run on a built-in game, oldest first.

    The opponents are the snapshots of the behavior on the other side (the same behavior in a
    symmetric game, e.g. the final policy against its own past; ``Goalie`` for ``Striker``).

    Args:
        game: the built-in game.
        policy: the evaluated player.
        run_dir: the run folder, which has the snapshots.
        side: the behavior ``policy`` plays (default: team 0's).
        episodes: games per snapshot.
        seed: seeds every snapshot's games alike.
        num_arenas: matches played at once; default ``min(episodes, 32)``.
        deterministic: ``policy`` takes its most likely action.
        games: where the games are played (``RayGames``: as Ray tasks).
        progress: told ``(snapshots done, snapshots in all)`` as each one finishes.

    Returns:
        One row per snapshot.
    """
    venue = ArenaVenue.of_game(game, num_arenas=num_arenas)
    return play_snapshots(
        venue, run_dir, other=policy, snapshots_play="opponent", side=side, episodes=episodes,
        seed=seed, deterministic=deterministic, games=games, progress=progress,
    )[0]  # fmt: skip
