"""A run's snapshots against one player: its progress, or a policy against its past.

``evaluate_run`` plays every snapshot of one behavior against a fixed opponent (a scripted
level, say); ``evaluate_against_snapshots`` plays a policy against every snapshot of the
behavior on the other side. Each game is ``ghost.play.head_to_head.evaluate``; the snapshots and
their steps and ratings come from ``ghost.play.run_record.RunRecord``, whichever host trained the
run (ghost-learn, mlagents-learn, SB3, RLlib: ``ghost.play.run_layouts``), and each snapshot
plays as its host's policy (``ghost.play.host_policies``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from envs.behavior_id import BehaviorId
from envs.games import BUILTIN_GAMES
from ghost.evaluation.progress import play_all
from ghost.evaluation.run_evaluation import RunEvaluation, SnapshotEvaluation
from ghost.exceptions import ConfigError
from ghost.play.game_runner import GameRunner, InlineGames
from ghost.play.head_to_head import evaluate
from ghost.play.matches import opponent_behavior
from ghost.play.run_record import RunRecord, SnapshotInfo

#: told ``(done, total)`` as evaluations finish
Progress = Callable[[int, int], None]


def _game_of(run_dir: Path, game: str | None) -> str:
    if game is not None:
        return game
    run = RunRecord(run_dir)
    if run.base_env_path is not None:
        raise ConfigError(
            f"run {run_dir} trained on {run.base_env_path}, not a built-in game: play its "
            "snapshots with ghost-eval snapshots RUN, or in Python with "
            "ghost.evaluation.env_evaluation.evaluate_snapshots"
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


def _evaluate_snapshots(
    run_dir: Path,
    snapshots: Sequence[SnapshotInfo],
    *,
    snapshots_play: Literal["policy", "opponent"],
    other: Any,
    game: str,
    side: str | None,
    episodes: int,
    seed: int,
    num_arenas: int | None,
    deterministic: bool,
    games: GameRunner | None,
    progress: Progress | None,
) -> RunEvaluation:
    """One ``evaluate`` per snapshot of ``run_dir``, in the order given, each against ``other``.

    :param snapshots_play: ``"policy"``: each snapshot is the evaluated policy and ``other`` its
        opponent; ``"opponent"``: ``other`` is the evaluated policy, each snapshot its opponent.
    :param side: the behavior the evaluated policy plays (see ``evaluate``).
    :param games: where the evaluations are played (``RayGames``: all at once, as Ray tasks);
        default one after the other in this process.
    :param progress: called with ``(snapshots done, snapshots in all)`` as each one finishes.
    """
    shared = {"game": game, "episodes": episodes, "seed": seed, "num_arenas": num_arenas,
              "deterministic": deterministic, "side": side}  # fmt: skip
    calls = [
        {**shared, "policy": snapshot.path, "opponent": other}
        if snapshots_play == "policy"
        else {**shared, "policy": other, "opponent": snapshot.path}
        for snapshot in snapshots
    ]
    results = play_all(
        games if games is not None else InlineGames(), evaluate, calls,
        progress=None if progress is None else lambda done, total, _: progress(done, total),
    )  # fmt: skip
    rows = tuple(
        SnapshotEvaluation(snapshot.snapshot_id, snapshot.step, snapshot.rating, results[index])
        for index, snapshot in enumerate(snapshots)
    )
    # the run's label on the snapshots' side; the other player's as ``evaluate`` named it
    other_label = str(other)
    if rows:
        first = rows[0].result
        other_label = first.opponent if snapshots_play == "policy" else first.policy
    labels = (str(run_dir), other_label)
    if snapshots_play == "opponent":
        labels = labels[::-1]
    return RunEvaluation(run=run_dir, policy=labels[0], opponent=labels[1], snapshots=rows)


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
    """Evaluate every snapshot of ``behavior`` in a run against one ``opponent``, oldest first.

    Shows a run's progress, e.g. against a scripted level. Steps and ratings come from the run's
    latest checkpoint (``None`` when it has none). The snapshots play ``behavior``'s side.

    :param game: the built-in game; default the run's ``env_settings.env_path``.
    :param progress: called with ``(snapshots done, snapshots in all)`` as each one finishes.
    """
    run_dir = Path(run_dir)
    game = _game_of(run_dir, game)
    return _evaluate_snapshots(
        run_dir,
        RunRecord(run_dir).snapshots(BehaviorId.parse(behavior).name),
        snapshots_play="policy",
        other=opponent,
        game=game,
        side=behavior,
        episodes=episodes,
        seed=seed,
        num_arenas=num_arenas,
        deterministic=deterministic,
        games=games,
        progress=progress,
    )


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
    """Evaluate ``policy`` against every snapshot of a run, oldest first.

    The opponents are the snapshots of the behavior on the other side (the same behavior in a
    symmetric game, e.g. the final policy against its own past; ``Goalie`` for ``Striker``).
    ``progress`` is called with ``(snapshots done, snapshots in all)`` as each one finishes.
    """
    run_dir = Path(run_dir)
    return _evaluate_snapshots(
        run_dir,
        RunRecord(run_dir).snapshots(opponent_behavior(game, side)),
        snapshots_play="opponent",
        other=policy,
        game=game,
        side=side,
        episodes=episodes,
        seed=seed,
        num_arenas=num_arenas,
        deterministic=deterministic,
        games=games,
        progress=progress,
    )
