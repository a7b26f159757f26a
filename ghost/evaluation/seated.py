"""Matches in OpenSpiel and PettingZoo games (``--env openspiel:...`` / ``pettingzoo:...`` runs).

A **player** is anything with ``act(obs, action_mask, deterministic) -> ActionTuple``: a trained
policy (``trainers.policy.load_policy``) or a scripted one (``envs.board_players``). A line-up
gives every seat its player; ``play_seated`` plays ``games`` games of it on many tables at once
and returns every seat's results. ``evaluate_both_seats`` seats the policy in each seat in turn
with the opponent everywhere else, which is how a turn-based game must be judged (the first
mover often has the edge).

A game counts as a win for a seat with a positive final reward, a loss with a negative one, a
draw otherwise (poker: chips won or lost).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import attrs
import numpy as np
from mlagents_envs.base_env import ActionTuple

from envs.seated_game import SeatedGame
from trainers.memory import act_on_steps, forget_ended


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


class SeatResults(Protocol):
    """Per-seat results with the players' labels: ``BothSeats``, or a seated run's
    ``ghost.evaluation.run_evaluation.RunEvaluation``."""

    @property
    def policy(self) -> str: ...

    @property
    def opponent(self) -> str: ...

    @property
    def seats(self) -> tuple[SeatResult, ...]: ...

    @property
    def win_rate(self) -> float: ...

    @property
    def mean_reward(self) -> float: ...


def format_both_seats(result: SeatResults) -> str:
    """A small table: per seat games, W/D/L, win rate and mean reward."""
    lines = [
        f"{result.policy} vs {result.opponent}",
        f"{'seat':>4} {'games':>6} {'W':>6} {'D':>6} {'L':>6} {'win rate':>9} {'mean reward':>12}",
    ]
    for s in result.seats:
        lines.append(
            f"{s.seat:>4} {s.games:>6} {s.wins:>6} {s.draws:>6} {s.losses:>6} "
            f"{s.win_rate:>9.3f} {s.mean_reward:>12.3f}"
        )
    lines.append(f"all seats: win rate {result.win_rate:.3f}, mean reward {result.mean_reward:.3f}")
    return "\n".join(lines)
