"""The learner's results against each pool member: rolling win rates and a payoff table.

Scores are 1 (win), 0.5 (draw), 0 (loss) from the learner's side. The rolling rate (last
``window`` matches per opponent) drives PFSP; the payoff table keeps every result, one row per
learner version (the snapshot the learner had last taken when the match was played), one column
per opponent, and is written to ``<run>/<Behavior>/payoff.csv``.
"""

from __future__ import annotations

import csv
import io
import re
from collections import defaultdict, deque
from typing import Any

from ghost.core.ratings import DRAW, WIN

WIN_RATE_STAT = "Self-play/Win Rate"
_DIGITS = re.compile(r"(\d+)")


def natural_key(name: str) -> tuple[str | int, ...]:
    """Sorts names as a person reads them: ``snapshot-2`` before ``snapshot-10``."""
    # split() puts text at even positions and digits at odd ones: never a str against an int
    return tuple(int(part) if i % 2 else part for i, part in enumerate(_DIGITS.split(name)))


def result_stat_keys(opponent: Any) -> list[str]:
    """The win-rate stats one match against ``opponent`` (a ``ghost.core.opponents.Opponent``)
    feeds: the overall rate, plus one per opponent for the latest learner and fixed opponents."""
    keys = [WIN_RATE_STAT]
    if opponent.is_fixed or opponent.is_latest:
        keys.append(f"{WIN_RATE_STAT} vs {opponent.key}")
    return keys


class WinRates:
    """Rolling win rates per opponent key and the full payoff counts."""

    def __init__(self, window: int) -> None:
        self.window = window
        self._recent: dict[str, deque[float]] = {}
        # (learner version, opponent key) -> [wins, draws, losses]
        self._payoff: dict[tuple[int, str], list[int]] = defaultdict(lambda: [0, 0, 0])

    def record(self, opponent: str, learner_version: int, score: float) -> None:
        self._recent.setdefault(opponent, deque(maxlen=self.window)).append(score)
        column = 0 if score == WIN else 1 if score == DRAW else 2
        self._payoff[(learner_version, opponent)][column] += 1

    def rate(self, opponent: str, default: float = 0.5) -> float:
        """Mean score of the last ``window`` matches against ``opponent`` (``default`` if none)."""
        recent = self._recent.get(opponent)
        return sum(recent) / len(recent) if recent else default

    def games(self, opponent: str) -> int:
        return len(self._recent.get(opponent, ()))

    @property
    def opponents(self) -> list[str]:
        """Every opponent key of the payoff table, in natural order (``natural_key``)."""
        return sorted({key for _, key in self._payoff}, key=natural_key)

    def payoff_csv(self) -> str:
        """``learner,opponent,...`` table of ``wins/draws/losses (win rate)`` cells, as CSV text."""
        versions = sorted({version for version, _ in self._payoff})
        opponents = self.opponents
        handle = io.StringIO()
        writer = csv.writer(handle)
        writer.writerow(["learner version", *opponents])
        for version in versions:
            row = [f"v{version}"]
            for opponent in opponents:
                counts = self._payoff.get((version, opponent))
                if not counts or not sum(counts):
                    row.append("")
                    continue
                wins, draws, losses = counts
                rate = (wins + 0.5 * draws) / (wins + draws + losses)
                row.append(f"{wins}/{draws}/{losses} ({rate:.2f})")
            writer.writerow(row)
        return handle.getvalue()

    def state_dict(self) -> dict[str, Any]:
        return {
            "recent": {key: list(values) for key, values in self._recent.items()},
            "payoff": [[version, key, *counts] for (version, key), counts in self._payoff.items()],
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._recent = {k: deque(v, maxlen=self.window) for k, v in state["recent"].items()}
        self._payoff.clear()
        for version, key, wins, draws, losses in state["payoff"]:
            self._payoff[(int(version), key)] = [wins, draws, losses]
