"""The players of a tournament: a run's snapshots, final policies, fixed opponents and levels.

``tournament_players`` gathers them for one or more runs: in a built-in game scripted levels can
play; in a Unity build or a ``module:callable`` environment there are none (a fixed opponent that
is one is left out, with a warning). A run of any host
(``ghost.play.run_layouts``) has snapshots and a final policy; only ghost-learn and
mlagents-learn record fixed opponents.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs

from envs.games import scripted_levels
from ghost.exceptions import ConfigError, GhostError, RunDirectoryError
from ghost.play.run_record import RunRecord

logger = logging.getLogger(__name__)

SNAPSHOT, FINAL, FIXED, SCRIPTED = "snapshot", "final", "fixed", "scripted"


# -- players ---------------------------------------------------------------------------------------
@attrs.frozen(kw_only=True)
class TournamentPlayer:
    """One player: a policy file or a scripted level, playing ``behavior``'s side."""

    name: str
    kind: str
    behavior: str
    path: Path | None = None
    level: str | None = None
    step: int | None = None
    #: a snapshot's rating in training (from the run's latest checkpoint), for comparison
    training_rating: float | None = None

    @property
    def target(self) -> Path | str:
        """What ``ghost.evaluation.evaluate`` is given for this player."""
        if self.path is not None:
            return self.path
        assert self.level is not None
        return self.level

    @property
    def source(self) -> str:
        """The policy file, or ``<level> (scripted)``."""
        return str(self.path) if self.path is not None else f"{self.level} (scripted)"


# -- the players of a run ------------------------------------------------------------------------
def _fixed_entries(run_dir: Path, behavior: str) -> list[Any]:
    """``self_play.fixed_opponents`` of ``behavior`` in the run's configuration.yaml (none for
    a host that records no configuration: SB3, RLlib)."""
    try:
        self_play = RunRecord(run_dir).self_play_settings(behavior)
    except GhostError as error:
        logger.warning("leaving out the fixed opponents of %s: %s", run_dir, error)
        return []
    return list(self_play.fixed_opponents) if self_play is not None else []


def _fixed_player(entry: Any, *, game: str | None, behavior: str) -> TournamentPlayer | None:
    """The player of one ``fixed_opponents`` entry, or ``None`` (with a warning) when it cannot
    play: a level of another game (or of any game when ``game`` is ``None``: not a built-in
    one), a missing policy file."""
    if entry.scripted is not None:
        named_game, _, level = entry.scripted.rpartition(":")
        if game is None:
            logger.warning(
                "leaving out fixed opponent %r: scripted levels (%r) exist only for built-in games",
                entry.name,
                entry.scripted,
            )
            return None
        if (named_game and named_game != game) or level not in scripted_levels(game):
            logger.warning(
                "leaving out fixed opponent %r: %r is not a scripted level of %s",
                entry.name,
                entry.scripted,
                game,
            )
            return None
        return TournamentPlayer(name=entry.name, kind=FIXED, behavior=behavior, level=level)
    path = Path(entry.policy)
    if not path.is_file():
        logger.warning(
            "leaving out fixed opponent %r: its policy file %s does not exist (relative paths "
            "are read from the current folder, as in training)",
            entry.name,
            path,
        )
        return None
    return TournamentPlayer(name=entry.name, kind=FIXED, behavior=behavior, path=path)


def _check_levels(game: str, include_levels: Sequence[str]) -> None:
    levels = scripted_levels(game)
    unknown = [level for level in include_levels if level not in levels]
    if unknown:
        raise ConfigError(
            f"--include-levels: {', '.join(map(repr, unknown))} not a scripted level of {game}; "
            f"choose from {', '.join(levels)}"
        )


#: ``named(name, behavior, kind)``: the player's unique name in the tournament
_Namer = Callable[[str, str, str], str]


def _own_players(run: RunRecord, behavior: str, *, named: _Namer) -> list[TournamentPlayer]:
    """``behavior``'s snapshots in the run (oldest first), then its final policy (unless it is
    one of those snapshots: an RLlib run's newest stands for its final policy)."""
    players: list[TournamentPlayer] = []
    try:
        snapshots = run.snapshots(behavior)
    except RunDirectoryError as error:
        logger.info("%s", error)
        snapshots = []
    for snapshot in snapshots:
        players.append(
            TournamentPlayer(
                name=named(f"snapshot-{snapshot.snapshot_id}", behavior, SNAPSHOT),
                kind=SNAPSHOT,
                behavior=behavior,
                path=snapshot.path,
                step=snapshot.step,
                training_rating=snapshot.rating,
            )
        )
    final = run.final(behavior)
    if final is not None and final.path.is_file():
        if final.path in {snapshot.path for snapshot in snapshots}:
            return players
        players.append(
            TournamentPlayer(
                name=named("final", behavior, FINAL),
                kind=FINAL,
                behavior=behavior,
                path=final.path,
                step=final.step,
            )
        )
    return players


def _opponent_players(
    run_dir: Path, behavior: str, *, game: str | None, include_levels: Sequence[str], named: _Namer
) -> list[TournamentPlayer]:
    """``behavior``'s fixed opponents in the run, then the ``include_levels`` not among them."""
    players: list[TournamentPlayer] = []
    fixed_levels = set()
    for entry in _fixed_entries(run_dir, behavior):
        player = _fixed_player(entry, game=game, behavior=behavior)
        if player is not None:
            players.append(attrs.evolve(player, name=named(entry.name, behavior, FIXED)))
            fixed_levels.add(player.level)
    for level in dict.fromkeys(include_levels):
        if level in fixed_levels:
            logger.info("level %s is already a fixed opponent of %s", level, behavior)
            continue
        players.append(
            TournamentPlayer(
                name=named(level, behavior, SCRIPTED),
                kind=SCRIPTED,
                behavior=behavior,
                level=level,
            )
        )
    return players


def tournament_players(
    run_dirs: Sequence[str | Path],
    *,
    behaviors: Sequence[str],
    game: str | None = None,
    include_levels: Sequence[str] = (),
) -> list[TournamentPlayer]:
    """The players of a tournament of one or more runs.

    Per behavior name and run: its snapshots (oldest first), its final policy, its fixed
    opponents (a scripted level only in a built-in ``game``; elsewhere it is left out with a
    warning), then ``include_levels`` (a level already among the fixed opponents is not added
    twice). With several runs names start with the run's folder name (``run-a/snapshot-3``; the
    whole path where two folders share a name); in an asymmetric game (several behavior names)
    with the behavior (``Goalie/snapshot-3``).

    Args:
        run_dirs: the run folders.
        behaviors: the game's behavior names (no team), team 0's first.
        game: the built-in game played, whose scripted levels can play; None elsewhere.
        include_levels: scripted levels of ``game`` to add as players.

    Returns:
        The players, uniquely named.

    Raises:
        RunDirectoryError: a run folder does not exist.
        ConfigError: an unknown level in ``include_levels``.
    """
    paths = [Path(run_dir) for run_dir in run_dirs]
    _check_runs(paths)
    if game is not None:
        _check_levels(game, include_levels)
    if len(paths) == 1:
        runs = {"": paths[0]}
    else:
        short = [path.name for path in paths]
        runs = {(path.name if short.count(path.name) == 1 else str(path)): path for path in paths}
    return _gather(runs, list(behaviors), game=game, include_levels=include_levels)


def _check_runs(run_dirs: Sequence[Path]) -> None:
    for run_dir in run_dirs:
        if not run_dir.is_dir():
            raise RunDirectoryError(f"run folder {run_dir} does not exist; pass results/<run-id>")


def _gather(
    runs: dict[str, Path],
    behaviors: list[str],
    *,
    game: str | None,
    include_levels: Sequence[str],
) -> list[TournamentPlayer]:
    """Every run's players of every behavior (see ``tournament_players``), uniquely named; a run's
    names start with its key in ``runs`` unless that key is empty."""
    symmetric = len(behaviors) == 1
    players: list[TournamentPlayer] = []
    taken: set[str] = set()

    def namer(prefix: str) -> _Namer:
        def named(name: str, behavior: str, kind: str) -> str:
            label = name if symmetric else f"{behavior}/{name}"
            label = f"{prefix}/{label}" if prefix else label
            if label in taken:
                label = f"{label} ({kind})"
            while label in taken:
                label += "'"
            taken.add(label)
            return label

        return named

    for behavior in behaviors:
        for prefix, run_dir in runs.items():
            run = RunRecord(run_dir)
            named = namer(prefix)
            players += _own_players(run, behavior, named=named)
            players += _opponent_players(
                run_dir, behavior, game=game, include_levels=include_levels, named=named
            )
    return players
