"""GhostTrainer and GhostController without an environment: routing, snapshots, swaps, rotation.

A ``RecordingTrainer`` stands in for the wrapped trainer (its step counts the agent steps it was
given), so every assertion is about what the ghost layer hands over and when.
"""

from __future__ import annotations

import math
from collections import Counter

import pytest
import torch

from envs.behavior_id import BehaviorId
from ghost.core.controller import GhostController, TeamChange
from ghost.core.opponents import LATEST
from ghost.core.self_play import SelfPlayState
from ghost.core.settings import SelfPlaySettings
from ghost.core.snapshots import SnapshotWindow
from ghost.running.opponent_policy import OpponentPolicy
from tests.team_envs import GhostRig, apply_team_change

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def weights_equal(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def nudge(policy, amount: float = 0.5) -> None:
    """Change a policy's weights in place, as an update would."""
    with torch.no_grad():
        for parameter in policy.actor.parameters():
            parameter.add_(amount)


# -- 1. routing -------------------------------------------------------------------------------------


def test_only_the_learning_team_reaches_the_wrapped_trainer(tmp_path):
    rig = GhostRig(artifact_dir=tmp_path, team_change=10**6, swap_steps=10**6)
    assert rig.controller.learning_team == 0
    learning, ghosted = [], []
    for i in range(5):
        learning.append(rig.put(0, decisions=3, first_id=0))
        ghosted.append(
            rig.put(1, decisions=2, first_id=10, terminal_ids=[10 + i % 2], rewards=[1.0])
        )
        rig.ghost.advance()
    assert [b.behavior_id for b in rig.inner.received] == [BehaviorId("Arena", 0)] * 5
    assert all(got is sent for got, sent in zip(rig.inner.received, learning, strict=True))
    assert rig.ghost.state.ghost_step == sum(b.agent_steps for b in ghosted) == 15
    assert rig.ghost.step == rig.inner.step == 15


def test_after_a_team_change_the_other_team_is_routed_to_the_trainer(tmp_path):
    rig = GhostRig(artifact_dir=tmp_path, team_change=6, swap_steps=10**6)
    routed_ok, ghost_expected = [], 0
    for _ in range(12):
        collected_under = rig.controller.learning_team
        sent = {team: rig.put(team, decisions=3 if team == 0 else 2, first_id=10 * team)
                for team in (0, 1)}  # fmt: skip
        ghost_expected += sum(b.agent_steps for t, b in sent.items() if t != collected_under)
        before = len(rig.inner.received)
        rig.ghost.advance()
        apply_team_change(rig.controller, rig)
        new = rig.inner.received[before:]
        routed_ok.append(new == [sent[collected_under]])
    assert rig.controller.team_changes >= 2  # both teams learned
    assert all(routed_ok)
    assert rig.ghost.state.ghost_step == ghost_expected


def test_asymmetric_batches_collected_while_ghosted_never_reach_the_trainer(tmp_path):
    controller = GhostController()
    striker = GhostRig(artifact_dir=tmp_path, name="Striker", teams=(0,), controller=controller,
                       team_change=10, swap_steps=10**6)  # fmt: skip
    goalie = GhostRig(artifact_dir=tmp_path, name="Goalie", teams=(1,), controller=controller,
                      team_change=10, swap_steps=10**6)  # fmt: skip
    leaked = []
    for _ in range(40):
        collected_under = controller.learning_team
        striker.put(0, decisions=2)
        goalie.put(1, decisions=1, first_id=10)
        seen = len(striker.inner.received), len(goalie.inner.received)
        striker.ghost.advance()
        goalie.ghost.advance()
        apply_team_change(controller, striker, goalie)
        new = striker.inner.received[seen[0] :] + goalie.inner.received[seen[1] :]
        leaked += [b.behavior_id for b in new if b.behavior_id.team != collected_under]
    assert controller.team_changes >= 3
    assert leaked == []


# -- 2. snapshots -----------------------------------------------------------------------------------


def test_snapshot_window_evicts_oldest_first():
    window = SnapshotWindow(3)
    for step in range(5):
        window.add(weights={}, rating=1200.0 + step, step=10 * step)
    assert [s.snapshot_id for s in window] == [2, 3, 4]
    assert [s.step for s in window] == [20, 30, 40]
    assert window.by_id(1) is None and window.by_id(3).rating == 1203.0
    assert window.next_id == 5


def test_first_snapshot_is_the_initial_policy_and_a_frozen_copy(tmp_path):
    rig = GhostRig(artifact_dir=tmp_path)
    learner = rig.ghost.learner
    initial = learner.get_weights()
    assert len(rig.ghost.state.window) == 0  # taken when training starts (after --initialize-from)
    rig.ghost.advance()
    assert len(rig.ghost.state.window) == 1
    first = rig.ghost.state.window[0]
    assert (first.snapshot_id, first.step, first.rating) == (0, 0, 1200.0)
    assert weights_equal(first.weights, initial)
    nudge(learner)  # the learner trains on; the snapshot must not move with it
    assert not weights_equal(learner.get_weights(), initial)
    assert weights_equal(rig.ghost.state.window[0].weights, initial)


def test_snapshots_every_save_steps_into_the_window_with_the_current_rating(tmp_path):
    rig = GhostRig(artifact_dir=tmp_path, save_steps=4, window=3, team_change=10**6)
    for i in range(8):
        if i == 5:
            rig.ghost.state.rating = 1337.5
        rig.put(0, decisions=2)
        rig.ghost.advance()
    # snapshots at trainer steps 0 (initial), 4, 8, 12, 16; the window keeps the last three
    assert [s.snapshot_id for s in rig.ghost.state.window] == [2, 3, 4]
    assert [s.step for s in rig.ghost.state.window] == [8, 12, 16]
    assert [s.rating for s in rig.ghost.state.window] == [1200.0, 1337.5, 1337.5]


# -- 2. swaps -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("ratio", [0.3, 0.7])
def test_latest_share_and_uniform_window_draws(tmp_path, ratio):
    window = 5
    rig = GhostRig(artifact_dir=tmp_path, seed=3, save_steps=1, window=window, swap_steps=1,
                   team_change=10**6, opponents_per_swap=4,
                   play_against_latest_model_ratio=ratio)  # fmt: skip
    for _ in range(window + 2):  # snapshots 0 (initial) to 7: the window keeps 3..7
        rig.put(0, decisions=1)
        rig.ghost.advance()
    ids = [s.snapshot_id for s in rig.ghost.state.window]
    assert ids == [3, 4, 5, 6, 7]
    swaps = 1000
    draws = []
    for _ in range(swaps):
        rig.put(1, decisions=1)  # one ghost step: a swap every advance
        before = rig.ghost.state.swaps
        rig.ghost.advance()
        assert rig.ghost.state.swaps == before + 1
        draws += rig.opponents(1)
    n = len(draws)
    assert n == 4 * swaps
    latest = sum(o.is_latest for o in draws)
    # binomial: within 4 standard deviations of the configured ratio
    assert abs(latest / n - ratio) <= 4 * math.sqrt(ratio * (1 - ratio) / n)
    counts = Counter(o.snapshot.snapshot_id for o in draws if not o.is_latest)
    assert set(counts) == set(ids)  # only window members, every one of them
    expected = (n - latest) / window
    chi2 = sum((counts[i] - expected) ** 2 / expected for i in ids)
    assert chi2 < 24.5  # the chi-square(4 dof) quantile at p = 6.3e-5 (a 4-sigma event)


def test_ratio_one_always_plays_the_frozen_current_learner(tmp_path):
    rig = GhostRig(artifact_dir=tmp_path, swap_steps=1, opponents_per_swap=1,
                   play_against_latest_model_ratio=1.0)  # fmt: skip
    learner = rig.ghost.learner
    nudge(learner)
    rig.put(1, decisions=1)
    rig.ghost.advance()
    (opponent,) = rig.opponents(1)
    assert opponent.is_latest and opponent.snapshot.snapshot_id == LATEST
    current = learner.get_weights()
    assert weights_equal(opponent.snapshot.weights, current)
    acting = rig.ghost.acting_policy(BehaviorId("Arena", 1))
    assert isinstance(acting, OpponentPolicy)
    assert weights_equal(acting.get_weights(), current)  # loaded into the acting policy
    nudge(learner)  # frozen: the learner's next update does not reach the opponent
    assert weights_equal(opponent.snapshot.weights, current)
    assert weights_equal(acting.get_weights(), current)


def test_ratio_zero_plays_window_snapshots_and_loads_their_weights(tmp_path):
    rig = GhostRig(artifact_dir=tmp_path, swap_steps=1, opponents_per_swap=1,
                   play_against_latest_model_ratio=0.0)  # fmt: skip
    rig.ghost.advance()  # training starts: the first snapshot
    initial = rig.ghost.state.window[0].weights
    nudge(rig.ghost.learner)
    rig.put(1, decisions=1)
    rig.ghost.advance()
    (opponent,) = rig.opponents(1)
    assert not opponent.is_latest and opponent.snapshot is rig.ghost.state.window[0]
    assert weights_equal(rig.ghost.acting_policy(BehaviorId("Arena", 1)).get_weights(), initial)


def test_swaps_every_swap_steps_ghost_steps_and_publishes(tmp_path):
    rig = GhostRig(artifact_dir=tmp_path, swap_steps=6, team_change=10**6)
    swapped_at, published = [], []
    for _ in range(12):
        rig.put(0, decisions=1)
        rig.put(1, decisions=2, first_id=10)  # 2 ghost steps per advance
        before = rig.ghost.state.swaps
        rig.ghost.advance()
        policies = {team: rig.policy_queues[team].take() for team in (0, 1)}
        if rig.ghost.state.swaps > before:
            swapped_at.append(rig.ghost.state.ghost_step)
            published.append(policies)
        else:
            assert policies == {0: None, 1: None}  # nothing published between swaps
    # the first advance starts the first turn (a swap, at ghost step 0, before it drains its
    # batches: seen here after the advance, at ghost step 2), then one swap per 6 ghost steps
    assert swapped_at == [2, 6, 12, 18, 24]
    for policies in published:
        assert policies[0] is rig.ghost.learner
        assert policies[1] is rig.ghost.acting_policy(BehaviorId("Arena", 1))
        assert isinstance(policies[1], OpponentPolicy)


def test_every_team_change_swaps_and_hands_policies_over(tmp_path):
    rig = GhostRig(artifact_dir=tmp_path, team_change=4, swap_steps=10**6, opponents_per_swap=1)
    changes_seen = 0
    for _ in range(20):
        learning = rig.controller.learning_team
        rig.put(learning, decisions=2, first_id=10 * learning)
        rig.put(1 - learning, decisions=2, first_id=10 * (1 - learning))
        changes, swaps = rig.controller.team_changes, rig.ghost.state.swaps
        old_opponents = rig.opponents(learning)
        rig.ghost.advance()
        assert rig.controller.learning_team == learning  # advance only asks for the change
        changed = apply_team_change(rig.controller, rig)  # as SelfPlaySession.step_once does
        policies = {team: rig.policy_queues[team].take() for team in (0, 1)}
        if changed:
            changes_seen += 1
            assert rig.controller.team_changes == changes + 1
            assert apply_team_change(rig.controller, rig) is False  # once per change
            new = rig.controller.learning_team
            assert new == 1 - learning
            assert rig.ghost.state.swaps == swaps + 1
            assert policies[new] is rig.ghost.learner
            assert isinstance(policies[learning], OpponentPolicy)
            # the team that stopped learning got freshly drawn opponents
            assert rig.opponents(learning) is not old_opponents
        else:
            assert rig.controller.team_changes == changes
            assert rig.ghost.state.swaps == swaps + (1 if swaps == 0 else 0)
    assert changes_seen >= 3
    assert rig.ghost.state.swaps == 1 + changes_seen


def test_each_arena_faces_its_own_opponent(tmp_path):
    rig = GhostRig(artifact_dir=tmp_path, opponents_per_swap=4, play_against_latest_model_ratio=0.5)
    opponents = rig.opponents(1)
    assert len(opponents) == 4
    faced = [rig.ghost.state.opponent_in(1, arena) for arena in range(8)]
    assert [id(o) for o in faced[:4]] == [id(o) for o in opponents]
    assert [id(o) for o in faced[4:]] == [id(o) for o in opponents]


# -- 3. rotation ------------------------------------------------------------------------------------


def owner_stub(name: str = "Stub") -> SelfPlayState:
    return SelfPlayState(behavior_name=name, settings=SelfPlaySettings())


@pytest.mark.parametrize(
    "teams",
    [[1, 0], [2, 0, 1], [3, 0, 12, 7, 1, 2, 4, 5, 6, 8, 9, 10, 11]],
    ids=["2 teams", "3 teams", "13 teams"],
)
def test_controller_rotates_round_robin_in_subscription_order(teams):
    controller = GhostController()
    for team in teams:
        controller.subscribe_team(team, owner_stub())
        controller.subscribe_team(team, owner_stub())
    assert controller.teams == teams  # subscribing a team twice changes nothing
    assert controller.learning_team == teams[0]
    assert controller.take_team_change() is None
    order = [controller.learning_team]
    for count in range(1, 2 * len(teams) + 1):
        controller.request_team_change()
        controller.request_team_change()  # a request while one is pending is the same request
        # only requested: the change happens when the session takes it
        assert (controller.learning_team, controller.team_changes) == (order[-1], count - 1)
        change = controller.take_team_change()
        assert change == TeamChange(
            previous_team=order[-1], learning_team=controller.learning_team, count=count
        )
        assert controller.team_changes == count
        assert controller.take_team_change() is None  # exactly once per change
        order.append(controller.learning_team)
    assert order == teams + teams + [teams[0]]


def test_hand_over_tells_every_listener_once_and_only_when_asked():
    controller = GhostController()
    for team in (0, 1):
        controller.subscribe_team(team, owner_stub())
    heard: list[tuple[str, TeamChange]] = []

    class Listener:
        def __init__(self, name: str) -> None:
            self.name = name

        def on_team_change(self, change: TeamChange) -> None:
            heard.append((self.name, change))

    listeners = [Listener("cycle"), Listener("ghost trainer")]
    assert controller.hand_over(listeners) is None and not heard
    controller.request_team_change()
    change = controller.hand_over(listeners)
    assert change == TeamChange(previous_team=0, learning_team=1, count=1)
    assert heard == [("cycle", change), ("ghost trainer", change)]
    assert controller.hand_over(listeners) is None and len(heard) == 2


def test_a_lone_team_has_nobody_to_hand_over_to():
    # one behavior under the ghost, the other team trained by a plain trainer: a turn ending
    # must not reset the environments on every update
    controller = GhostController()
    controller.subscribe_team(0, owner_stub())
    controller.request_team_change()
    assert controller.take_team_change() is None
    assert (controller.learning_team, controller.team_changes) == (0, 0)


def test_controller_state_keeps_rotation_order():
    saved = GhostController()
    for team in (2, 0, 1):
        saved.subscribe_team(team, owner_stub())
    saved.request_team_change()
    assert saved.take_team_change() is not None
    restored = GhostController()
    for team in (0, 1, 2, 3):  # teams re-subscribe in another order; team 3 is new
        restored.subscribe_team(team, owner_stub())
    restored.load_state_dict(saved.state_dict())
    assert (restored.learning_team, restored.team_changes) == (0, 1)
    assert restored.take_team_change() is None
    order = []
    for _ in range(4):
        restored.request_team_change()
        assert restored.take_team_change() is not None
        order.append(restored.learning_team)
    assert order == [1, 3, 2, 0]


def run_asymmetric(tmp_path, env_steps: int, team_change: int):
    """Striker (team 0, 2 agents) and Goalie (team 1, 1 agent) stepped like a session does.

    Returns the controller, the rigs and the turns: (team, agent steps of that team collected
    while it was learning).
    """
    controller = GhostController()
    rigs = {
        0: GhostRig(artifact_dir=tmp_path, name="Striker", teams=(0,), controller=controller,
                    team_change=team_change, swap_steps=10**6),
        1: GhostRig(artifact_dir=tmp_path, name="Goalie", teams=(1,), controller=controller,
                    team_change=team_change, swap_steps=10**6),
    }  # fmt: skip
    agents = {0: 2, 1: 1}
    turns: list[tuple[int, int]] = []
    collected = 0
    for _ in range(env_steps):
        learning = controller.learning_team
        rigs[0].put(0, decisions=agents[0])
        rigs[1].put(1, decisions=agents[1], first_id=10)
        collected += agents[learning]
        for rig in rigs.values():
            rig.ghost.advance()
        if apply_team_change(controller, *rigs.values()):
            turns.append((learning, collected))
            collected = 0
            for rig in rigs.values():
                rig.ghost.end_episode()
    return controller, rigs, turns


def test_asymmetric_teams_take_turns_after_team_change_steps(tmp_path):
    controller, rigs, turns = run_asymmetric(tmp_path, env_steps=60, team_change=10)
    assert [team for team, _ in turns] == [i % 2 for i in range(len(turns))]
    assert len(turns) >= 5 and controller.team_changes == len(turns)
    # each turn ends once the learning trainer did exactly team_change steps (10 is a multiple
    # of both batch sizes): the first turn starts before any batch, and batches collected
    # before a change are routed under the team that was learning when they were collected
    assert all(steps == 10 for _, steps in turns), turns
    # both wrapped trainers ended their partial episodes at every change
    assert rigs[0].inner.episodes_ended == rigs[1].inner.episodes_ended == len(turns)


def test_first_turn_lasts_exactly_team_change_steps(tmp_path):
    rig = GhostRig(artifact_dir=tmp_path, team_change=6, swap_steps=10**6)
    steps = 0
    while rig.controller.team_changes == 0:
        rig.put(0, decisions=2)
        rig.ghost.advance()
        apply_team_change(
            rig.controller, rig
        )  # the change happens here, as in SelfPlaySession.step_once
        steps += 2
        assert steps <= 20
    assert steps == 6


def test_asymmetric_ghosted_trainer_takes_no_snapshots(tmp_path):
    controller, rigs, turns = run_asymmetric(tmp_path, env_steps=9, team_change=10**6)
    assert turns == [] and controller.learning_team == 0
    assert rigs[1].inner.step == 0 and len(rigs[1].ghost.state.window) == 1
    assert rigs[1].ghost.state.ghost_step == 9  # its agent steps all counted as ghost steps
    assert rigs[0].ghost.state.ghost_step == 0


# -- 6. behavior ids ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "name", "team"),
    [
        ("My:Agent#1 v2?team=3", "My:Agent#1 v2", 3),
        ("Soccer?team=0", "Soccer", 0),
        ("Plain", "Plain", 0),
        ("Odd?name?team=12", "Odd?name", 12),
        ("A?team=1?team=2", "A?team=1", 2),
        ("NoTeam?team=x", "NoTeam?team=x", 0),
    ],
)
def test_behavior_id_parse(raw, name, team):
    parsed = BehaviorId.parse(raw)
    assert (parsed.name, parsed.team) == (name, team)
    if "?team=" in raw and raw.rsplit("?team=", 1)[1].isdigit():
        assert parsed.full_name == raw


def test_ghost_trainer_keeps_teams_of_odd_names_apart(tmp_path):
    rig = GhostRig(artifact_dir=tmp_path, name="My:Agent#1 v2", teams=(3, 5), team_change=10**6)
    assert rig.controller.teams == [3, 5]
    rig.put(3, decisions=1)
    rig.put(5, decisions=4, first_id=10)
    rig.ghost.advance()
    assert [b.behavior_id for b in rig.inner.received] == [BehaviorId.parse("My:Agent#1 v2?team=3")]
    assert rig.ghost.state.ghost_step == 4


def test_state_dict_round_trip_restores_window_counters_and_draws(tmp_path):
    rig = GhostRig(artifact_dir=tmp_path, save_steps=2, window=3, swap_steps=3, seed=5)
    for _ in range(9):
        rig.put(0, decisions=1)
        rig.put(1, decisions=1, first_id=10)
        rig.ghost.advance()
    rig.ghost.state.rating = 1250.0
    state = rig.ghost.state_dict()
    for snapshot in rig.ghost.state.window:  # snapshots are written as files
        assert snapshot.path is not None and snapshot.path.is_file()
    twin = GhostRig(artifact_dir=tmp_path / "twin", save_steps=2, window=3, swap_steps=3, seed=99)
    twin.ghost.load_state_dict(state)
    a, b = rig.ghost.state, twin.ghost.state
    assert [(s.snapshot_id, s.step, s.rating) for s in a.window] == [
        (s.snapshot_id, s.step, s.rating) for s in b.window
    ]
    for x, y in zip(a.window, b.window, strict=True):
        assert weights_equal(x.weights, y.weights)
    counters = ("rating", "ghost_step", "last_save_step", "last_swap_ghost_step",
                "team_start_step", "swaps")  # fmt: skip
    assert {c: getattr(a, c) for c in counters} == {c: getattr(b, c) for c in counters}
    assert rig.ghost.step == twin.ghost.step
    ours = [(o.snapshot.snapshot_id, o.snapshot.rating) for o in rig.opponents(1)]
    theirs = [(o.snapshot.snapshot_id, o.snapshot.rating) for o in twin.opponents(1)]
    assert ours == theirs
    # the same RNG state: both draw the same opponents from here on
    for r in (rig, twin):
        r.put(1, decisions=3, first_id=10)
        r.ghost.advance()
    assert [o.snapshot.snapshot_id for o in rig.opponents(1)] == [
        o.snapshot.snapshot_id for o in twin.opponents(1)
    ]


def test_resume_keeps_an_evicted_opponent(tmp_path):
    options = {"save_steps": 1, "window": 2, "swap_steps": 10**6, "team_change": 10**6,
               "opponents_per_swap": 1, "play_against_latest_model_ratio": 0.0}  # fmt: skip
    rig = GhostRig(artifact_dir=tmp_path, **options)
    for i in range(4):
        nudge(rig.ghost.learner)  # every snapshot different
        rig.put(0, decisions=1)
        rig.ghost.advance()  # the first advance draws the opponent before it snapshots again
        if i == 0:
            (playing,) = rig.opponents(1)
            rig.ghost.state_dict()  # a checkpoint: snapshot 0 gets its file
    assert playing.snapshot.path is not None
    assert [s.snapshot_id for s in rig.ghost.state.window] == [3, 4]
    assert playing.snapshot.snapshot_id == 0  # evicted, but still the opponent until a swap
    assert rig.opponents(1) == [playing]
    twin = GhostRig(artifact_dir=tmp_path / "twin", **options)
    twin.ghost.load_state_dict(rig.ghost.state_dict())
    (restored,) = twin.opponents(1)
    assert restored.snapshot.snapshot_id == playing.snapshot.snapshot_id  # its original id
    assert not restored.is_latest and twin.ghost.state.window.by_id(0) is None
    assert restored.snapshot.rating == playing.snapshot.rating
    assert weights_equal(restored.snapshot.weights, playing.snapshot.weights)
    assert weights_equal(twin.ghost.acting_policy(BehaviorId("Arena", 1)).get_weights(),
                         playing.snapshot.weights)  # fmt: skip
    # the restored state saves as it was saved: an evicted snapshot keeps no file path
    saved = rig.ghost.state.state_dict()["opponents"]["1"][0]["snapshot"]
    assert saved["path"] is None
    assert twin.ghost.state.state_dict()["opponents"]["1"][0]["snapshot"] == saved
