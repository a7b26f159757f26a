"""A run's training curves read back, and ``write_report``, a PNG of its Elo and cumulative
reward curves; ``write_tournament_report``, the pictures of the run's last tournament beside it.

Curves come from the TensorBoard events the run's host wrote (``RunRecord.host.curve_sources``):
each behavior folder of ghost-learn and mlagents-learn (ML-Agents' tag names), the run folder
SB3's ``tensorboard_log`` names (its reward is ``rollout/ep_rew_mean``). A host that wrote no Elo
curve there (RLlib keeps its logs in its own results folder) gets the ratings of the snapshots in
its self-play state instead, and ``report_notes`` says in one line each what could not be drawn.
Everything else a run left behind (its configuration, game, final policies, snapshots) is read by
``ghost.play.run_record.RunRecord``; ``run_game`` and ``run_snapshots`` are its shortcuts.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from ghost.evaluation.pictures import PLOTS_HINT, write_tournament_pictures
from ghost.exceptions import GhostError, RunDirectoryError
from ghost.play import run_layouts
from ghost.play.run_layouts import (
    ELO_TAG,
    GHOST_LEARN,
    LEGACY_TOURNAMENT_FILE,
    MLAGENTS,
    REWARD_TAG,
    TOURNAMENT_FILE,
)
from ghost.play.run_record import RunRecord, SnapshotInfo
from trainers.run_files.atomic import atomic_write_text

__all__ = [
    "ELO_TAG",
    "TOURNAMENT_FILE",
    "REWARD_TAG",
    "Curve",
    "find_run_root",
    "tournament_result_path",
    "read_curves",
    "read_tournament_result",
    "report_notes",
    "run_game",
    "run_snapshots",
    "save_tournament_result",
    "write_tournament_report",
    "write_report",
]

logger = logging.getLogger(__name__)

#: the label of the Elo drawn from the snapshots' ratings when the logs have no Elo curve
SNAPSHOT_RATINGS = "snapshots"
SNAPSHOT_SOURCE = "ratings of the snapshots in the self-play state"


def _check_run(run_dir: Path) -> None:
    RunRecord(run_dir).check()


def run_game(run_dir: str | Path) -> str | None:
    """The built-in game a run trained on, or ``None`` (``RunRecord.builtin_game``)."""
    return RunRecord(run_dir).builtin_game


def run_snapshots(run_dir: str | Path, behavior_name: str) -> list[SnapshotInfo]:
    """The snapshot files of ``behavior_name`` in a run, oldest first (``RunRecord.snapshots``)."""
    return RunRecord(run_dir).snapshots(behavior_name)


def find_run_root(path: str | Path, *, levels: int = 3) -> Path | None:
    """The run holding ``path`` (itself or an ancestor): a ``configuration.yaml`` folder of
    ghost-learn or mlagents-learn, an SB3 model's ``<model>.self_play`` folder (for the model,
    its folder or the self-play folder), an RLlib checkpoint with ``ghost_self_play``
    (``ghost.play.run_layouts.find_run_root``)."""
    return run_layouts.find_run_root(path, levels=levels)


# -- curves ------------------------------------------------------------------------------------
@attrs.frozen(kw_only=True)
class Curve:
    """One scalar series of one behavior: ``steps`` and ``values`` arrays of equal length.

    ``tag`` is ML-Agents' name of the series; ``source`` where it was read: the tag the host
    wrote (SB3's reward is ``rollout/ep_rew_mean``), or ``SNAPSHOT_SOURCE``.
    """

    behavior: str
    tag: str
    steps: np.ndarray
    values: np.ndarray
    source: str = ""


def read_curves(run_dir: str | Path, tags: tuple[str, ...] = (ELO_TAG, REWARD_TAG)) -> list[Curve]:
    """The ``tags`` scalar series (ML-Agents' names; each host's own tag is read for them) of
    every folder of TensorBoard events the run's host wrote.

    Raises:
        RunDirectoryError: the run is missing, or is a ghost-learn or mlagents-learn run with no
            event files at all (other hosts' missing logs are ``report_notes``).
    """
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    run = RunRecord(run_dir)
    run.check()
    sources, _ = run.host.curve_sources()
    if not sources and run.host.host in (GHOST_LEARN, MLAGENTS):
        raise RunDirectoryError(
            f"run {run_dir} has no TensorBoard logs (events.out.tfevents.* in a behavior folder); "
            "train it first with ghost-learn"
        )
    curves = []
    for source in sources:
        events = EventAccumulator(str(source.folder), size_guidance={"scalars": 0})
        events.Reload()
        available = set(events.Tags().get("scalars", ()))
        written = {ELO_TAG: source.elo_tag, REWARD_TAG: source.reward_tag}
        for tag in tags:
            name = written.get(tag, tag)
            if name is None or name not in available:
                continue
            scalars = events.Scalars(name)
            curves.append(
                Curve(
                    behavior=source.label,
                    tag=tag,
                    steps=np.array([s.step for s in scalars], dtype=np.int64),
                    values=np.array([s.value for s in scalars], dtype=np.float64),
                    source=name,
                )
            )
    return curves


def _snapshot_ratings(run: RunRecord) -> list[Curve]:
    """The rating of each snapshot in the run's self-play state, by the step it was taken at:
    the Elo the run can show without TensorBoard logs."""
    names = run.host.behaviors() or [SNAPSHOT_RATINGS]
    curves = []
    for name in names:
        window = sorted(
            (int(m["step"]), float(m["rating"]))
            for m in run.host.window_metadata(name).values()
            if m.get("step") is not None and m.get("rating") is not None
        )
        if window:
            steps, values = zip(*window, strict=True)
            curves.append(
                Curve(behavior=f"{name} ({SNAPSHOT_RATINGS})" if run.host.behaviors() else name,
                      tag=ELO_TAG, steps=np.array(steps, dtype=np.int64),
                      values=np.array(values, dtype=np.float64), source=SNAPSHOT_SOURCE)
            )  # fmt: skip
    return curves


def report_notes(run_dir: str | Path) -> list[str]:
    """One line for each curve of the report that the run's host did not log (empty for a
    ghost-learn or mlagents-learn run with its logs)."""
    run = RunRecord(run_dir)
    _, missing = run.host.curve_sources()
    curves = read_curves(run_dir)
    lines = list(missing)
    if not any(c.tag == ELO_TAG for c in curves) and _snapshot_ratings(run):
        lines.append("the Elo panel shows each snapshot's rating from the self-play state instead")
    return lines


def write_report(run_dir: str | Path, path: str | Path, *, title: str | None = None) -> Path:
    """Draw a run's Elo and cumulative reward curves (one line per behavior) into a PNG.

    Args:
        title: the figure title; default the run's name (its folder; an SB3 model's file).

    Returns:
        ``path``.

    Raises:
        GhostError: matplotlib is not installed (the ``plots`` extra).
        RunDirectoryError: the run is missing, or a ghost-learn or mlagents-learn run has no
            TensorBoard logs (for other hosts, ``report_notes`` says what is not drawn).
    """
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as error:
        raise GhostError(f"drawing a report needs matplotlib: {PLOTS_HINT}") from error
    run_dir = Path(run_dir)
    curves = read_curves(run_dir)
    if not any(c.tag == ELO_TAG for c in curves):
        curves += _snapshot_ratings(RunRecord(run_dir))
    # a Figure with its own Agg canvas leaves pyplot's global backend alone
    figure = Figure(figsize=(11, 4.2), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.subplots(1, 2)
    for axis, tag, label in ((axes[0], ELO_TAG, "Elo"), (axes[1], REWARD_TAG, "cumulative reward")):
        drawn = [c for c in curves if c.tag == tag]
        for curve in drawn:
            axis.plot(
                curve.steps,
                curve.values,
                marker="." if len(curve.steps) < 40 else None,
                label=curve.behavior,
            )
        if not drawn:
            axis.text(
                0.5,
                0.5,
                f"no {tag} in the logs",
                ha="center",
                va="center",
                transform=axis.transAxes,
                color="grey",
            )
        elif len(drawn) > 1:
            axis.legend(loc="best", fontsize="small")
        sources = sorted({curve.source or tag for curve in drawn}) or [tag]
        axis.set_title(f"{label} ({', '.join(sources)})", fontsize="medium")
        axis.set_xlabel("step")
        axis.set_ylabel(label)
        axis.grid(True, alpha=0.3)
    behaviors = ", ".join(sorted({c.behavior for c in curves}))
    figure.suptitle(f"{title or RunRecord(run_dir).host.name} — {behaviors}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, format="png")
    logger.info("wrote the report of %s to %s", run_dir, path)
    return path


# -- the run's tournament ------------------------------------------------------------------------
def tournament_result_path(run_dir: str | Path) -> Path:
    """Where ``ghost-eval tournament`` keeps the run's last tournament.

    Args:
        run_dir: the run folder, of any host.

    Returns:
        ``<run>/run_logs/tournament.json`` (ghost-learn, mlagents-learn), ``tournament.json`` in
        the self-play folder of SB3 and RLlib.
    """
    return RunRecord(run_dir).host.tournament_result_path


def _kept_tournament_path(run_dir: str | Path) -> Path:
    """The run's kept tournament: ``tournament.json``, or the ``league.json`` that
    ``ghost-eval league`` wrote before the command had its own word, when only that is there."""
    path = tournament_result_path(run_dir)
    legacy = path.with_name(LEGACY_TOURNAMENT_FILE)
    return legacy if not path.is_file() and legacy.is_file() else path


def save_tournament_result(run_dir: str | Path, tournament: dict[str, Any]) -> Path | None:
    """Keep ``tournament`` as the run's last tournament, for ``write_report``.

    Args:
        run_dir: the run folder.
        tournament: ``TournamentTable.to_dict()``.

    Returns:
        The path written, or None (with a warning) when the run folder cannot be written to.
    """
    path = tournament_result_path(run_dir)
    try:
        atomic_write_text(path, json.dumps(tournament, indent=1) + "\n")
    except OSError as error:
        logger.warning("could not keep the tournament result in %s: %s", path, error)
        return None
    return path


def read_tournament_result(run_dir: str | Path) -> dict[str, Any] | None:
    """The run's last tournament (``save_tournament_result``; an older run's ``league.json``).

    Args:
        run_dir: the run folder.

    Returns:
        The tournament's plain form, or None when the run has played none.

    Raises:
        RunDirectoryError: the file is there but is not JSON.
    """
    path = _kept_tournament_path(run_dir)
    if not path.is_file():
        return None
    try:
        return dict(json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, TypeError) as error:
        raise RunDirectoryError(
            f"{path} is not a tournament result ({error}); delete it or play the tournament again "
            "(ghost-eval tournament RUN)"
        ) from error


def write_tournament_report(run_dir: str | Path, path: str | Path) -> list[Path]:
    """Draw the pictures of the run's last tournament (``ghost.evaluation.pictures``) beside a
    report.

    Args:
        run_dir: the run folder.
        path: the report's picture; the tournament's go beside it as
            ``<stem>-tournament-payoffs.png`` and ``<stem>-tournament-ratings.png``.

    Returns:
        The paths written; none when the run has played no tournament (``ghost-eval tournament
        RUN`` keeps one).

    Raises:
        GhostError: matplotlib is missing, or the kept tournament result is unreadable.
    """
    tournament = read_tournament_result(run_dir)
    if tournament is None:
        return []
    path = Path(path)
    return write_tournament_pictures(
        tournament,
        payoffs_path=path.with_name(f"{path.stem}-tournament-payoffs.png"),
        ratings_path=path.with_name(f"{path.stem}-tournament-ratings.png"),
    )
