"""A run's training curves read back, and ``write_report``, a PNG of its Elo and cumulative
reward curves; ``write_league_report``, the pictures of the run's last league beside it.

Curves come from each behavior folder's TensorBoard events (ML-Agents' tag names). Everything
else a run left behind (its configuration, game, final policies, snapshots) is read by
``ghost.play.run_record.RunRecord``; ``run_game`` and ``run_snapshots`` are its shortcuts.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from ghost.evaluation.pictures import PLOTS_HINT, write_league_pictures
from ghost.exceptions import GhostError, RunDirectoryError
from ghost.play.run_record import RunRecord, SnapshotInfo
from trainers.atomic_files import atomic_write_text
from trainers.run_layout import CONFIGURATION_FILE, RunLayout

logger = logging.getLogger(__name__)

ELO_TAG = "Self-play/ELO"
REWARD_TAG = "Environment/Cumulative Reward"
#: the last league played on a run (``LeagueTable.to_dict()``), in its ``run_logs`` folder
LEAGUE_FILE = "league.json"


def _check_run(run_dir: Path) -> None:
    RunRecord(run_dir).check()


def run_game(run_dir: str | Path) -> str | None:
    """The built-in game a run trained on, or ``None`` (``RunRecord.builtin_game``)."""
    return RunRecord(run_dir).builtin_game


def run_snapshots(run_dir: str | Path, behavior_name: str) -> list[SnapshotInfo]:
    """The snapshot files of ``behavior_name`` in a run, oldest first (``RunRecord.snapshots``)."""
    return RunRecord(run_dir).snapshots(behavior_name)


def find_run_root(path: str | Path, *, levels: int = 3) -> Path | None:
    """The run folder holding ``path`` (itself or an ancestor with ``configuration.yaml``)."""
    path = Path(path)
    for candidate in [path, *path.parents][: levels + 1]:
        if (candidate / CONFIGURATION_FILE).is_file():
            return candidate
    return None


# -- curves ------------------------------------------------------------------------------------
@attrs.frozen(kw_only=True)
class Curve:
    """One scalar series of one behavior: ``steps`` and ``values`` arrays of equal length."""

    behavior: str
    tag: str
    steps: np.ndarray
    values: np.ndarray


def read_curves(run_dir: str | Path, tags: tuple[str, ...] = (ELO_TAG, REWARD_TAG)) -> list[Curve]:
    """The ``tags`` scalar series of every behavior folder of a run that has TensorBoard events.

    :raises RunDirectoryError: the run is missing or has no event files at all.
    """
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    run_dir = Path(run_dir)
    _check_run(run_dir)
    folders = sorted(
        folder
        for folder in run_dir.iterdir()
        if folder.is_dir() and any(folder.glob("events.out.tfevents.*"))
    )
    if not folders:
        raise RunDirectoryError(
            f"run {run_dir} has no TensorBoard logs (events.out.tfevents.* in a behavior folder); "
            "train it first with ghost-learn"
        )
    curves = []
    for folder in folders:
        events = EventAccumulator(str(folder), size_guidance={"scalars": 0})
        events.Reload()
        available = set(events.Tags().get("scalars", ()))
        for tag in tags:
            if tag not in available:
                continue
            scalars = events.Scalars(tag)
            curves.append(
                Curve(
                    behavior=folder.name,
                    tag=tag,
                    steps=np.array([s.step for s in scalars], dtype=np.int64),
                    values=np.array([s.value for s in scalars], dtype=np.float64),
                )
            )
    return curves


def write_report(run_dir: str | Path, path: str | Path, *, title: str | None = None) -> Path:
    """Draw a run's Elo and cumulative reward curves (one line per behavior) into a PNG.

    :param title: the figure title; default the run folder's name.
    :raises GhostError: matplotlib is not installed (the ``plots`` extra).
    :raises RunDirectoryError: the run is missing or has no TensorBoard logs.
    :returns: ``path``.
    """
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as error:
        raise GhostError(f"drawing a report needs matplotlib: {PLOTS_HINT}") from error
    run_dir = Path(run_dir)
    curves = read_curves(run_dir)
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
        axis.set_title(f"{label} ({tag})", fontsize="medium")
        axis.set_xlabel("step")
        axis.set_ylabel(label)
        axis.grid(True, alpha=0.3)
    behaviors = ", ".join(sorted({c.behavior for c in curves}))
    figure.suptitle(f"{title or run_dir.name} — {behaviors}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, format="png")
    logger.info("wrote the report of %s to %s", run_dir, path)
    return path


# -- the run's league ----------------------------------------------------------------------------
def league_result_path(run_dir: str | Path) -> Path:
    """``<run>/run_logs/league.json``: where ``ghost-eval league`` keeps the run's last league."""
    return RunLayout(Path(run_dir)).run_logs_dir / LEAGUE_FILE


def save_league_result(run_dir: str | Path, league: dict[str, Any]) -> Path | None:
    """Keep ``league`` (``LeagueTable.to_dict()``) as the run's last league, for ``write_report``;
    the path written, or None (with a warning) when the run folder cannot be written to."""
    path = league_result_path(run_dir)
    try:
        atomic_write_text(path, json.dumps(league, indent=1) + "\n")
    except OSError as error:
        logger.warning("could not keep the league result in %s: %s", path, error)
        return None
    return path


def read_league_result(run_dir: str | Path) -> dict[str, Any] | None:
    """The run's last league (``save_league_result``), or None when it has none.

    :raises RunDirectoryError: the file is there but is not JSON.
    """
    path = league_result_path(run_dir)
    if not path.is_file():
        return None
    try:
        return dict(json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, TypeError) as error:
        raise RunDirectoryError(
            f"{path} is not a league result ({error}); delete it or play the league again "
            "(ghost-eval league RUN)"
        ) from error


def write_league_report(run_dir: str | Path, path: str | Path) -> list[Path]:
    """The pictures of the run's last league (``ghost.evaluation.pictures``) beside the report
    ``path``: ``<stem>-league-payoffs.png`` and ``<stem>-league-ratings.png``; none when the run
    has played no league (``ghost-eval league RUN`` keeps one).

    :raises GhostError: matplotlib is missing, or the kept league result is unreadable.
    :returns: the paths written.
    """
    league = read_league_result(run_dir)
    if league is None:
        return []
    path = Path(path)
    return write_league_pictures(
        league,
        payoffs_path=path.with_name(f"{path.stem}-league-payoffs.png"),
        ratings_path=path.with_name(f"{path.stem}-league-ratings.png"),
    )
