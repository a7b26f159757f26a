"""League training with exploiters (``self_play.league``) inside the ghost trainer.

Layers: the role schedule and the PFSP draw as exact math; a ghost trainer around recording
trainers (what reaches which learner, promotions, restarts, asymmetric games); a PPO session on a
toy two-team environment (turns in the schedule, resume from a checkpoint, old checkpoints).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from envs.behavior_id import BehaviorId
from envs.stepping import InProcessStepper
from ghost.config.settings import BehaviorSettings, RunOptions
from ghost.core.controller import GhostController
from ghost.core.league import (
    Exploiter,
    ExploiterKind,
    draw_for_exploiter,
    scheduled_exploiter,
)
from ghost.core.opponents import LATEST, Opponent, Pool
from ghost.core.self_play import SelfPlayState
from ghost.core.self_play_host import SelfPlayHost
from ghost.core.settings import LeagueSettings, SamplingSettings, SelfPlaySettings
from ghost.core.snapshots import Snapshot
from ghost.core.win_rates import WinRates
from ghost.running.ghost_trainer import GhostTrainer
from ghost.running.session import SelfPlaySession
from tests.team_envs import (
    SPEC,
    GhostRig,
    RecordingTrainer,
    TeamArenaEnv,
    apply_team_change,
    make_batch,
)
from trainers.base import ExperienceQueue, PolicyQueue
from trainers.hyperparameters import PPOSettings
from trainers.run_files.layout import RunLayout
from trainers.settings import NetworkSettings

pytestmark = pytest.mark.usefixtures("one_torch_thread")

WIN, LOSS = 1.0, -1.0


def weights_equal(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


# -- exact math --------------------------------------------------------------------------------


def test_the_schedule_gives_one_turn_in_main_turns_plus_one_to_the_next_exploiter():
    roles = [scheduled_exploiter(p, main_turns=2, exploiters=3) for p in range(12)]
    assert roles == [None, None, 0, None, None, 1, None, None, 2, None, None, 0]
    assert {scheduled_exploiter(p, main_turns=1, exploiters=0) for p in range(10)} == {None}


def test_a_league_exploiter_draws_its_hardest_opponents_most():
    exploiter = Exploiter(index=0, kind=ExploiterKind.LEAGUE, rank=0, win_rates=WinRates(50))
    for _ in range(20):
        exploiter.win_rates.record("Arena/snapshot-0", 0, 1.0)  # always beaten
        exploiter.win_rates.record("Arena/snapshot-1", 0, 0.0)  # never beaten
    snapshots = [Snapshot(snapshot_id=i, step=0, rating=1200.0, weights={}) for i in (0, 1)]
    latest = Opponent(snapshot=Snapshot(snapshot_id=LATEST, step=0, rating=1200.0, weights={}))
    pool = Pool(latest=latest, window=[Opponent(snapshot=s) for s in snapshots], fixed=[])
    draws = draw_for_exploiter(exploiter, pool, behavior_name="Arena", count=400, exponent=2.0,
                               rng=np.random.default_rng(0))  # fmt: skip
    counts = Counter(opponent.key for opponent in draws)
    # hard PFSP, exponent 2: weights 0 (beaten), 1 (never beaten), 0.25 (unplayed latest)
    assert counts["snapshot-0"] == 0
    assert counts["snapshot-1"] / 400 == pytest.approx(0.8, abs=0.06)
    assert counts["latest"] / 400 == pytest.approx(0.2, abs=0.06)
    main = Exploiter(index=1, kind=ExploiterKind.MAIN, rank=0, win_rates=WinRates(50))
    assert draw_for_exploiter(main, pool, behavior_name="Arena", count=3, exponent=2.0,
                              rng=np.random.default_rng(0)) == [latest]  # fmt: skip


# -- a ghost trainer around recording trainers ---------------------------------------------------


class LeagueRig:
    """A ``GhostTrainer`` around ``RecordingTrainer``s (main learner and exploiters), wired like
    ``SelfPlaySession`` does; ``built`` lists every exploiter trainer made, in order."""

    def __init__(
        self,
        tmp_path: Path,
        *,
        name: str = "Arena",
        teams: tuple[int, ...] = (0, 1),
        controller: GhostController | None = None,
        **self_play: Any,
    ) -> None:
        self.controller = controller if controller is not None else GhostController()
        settings = BehaviorSettings(max_steps=10**9, self_play=SelfPlaySettings(**self_play))
        self.inner = RecordingTrainer(
            behavior_name=name, settings=settings, artifact_dir=tmp_path / name
        )
        self.built: list[RecordingTrainer] = []

        def make(label: str, seed: int) -> RecordingTrainer:
            trainer = RecordingTrainer(behavior_name=name, settings=settings,
                                       artifact_dir=tmp_path / label, seed=seed)  # fmt: skip
            self.built.append(trainer)
            return trainer

        self.state = SelfPlayState(behavior_name=name, settings=settings.self_play)
        self.ghost = GhostTrainer(
            trainer=self.inner, kit=SelfPlayHost(controller=self.controller), state=self.state,
            layout=RunLayout(tmp_path), make_trainer=make,
        )  # fmt: skip
        self.name = name
        self.teams = teams
        self.queues: dict[int, ExperienceQueue] = {}
        for team in teams:
            bid = BehaviorId(name, team)
            self.ghost.add_policy(bid, self.ghost.create_policy(bid, SPEC))
            self.queues[team] = ExperienceQueue(bid)
            self.ghost.subscribe_trajectory_queue(self.queues[team])
            self.ghost.publish_policy_queue(PolicyQueue(bid))

    def put(self, result: float | None) -> None:
        """One environment step of every team: 2 decisions each; the learning team also
        finishes a match in arena 0 with final reward ``result`` (3 agent steps)."""
        for team in self.teams:
            bid = BehaviorId(self.name, team)
            if team == self.controller.learning_team and result is not None:
                batch = make_batch(bid, decisions=2, terminal_ids=[90], rewards=[result])
            else:
                batch = make_batch(bid, decisions=2)
            self.queues[team].put(batch)

    def step(self, result: float | None = None) -> bool:
        """One step, the ghost's advance and a team change if one is due (whether one was)."""
        self.put(result)
        self.ghost.advance()
        return apply_team_change(self.controller, self)

    def play_turn(self, result: float | None = None) -> int:
        """Steps until the turn ends; how many it took."""
        for steps in range(1, 100):
            if self.step(result):
                return steps
        raise AssertionError("the turn never ended")

    @property
    def exploiter(self) -> str | None:
        active = self.ghost.league.active
        return None if active is None else active.name

    def opponents(self, team: int) -> list[Opponent]:
        return self.ghost.opponent_policies[BehaviorId(self.name, team)].opponents


def test_an_exploiter_turn_trains_the_exploiter_only(tmp_path):
    rig = LeagueRig(tmp_path, team_change=9, swap_steps=4, save_steps=10**6, opponents_per_swap=3,
                    league=LeagueSettings(main_exploiters=1, main_turns=1))  # fmt: skip
    rig.step(WIN)
    assert rig.exploiter is None and rig.built == []  # the main learner's turn comes first
    assert rig.play_turn(WIN) == 2 and rig.inner.step == 9
    # team 1's turn is the exploiter's: its trainer is built now
    assert rig.controller.learning_team == 1 and rig.exploiter == "main-exploiter-0"
    (exploiter,) = rig.built
    team1 = BehaviorId("Arena", 1)
    assert rig.ghost.acting_policy(team1) is exploiter.policy is not rig.ghost.learner
    assert rig.ghost.get_policy(team1) is rig.ghost.learner  # what the run exports
    rating, win_rates = rig.state.rating, rig.state.win_rates.state_dict()
    swaps = rig.state.swaps
    for step in range(3):
        # the main exploiter faces the main learner alone, across swaps too
        (opponent,) = rig.opponents(0)
        assert opponent.is_latest
        assert weights_equal(opponent.snapshot.weights, rig.ghost.learner.get_weights())
        assert rig.step(WIN) == (step == 2)
    assert rig.state.swaps >= swaps + 2
    # 3 exploiter steps of 3 agent steps: the turn is over, the main learner never moved
    assert rig.controller.learning_team == 0 and rig.exploiter is None
    assert [b.behavior_id for b in exploiter.received] == [team1] * 3 and exploiter.step == 9
    assert rig.inner.step == 9 and rig.ghost.step == 9
    assert all(b.behavior_id.team == 0 for b in rig.inner.received)
    assert rig.state.rating == rating and rig.state.win_rates.state_dict() == win_rates
    assert rig.ghost.acting_policy(BehaviorId("Arena", 0)) is rig.ghost.learner
    rig.play_turn(WIN)
    assert rig.inner.step == 18 and len(rig.opponents(1)) == 3  # a main turn draws as before


def test_a_winning_main_exploiter_is_promoted_and_restarts_fresh(tmp_path):
    rig = LeagueRig(tmp_path, team_change=9, swap_steps=10**6, save_steps=10**6,
                    sampling=SamplingSettings(strategy="uniform"),
                    league=LeagueSettings(main_exploiters=1, main_turns=1,
                                          promote_win_rate=0.6))  # fmt: skip
    rig.play_turn(LOSS)
    rig.play_turn(WIN)  # the exploiter wins all 3 of its matches
    first = rig.built[0]
    (member,) = rig.state.league.members
    assert member.name == "exploiter-0-1"
    assert weights_equal(member.snapshot.weights, first.policy.get_weights())
    # it beat the main learner (rated 1200) every time: rated above it
    assert member.snapshot.rating > rig.state.rating
    assert rig.ghost.league.trainers == {}  # restarts: its trainer is gone
    assert rig.state.league.exploiters[0].generation == 1
    # the main learner's pool holds the member: the uniform draw over window + league takes it
    draws = Counter()
    for _ in range(30):
        rig.ghost._swap()
        draws.update(o.key for o in rig.opponents(1))
    assert draws["exploiter-0-1"] > 0 and set(draws) == {"snapshot-0", "exploiter-0-1"}
    played = rig.state.win_rates.games("exploiter-0-1") + rig.state.win_rates.games("snapshot-0")
    rig.play_turn(LOSS)  # a main turn (its results rate the main learner against the member)
    assert (
        rig.state.win_rates.games("exploiter-0-1") + rig.state.win_rates.games("snapshot-0")
        == played + 3
    )
    assert rig.exploiter == "main-exploiter-0"
    second = rig.built[1]
    assert second is not first
    assert not weights_equal(second.policy.get_weights(), member.snapshot.weights)
    assert rig.ghost.acting_policy(BehaviorId("Arena", 1)) is second.policy


def test_a_losing_main_exploiter_restarts_after_reset_turns_and_a_league_exploiter_never(tmp_path):
    rig = LeagueRig(tmp_path, team_change=9, swap_steps=10**6, save_steps=10**6,
                    league=LeagueSettings(main_exploiters=1, league_exploiters=1, main_turns=1,
                                          reset_turns=2, promote_win_rate=0.5))  # fmt: skip
    seen: list[tuple[str | None, int]] = []
    for _ in range(8):  # main, main-exploiter, main, league-exploiter, ... twice
        rig.step(LOSS)
        seen.append((rig.exploiter, len(rig.built)))
        rig.play_turn(LOSS)
    main, league = rig.state.league.exploiters
    assert seen == [(None, 0), ("main-exploiter-0", 1), (None, 1), ("league-exploiter-0", 2),
                    (None, 2), ("main-exploiter-0", 2), (None, 2), ("league-exploiter-0", 2)]  # fmt: skip
    assert rig.state.league.members == []
    assert (main.generation, main.turns) == (1, 0)  # restarted after its second turn
    assert (league.generation, league.turns) == (0, 2)
    assert set(rig.ghost.league.trainers) == {1}  # only the league exploiter's remains
    # the league exploiter's results are its own, under keys of the pool that fielded them
    assert league.win_rates.games("Arena/latest") + league.win_rates.games("Arena/snapshot-0") == 6
    # the main learner's table holds its own 4 turns of 3 matches, nothing more
    assert rig.state.win_rates.games("latest") + rig.state.win_rates.games("snapshot-0") == 12


def test_in_an_asymmetric_game_only_the_learning_behavior_uses_its_schedule(tmp_path):
    controller = GhostController()
    settings = dict(team_change=9, swap_steps=10**6, save_steps=10**6)
    striker = LeagueRig(tmp_path, name="Striker", teams=(0,), controller=controller,
                        league=LeagueSettings(main_exploiters=1, main_turns=1), **settings)  # fmt: skip
    goalie = LeagueRig(tmp_path, name="Goalie", teams=(1,), controller=controller, **settings)
    roles, striker_rating = [], None
    for _ in range(4):  # striker, goalie, striker's exploiter, goalie
        for step in range(3):
            striker.put(WIN)
            goalie.put(LOSS)
            striker.ghost.advance()
            goalie.ghost.advance()
            if step == 0:
                roles.append((controller.learning_team, striker.exploiter))
                if striker.exploiter is not None:
                    # the goalie fields its main learner alone
                    (opponent,) = goalie.opponents(1)
                    assert opponent.is_latest
                    assert weights_equal(opponent.snapshot.weights,
                                         goalie.ghost.learner.get_weights())  # fmt: skip
                    striker_rating, opponent_rating = striker.state.rating, opponent.rating
            assert apply_team_change(controller, striker, goalie) == (step == 2)
        if roles[-1][1] is not None:  # the exploiter's wins moved no rating
            assert (striker.state.rating, opponent.rating) == (striker_rating, opponent_rating)
    assert roles == [(0, None), (1, None), (0, "main-exploiter-0"), (1, None)]
    assert (striker.inner.step, goalie.inner.step) == (9, 18)
    assert striker.built[0].step == 9
    assert [m.name for m in striker.state.league.members] == ["exploiter-0-1"]
    assert goalie.state.league.members == []


def test_without_exploiters_nothing_changes(tmp_path):
    rig = GhostRig(artifact_dir=tmp_path, team_change=6, swap_steps=10**6)  # no make_trainer
    assert rig.ghost.league is None and not rig.ghost.state.league.enabled
    assert {rig.ghost.state.league.role_for(turn) for turn in range(5)} == {None}
    assert "league" not in rig.ghost.state_dict()
    with pytest.raises(ValueError, match="make_trainer"):
        GhostRig(artifact_dir=tmp_path, league=LeagueSettings(main_exploiters=1))


# -- a PPO session -----------------------------------------------------------------------------


def league_settings(league: LeagueSettings | None, checkpoint_interval: int = 10**6) -> BehaviorSettings:  # fmt: skip
    return BehaviorSettings(
        hyperparameters=PPOSettings(batch_size=32, buffer_size=64, num_epoch=1),
        network_settings=NetworkSettings(hidden_units=16, num_layers=1),
        max_steps=10**6, summary_freq=10**6, checkpoint_interval=checkpoint_interval,
        self_play=SelfPlaySettings(save_steps=64, team_change=64, swap_steps=64, window=3,
                                   league=league or LeagueSettings()),
    )  # fmt: skip


def make_session(run_path: Path, settings: BehaviorSettings) -> SelfPlaySession:
    env = TeamArenaEnv(behaviors=("Arena?team=0", "Arena?team=1"), num_arenas=8, episode_length=4)
    return SelfPlaySession(options=RunOptions(behaviors={"Arena": settings}),
                           stepper=InProcessStepper(env), layout=RunLayout(run_path))  # fmt: skip


LEAGUE = LeagueSettings(main_exploiters=1, league_exploiters=1, main_turns=1, promote_win_rate=0.0)


def run_turns(session: SelfPlaySession, steps, turns: int):  # type: ignore[no-untyped-def]
    """Step until ``turns`` more team changes; per turn: (exploiter or None, main learner's
    steps, exploiter's steps)."""
    ghost = session.trainers["Arena"]
    record = []
    target = session.controller.team_changes + turns
    while session.controller.team_changes < target:
        role = ghost.league.active
        trainer = ghost.league.trainers[role.index] if role is not None else None
        main_before, exploiter_before = ghost.step, trainer.step if trainer else 0
        learning = session.controller.learning_team
        while session.controller.learning_team == learning:
            processor = session.processors[BehaviorId("Arena", learning)]
            acting = ghost.league.policies[role.index] if role is not None else ghost.learner
            assert processor.policy is acting
            steps = session.step_once(steps)
        record.append((role.name if role else None, ghost.step - main_before,
                       trainer.step - exploiter_before if trainer else 0))  # fmt: skip
    return steps, record


def test_a_ppo_session_plays_exploiter_turns_promotes_and_resumes(tmp_path):
    run_path = tmp_path / "run"
    session = make_session(run_path, league_settings(LEAGUE))
    steps = session.start(resume=False)
    ghost = session.trainers["Arena"]
    try:
        steps, record = run_turns(session, steps, 5)
        assert record == [(None, 64, 0), ("main-exploiter-0", 0, 64), (None, 64, 0),
                          ("league-exploiter-0", 0, 64), (None, 64, 0)]  # fmt: skip
        league = ghost.state.league
        assert [m.name for m in league.members] == ["exploiter-0-1", "exploiter-1-1"]
        assert [e.generation for e in league.exploiters] == [1, 0]  # the main exploiter restarted
        assert ghost.league.trainers[1].stats.log_dir == (
            run_path / "Arena" / "league" / "league-exploiter-0" / "generation-0"
        )
        assert ghost.stats.log_dir == run_path / "Arena"
        steps = session.step_once(steps)  # into the main exploiter's second turn (fresh weights)
        assert ghost.league.active.name == "main-exploiter-0"
        assert not weights_equal(ghost.league.policies[0].get_weights(),
                                 league.members[0].snapshot.weights)  # fmt: skip
        steps = session.step_once(steps)
    finally:
        session.finish()  # the last checkpoint: in the middle of an exploiter turn
    saved = {
        "main": ghost.learner.get_weights(), "step": ghost.step,
        "members": [(m.name, m.snapshot.rating, m.snapshot.weights) for m in league.members],
        "exploiters": {i: p.get_weights() for i, p in ghost.league.policies.items()},
        "exploiter_steps": {i: t.step for i, t in ghost.league.trainers.items()},
        "turn_start": ghost.league.turn_start_step, "position": league.position,
    }  # fmt: skip

    resumed = make_session(run_path, league_settings(LEAGUE))
    steps = resumed.start(resume=True)
    ghost = resumed.trainers["Arena"]
    league = ghost.state.league
    try:
        assert ghost.step == saved["step"]
        assert weights_equal(ghost.learner.get_weights(), saved["main"])
        assert [(m.name, m.snapshot.rating) for m in league.members] == [
            (name, rating) for name, rating, _ in saved["members"]
        ]
        for member, (_, _, weights) in zip(league.members, saved["members"], strict=True):
            assert weights_equal(member.snapshot.weights, weights)
        assert set(ghost.league.trainers) == set(saved["exploiters"]) == {0, 1}
        for index, weights in saved["exploiters"].items():
            assert weights_equal(ghost.league.policies[index].get_weights(), weights)
            assert ghost.league.trainers[index].step == saved["exploiter_steps"][index]
        assert ghost.league.active.name == "main-exploiter-0"
        assert (ghost.league.turn_start_step, league.position) == (
            saved["turn_start"], saved["position"])  # fmt: skip
        # the interrupted exploiter turn goes on where it stopped, then the schedule continues
        steps, record = run_turns(resumed, steps, 2)
        done = saved["exploiter_steps"][0] - saved["turn_start"]
        assert record == [("main-exploiter-0", 0, 64 - done), (None, 64, 0)]
        # the main learner's pool holds the members (``test_a_winning_main_exploiter...``
        # shows they are drawn)
        pool = ghost.state.pool(ghost.learner.get_weights(), ghost.step)
        assert {"exploiter-0-1", "exploiter-1-1"} <= {o.key for o in pool.past}
    finally:
        resumed.finish()


def test_a_checkpoint_from_before_the_league_resumes_into_one(tmp_path):
    run_path = tmp_path / "run"
    session = make_session(run_path, league_settings(None))
    steps = session.start(resume=False)
    try:
        while session.controller.team_changes < 2:
            steps = session.step_once(steps)
    finally:
        session.finish()
    # what a checkpoint written before the league holds
    entry = session.checkpointer.read_index()["behaviors"]["Arena"]
    state = torch.load(run_path / entry["file"], map_location="cpu", weights_only=False)
    assert "league" not in state
    del state["ghost"]["league"]
    torch.save(state, run_path / entry["file"])

    resumed = make_session(run_path, league_settings(LEAGUE))
    steps = resumed.start(resume=True)
    ghost = resumed.trainers["Arena"]
    try:
        assert ghost.step == 128 and ghost.state.league.members == []
        assert ghost.league.active is None  # the turn in progress stays the main learner's
        steps, record = run_turns(resumed, steps, 3)
        roles = [role for role, _, _ in record]
        assert roles[0] is None and roles.count("main-exploiter-0") == 1
        assert [m.name for m in ghost.state.league.members] == ["exploiter-0-1"]
        assert ghost.step == 128 + 64 * roles.count(None)
    finally:
        resumed.finish()
