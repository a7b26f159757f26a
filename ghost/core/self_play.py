"""``SelfPlayState``: the self-play bookkeeping of one behavior name, independent of any trainer.

It holds what ML-Agents' GhostTrainer keeps beside the wrapped trainer: the snapshot window, the
learner's rating, the fixed opponents, the opponents each ghosted team fields, the learner's win
rates, and the counters that decide when to snapshot, swap and hand learning to another team;
with ``self_play.league`` also the exploiters' bookkeeping and the league members
(``ghost.core.league``).
Weights are opaque (whatever the trainer's policy hands out); the self-play cycle
(``ghost.core.ghost_cycle``) asks it what is due and acts on the answer through its host.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ghost.core.league import Exploiter, LeagueState, draw_for_exploiter
from ghost.core.opponents import LATEST, FixedOpponent, Opponent, Pool, opponent_slots
from ghost.core.ratings import MatchRating
from ghost.core.sampling import exploiter_pfsp_exponent, make_sampler
from ghost.core.settings import SelfPlaySettings
from ghost.core.snapshots import Snapshot, SnapshotWindow
from ghost.core.win_rates import WinRates

logger = logging.getLogger(__name__)


class SelfPlayState:
    """Self-play state of behavior ``behavior_name`` (see the module docstring).

    Args:
        behavior_name: the behavior this state belongs to.
        settings: its ``self_play`` section.
        seed: seeds the opponent draws.
        fixed_opponents: permanent pool members (already loaded).
    """

    def __init__(
        self,
        *,
        behavior_name: str,
        settings: SelfPlaySettings,
        seed: int = 0,
        fixed_opponents: list[FixedOpponent] | None = None,
    ) -> None:
        self.behavior_name = behavior_name
        self.settings = settings
        self.window = SnapshotWindow(settings.window)
        self.rating = settings.initial_elo
        self.rng = np.random.default_rng(seed + 7919)
        self.sampler = make_sampler(settings)
        self.win_rates = WinRates(settings.sampling.win_rate_window)
        self.fixed_opponents = list(fixed_opponents or [])
        self.league = LeagueState(
            settings.league,
            win_rate_window=settings.sampling.win_rate_window,
            initial_elo=settings.initial_elo,
        )
        #: the opponents each ghosted team of this behavior fields, by team id
        self.opponents: dict[int, list[Opponent]] = {}
        #: how often each pool member was drawn as an opponent
        self.draw_counts: Counter[str] = Counter()
        self.ghost_step = 0
        self.last_save_step = 0
        self.last_swap_ghost_step = 0
        self.team_start_step = 0
        self.swaps = 0
        self.known_learning_team: int | None = None
        #: the learner's rated matches in the running turn: score sum and count (catch_up)
        self.turn_score = 0.0
        self.turn_matches = 0
        #: turns this team has kept in a row because it was losing (catch_up)
        self.extra_turns = 0

    # -- what is due -------------------------------------------------------------------------
    def snapshot_due(self, trainer_step: int) -> bool:
        return trainer_step - self.last_save_step >= self.settings.save_steps

    def turn_over(self, trainer_step: int, *, still_training: bool) -> bool:
        """Whether the learning team's turn is over (a finished learner hands over at once).

        With ``catch_up`` a turn that ends with the learner losing is extended here instead:
        the turn count restarts at ``trainer_step`` and this returns False.
        """
        if not still_training:
            return True
        if trainer_step - self.team_start_step < self.settings.steps_per_team:
            return False
        if self._keeps_turn():
            self.extra_turns += 1
            logger.info(
                "%s keeps learning: mean score %.2f over %d matches in its turn, below "
                "self_play.catch_up.below %.2f (extra turn %d of %d)",
                self.behavior_name, self.turn_score / self.turn_matches, self.turn_matches,
                self.settings.catch_up.below, self.extra_turns, self.settings.catch_up.max_extra_turns,
            )  # fmt: skip
            self._begin_turn_count(trainer_step)
            return False
        return True

    def _keeps_turn(self) -> bool:
        catch_up = self.settings.catch_up
        return (
            catch_up.enabled
            and self.extra_turns < catch_up.max_extra_turns
            and self.turn_matches > 0
            and self.turn_score / self.turn_matches < catch_up.below
        )

    def _begin_turn_count(self, trainer_step: int) -> None:
        self.team_start_step = trainer_step
        self.turn_score = 0.0
        self.turn_matches = 0

    def swap_due(self) -> bool:
        return self.ghost_step - self.last_swap_ghost_step >= self.settings.swap_steps

    def count_ghost_steps(self, agent_steps: int) -> None:
        """Experience of a ghosted team: it trains nothing but paces the swaps."""
        self.ghost_step += agent_steps

    # -- changes -----------------------------------------------------------------------------
    def take_snapshot(self, weights: Any, trainer_step: int) -> Snapshot:
        """Add the learner's ``weights`` at ``trainer_step`` to the window."""
        self.last_save_step = trainer_step
        return self.window.add(weights=weights, rating=self.rating, step=trainer_step)

    def start_turn(self, learning_team: int | None, trainer_step: int, *, learning: bool) -> None:
        """Another team learns now: restart the turn count (if this behavior learns)."""
        self.known_learning_team = learning_team
        if learning:
            self._begin_turn_count(trainer_step)
            self.extra_turns = 0

    def pool(self, latest_weights: Any, trainer_step: int) -> Pool:
        """The latest learner (frozen now), the window, the league members and the fixed
        opponents."""
        latest = Snapshot(snapshot_id=LATEST, step=trainer_step, rating=self.rating,
                          weights=latest_weights)  # fmt: skip
        return Pool(
            latest=Opponent(snapshot=latest),
            window=[Opponent(snapshot=snapshot) for snapshot in self.window],
            fixed=[Opponent(fixed=fixed) for fixed in self.fixed_opponents],
            league=self.league.opponents(),
        )

    def draw_opponents(
        self, team: int, pool: Pool, *, exploiter: Exploiter | None = None
    ) -> list[Opponent]:
        """Draw ``opponents_per_swap`` opponents for ghosted team ``team`` from ``pool``; while
        ``exploiter`` has the learning turn, those it faces (``draw_for_exploiter``)."""
        count = self.settings.opponents_per_swap
        if exploiter is None:
            draws = [self.sampler.draw(pool, self.win_rates, self.rng) for _ in range(count)]
            self.draw_counts.update(opponent.key for opponent in draws)
        else:
            draws = draw_for_exploiter(
                exploiter, pool, behavior_name=self.behavior_name, count=count,
                exponent=exploiter_pfsp_exponent(self.settings.sampling), rng=self.rng,
            )  # fmt: skip
        self.opponents[team] = draws
        return draws

    def mark_swap(self) -> None:
        self.last_swap_ghost_step = self.ghost_step
        self.swaps += 1

    def opponent_in(self, team: int, arena: int) -> Opponent | None:
        """The opponent team ``team`` fields in arena key ``arena`` (None before any draw)."""
        opponents = self.opponents.get(team)
        if not opponents:
            return None
        return opponents[int(opponent_slots(np.asarray([arena]), len(opponents))[0])]

    def apply_match(self, rating: MatchRating) -> None:
        """Book one rated match of this behavior's learner (see ``GhostController.rate_match``)."""
        self.rating = rating.learner_rating
        self.turn_score += rating.score
        self.turn_matches += 1
        version = max(self.window.next_id - 1, 0)
        for opponent, new_rating in zip(rating.opponents, rating.opponent_ratings, strict=True):
            # relative, applied in turn: a pinned opponent stays; two seats of one snapshot
            # end at the last seat's rating
            opponent.adjust_rating(new_rating - opponent.rating)
            self.win_rates.record(opponent.key, version, rating.score)

    # -- persistence -------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Everything but window snapshot weights (each snapshot must have a ``path`` already);
        league members keep their weights here."""
        return {
            "rating": self.rating,
            "ghost_step": self.ghost_step,
            "last_save_step": self.last_save_step,
            "last_swap_ghost_step": self.last_swap_ghost_step,
            "team_start_step": self.team_start_step,
            "turn_score": self.turn_score,
            "turn_matches": self.turn_matches,
            "extra_turns": self.extra_turns,
            "swaps": self.swaps,
            "known_learning_team": self.known_learning_team,
            "window": [s.metadata() for s in self.window],
            "next_snapshot_id": self.window.next_id,
            "opponents": {
                str(team): [self._opponent_state(o) for o in opponents]
                for team, opponents in self.opponents.items()
            },
            "rng": self.rng.bit_generator.state,
            "win_rates": self.win_rates.state_dict(),
            "draw_counts": dict(self.draw_counts),
            "fixed_ratings": {f.name: f.rating for f in self.fixed_opponents},
            "league": self.league.state_dict(),
        }

    def load_state_dict(self, state: dict[str, Any], read_weights: Callable[[Path], Any]) -> None:
        """Continue from ``state_dict()``; ``read_weights`` reads a snapshot file's weights."""
        self.rating = float(state["rating"])
        self.ghost_step = int(state["ghost_step"])
        self.last_save_step = int(state["last_save_step"])
        self.last_swap_ghost_step = int(state["last_swap_ghost_step"])
        self.team_start_step = int(state["team_start_step"])
        self.turn_score = float(state.get("turn_score", 0.0))
        self.turn_matches = int(state.get("turn_matches", 0))
        self.extra_turns = int(state.get("extra_turns", 0))
        self.swaps = int(state["swaps"])
        self.known_learning_team = state["known_learning_team"]
        saved = _snapshots_on_disk(state["window"])
        snapshots = [
            Snapshot(
                snapshot_id=m["snapshot_id"],
                step=m["step"],
                rating=m["rating"],
                weights=read_weights(Path(m["path"])),
                path=Path(m["path"]),
            )  # fmt: skip
            for m in saved
        ]
        self.window.restore(snapshots, int(state["next_snapshot_id"]))
        if "league" in state:
            self.league.load_state_dict(state["league"])
        else:  # a checkpoint from before the league: the schedule starts at the running turn
            self.league.restart_schedule()
        in_window = {m["snapshot_id"] for m in saved}
        self.opponents = {
            _team_key(key): [self._restore_opponent(entry) for entry in entries]
            for key, entries in state["opponents"].items()
            if entries and all(_restorable(entry, in_window) for entry in entries)
        }
        self.rng.bit_generator.state = state["rng"]
        self.win_rates.load_state_dict(state["win_rates"])
        self.draw_counts = Counter(state["draw_counts"])
        for fixed in self.fixed_opponents:
            fixed.rating = float(state["fixed_ratings"].get(fixed.name, fixed.rating))

    def _opponent_state(self, opponent: Opponent) -> dict[str, Any]:
        if opponent.fixed is not None:
            return {"fixed": opponent.fixed.name}
        snapshot = opponent.snapshot
        assert snapshot is not None
        member = self.league.member(opponent.member) if opponent.member is not None else None
        if member is not None and member.snapshot is snapshot:
            return {"member": opponent.member}
        if opponent.member is None and self.window.by_id(snapshot.snapshot_id) is snapshot:
            return {"snapshot_id": snapshot.snapshot_id}
        # the latest copy, or a snapshot or member evicted while still in play: keep its weights
        # (an evicted snapshot's file goes with the next checkpoint, so no path is kept)
        kept = {"snapshot": {**snapshot.metadata(), "path": None}, "weights": snapshot.weights}
        return kept if opponent.member is None else {**kept, "member": opponent.member}

    def _restore_opponent(self, entry: dict[str, Any]) -> Opponent:
        if "fixed" in entry:
            return Opponent(fixed=next(f for f in self.fixed_opponents if f.name == entry["fixed"]))
        if "weights" in entry:
            meta = entry["snapshot"]
            return Opponent(snapshot=Snapshot(snapshot_id=meta["snapshot_id"], step=meta["step"],
                                     rating=meta["rating"], weights=entry["weights"]),
                            member=entry.get("member"))  # fmt: skip
        if "member" in entry:
            member = self.league.member(entry["member"])
            assert member is not None, "a league member in play is saved with the league"
            return member.opponent()
        snapshot = self.window.by_id(entry["snapshot_id"])
        assert snapshot is not None, "a window opponent is saved with the window"
        return Opponent(snapshot=snapshot)


def _snapshots_on_disk(window: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The saved window without snapshots whose file is gone: an older checkpoint, resumed
    because the newest would not load, can name files that a later checkpoint pruned."""
    present = [m for m in window if Path(m["path"]).is_file()]
    missing = [Path(m["path"]).name for m in window if m not in present]
    if missing:
        logger.warning(
            "%d snapshot file(s) of this checkpoint are gone (%s); the window goes on without them",
            len(missing),
            ", ".join(missing),
        )
    return present


def _restorable(entry: dict[str, Any], in_window: set[int]) -> bool:
    """Whether a saved opponent can be rebuilt (a window snapshot must still be in the window;
    a team whose opponents cannot all be is drawn afresh)."""
    return any(key in entry for key in ("fixed", "weights", "member")) or (
        entry.get("snapshot_id") in in_window
    )


def _team_key(key: str) -> int:
    """A saved team key: ``"1"``, or a behavior id string ``"Name?team=1"`` of older checkpoints."""
    head, _, tail = key.rpartition("?team=")
    return int(tail if head else key)
