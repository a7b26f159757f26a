"""Evaluate a policy against a fixed opponent in a built-in game, with 95% confidence intervals.

Players and sides are as ``ghost.play.matches`` defines them: the evaluated policy plays one side
(team 0 unless ``side`` names a behavior), the opponent every other behavior. A match's result is
counted from the policy's side; episodes cut by the step limit are *interrupted*: counted apart
and left out of wins, draws and losses.

Each arena plays a fixed share of the episodes, so short episodes (quick losses, say) are not
over-represented the way stopping at the first ``episodes`` ended ones would make them.

The counting (``count_results``, ``result_from_counts``) takes any ``Playable``: a built-in game's
``Match`` here, a match on any ``BaseEnv`` in ``ghost.play.base_env_matches``.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import Any, Protocol

import attrs
import numpy as np
import torch

from envs.matrix_games import MatrixGame
from ghost.exceptions import ConfigError
from ghost.play.demo_recording import ArenaRecording, DemoRequest, RecordedDemo
from ghost.play.matches import Match, MatchSetup, Seat, open_match

logger = logging.getLogger(__name__)

#: two-sided 95% quantile of the standard normal distribution
Z95 = 1.959963984540054


def wilson_interval(successes: float, trials: int, *, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a success rate (95% for the default ``z``).

    Args:
        successes: successes among ``trials`` (may be fractional: a draw as half a win).
        trials: number of trials; with none the interval is ``(0, 1)``.
    """
    if trials <= 0:
        return (0.0, 1.0)
    p = successes / trials
    z2 = z * z
    denominator = 1.0 + z2 / trials
    centre = (p + z2 / (2 * trials)) / denominator
    half = z * math.sqrt(p * (1.0 - p) / trials + z2 / (4 * trials * trials)) / denominator
    # exact ends: rounding would otherwise leave 1e-18 above 0 for no successes
    low = 0.0 if successes <= 0 else max(0.0, centre - half)
    high = 1.0 if successes >= trials else min(1.0, centre + half)
    return (low, high)


def _or_none(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else value


@attrs.frozen(kw_only=True)
class EvaluationResult:
    """Counts of one evaluation, from the evaluated policy's side, and what follows from them.

    Rates are shares of the *decided* matches (wins + draws + losses); interrupted matches are
    counted in ``episodes`` only. ``score`` counts a win 1, a draw 0.5, a loss 0; its interval is
    Wilson's with a draw as half a success (conservative: a draw varies less than a coin flip).
    For matrix games ``exploitability`` is what a best response earns against the policy's mixed
    strategy (0 at the equilibrium), exact from its action probabilities; ``None`` elsewhere.
    ``demo`` is the demonstration file recorded while the matches were played, if one was asked
    for.
    """

    game: str
    policy: str
    opponent: str
    side: tuple[str, ...]
    wins: int
    draws: int
    losses: int
    interrupted: int
    seed: int = 0
    deterministic: bool = False
    exploitability: float | None = None
    opponent_exploitability: float | None = None
    policy_probabilities: tuple[float, ...] | None = None
    opponent_probabilities: tuple[float, ...] | None = None
    demo: RecordedDemo | None = None

    @property
    def episodes(self) -> int:
        """Every match played, interrupted ones included."""
        return self.decided + self.interrupted

    @property
    def decided(self) -> int:
        """Matches with a result: wins + draws + losses."""
        return self.wins + self.draws + self.losses

    def _rate(self, count: float) -> float:
        return count / self.decided if self.decided else math.nan

    @property
    def win_rate(self) -> float:
        """Wins per decided match (NaN when none was decided)."""
        return self._rate(self.wins)

    @property
    def draw_rate(self) -> float:
        """Draws per decided match."""
        return self._rate(self.draws)

    @property
    def loss_rate(self) -> float:
        """Losses per decided match."""
        return self._rate(self.losses)

    @property
    def score(self) -> float:
        """Mean score per decided match: win 1, draw 0.5, loss 0."""
        return self._rate(self.wins + 0.5 * self.draws)

    @property
    def win_ci(self) -> tuple[float, float]:
        """95% Wilson interval of ``win_rate``."""
        return wilson_interval(self.wins, self.decided)

    @property
    def draw_ci(self) -> tuple[float, float]:
        """95% Wilson interval of ``draw_rate``."""
        return wilson_interval(self.draws, self.decided)

    @property
    def loss_ci(self) -> tuple[float, float]:
        """95% Wilson interval of ``loss_rate``."""
        return wilson_interval(self.losses, self.decided)

    @property
    def score_ci(self) -> tuple[float, float]:
        """95% interval of ``score`` (Wilson, a draw as half a success)."""
        return wilson_interval(self.wins + 0.5 * self.draws, self.decided)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready values (``None`` for undefined rates)."""
        data: dict[str, Any] = {
            "game": self.game,
            "policy": self.policy,
            "opponent": self.opponent,
            "side": list(self.side),
            "episodes": self.episodes,
            "wins": self.wins,
            "draws": self.draws,
            "losses": self.losses,
            "interrupted": self.interrupted,
        }
        for name in ("win", "draw", "loss"):
            data[f"{name}_rate"] = _or_none(getattr(self, f"{name}_rate"))
            data[f"{name}_rate_ci95"] = list(getattr(self, f"{name}_ci"))
        data["score"] = _or_none(self.score)
        data["score_ci95"] = list(self.score_ci)
        data["exploitability"] = self.exploitability
        data["opponent_exploitability"] = self.opponent_exploitability
        data["policy_probabilities"] = _listed(self.policy_probabilities)
        data["opponent_probabilities"] = _listed(self.opponent_probabilities)
        data["seed"] = self.seed
        data["deterministic"] = self.deterministic
        if self.demo is not None:
            data["demo"] = self.demo.to_dict()
        return data


def _listed(values: tuple[float, ...] | None) -> list[float] | None:
    return None if values is None else list(values)


def _exploitability(match: Match, seats: list[Seat]) -> tuple[float | None, tuple | None]:
    strategies = [match.strategy(seat) for seat in seats]
    if not strategies or any(s is None for s in strategies):
        return None, None
    # one behavior per side in matrix games; the first seat's strategy stands for the side
    probs = strategies[0]
    game_type = type(match.env)
    assert isinstance(match.env, MatrixGame) and probs is not None
    return float(game_type.exploitability(probs)), tuple(float(p) for p in probs)


def evaluate(
    *,
    game: str,
    policy: Any,
    opponent: Any,
    episodes: int = 200,
    seed: int = 0,
    num_arenas: int | None = None,
    deterministic: bool = False,
    opponent_deterministic: bool = False,
    side: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    record_demo: DemoRequest | None = None,
) -> EvaluationResult:
    """Play ``episodes`` matches of ``game`` between ``policy`` and ``opponent`` and count them.

    Args:
        game: a built-in game name (``envs.games.BUILTIN_GAMES``).
        policy: the evaluated player: a policy file, run folder, scripted level or object with
            ``act``; it plays ``side``.
        opponent: the other behaviors' player, same kinds as ``policy``.
        episodes: matches to play (interrupted ones included).
        seed: seeds the game, the scripted players and torch's sampling (torch's global generator is
            restored afterwards); a negative seed draws fresh entropy.
        num_arenas: matches played at once; default ``min(episodes, 32)``.
        deterministic: the policy takes its most likely action instead of sampling.
        opponent_deterministic: the same for the opponent (scripted levels drop their noise).
        side: the behavior the policy plays (``"Goalie"``, ``"Tennis?team=1"``); default team 0's
            behaviors.
        progress: told ``(episodes played, episodes)`` as matches end.
        record_demo: also record one side's steps of the counted matches into a ``.demo`` file
            (``ghost.play.demo_recording``); the result's ``demo`` says what it holds.

    Raises:
        EnvironmentSourceError: an unknown game.
        ConfigError: an unknown level or side.
        CheckpointError: a missing or unfitting policy file (see
            ``ghost.play.matches.resolve_player``).
    """
    if episodes < 1:
        raise ConfigError(f"episodes must be >= 1 (got {episodes})")
    setup = MatchSetup(
        game=game, policy=policy, opponent=opponent, side=side, seed=seed,
        num_arenas=min(episodes, 32) if num_arenas is None else num_arenas,
        deterministic=deterministic, opponent_deterministic=opponent_deterministic,
    )  # fmt: skip
    match = open_match(setup)
    try:
        counts, demo = _count_match(match, episodes=episodes, seed=seed, progress=progress,
                                    record_demo=record_demo)  # fmt: skip
        result = _evaluation_result(
            match, counts, game=game, seed=seed, deterministic=deterministic, demo=demo
        )
    finally:
        match.close()
    _log_result(result)
    return result


def _count_match(
    match: Match,
    *,
    episodes: int,
    seed: int,
    progress: Callable[[int, int], None] | None,
    record_demo: DemoRequest | None,
) -> tuple[dict[Any, int], RecordedDemo | None]:
    """``count_results`` of ``match``, recorded into ``record_demo``'s file when asked."""
    if record_demo is None:
        return count_results(match, episodes=episodes, seed=seed, progress=progress), None
    recording = ArenaRecording(match, record_demo, quota=arena_quotas(episodes, match.num_arenas))
    try:
        counts = count_results(recording, episodes=episodes, seed=seed, progress=progress)
        return counts, recording.finish()
    finally:
        recording.discard()


def _evaluation_result(
    match: Match,
    counts: dict[Any, int],
    *,
    game: str,
    seed: int,
    deterministic: bool,
    demo: RecordedDemo | None,
) -> EvaluationResult:
    """The counts of a played ``match``, with exploitabilities read while it is still open."""
    mine = [s for s in match.seats if s.behavior_name in match.side]
    theirs = [s for s in match.seats if s.behavior_name not in match.side]
    exploitability, probabilities = _exploitability(match, mine)
    opponent_exploitability, opponent_probabilities = _exploitability(match, theirs)
    return result_from_counts(
        counts,
        game=game,
        policy=match.policy_label,
        opponent=match.opponent_label,
        side=match.side,
        seed=seed,
        deterministic=deterministic,
        exploitability=exploitability,
        opponent_exploitability=opponent_exploitability,
        policy_probabilities=probabilities,
        opponent_probabilities=opponent_probabilities,
        demo=demo,
    )


def new_counts() -> dict[Any, int]:
    """Empty result counts: ``{1: wins, 0: draws, -1: losses, "interrupted": ...}``."""
    return {1: 0, 0: 0, -1: 0, "interrupted": 0}


def result_from_counts(
    counts: dict[Any, int],
    *,
    game: str,
    policy: str,
    opponent: str,
    side: tuple[str, ...],
    seed: int,
    deterministic: bool,
    **extra: Any,
) -> EvaluationResult:
    """The ``EvaluationResult`` of ``counts`` (as ``count_results`` returns them).

    Args:
        extra: more ``EvaluationResult`` fields (a matrix game's exploitabilities).
    """
    return EvaluationResult(
        game=game,
        policy=policy,
        opponent=opponent,
        side=side,
        wins=counts[1],
        draws=counts[0],
        losses=counts[-1],
        interrupted=counts["interrupted"],
        seed=seed,
        deterministic=deterministic,
        **extra,
    )


def _log_result(result: EvaluationResult) -> None:
    logger.info(
        "%s: %s vs %s: %d-%d-%d (%d interrupted)",
        result.game,
        result.policy,
        result.opponent,
        result.wins,
        result.draws,
        result.losses,
        result.interrupted,
    )


class Playable(Protocol):
    """What ``count_results`` plays: a game with its players seated, stepped until enough
    matches ended."""

    @property
    def game(self) -> str:
        """The game's name, for messages."""

    @property
    def num_arenas(self) -> int:
        """Arenas whose results ``ended`` reports (each plays an equal share of the episodes)."""

    @property
    def max_episode_steps(self) -> int:
        """Steps within which an episode ends, at the latest (a bound against a broken game)."""

    def step(self) -> None:
        """Every player acts, then the game advances one step."""

    def ended(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Matches that ended in the last step: ``(arenas, result sign, interrupted)``."""


def arena_quotas(episodes: int, num_arenas: int) -> np.ndarray:
    """The matches each arena plays of ``episodes``: equal shares, the first ones larger by one.

    Args:
        episodes: matches in all.
        num_arenas: arenas sharing them.

    Returns:
        One count per arena.
    """
    quota = np.full(num_arenas, episodes // num_arenas)
    quota[: episodes % num_arenas] += 1
    return quota


def count_results(
    match: Playable,
    *,
    episodes: int,
    seed: int,
    progress: Callable[[int, int], None] | None = None,
) -> dict[Any, int]:
    """Run ``match`` until every arena has played its share of ``episodes``; count results
    (``new_counts``' keys, from the evaluated policy's side).

    Args:
        seed: seeds torch's sampling (its global generator is restored afterwards); a negative seed
            leaves it unseeded.
        progress: told ``(episodes counted, episodes)`` after each step that ended one.
    """
    n = match.num_arenas
    quota = arena_quotas(episodes, n)
    played = np.zeros(n, dtype=np.int64)
    counts = new_counts()
    # every episode ends by max_episode_steps at the latest; the bound only guards a broken game
    step_limit = (int(quota.max()) + 1) * match.max_episode_steps + 1
    with torch.random.fork_rng(devices=[]):
        if seed >= 0:
            torch.manual_seed(seed)
        for _ in range(step_limit):
            if (played >= quota).all():
                break
            match.step()
            arenas, results, interrupted = match.ended()
            for arena, result, cut in zip(arenas, results, interrupted, strict=True):
                if played[arena] >= quota[arena]:
                    continue
                played[arena] += 1
                counts["interrupted" if cut else int(result)] += 1
            if progress is not None and len(arenas):
                progress(int(played.sum()), episodes)
    if (played < quota).any():
        raise RuntimeError(
            f"{match.game}: {episodes} episodes did not end within {step_limit} steps "
            f"({match.max_episode_steps} per episode at most); check that the game ends its "
            "episodes"
        )
    return counts
