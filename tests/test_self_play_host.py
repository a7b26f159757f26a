"""The host kit (``ghost.core.self_play_host.SelfPlayHost``): what every host relies on it for:
subscribe before restore, one controller restore per run, team changes told to every listener,
and a saved run that comes back the same."""

from __future__ import annotations

import logging

import torch

from ghost.core.controller import TeamChange
from ghost.core.self_play import SelfPlayState
from ghost.core.self_play_host import SelfPlayHost
from ghost.core.settings import SelfPlaySettings
from ghost.core.state_folder import SelfPlayFolder
from tests.test_ghost_cycle import FakeLearner
from trainers.run_files.access import RUN_FILES


class TensorLearner(FakeLearner):
    """A fake learner whose weights are tensors (they go into files)."""

    def weights(self):
        return {"w": torch.full((2,), float(self.step))}


def kit_with(names=("Striker", "Goalie"), **settings) -> tuple[SelfPlayHost, dict]:
    kit = SelfPlayHost()
    learners = {}
    for name in names:
        state = SelfPlayState(behavior_name=name, settings=SelfPlaySettings(**settings), seed=1)
        learners[name] = TensorLearner()
        kit.add_behavior(state=state, learner=learners[name])
    return kit, learners


def play(kit: SelfPlayHost, learners: dict, updates: int) -> None:
    """Updates of every behavior: steps pass, the learner wins its matches."""
    for cycle in kit.cycles.values():
        cycle.begin()
    for _ in range(updates):
        for name, cycle in kit.cycles.items():
            learners[name].step += 10
            for team in cycle.teams:
                cycle.route(team=team, agent_steps=10)
            if cycle.is_learning:
                cycle.book([(0, 1.0)])
            kit.after_update(name)
        kit.take_team_change()


def test_a_saved_run_comes_back_the_same_in_a_new_kit(tmp_path):
    options = {"save_steps": 20, "swap_steps": 10, "team_change": 50, "window": 3}
    kit, learners = kit_with(**options)
    kit.subscribe("Striker", [0])
    kit.subscribe("Goalie", [1])
    kit.connect("Striker", [0])
    kit.connect("Goalie", [1])
    play(kit, learners, 30)
    assert kit.controller.team_changes >= 2
    folders = {n: SelfPlayFolder(tmp_path / n, files=RUN_FILES) for n in kit.cycles}
    for name, folder in folders.items():
        kit.save(name, folder, step=learners[name].step)

    again, fresh = kit_with(**options)
    # the goalie's team appears first this time: the saved rotation must still win
    again.subscribe("Goalie", [1])
    again.subscribe("Striker", [0])
    for name, folder in folders.items():
        fresh[name].step = learners[name].step
        again.restore(name, folder, folder.load(), step=fresh[name].step)
    assert again.controller.state_dict() == kit.controller.state_dict()
    for name in kit.cycles:
        before, after = kit.cycles[name].state, again.cycles[name].state
        assert [(s.snapshot_id, s.step) for s in after.window] == [
            (s.snapshot_id, s.step) for s in before.window
        ]
        assert after.rating == before.rating and after.swaps == before.swaps
    again.connect("Goalie", [1])
    again.connect("Striker", [0])
    for name in kit.cycles:  # the saved opponents are in play again, not a fresh draw
        team = 0 if name == "Striker" else 1
        saved = [o.key for o in kit.cycles[name].state.opponents.get(team, [])]
        assert [o.key for o in again.cycles[name].state.opponents.get(team, [])] == saved


def test_the_controller_is_restored_once_per_run(tmp_path):
    kit, learners = kit_with(save_steps=10, team_change=30)
    kit.subscribe("Striker", [0])
    kit.subscribe("Goalie", [1])
    kit.connect("Striker", [0])
    kit.connect("Goalie", [1])
    play(kit, learners, 10)
    folder = SelfPlayFolder(tmp_path / "Striker", files=RUN_FILES)
    kit.save("Striker", folder, step=learners["Striker"].step)
    record = folder.load()
    later = dict(record, controller={**record["controller"], "team_changes": 99})
    again, _ = kit_with(save_steps=10, team_change=30)
    again.subscribe("Striker", [0])
    again.subscribe("Goalie", [1])
    again.restore("Striker", folder, record)
    again.restore("Striker", folder, later)  # a second behavior's copy of the same controller
    assert again.controller.team_changes == kit.controller.team_changes != 99


def test_a_team_change_is_told_to_every_listener_and_logged(caplog):
    heard: list[TeamChange] = []

    class Listener:
        def on_team_change(self, change: TeamChange) -> None:
            heard.append(change)

    kit = SelfPlayHost()
    for name, team in (("Striker", 0), ("Goalie", 1)):
        state = SelfPlayState(behavior_name=name, settings=SelfPlaySettings(), seed=0)
        kit.add_behavior(state=state, learner=FakeLearner(), listener=Listener())
        kit.connect(name, [team])
    assert kit.take_team_change() is None
    kit.controller.request_team_change()
    with caplog.at_level(logging.INFO, logger="ghost.core.self_play_host"):
        change = kit.take_team_change()
    assert change is not None and change.learning_team == 1
    assert heard == [change, change]
    assert "Self-play: team 1 learns now (team change 1)" in caplog.text


def test_a_record_of_another_step_is_used_with_a_warning(tmp_path, caplog):
    kit, learners = kit_with(names=("Tennis",), save_steps=10)
    kit.subscribe("Tennis", [0, 1])
    kit.connect("Tennis", [0, 1])
    play(kit, learners, 5)
    folder = SelfPlayFolder(tmp_path / "self_play", files=RUN_FILES)
    kit.save("Tennis", folder, step=50)
    again, _ = kit_with(names=("Tennis",), save_steps=10)
    again.subscribe("Tennis", [0, 1])
    with caplog.at_level(logging.INFO, logger="ghost.core.self_play_host"):
        again.restore("Tennis", folder, folder.load(), step=70)
    assert "from step 50, the model from step 70" in caplog.text
    assert "Tennis: resumed self-play at step 70" in caplog.text
    assert again.cycles["Tennis"].state.rating == kit.cycles["Tennis"].state.rating
