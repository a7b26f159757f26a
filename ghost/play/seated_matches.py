"""Matches in turn-based OpenSpiel and PettingZoo games, and their venue (``SeatedVenue``).

A **player** is anything with ``act(obs, action_mask, deterministic) -> ActionTuple``: a trained
policy (``trainers.policy.load_policy``) or a scripted one (``envs.board_players``). A line-up
gives every seat its player; ``play_seated`` plays ``games`` games of it on many tables at once
and returns every seat's results. ``evaluate_both_seats`` seats the policy in each seat in turn
with the opponent everywhere else, which is how a turn-based game must be judged (the first
mover often has the edge); ``SeatedVenue.play`` does so for ``ghost-eval match``.

A game counts as a win for a seat with a positive final reward, a loss with a negative one, a
draw otherwise (poker: chips won or lost).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import attrs
import numpy as np
from mlagents_envs.base_env import ActionTuple

from envs.behavior_id import BehaviorId
from envs.board_players import scripted_levels
from envs.seated_game import Seat, SeatedGame
from envs.sources import resolve_env
from ghost.exceptions import ConfigError
from ghost.play.run_record import RunRecord
from ghost.play.venue import PairCounts, SnapshotsPlay
from trainers.memory import act_on_steps, forget_ended
from trainers.policy import load_policy

if TYPE_CHECKING:
    from ghost.play.demo_recording import DemoRequest


class Player(Protocol):
    def act(
        self, obs: list[np.ndarray], action_mask: Any = None, deterministic: bool = False
    ) -> ActionTuple: ...


@attrs.frozen(kw_only=True)
class SeatResult:
    """One seat's games: count of wins/draws/losses, and its mean final reward."""

    seat: int
    games: int
    wins: int
    draws: int
    losses: int
    mean_reward: float

    @property
    def win_rate(self) -> float:
        return self.wins / max(self.games, 1)

    @property
    def loss_rate(self) -> float:
        return self.losses / max(self.games, 1)

    def to_dict(self) -> dict[str, Any]:
        return {**attrs.asdict(self), "win_rate": self.win_rate, "loss_rate": self.loss_rate}


def _seat_result(seat: int, rewards: list[float]) -> SeatResult:
    values = np.asarray(rewards, dtype=np.float64)
    return SeatResult(
        seat=seat,
        games=len(values),
        wins=int((values > 0).sum()),
        draws=int((values == 0).sum()),
        losses=int((values < 0).sum()),
        mean_reward=float(values.mean()) if len(values) else 0.0,
    )


def play_seated(
    env: SeatedGame,
    players: Mapping[int, Player],
    *,
    games: int,
    deterministic: Mapping[int, bool] | None = None,
) -> dict[int, SeatResult]:
    """Play ``games`` finished games with ``players`` (seat → player) on ``env``'s tables.

    Interrupted games are not counted. Every table plays until ``games`` games have finished in
    all, so each table contributes about equally.
    """
    missing = sorted(set(range(env.num_seats)) - set(players))
    if missing:
        raise ValueError(f"no player for seats {missing}")
    deterministic = deterministic or {}
    rewards: dict[int, list[float]] = {seat: [] for seat in range(env.num_seats)}
    finished = 0
    env.reset()
    while finished < games:
        for name in env.behavior_specs:
            decision, terminal = env.get_steps(name)
            for agent_id, reward, cut in zip(
                terminal.agent_id.tolist(), terminal.reward.tolist(), terminal.interrupted.tolist(),
                strict=True,
            ):  # fmt: skip
                if not cut and len(rewards[agent_id % env.num_seats]) < games:
                    rewards[agent_id % env.num_seats].append(reward)
            for player in players.values():
                forget_ended(player, terminal)
            if len(decision):
                env.set_actions(name, _act(players, decision, env.num_seats, deterministic))
        finished = min(len(values) for values in rewards.values())
        if finished < games:
            env.step()
    return {seat: _seat_result(seat, values) for seat, values in rewards.items()}


def _act(
    players: Mapping[int, Player], decision: Any, num_seats: int, deterministic: Mapping[int, bool]
) -> ActionTuple:
    """One behavior's actions, each row answered by the player of its seat."""
    seats = decision.agent_id % num_seats
    continuous = discrete = None
    for seat in np.unique(seats).tolist():
        rows = np.flatnonzero(seats == seat)
        answer = act_on_steps(
            players[seat], decision, deterministic=deterministic.get(seat, False), rows=rows
        )
        if continuous is None:
            continuous = np.zeros((len(seats), answer.continuous.shape[1]), np.float32)
            discrete = np.zeros((len(seats), answer.discrete.shape[1]), np.int32)
        continuous[rows] = answer.continuous
        discrete[rows] = answer.discrete
    return ActionTuple(continuous=continuous, discrete=discrete)


@attrs.frozen(kw_only=True)
class BothSeats:
    """The policy's results in each seat against the opponent in the others."""

    policy: str
    opponent: str
    seats: tuple[SeatResult, ...]

    @property
    def win_rate(self) -> float:
        """Wins over all games, every seat's games counted alike."""
        return sum(s.wins for s in self.seats) / max(sum(s.games for s in self.seats), 1)

    @property
    def mean_reward(self) -> float:
        """The mean of the per-seat mean rewards (a game's value averaged over seats)."""
        return float(np.mean([s.mean_reward for s in self.seats]))

    def to_dict(self) -> dict[str, Any]:
        return {
            "policy": self.policy,
            "opponent": self.opponent,
            "win_rate": self.win_rate,
            "mean_reward": self.mean_reward,
            "seats": [s.to_dict() for s in self.seats],
        }


def evaluate_both_seats(
    make_env: Any,
    *,
    policy: Mapping[int, Player],
    opponent: Mapping[int, Player],
    games: int,
    seed: int = 0,
    labels: tuple[str, str] = ("policy", "opponent"),
    deterministic: bool = False,
) -> BothSeats:
    """Seat ``policy`` in each seat in turn (``games`` games each), ``opponent`` in the others.

    ``make_env(seed=...)`` creates the game; ``policy``/``opponent`` map every seat to the player
    that plays it (one network may serve all seats).
    """
    results = []
    env = make_env(seed=seed)
    try:
        for seat in range(env.num_seats):
            line_up = {s: (policy if s == seat else opponent)[s] for s in range(env.num_seats)}
            outcome = play_seated(env, line_up, games=games, deterministic={seat: deterministic})
            results.append(outcome[seat])
    finally:
        env.close()
    return BothSeats(policy=labels[0], opponent=labels[1], seats=tuple(results))


# -- the players of a run ------------------------------------------------------------------------
def seat_names(seats: list[BehaviorId] | tuple[Seat, ...]) -> list[str]:
    """The behavior name (``Name``) of each seat.

    Args:
        seats: the game's seats (or their behavior ids).

    Returns:
        One name per seat.
    """
    return [s.behavior.name if isinstance(s, Seat) else s.name for s in seats]


def open_tables(env_path: str, copies: int, seed: int = 0) -> SeatedGame:
    """The game of ``env_path`` with ``copies`` tables.

    Args:
        env_path: an OpenSpiel or PettingZoo ``env_path``.
        copies: tables played at once.
        seed: the game's seed.

    Returns:
        The open game.
    """
    return attrs.evolve(resolve_env(env_path), copies=copies)(worker_id=0, seed=seed)


def run_players(run_root: Path, names: list[str]) -> dict[int, Player]:
    """Seat → the run's final policy of that seat's behavior.

    Args:
        run_root: the run folder.
        names: the behavior name of each seat.

    Returns:
        Each seat's player.
    """
    run = RunRecord(run_root)
    loaded: dict[str, Player] = {}
    for name in names:
        if name not in loaded:
            loaded[name] = run.final_policy(name)
    return {seat: loaded[name] for seat, name in enumerate(names)}


def opponent_players(spec: str, seats: tuple[Seat, ...], *, seed: int) -> dict[int, Player]:
    """Seat → player for ``spec``: a scripted level, a policy file, or a run folder.

    Args:
        spec: what plays, as typed.
        seats: the game's seats.
        seed: seeds a scripted level (each seat its own).

    Returns:
        Each seat's player.

    Raises:
        ConfigError: ``spec`` is none of those.
    """
    path = Path(spec)
    if path.is_dir():
        return run_players(path, seat_names(seats))
    if path.is_file():
        policy = load_policy(path)
        return dict.fromkeys(range(len(seats)), policy)
    game = seats[0].behavior.name
    levels = scripted_levels(game)
    if spec not in levels:
        raise ConfigError(
            f"opponent {spec!r} is not a policy file, a run folder or a scripted level of "
            f"{game} ({', '.join(levels)})"
        )
    return {
        index: levels[spec](action_spec=seat.action_spec, seed=seed + index)
        for index, seat in enumerate(seats)
    }


# -- the venue -----------------------------------------------------------------------------------
#: why a seated game records no demonstrations
_NO_DEMO = (
    "--record-demo: demonstrations are recorded in built-in games, Unity builds and "
    "module:callable environments, not in OpenSpiel/PettingZoo games (their seats take turns "
    "on many tables at once)"
)
#: what a seated game does not play yet, said by the venue's other methods
_NOT_YET = (
    "{what} of a run on an OpenSpiel or PettingZoo game are not played; use ghost-eval match "
    "RUN --against OPPONENT or ghost-eval exploitability RUN"
)


@attrs.frozen(kw_only=True)
class SeatedVenue:
    """An OpenSpiel or PettingZoo game as a ``ghost.play.venue.Venue``: the policy plays every
    seat in turn, the opponent every other seat.

    Attributes:
        env_path: the game (``openspiel:tic_tac_toe``, ``pettingzoo:...``).
    """

    env_path: str

    @property
    def label(self) -> str:
        """The game as its run names it."""
        return self.env_path

    @property
    def builtin_game(self) -> None:
        """None: the levels of a seated game are ``envs.board_players``', named by ``play``."""
        return None

    @property
    def seats(self) -> tuple[Seat, ...]:
        """The game's seats (read from a game of one table)."""
        probe = open_tables(self.env_path, 1)
        try:
            return probe.seats
        finally:
            probe.close()

    @property
    def behaviors(self) -> list[str]:
        """The behavior names of the seats, seat 0's first."""
        return list(dict.fromkeys(seat_names(self.seats)))

    def play(
        self,
        *,
        policy: Any,
        opponent: Any,
        episodes: int,
        seed: int = 0,
        side: Any = None,
        deterministic: bool = False,
        opponent_deterministic: bool = False,
        progress: Callable[[int, int], None] | None = None,
        record_demo: DemoRequest | None = None,
    ) -> BothSeats:
        """The policy in each seat in turn (``episodes`` finished games each) against the
        opponent in the others.

        Args:
            policy: a run folder (its final policy of each seat's behavior), a policy file or a
                scripted level.
            opponent: the same kinds.
            episodes: finished games per seat.
            seed: seeds the game and the scripted levels.
            side: must be None: the policy plays every seat.
            deterministic: the policy takes its most likely action.
            opponent_deterministic: ignored: the opponent samples, as scripted levels do.
            progress: ignored: the seats' games end together.
            record_demo: must be None: no demonstrations are recorded here.

        Returns:
            The policy's results in each seat.

        Raises:
            ConfigError: ``side`` or ``record_demo`` is given.
        """
        if record_demo is not None:
            raise ConfigError(_NO_DEMO)
        if side is not None:
            raise ConfigError("a seated game's policy plays every seat in turn; leave out --side")
        seats = self.seats
        copies = min(episodes, 64)
        return evaluate_both_seats(
            lambda seed: open_tables(self.env_path, copies, seed),
            policy=opponent_players(str(policy), seats, seed=seed),
            opponent=opponent_players(str(opponent), seats, seed=seed),
            games=episodes,
            seed=seed,
            labels=(str(policy), str(opponent)),
            deterministic=deterministic,
        )

    def play_pair(self, a: Any, b: Any, **_: Any) -> PairCounts:
        """Not played (a tournament of a seated run).

        Raises:
            ConfigError: always.
        """
        raise ConfigError(_NOT_YET.format(what="tournaments"))

    def snapshot_sides(
        self, *, snapshots_play: SnapshotsPlay, side: str | None
    ) -> list[tuple[str, Any]]:
        """Not played (the snapshots of a seated run).

        Raises:
            ConfigError: always.
        """
        raise ConfigError(_NOT_YET.format(what="snapshots"))

    def close(self) -> None:
        """Nothing to close: ``play`` opens and closes its game."""
