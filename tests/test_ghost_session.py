"""Self-play through a real ``SelfPlaySession`` (PPO) on toy multi-team environments.

Rotation over three teams, the first snapshot, stats of the learning team only, the error for
several teams without ``self_play``, and resuming after ``kill -9``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

import trainers.checkpoints
from envs.behavior_id import BehaviorId
from envs.stepping import InProcessStepper
from ghost.config.settings import BehaviorSettings, RunOptions
from ghost.core.opponents import LATEST
from ghost.core.settings import SelfPlaySettings
from ghost.running.ghost_trainer import GhostTrainer
from ghost.running.opponent_policy import OpponentPolicy
from ghost.running.session import SelfPlaySession
from tests.team_envs import TeamArenaEnv
from trainers.hyperparameters import PPOSettings
from trainers.policy import load_policy
from trainers.run_files.layout import RunLayout
from trainers.settings import NetworkSettings
from trainers.stats import CUMULATIVE_REWARD, ELO, EPISODE_LENGTH

ROOT = Path(__file__).resolve().parent.parent
TWO_TEAMS = ("Arena?team=0", "Arena?team=1")
ARENAS = 8  # every env step gives the learning team 8 transitions


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def trainer_settings(*, self_play: SelfPlaySettings | None, max_steps: int = 10**6,
                     summary_freq: int = 10**6, checkpoint_interval: int = 10**6) -> BehaviorSettings:  # fmt: skip
    return BehaviorSettings(
        hyperparameters=PPOSettings(batch_size=32, buffer_size=64, num_epoch=1),
        network_settings=NetworkSettings(hidden_units=16, num_layers=1),
        max_steps=max_steps,
        summary_freq=summary_freq,
        checkpoint_interval=checkpoint_interval,
        self_play=self_play,
    )


def make_session(
    env: TeamArenaEnv, run_path: Path, **behaviors: BehaviorSettings
) -> SelfPlaySession:
    return SelfPlaySession(
        options=RunOptions(behaviors=behaviors),
        stepper=InProcessStepper(env),
        layout=RunLayout(run_path),
    )


def train_for(session: SelfPlaySession, env_steps: int) -> None:
    """Start ``session`` without resuming, step it ``env_steps`` times, then finish it."""
    steps = session.start(resume=False)
    try:
        for _ in range(env_steps):
            steps = session.step_once(steps)
    finally:
        session.finish()


def check_acting_policies(session: SelfPlaySession) -> None:
    """The learning team acts with the learner, every other team with frozen opponents."""
    for behavior_id, processor in session.processors.items():
        trainer = session.trainers[behavior_id.name]
        assert isinstance(trainer, GhostTrainer)
        if behavior_id.team == session.controller.learning_team:
            assert processor.policy is trainer.learner, behavior_id
        else:
            assert isinstance(processor.policy, OpponentPolicy), behavior_id


# -- rotation -----------------------------------------------------------------------------------------


def test_three_teams_learn_in_turn(tmp_path):
    team_change = 96
    env = TeamArenaEnv(num_arenas=ARENAS, episode_length=4)
    settings = trainer_settings(
        self_play=SelfPlaySettings(save_steps=32, team_change=team_change, swap_steps=64, window=4)
    )
    session = make_session(env, tmp_path, Arena=settings)
    steps = session.start(resume=False)
    trainer = session.trainers["Arena"]
    assert isinstance(trainer, GhostTrainer)
    assert session.controller.teams == [0, 1, 2]
    initial = trainer.learner.get_weights()
    turns: list[tuple[int, int]] = []  # (team, trainer steps it learned)
    turn_start = 0
    first_checked = None
    try:
        while session.controller.team_changes < 6:
            learning = session.controller.learning_team
            steps = session.step_once(steps)
            check_acting_policies(session)
            if session.controller.learning_team != learning:
                turns.append((learning, trainer.step - turn_start))
                turn_start = trainer.step
            if first_checked is None and trainer.step >= 64:
                # PPO updated once (buffer_size 64); the first snapshot is the untrained policy
                first = trainer.state.window[0]
                assert (first.snapshot_id, first.step) == (0, 0)
                assert any(not torch.equal(initial[k], v)
                           for k, v in trainer.learner.get_weights().items())  # fmt: skip
                assert all(torch.equal(initial[k], v) for k, v in first.weights.items())
                first_checked = trainer.step
            assert session.trainers["Arena"].step < 2000, "no rotation"
    finally:
        session.finish()
    assert first_checked == 64
    assert turns == [(0, team_change), (1, team_change), (2, team_change)] * 2
    assert env.resets == 1 + session.controller.team_changes  # every change reset the env
    assert trainer.state.ghost_step > 0 and trainer.rating != 1200.0


def asymmetric_session(tmp_path) -> SelfPlaySession:
    env = TeamArenaEnv(behaviors=("Striker?team=0", "Goalie?team=1"), num_arenas=ARENAS,
                       episode_length=3)  # fmt: skip
    self_play = SelfPlaySettings(save_steps=32, team_change=64, swap_steps=32, window=3)
    return make_session(env, tmp_path, Striker=trainer_settings(self_play=self_play),
                        Goalie=trainer_settings(self_play=self_play))  # fmt: skip


def test_asymmetric_behaviors_take_turns_in_a_session(tmp_path):
    session = asymmetric_session(tmp_path)
    steps = session.start(resume=False)
    order = [session.controller.learning_team]
    try:
        for _ in range(60):
            steps = session.step_once(steps)
            if session.controller.learning_team != order[-1]:
                order.append(session.controller.learning_team)
    finally:
        session.finish()
    assert len(order) >= 4 and set(order) == {0, 1}
    assert all(a != b for a, b in zip(order, order[1:], strict=False))
    striker, goalie = session.trainers["Striker"], session.trainers["Goalie"]
    # each behavior learned in its own turns and snapshots only its own past selves
    assert striker.step >= 64 and goalie.step >= 64
    assert striker.state.ghost_step > 0 and goalie.state.ghost_step > 0
    for trainer in (striker, goalie):
        assert isinstance(trainer, GhostTrainer) and trainer.state.window.next_id > 1
        assert set(trainer.behavior_ids) == {0 if trainer is striker else 1}


def test_asymmetric_new_learner_acts_with_its_learner_right_after_a_change(tmp_path):
    session = asymmetric_session(tmp_path)
    steps = session.start(resume=False)
    try:
        for _ in range(60):
            steps = session.step_once(steps)
            check_acting_policies(session)
    finally:
        session.finish()
    assert session.controller.team_changes >= 3


# -- stats ----------------------------------------------------------------------------------------------


def test_stats_come_from_the_learning_team_only(tmp_path):
    lengths, rewards = {0: 3, 1: 7}, {0: 1.0, 1: -1.0}
    env = TeamArenaEnv(behaviors=TWO_TEAMS, num_arenas=ARENAS, episode_length=(3, 7),
                       final_rewards=(1.0, -1.0))  # fmt: skip
    # summaries every 12 env steps; a turn is exactly two summary periods
    settings = trainer_settings(
        self_play=SelfPlaySettings(save_steps=48, team_change=192, swap_steps=48),
        summary_freq=96,
    )
    session = make_session(env, tmp_path, Arena=settings)
    steps = session.start(resume=False)
    stats = session.trainers["Arena"].trainer.stats
    summaries: list[tuple[int, dict[str, float]]] = []
    try:
        while session.controller.team_changes < 4:
            learning, latest = session.controller.learning_team, stats.latest
            steps = session.step_once(steps)
            if stats.latest is not latest:
                summaries.append((learning, stats.latest))
    finally:
        session.finish()
    assert {team for team, _ in summaries} == {0, 1}
    assert len(summaries) >= 6
    for team, summary in summaries:
        assert summary[EPISODE_LENGTH] == lengths[team], summaries
        assert summary[CUMULATIVE_REWARD] == rewards[team], summaries
        assert ELO in summary


# -- several teams without self_play ------------------------------------------------------------------


def test_several_teams_without_self_play_self_play_with_the_defaults(tmp_path, caplog):
    name = "My:Agent#1 v2"
    env = TeamArenaEnv(behaviors=(f"{name}?team=3", f"{name}?team=5"), num_arenas=2)
    session = make_session(env, tmp_path, **{name: trainer_settings(self_play=None)})
    with caplog.at_level("INFO", logger="ghost"):
        steps = session.start(resume=False)
    session.step_once(steps)
    assert isinstance(session.trainers[name], GhostTrainer)
    assert f"behaviors.{name} has no self_play section" in caplog.text


def test_one_team_without_self_play_is_fine(tmp_path):
    env = TeamArenaEnv(behaviors=("Solo",), num_arenas=2)
    session = make_session(env, tmp_path, Solo=trainer_settings(self_play=None))
    steps = session.start(resume=False)
    session.step_once(steps)
    assert not isinstance(session.trainers["Solo"], GhostTrainer)
    assert list(session.processors) == [BehaviorId("Solo", 0)]


def test_odd_behavior_names_train_with_self_play(tmp_path):
    name = "My:Agent#1 v2"
    env = TeamArenaEnv(behaviors=(f"{name}?team=3", f"{name}?team=5"), num_arenas=4)
    settings = trainer_settings(self_play=SelfPlaySettings(save_steps=16, team_change=32))
    session = make_session(env, tmp_path, **{name: settings})
    train_for(session, 20)
    assert list(session.trainers) == [name]
    assert sorted(session.processors) == [BehaviorId(name, 3), BehaviorId(name, 5)]
    assert session.controller.teams == [3, 5] and session.controller.team_changes >= 1
    for snapshot in session.trainers[name].state.window:
        assert snapshot.path is not None and snapshot.path.is_file()


# -- resume -----------------------------------------------------------------------------------------


def resume_settings() -> BehaviorSettings:
    """A run that, by its first checkpoint (step 160), changed teams, swapped and evicted."""
    return trainer_settings(
        self_play=SelfPlaySettings(
            save_steps=32, team_change=96, swap_steps=48, window=3, opponents_per_swap=2
        ),  # fmt: skip
        checkpoint_interval=160,
    )


def resume_env() -> TeamArenaEnv:
    return TeamArenaEnv(behaviors=TWO_TEAMS, num_arenas=ARENAS, episode_length=4)


_CHILD = """
import sys, torch
torch.set_num_threads(1)
from pathlib import Path
from tests.test_ghost_session import make_session, resume_env, resume_settings
session = make_session(resume_env(), Path(sys.argv[1]), Arena=resume_settings())
steps = session.start(resume=False)
n = 0
while True:
    steps = session.step_once(steps)
    n += 1
    print(n, session.trainers["Arena"].step, flush=True)
"""


def train_until_killed(run_path: Path, steps_after_checkpoint: int = 10) -> int:
    """Train in a child process; ``kill -9`` it a few env steps after its first checkpoint."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(run_path)],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    checkpoint_seen_at = None
    last_step = 0
    try:
        assert child.stdout is not None
        for line in child.stdout:
            n, last_step = (int(x) for x in line.split())
            if checkpoint_seen_at is None and (run_path / "checkpoint.json").exists():
                checkpoint_seen_at = n
            if checkpoint_seen_at is not None and n >= checkpoint_seen_at + steps_after_checkpoint:
                os.kill(child.pid, signal.SIGKILL)
                break
            assert time.monotonic() < deadline, "the child never wrote a checkpoint"
        assert child.wait(timeout=30) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    return last_step


def test_resume_after_kill_restores_self_play_state(tmp_path, monkeypatch):
    run_path = tmp_path / "run"
    killed_at = train_until_killed(run_path)
    index = json.loads((run_path / "checkpoint.json").read_text())
    entry = index["behaviors"]["Arena"]
    saved = torch.load(run_path / entry["file"], map_location="cpu", weights_only=False)
    saved_ghost = saved["ghost"]
    assert killed_at > 160  # the child trained on past its first checkpoint before the kill
    assert (
        index["run_state"]["controller"]["team_changes"] >= 1
        and saved_ghost["next_snapshot_id"] > 3
    )

    session = make_session(resume_env(), run_path, Arena=resume_settings())
    ended: list[str] = []
    end_episode = GhostTrainer.end_episode

    def spy(self: GhostTrainer) -> None:
        ended.append(self.behavior_name)
        end_episode(self)

    monkeypatch.setattr(GhostTrainer, "end_episode", spy)
    steps = session.start(resume=True)
    # the environments restarted: nothing pending from before the kill carries over
    assert ended == ["Arena"]
    try:
        trainer = session.trainers["Arena"]
        controller = session.controller
        assert isinstance(trainer, GhostTrainer)
        # the snapshot window: ids, steps, ratings and files
        assert [(s.snapshot_id, s.step, s.rating, str(s.path)) for s in trainer.state.window] == [
            (m["snapshot_id"], m["step"], m["rating"], m["path"]) for m in saved_ghost["window"]
        ]
        assert [s.snapshot_id for s in trainer.state.window] == list(
            range(saved_ghost["next_snapshot_id"] - 3, saved_ghost["next_snapshot_id"])
        )
        assert trainer.state.window.next_id == saved_ghost["next_snapshot_id"]
        # the learner: rating, step, weights
        assert trainer.rating == saved_ghost["rating"]
        assert trainer.step == entry["step"] == saved["trainer"]["step"]
        for key, value in saved["trainer"]["policy"]["weights"].items():
            assert torch.equal(trainer.learner.get_weights()[key], value)
        # the counters
        counters = ("ghost_step", "last_save_step", "last_swap_ghost_step", "team_start_step",
                    "swaps")  # fmt: skip
        assert {c: getattr(trainer.state, c) for c in counters} == {
            c: saved_ghost[c] for c in counters
        }
        # the controller
        assert controller.learning_team == index["run_state"]["controller"]["learning_team"]
        assert controller.team_changes == index["run_state"]["controller"]["team_changes"]
        assert controller.teams == index["run_state"]["controller"]["teams"] == [0, 1]
        # the opponents each ghosted team was playing
        window_ids = {m["snapshot_id"] for m in saved_ghost["window"]}
        for behavior_id, policy in trainer.opponent_policies.items():
            recorded = saved_ghost["opponents"][str(behavior_id.team)]
            assert len(policy.opponents) == len(recorded)
            for opponent, entry in zip(policy.opponents, recorded, strict=True):
                if "weights" in entry:  # the latest copy, or a snapshot evicted while in play
                    meta = entry["snapshot"]
                    # restored with its original id: only the latest copy is "latest"
                    assert opponent.snapshot.snapshot_id == meta["snapshot_id"]
                    assert opponent.is_latest == (meta["snapshot_id"] == LATEST)
                    assert opponent.is_latest or meta["snapshot_id"] not in window_ids
                    assert (opponent.snapshot.step, opponent.snapshot.rating) == (
                        meta["step"], meta["rating"])  # fmt: skip
                    for key, value in entry["weights"].items():
                        assert torch.equal(opponent.snapshot.weights[key], value)
                else:  # a window snapshot: the very object of the restored window
                    assert entry["snapshot_id"] in window_ids
                    assert opponent.snapshot is trainer.state.window.by_id(entry["snapshot_id"])
        check_acting_policies(session)
        # every snapshot the checkpoint names is a policy file of its own
        obs = [np.eye(3, dtype=np.float32)[[0, 1, 2]]]
        for snapshot in trainer.state.window:
            policy = load_policy(snapshot.path)
            assert policy.act(obs, deterministic=True).discrete.shape == (3, 1)

        # the first advances after resume continue the turn; it ends where it would have
        changes, turn_ends = controller.team_changes, trainer.state.team_start_step + 96
        for _ in range(40):
            before = trainer.step
            steps = session.step_once(steps)
            if controller.team_changes != changes:
                assert before < turn_ends <= trainer.step
                break
            assert trainer.step < turn_ends
        assert controller.team_changes == changes + 1
    finally:
        session.finish()


def test_snapshots_are_loadable_policy_files(tmp_path):
    run_path = tmp_path / "run"
    session = make_session(resume_env(), run_path, Arena=resume_settings())
    train_for(session, 30)
    trainer = session.trainers["Arena"]
    assert len(trainer.state.window) == 3
    obs = [np.eye(3, dtype=np.float32)[[0, 1, 2, 0]]]
    for snapshot in trainer.state.window:
        policy = load_policy(snapshot.path)
        for key, value in snapshot.weights.items():
            assert torch.equal(policy.get_weights()[key], value)
        actions = policy.act(obs, deterministic=True)
        assert actions.discrete.shape == (4, 1)
        assert ((actions.discrete >= 0) & (actions.discrete < 3)).all()


class _Killed(BaseException):
    """Stands for SIGKILL arriving at one precise moment."""


def test_kill_while_checkpointing_leaves_a_resumable_run(tmp_path, monkeypatch):
    run_path = tmp_path / "run"
    session = make_session(resume_env(), run_path, Arena=resume_settings())
    steps = session.start(resume=False)
    while session.trainers["Arena"].step < 200:  # a checkpoint at 160, then more snapshots
        steps = session.step_once(steps)
    index = json.loads((run_path / "checkpoint.json").read_text())
    assert index["behaviors"]["Arena"]["step"] == 160
    saved = torch.load(run_path / index["behaviors"]["Arena"]["file"], weights_only=False)
    named = [Path(m["path"]) for m in saved["ghost"]["window"]]
    snapshot_dir = session.trainers["Arena"].layout.snapshots_dir("Arena")
    # a complete checkpoint keeps exactly the files of its window
    assert sorted(snapshot_dir.glob("snapshot-*.pt")) == sorted(named)

    def killed(obj, path):
        raise _Killed

    monkeypatch.setattr(trainers.checkpoints, "atomic_save", killed)
    with pytest.raises(_Killed):
        session.checkpointer.save(session.trainers, session.controller)
    monkeypatch.undo()
    # the killed checkpoint wrote the files of its newer snapshots but deleted none
    assert all(path.is_file() for path in named)
    assert len(list(snapshot_dir.glob("snapshot-*.pt"))) > len(named)
    resumed = make_session(resume_env(), run_path, Arena=resume_settings())
    try:
        resumed.start(resume=True)
        trainer = resumed.trainers["Arena"]
        assert isinstance(trainer, GhostTrainer)
        assert trainer.step == 160
        assert [s.path for s in trainer.state.window] == named
    finally:
        resumed.finish()
    # the next complete checkpoint (on finish) deleted the files no window names
    assert sorted(snapshot_dir.glob("snapshot-*.pt")) == sorted(named)
