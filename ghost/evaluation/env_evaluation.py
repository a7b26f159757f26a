"""Snapshots and tournaments of runs on a Unity build or a ``module:callable`` environment.

The counterparts of ``ghost.evaluation.snapshots`` and ``ghost.evaluation.tournament`` for runs whose
environment is a general ``BaseEnv``: every game is ``ghost.play.base_env_matches.EnvGames.
head_to_head`` on one open environment (one Unity build started for the whole evaluation), and
the results are the same types (``RunEvaluation`` rows, a ``TournamentTable``), printed the same way.

- ``evaluate_snapshots``: each snapshot of a run against one player (the run's progress), or one
  player against each snapshot (a policy against its past);
- ``play_env_tournament``: a round robin of the snapshots, final policies and fixed opponents of one
  or more runs, rated with Elo and OpenSkill. With one behavior name (``Pong?team=0`` and
  ``Pong?team=1``) every pair meets and sides swap halfway; with several (``Striker`` against
  ``Goalie``) a player keeps its behavior's side and meets the other side's players.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ghost.evaluation.run_evaluation import RunEvaluation, SnapshotEvaluation
from ghost.evaluation.tournament import TournamentTable, build_table, tournament_pairs
from ghost.evaluation.tournament_players import env_tournament_players
from ghost.evaluation.tournament_ratings import PairResult
from ghost.exceptions import ConfigError, RunDirectoryError
from ghost.play.base_env_matches import EnvGames, EnvPlayer, teams_for_side
from ghost.play.run_record import RunRecord

logger = logging.getLogger(__name__)


# -- snapshots -----------------------------------------------------------------------------------
def _policy_teams(
    games: EnvGames, behavior: str, *, snapshots_play: str, side: str | None
) -> list[int] | None:
    """The teams the evaluated policy plays when the snapshots of ``behavior`` play
    ``snapshots_play``'s part (``None``: every team, sides swapping)."""
    by_side = teams_for_side(games.teams, side)
    if len(games.behavior_names) == 1:
        return by_side
    own = games.teams_with(behavior)
    teams = own if snapshots_play == "policy" else [t for t in games.teams if t not in own]
    return [t for t in teams if by_side is None or t in by_side]


def evaluate_snapshots(
    games: EnvGames,
    run_dir: str | Path,
    *,
    other: Any,
    snapshots_play: Literal["policy", "opponent"],
    episodes: int,
    seed: int = 0,
    side: str | None = None,
    deterministic: bool = False,
) -> list[RunEvaluation]:
    """Each snapshot of ``run_dir`` against ``other``, oldest first: one ``RunEvaluation`` per
    behavior name that has snapshots.

    :param snapshots_play: ``"policy"``: each snapshot is the evaluated policy, ``other`` its
        opponent; ``"opponent"``: ``other`` is the evaluated policy, each snapshot its opponent.
    :param side: the behavior the evaluated policy plays (default: the snapshot's behavior, or
        the other side's; every team in turn with one behavior name).
    :param seed: seeds every snapshot's games alike.
    :raises RunDirectoryError: the run has no snapshots of the environment's behaviors.
    """
    run = RunRecord(run_dir)
    other_player = EnvPlayer(other, what="policy" if snapshots_play == "opponent" else "opponent")
    evaluations = []
    for behavior in games.behavior_names:
        teams = _policy_teams(games, behavior, snapshots_play=snapshots_play, side=side)
        try:
            snapshots = run.snapshots(behavior) if teams != [] else []
        except RunDirectoryError as error:
            logger.info("%s", error)
            continue
        rows = []
        for snapshot in snapshots:
            players = (snapshot.path, other_player)
            mine, theirs = players if snapshots_play == "policy" else players[::-1]
            result = games.head_to_head(
                policy=mine, opponent=theirs, episodes=episodes, seed=seed, teams=teams,
                deterministic=deterministic, opponent_deterministic=deterministic,
            )  # fmt: skip
            rows.append(
                SnapshotEvaluation(snapshot.snapshot_id, snapshot.step, snapshot.rating, result)
            )
        if rows:
            evaluations.append(_run_evaluation(Path(run_dir), behavior, rows, snapshots_play))
    if not evaluations:
        raise RunDirectoryError(
            f"run {run_dir} has no snapshots of {', '.join(games.behavior_names)} to play"
            + (f" on side {side}" if side else "")
            + "; snapshots exist only for behaviors trained with self_play"
        )
    return evaluations


def _run_evaluation(
    run_dir: Path, behavior: str, rows: list[SnapshotEvaluation], snapshots_play: str
) -> RunEvaluation:
    """The rows of ``behavior``'s snapshots, labelled as ``ghost.evaluation.snapshots`` does."""
    own = f"{run_dir} ({behavior} snapshots)"
    first = rows[0].result
    policy, opponent = (own, first.opponent) if snapshots_play == "policy" else (first.policy, own)
    return RunEvaluation(run=run_dir, policy=policy, opponent=opponent, snapshots=tuple(rows))


# -- tournament --------------------------------------------------------------------------------------
def _pair_seed(seed: int, pair: int) -> int:
    if seed < 0:
        return -1
    return int(np.random.SeedSequence([seed, pair]).generate_state(1)[0])


def play_env_tournament(
    games: EnvGames,
    run_dirs: Sequence[str | Path],
    *,
    games_per_pair: int = 40,
    seed: int = 0,
    deterministic: bool = False,
    prior_draws: float = 1.0,
    progress: Callable[[int, int, PairResult], None] | None = None,
) -> TournamentTable:
    """Play a round robin of the players of ``run_dirs`` in ``games`` and rate them.

    :param games_per_pair: games each pair plays (with one behavior name, half on each side).
    :param seed: seeds every pair's games (each pair its own stream) and the OpenSkill order.
    :param progress: called after each pair with ``(pairs done, pairs in all, its result)``.
    :raises ConfigError: ``games_per_pair`` < 1, or fewer than two players (one per side).
    """
    if games_per_pair < 1:
        raise ConfigError(f"--games-per-pair must be >= 1 (got {games_per_pair})")
    behaviors = games.behavior_names
    symmetric = len(behaviors) == 1
    for run_dir in run_dirs:
        if not env_tournament_players([run_dir], behaviors=behaviors):
            raise ConfigError(
                f"run {run_dir} has no policy of {', '.join(behaviors)} (the behaviors of "
                f"{games.label}) to play in the tournament; pass runs trained on {games.label}"
            )
    players = env_tournament_players(run_dirs, behaviors=behaviors)
    pairs = tournament_pairs(players, symmetric=symmetric)
    runs = ", ".join(str(run_dir) for run_dir in run_dirs)
    if not pairs:
        raise ConfigError(
            f"a tournament needs two players (one on each side of {games.label}); {runs} "
            f"{'has' if len(run_dirs) == 1 else 'have'} "
            f"{', '.join(p.name for p in players) or 'none'}: add another run (ghost-eval tournament "
            "RUN OTHER_RUN) or train with self_play, which leaves snapshots"
        )
    acting = {player.name: EnvPlayer(player.target) for player in players}
    results = []
    for index, (a, b) in enumerate(pairs):
        result = games.head_to_head(
            policy=acting[a.name], opponent=acting[b.name], episodes=games_per_pair,
            seed=_pair_seed(seed, index), teams=None if symmetric else games.teams_with(a.behavior),
            deterministic=deterministic, opponent_deterministic=deterministic,
        )  # fmt: skip
        pair = PairResult(a.name, b.name, result.wins, result.draws, result.losses,
                          result.interrupted)  # fmt: skip
        results.append(pair)
        if progress is not None:
            progress(index + 1, len(pairs), pair)
    return build_table(
        players, results, game=games.label, run_dir=runs, symmetric=symmetric,
        games_per_pair=games_per_pair, seed=seed, prior_draws=prior_draws,
    )  # fmt: skip
