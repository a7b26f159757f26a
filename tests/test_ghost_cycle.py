"""``GhostCycle`` through a fake learner handle: the self-play cycle every host shares, no torch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ghost.core.controller import GhostController
from ghost.core.ghost_cycle import GhostCycle, Route, finished_matches
from ghost.core.opponents import Opponent
from ghost.core.self_play import SelfPlayState
from ghost.core.settings import CatchUpSettings, SelfPlaySettings


class FakeLearner:
    """A learner whose weights are its step, and a log of what the cycle asked of the host."""

    def __init__(self) -> None:
        self.step = 0
        self.still_training = True
        self.fielded: dict[int, list[Opponent]] = {}
        self.learning: set[int] = set()
        self.log: list[str] = []

    def weights(self) -> Any:
        return {"step": self.step}

    def field(self, team: int, opponents: list[Opponent]) -> None:
        self.fielded[team] = opponents
        self.learning.discard(team)

    def act_as_learner(self, team: int) -> None:
        self.learning.add(team)

    def publish(self) -> None:
        self.log.append("publish")


class FakeLeague:
    """An exploiter playing every learning turn (``active`` is any non-None object)."""

    def __init__(self) -> None:
        self.active: Any = "exploiter"
        self.put_log: list[Any] = []
        self.results: list[tuple[int, float]] = []

    def begin_turn(self, turn: int) -> None: ...
    def put(self, experience: Any) -> None:
        self.put_log.append(experience)

    def record(self, results: list[tuple[int, float]], controller: GhostController) -> None:
        self.results.extend(results)

    def advance(self) -> None: ...
    def turn_over(self, *, still_training: bool) -> bool:
        return False

    def end_turn(self) -> Any:
        return None


def make_cycle(**settings: Any) -> tuple[GhostCycle, FakeLearner, GhostController]:
    defaults = {"save_steps": 10, "team_change": 30, "swap_steps": 8, "window": 3,
                "play_against_latest_model_ratio": 1.0, "elo_k": 16.0}  # fmt: skip
    state = SelfPlayState(
        behavior_name="Pong", settings=SelfPlaySettings(**{**defaults, **settings}), seed=3
    )
    controller, learner = GhostController(), FakeLearner()
    cycle = GhostCycle(
        state=state, controller=controller, learner=learner, training=True,
        on_snapshot=lambda s: learner.log.append(f"snapshot {s.step}"),
        report=lambda key, score: learner.log.append(f"{key} {score}"),
    )  # fmt: skip
    for team in (0, 1):
        cycle.connect_team(team)
    return cycle, learner, controller


def test_first_turn_snapshots_the_untrained_learner_and_fields_the_ghosted_team():
    cycle, learner, controller = make_cycle()
    assert controller.learning_team == 0 and learner.learning == {0}
    cycle.begin()
    assert learner.log == ["snapshot 0", "publish"]
    assert [s.step for s in cycle.state.window] == [0]
    assert cycle.state.known_learning_team == 0 and cycle.state.swaps == 1
    (opponent,) = learner.fielded[1]
    assert opponent.is_latest and learner.learning == {0}
    cycle.begin()  # once only
    assert learner.log == ["snapshot 0", "publish"]


def test_ghost_steps_are_counted_and_only_the_learning_team_learns():
    cycle, _, _ = make_cycle()
    seen: list[Any] = []
    cycle.observer = type("Observer", (), {"add": lambda self, e: seen.append(e)})()
    cycle.begin()
    assert cycle.route(team=1, agent_steps=5, experience="ghost batch") is Route.GHOST
    assert cycle.route(team=1, agent_steps=2, experience="ghost batch") is Route.GHOST
    assert cycle.route(team=0, agent_steps=9, experience="learner batch") is Route.LEARNER
    assert cycle.state.ghost_step == 7 and seen == ["learner batch"]


def test_after_update_snapshot_then_team_change_request_and_no_swap_in_that_update():
    cycle, learner, controller = make_cycle()
    cycle.begin()
    learner.log.clear()
    cycle.route(team=1, agent_steps=100, experience=None)  # a swap is due too
    learner.step = 30  # a snapshot is due and the turn is over
    cycle.after_update()
    assert learner.log == ["snapshot 30"]  # the team change request wins over the swap
    change = controller.take_team_change()
    assert change is not None and change.learning_team == 1
    cycle.on_team_change(change)
    assert learner.log == ["snapshot 30", "publish"]
    assert learner.learning == {1} and learner.fielded[0]
    assert cycle.state.team_start_step == 30


def test_swaps_every_swap_steps_ghost_steps():
    cycle, learner, _ = make_cycle(save_steps=1000, team_change=1000)
    cycle.begin()
    swaps = cycle.state.swaps
    cycle.route(team=1, agent_steps=7, experience=None)
    cycle.after_update()
    assert cycle.state.swaps == swaps
    cycle.route(team=1, agent_steps=1, experience=None)
    cycle.after_update()
    assert cycle.state.swaps == swaps + 1 and learner.log[-1] == "publish"


def test_a_group_of_two_finishing_together_is_one_match():
    results = finished_matches(
        agent_ids=np.array([4, 5, 6, 7]),
        group_ids=np.array([9, 9, 0, 0]),
        rewards=np.array([1.0, 1.0, -1.0, 0.0]),
        interrupted=np.array([False, False, False, True]),
        arenas=np.array([2, 2, 3, 3]),
    )
    assert results == [(2, 1.0), (3, 0.0)]

    cycle, learner, _ = make_cycle()
    cycle.begin()
    cycle.book(results[:1])
    assert cycle.state.rating == pytest.approx(1208.0)  # one win at K 16 against an equal
    assert cycle.state.win_rates.games("latest") == 1
    assert learner.log[-1].endswith(" 1.0")


def test_an_exploiters_experience_and_results_go_to_the_league():
    cycle, _, _ = make_cycle()
    league = FakeLeague()
    cycle.league = league
    cycle.begin()
    assert cycle.route(team=0, agent_steps=3, experience="batch") is Route.EXPLOITER
    cycle.book([(0, 1.0)])
    assert league.put_log == ["batch"] and league.results == [(0, 1.0)]
    assert cycle.state.rating == 1200.0  # the main learner's rating is untouched


def _saved_with_files(folder: Path) -> tuple[dict, list[str]]:
    """A state with one snapshot in the window and fielded, its file written as a host would."""
    cycle, learner, _ = make_cycle(play_against_latest_model_ratio=0.0)
    cycle.begin()
    learner.step = 10
    cycle.take_snapshot()
    cycle.swap()
    for snapshot in cycle.state.window:  # as the host writes them before saving the state
        snapshot.path = folder / f"snap-{snapshot.snapshot_id}"
        snapshot.path.write_text("weights")
    return cycle.state.state_dict(), [o.key for o in cycle.state.opponents[1]]


def test_restore_fields_the_saved_opponents_again(tmp_path):
    saved, drawn = _saved_with_files(tmp_path)
    again, fresh, _ = make_cycle(play_against_latest_model_ratio=0.0)
    again.state.load_state_dict(saved, read_weights=lambda path: {"file": path.name})
    again.restore()
    assert [o.key for o in fresh.fielded[1]] == drawn and fresh.learning == {0}
    assert fresh.fielded[1][0].snapshot.weights == {"file": f"snap-{drawn[0].split('-')[1]}"}


def test_restore_goes_on_without_a_snapshot_file_that_is_gone(tmp_path, caplog):
    # resuming an older checkpoint (the newest would not load) can meet files a later one pruned
    saved, _ = _saved_with_files(tmp_path)
    for path in tmp_path.iterdir():
        path.unlink()
    again, fresh, _ = make_cycle(play_against_latest_model_ratio=0.0)
    with caplog.at_level("WARNING"):
        again.state.load_state_dict(saved, read_weights=lambda path: pytest.fail("read"))
    again.restore()
    assert "snapshot file(s) of this checkpoint are gone (snap-" in caplog.text
    assert len(again.state.window) == 0 and again.state.opponent_in(1, 0) is None


def _turn(cycle: GhostCycle, learner: FakeLearner, *, step: int, score: float) -> bool:
    """Book three matches of ``score`` for the learner, reach ``step`` and end the update:
    whether a team change was asked for."""
    cycle.book([(arena, score) for arena in range(3)])
    learner.step = step
    cycle.after_update()
    return cycle.controller._change_requested


def test_catch_up_keeps_a_losing_team_learning_up_to_max_extra_turns(caplog):
    cycle, learner, controller = make_cycle(catch_up=CatchUpSettings(below=0.3, max_extra_turns=2))
    cycle.begin()
    with caplog.at_level("INFO", logger="ghost.core.self_play"):
        assert not _turn(cycle, learner, step=30, score=0.0)  # losing: one more turn
        assert "Pong keeps learning: mean score 0.00 over 3 matches" in caplog.text
        assert cycle.state.team_start_step == 30 and cycle.state.extra_turns == 1
        assert not _turn(cycle, learner, step=45, score=0.0)  # the extended turn is not over yet
        assert not _turn(cycle, learner, step=60, score=0.0)  # losing again: the last extra turn
        assert _turn(cycle, learner, step=90, score=0.0)  # max_extra_turns reached: hand over
    change = controller.take_team_change()
    assert change is not None and change.learning_team == 1
    cycle.on_team_change(change)
    assert cycle.state.extra_turns == 0 and cycle.state.turn_matches == 0


def test_catch_up_hands_over_a_team_that_is_not_losing_and_is_off_by_default():
    cycle, learner, _ = make_cycle(catch_up=CatchUpSettings(below=0.3))
    cycle.begin()
    assert _turn(cycle, learner, step=30, score=0.5)
    plain, plain_learner, _ = make_cycle()
    plain.begin()
    assert _turn(plain, plain_learner, step=30, score=0.0)


def test_catch_up_counts_survive_a_restore(tmp_path):
    cycle, learner, _ = make_cycle(catch_up=CatchUpSettings(below=0.3))
    cycle.begin()
    _turn(cycle, learner, step=30, score=0.0)
    cycle.book([(0, 0.0)])
    for snapshot in cycle.state.window:  # as the host writes them before saving the state
        snapshot.path = tmp_path / f"snap-{snapshot.snapshot_id}"
        snapshot.path.write_text("weights")
    state = cycle.state.state_dict()
    restored, _, _ = make_cycle(catch_up=CatchUpSettings(below=0.3))
    restored.state.load_state_dict(state, read_weights=lambda path: None)
    assert (restored.state.extra_turns, restored.state.turn_matches) == (1, 1)
