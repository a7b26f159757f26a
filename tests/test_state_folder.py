"""The self-play state folder every host writes (``ghost.core.state_folder``): what it holds,
that a reload equals what was saved wherever the folder moved, and what is refused."""

from __future__ import annotations

import shutil

import pytest
import torch

from ghost.core.self_play import SelfPlayState
from ghost.core.settings import SelfPlaySettings
from ghost.core.state_folder import SelfPlayFolder, StateFolderError
from trainers.run_files.access import RUN_FILES


def folder_at(path) -> SelfPlayFolder:
    return SelfPlayFolder(path, files=RUN_FILES)


def played_state(snapshots: int) -> SelfPlayState:
    state = SelfPlayState(behavior_name="Tennis", settings=SelfPlaySettings(window=3))
    for step in range(snapshots):
        state.take_snapshot({"w": torch.full((2,), float(step))}, trainer_step=100 * step)
    state.rating = 1234.5
    return state


def test_a_saved_folder_reloads_to_the_same_state_after_a_move(tmp_path):
    state = played_state(5)
    folder = folder_at(tmp_path / "run" / "self_play")
    folder.save(state, {"step": 400, "controller": {"learning_team": 1}})
    names = sorted(p.name for p in folder.folder.iterdir())
    assert names == ["payoff.csv", "snapshot-2.pt", "snapshot-3.pt", "snapshot-4.pt", "state.pt"]
    moved = tmp_path / "elsewhere"
    shutil.move(str(folder.folder), moved)
    record = folder_at(moved).load()
    assert record["step"] == 400 and record["controller"] == {"learning_team": 1}
    again = SelfPlayState(behavior_name="Tennis", settings=SelfPlaySettings(window=3))
    folder_at(moved).restore(record, again)
    assert again.rating == 1234.5
    assert [s.snapshot_id for s in again.window] == [2, 3, 4]
    assert all(s.path.parent == moved for s in again.window)
    assert torch.equal(again.window.by_id(3).weights["w"], torch.full((2,), 3.0))


def test_evicted_snapshots_leave_the_folder_and_kept_ones_are_not_rewritten(tmp_path):
    state = played_state(3)
    folder = folder_at(tmp_path)
    folder.save(state, {"step": 200})
    kept = (tmp_path / "snapshot-1.pt").stat().st_ino  # an atomic rewrite makes a new file
    state.take_snapshot({"w": torch.zeros(2)}, trainer_step=300)  # evicts snapshot 0
    folder.save(state, {"step": 300})
    assert not (tmp_path / "snapshot-0.pt").exists() and (tmp_path / "snapshot-3.pt").exists()
    assert (tmp_path / "snapshot-1.pt").stat().st_ino == kept


def test_no_state_is_none_and_another_format_is_refused(tmp_path):
    folder = folder_at(tmp_path)
    assert folder.load() is None
    RUN_FILES.save({"format": 99}, tmp_path / "state.pt")
    with pytest.raises(StateFolderError, match="unknown format 99"):
        folder.load()
