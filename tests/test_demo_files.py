"""``.demo`` files both ways: ``envs.demo_files`` (reading, fitting), ``envs.demo_writer`` and
``envs.demo_recorder``, and the round trip with ML-Agents 1.1's own loader and writer.

The files under ``tests/fixtures/demos`` were written by ML-Agents 1.1's ``write_demo``
(``tests/mlagents_demo_checks.py fixtures``), so the read direction is tested without ML-Agents;
with ``.venv-mlagents`` the tests also check that ML-Agents still writes them byte for byte, that
it reads what we write, and that we read what it writes.
"""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
from mlagents_envs.base_env import (
    ActionSpec,
    ActionTuple,
    BehaviorSpec,
    DimensionProperty,
    ObservationSpec,
    ObservationType,
)

from envs.demo_files import (
    DemoFileError,
    Demonstration,
    DemoWriter,
    check_demo_fits,
    read_demo,
    read_demos,
)
from envs.demo_format import (
    AgentInfoActionPairProto,
    BrainParametersProto,
    DemonstrationMetaProto,
    ObservationProto,
    brain_parameters,
    decode_varint,
    delimited,
)
from envs.demo_recorder import DemoRecorder, record_demo
from envs.exceptions import GhostError
from envs.games import make_game, scripted_policy
from tests.mlagents_demo_checks import legacy_rows, tiny_rows

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "demos"
CHECKS = ROOT / "tests" / "mlagents_demo_checks.py"


def obs_spec(shape: tuple[int, ...], name: str) -> ObservationSpec:
    return ObservationSpec(
        shape, (DimensionProperty.NONE,) * len(shape), ObservationType.DEFAULT, name
    )


HYBRID = BehaviorSpec([obs_spec((4,), "vector"), obs_spec((2, 3), "grid")], ActionSpec(2, (3, 2)))


def hybrid_rows(seed: int = 0, episodes: int = 3) -> list[dict]:
    """Rows of ``HYBRID``: ``episodes`` finished episodes (the last cut off), then 2 open rows."""
    rng = np.random.default_rng(seed)
    rows = []
    for episode in range(episodes + 1):
        length = 2 if episode == episodes else 3 + episode
        for k in range(length):
            done = episode < episodes and k == length - 1
            rows.append(
                {
                    "observations": [rng.normal(size=4), rng.normal(size=(2, 3))],
                    "reward": float(rng.normal()),
                    "done": done,
                    "max_step_reached": done and episode == episodes - 1,
                    "continuous": None if done else rng.uniform(-1, 1, 2),
                    "discrete": None if done else np.array([rng.integers(3), rng.integers(2)]),
                    "action_mask": None if done else rng.random(5) < 0.3,
                    "agent_id": episode,
                }
            )
    return rows


def write_rows(path: Path, rows: list[dict], name: str = "Hybrid?team=0") -> Path:
    with DemoWriter(path, name, HYBRID) as writer:
        for row in rows:
            fields = dict(row)
            writer.add(fields.pop("observations"), **fields)
    return path


def assert_rows(demo: Demonstration, rows: list[dict]) -> None:
    assert demo.steps == len(rows)
    for index in range(len(HYBRID.observation_specs)):
        expected = np.array([row["observations"][index] for row in rows], np.float32)
        np.testing.assert_array_equal(demo.observations[index], expected)
        assert demo.observations[index].dtype == np.float32
    zeros_c, zeros_d = np.zeros(2), np.zeros(2)
    np.testing.assert_array_equal(
        demo.continuous_actions,
        np.array([zeros_c if r["continuous"] is None else r["continuous"] for r in rows], np.float32),
    )  # fmt: skip
    np.testing.assert_array_equal(
        demo.discrete_actions, [zeros_d if r["discrete"] is None else r["discrete"] for r in rows]
    )
    assert demo.discrete_actions.dtype == np.int64
    np.testing.assert_array_equal(demo.rewards, np.array([r["reward"] for r in rows], np.float32))
    np.testing.assert_array_equal(demo.done, [r["done"] for r in rows])
    np.testing.assert_array_equal(demo.max_step_reached, [r["max_step_reached"] for r in rows])
    masks = [np.zeros(5, bool) if r["action_mask"] is None else r["action_mask"] for r in rows]
    np.testing.assert_array_equal(demo.action_masks, masks)


def assert_like(demo: Demonstration, rows: dict) -> None:
    """``demo`` holds the rows of ``tiny_rows()`` / ``legacy_rows()``."""
    assert demo.behavior_name == rows["brain_name"].partition("?")[0]
    assert [tuple(s.shape) for s in demo.spec.observation_specs] == rows["obs_shapes"]
    assert demo.spec.action_spec == ActionSpec(rows["continuous_size"], rows["branches"])
    for ours, theirs in zip(demo.observations, rows["obs"], strict=True):
        np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_array_equal(demo.continuous_actions, rows["continuous"])
    np.testing.assert_array_equal(demo.discrete_actions, rows["discrete"])
    for key in ("rewards", "done", "max_step_reached"):
        np.testing.assert_array_equal(getattr(demo, key), rows[key])
    if rows["masks"] is None:
        assert demo.action_masks is None
    else:
        np.testing.assert_array_equal(demo.action_masks, rows["masks"])
    assert demo.episodes == rows["episodes"]


# ------------------------------------------------------------------------ reading, writing
def test_the_committed_mlagents_files_read():
    assert_like(read_demo(FIXTURES / "tiny.demo"), tiny_rows())
    legacy = read_demo(FIXTURES / "legacy.demo")  # actions only in vector_actions_deprecated
    assert_like(legacy, legacy_rows())
    tiny = read_demo(FIXTURES / "tiny.demo")
    np.testing.assert_array_equal(tiny.episode_start, [True, False, False, True, False])
    assert (FIXTURES / "tiny.demo").stat().st_size < 1000


def test_our_files_read_back_as_written(tmp_path):
    rows = hybrid_rows()
    path = write_rows(tmp_path / "hybrid.demo", rows)
    demo = read_demo(path)
    assert_rows(demo, rows)
    assert demo.behavior_name == "Hybrid"
    assert demo.spec == HYBRID  # names, dimension properties and types survive
    assert demo.episodes == 4  # three finished and the open one
    np.testing.assert_array_equal(np.flatnonzero(demo.episode_start), [0, 3, 7, 12])
    meta = DemonstrationMetaProto.FromString(path.read_bytes()[1 : path.read_bytes()[0] + 1])
    assert (meta.api_version, meta.number_steps, meta.number_episodes) == (1, 14, 4)
    assert meta.mean_reward == pytest.approx(sum(r["reward"] for r in rows) / 4, rel=1e-5)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hybrid.demo"]  # no temporary left


def test_the_file_appears_only_when_closed(tmp_path):
    path = tmp_path / "sub" / "x.demo"
    writer = DemoWriter(path, "Hybrid", HYBRID)
    row = hybrid_rows()[0]
    writer.add(row["observations"], reward=1.0, done=False, continuous=row["continuous"])
    assert not path.exists()
    writer.close()
    assert read_demo(path).steps == 1
    path.write_bytes(b"old")  # an exception inside the block keeps what was there
    with pytest.raises(RuntimeError), DemoWriter(path, "Hybrid", HYBRID) as writer:
        writer.add(row["observations"], reward=1.0, done=True)
        raise RuntimeError("stop")
    assert path.read_bytes() == b"old"
    assert sorted(p.name for p in path.parent.iterdir()) == ["x.demo"]


def test_a_long_name_is_shortened_to_fit_the_metadata(tmp_path):
    path = write_rows(tmp_path / ("a-very-long-demonstration-name" * 3 + ".demo"), hybrid_rows())
    data = path.read_bytes()
    assert data[0] + 1 <= 33
    meta = DemonstrationMetaProto.FromString(data[1 : data[0] + 1])
    assert "a-very-long".startswith(meta.demonstration_name[:11])
    assert read_demo(path).steps == 14


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"observations": [np.zeros(3), np.zeros((2, 3))]}, "observation 0 of Hybrid has shape (4,)"),
        ({"observations": [np.zeros(4)]}, "has 2 observations per step; got 1"),
        ({"continuous": np.zeros(3)}, "takes 2 continuous actions; got 3"),
        ({"discrete": np.array([3, 0])}, "each in [0, branch size); got [3, 0]"),
        ({"action_mask": np.zeros(4, bool)}, "one flag per discrete action (5); got 4"),
        ({"max_step_reached": True}, "max_step_reached=True needs done=True"),
    ],
)  # fmt: skip
def test_rows_that_do_not_fit_the_spec_are_refused(tmp_path, change, message):
    row = {**hybrid_rows()[0], **change}
    writer = DemoWriter(tmp_path / "x.demo", "Hybrid", HYBRID)
    with pytest.raises(ValueError) as caught, writer:
        writer.add(row.pop("observations"), **row)
    assert message in str(caught.value)
    assert not list(tmp_path.iterdir())


def test_closing_with_no_rows_writes_nothing(tmp_path):
    writer = DemoWriter(tmp_path / "x.demo", "Hybrid", HYBRID)
    with pytest.raises(DemoFileError, match="no steps were recorded"):
        writer.close()
    assert not list(tmp_path.iterdir())


def test_images_stored_as_png_are_decoded(tmp_path):
    pil = pytest.importorskip("PIL.Image")
    pixels = np.arange(4 * 5 * 3, dtype=np.uint8).reshape(4, 5, 3) * 4
    png = io.BytesIO()
    pil.fromarray(pixels).save(png, format="PNG")
    spec = BehaviorSpec([obs_spec((4, 5, 3), "camera")], ActionSpec(0, (2,)))
    image = ObservationProto(shape=[4, 5, 3], compression_type=1, compressed_data=png.getvalue())
    pair = AgentInfoActionPairProto()
    pair.agent_info.observations.append(image)
    pair.action_info.discrete_actions.append(1)
    meta = DemonstrationMetaProto(api_version=1, number_steps=1, number_episodes=1)
    path = tmp_path / "camera.demo"
    path.write_bytes(
        delimited(meta.SerializeToString()).ljust(33, b"\0")
        + delimited(brain_parameters("Camera", spec).SerializeToString())
        + delimited(pair.SerializeToString())
    )
    demo = read_demo(path)
    np.testing.assert_allclose(demo.observations[0][0], pixels / 255.0, rtol=1e-6)
    assert demo.discrete_actions.tolist() == [[1]]


# ------------------------------------------------------------------------------ bad files
def assert_one_line(error: pytest.ExceptionInfo, *parts: str) -> None:
    text = str(error.value)
    assert "\n" not in text
    for part in parts:
        assert part in text, text
    assert isinstance(error.value, GhostError)


@pytest.mark.parametrize(
    "content",
    [
        b"I'm not a demo",
        b"\x89PNG\r\n\x1a\n" + bytes(100),
        b"PK\x03\x04" + bytes(60),  # a zip (a checkpoint .pt)
        np.random.default_rng(3).bytes(500),
        b"\x05\x08\x01\xff\xff\xff" + bytes(100),  # a length that fits, bytes that do not parse
        b"\x04\x50\x01\x58\x02" + bytes(100),  # fields the metadata has not
    ],
)  # fmt: skip
def test_files_that_are_not_demonstrations(tmp_path, content):
    path = tmp_path / "x.demo"
    path.write_bytes(content)
    with pytest.raises(DemoFileError) as caught:
        read_demo(path)
    assert_one_line(caught, str(path), "not a demonstration (.demo) file")


def test_brain_parameters_without_an_action_spec(tmp_path):
    meta = DemonstrationMetaProto(api_version=1, number_steps=1)
    brain = BrainParametersProto(brain_name="X", vector_action_space_type_deprecated=1)
    path = tmp_path / "x.demo"
    path.write_bytes(
        delimited(meta.SerializeToString()).ljust(33, b"\0")
        + delimited(brain.SerializeToString())
        + delimited(AgentInfoActionPairProto().SerializeToString())
    )
    with pytest.raises(DemoFileError) as caught:
        read_demo(path)
    assert_one_line(caught, "not a demonstration (.demo) file: its brain parameters")


def test_an_empty_file_a_missing_one_and_a_folder(tmp_path):
    (tmp_path / "empty.demo").write_bytes(b"")
    with pytest.raises(DemoFileError) as caught:
        read_demo(tmp_path / "empty.demo")
    assert_one_line(caught, "empty.demo: the file is empty")
    with pytest.raises(DemoFileError) as caught:
        read_demos(tmp_path / "nothing.demo")
    assert_one_line(caught, "nothing.demo: no such demonstration file")
    with pytest.raises(DemoFileError) as caught:
        read_demo(tmp_path)
    assert_one_line(caught, "is a folder; read_demos reads every .demo file in it")
    folder = tmp_path / "none"
    folder.mkdir()
    (folder / "notes.txt").write_text("no demos here")
    with pytest.raises(DemoFileError) as caught:
        read_demos(folder)
    assert_one_line(caught, "none: no .demo files in this folder")


def test_a_file_cut_at_any_byte_is_truncated(tmp_path):
    data = (FIXTURES / "tiny.demo").read_bytes()
    for cut in range(1, len(data)):
        path = tmp_path / f"cut{cut}.demo"
        path.write_bytes(data[:cut])
        with pytest.raises(DemoFileError) as caught:
            read_demo(path)
        assert_one_line(caught, str(path), "truncated demonstration file")


def test_an_unsupported_version(tmp_path):
    data = bytearray((FIXTURES / "tiny.demo").read_bytes())
    assert data[1:3] == b"\x08\x01"  # api_version 1
    data[2] = 9
    path = tmp_path / "future.demo"
    path.write_bytes(bytes(data))
    with pytest.raises(DemoFileError) as caught:
        read_demo(path)
    assert_one_line(caught, "format version 9 is not supported", "versions 0 and 1")


def test_bytes_after_the_announced_steps_are_ignored(tmp_path):
    """Unity's writer appends a copy of the metadata after the last row."""
    data = (FIXTURES / "tiny.demo").read_bytes()
    path = tmp_path / "unity.demo"
    path.write_bytes(data + data[1 : data[0] + 1])
    assert_like(read_demo(path), tiny_rows())


def test_a_recording_that_never_closed_reads_to_the_end(tmp_path):
    """Unity writes the step count at close; a killed recording says 0 and holds every row."""
    data = (FIXTURES / "tiny.demo").read_bytes()
    meta = DemonstrationMetaProto(api_version=1, demonstration_name="tiny")
    path = tmp_path / "open.demo"
    path.write_bytes(delimited(meta.SerializeToString()).ljust(33, b"\0") + data[33:])
    assert read_demo(path).steps == 5


def test_rows_that_disagree_with_the_first(tmp_path):
    rows = hybrid_rows()
    path = write_rows(tmp_path / "x.demo", rows)
    data = path.read_bytes()
    brain_length, brain_at = decode_varint(data, 33)
    pos = brain_at + brain_length
    first_length, body = decode_varint(data, pos)
    pair = AgentInfoActionPairProto.FromString(data[body : body + first_length])
    del pair.agent_info.observations[1]
    broken = data[:pos] + delimited(pair.SerializeToString()) + data[body + first_length :]
    path.write_bytes(broken)  # the first row lost an observation: the second now disagrees
    with pytest.raises(DemoFileError) as caught:
        read_demo(path)
    assert_one_line(caught, "step 1 has 2 observations, the first step 1")


# ------------------------------------------------------------------- fitting and folders
def test_check_demo_fits_names_the_difference():
    demo = read_demo(FIXTURES / "tiny.demo")
    check_demo_fits(demo, demo.spec, where="demo_path")
    cases = [
        (BehaviorSpec([obs_spec((3,), "a")], demo.spec.action_spec), "it has 2 observations"),
        (
            BehaviorSpec([obs_spec((4,), "a"), obs_spec((2, 2), "b")], demo.spec.action_spec),
            "its observation 0 has shape (3,), the behavior's (4,)",
        ),
        (
            BehaviorSpec(demo.spec.observation_specs, ActionSpec(2, ())),
            "its actions are 1 continuous and discrete branches (3, 2), the behavior's 2 "
            "continuous",
        ),
    ]
    for spec, message in cases:
        with pytest.raises(DemoFileError) as caught:
            check_demo_fits(demo, spec, where="behaviors.Tiny.behavioral_cloning.demo_path")
        assert_one_line(
            caught,
            "behaviors.Tiny.behavioral_cloning.demo_path: the demonstration of 'Tiny' does not "
            "fit the behavior",
            message,
        )


def test_a_folder_reads_as_one_demonstration(tmp_path):
    first, second = hybrid_rows(seed=1), hybrid_rows(seed=2, episodes=1)
    write_rows(tmp_path / "b.demo", second)
    write_rows(tmp_path / "a.demo", first)
    (tmp_path / "readme.txt").write_text("ignored")
    demo = read_demos(tmp_path)
    assert_rows(demo, first + second)  # name order
    assert demo.episodes == 4 + 2
    # the second file starts an episode though the first ended without a done row
    assert demo.episode_start[len(first)] and not demo.done[len(first) - 1]
    assert read_demos(tmp_path / "a.demo").steps == len(first)


def test_a_folder_of_different_behaviors_is_refused(tmp_path):
    write_rows(tmp_path / "a.demo", hybrid_rows())
    (tmp_path / "b.demo").write_bytes((FIXTURES / "tiny.demo").read_bytes())
    with pytest.raises(DemoFileError) as caught:
        read_demos(tmp_path)
    assert_one_line(caught, "b.demo: does not go with the folder's other files")


# ---------------------------------------------------------------------------- recording
class Remembering:
    """A scripted player that remembers the action it gave for each observation."""

    def __init__(self, player) -> None:
        self.player, self.given = player, {}

    def act(self, obs, action_mask, deterministic):
        action = self.player.act(obs, action_mask, deterministic)
        for row, c, d in zip(obs[0], action.continuous, action.discrete, strict=True):
            self.given[row.tobytes()] = (c.copy(), d.copy())
        return action


def agent_ids(path: Path) -> list[int]:
    data = path.read_bytes()
    steps = DemonstrationMetaProto.FromString(data[1 : data[0] + 1]).number_steps
    length, pos = decode_varint(data, 33)
    BrainParametersProto.FromString(data[pos : pos + length])
    pos += length
    ids = []
    for _ in range(steps):
        length, pos = decode_varint(data, pos)
        ids.append(AgentInfoActionPairProto.FromString(data[pos : pos + length]).agent_info.id)
        pos += length
    return ids


def tennis_players(env) -> dict:
    return {
        name: Remembering(scripted_policy("tennis", "medium", seed=index))
        for index, name in enumerate(env.behavior_specs)
    }


def test_record_demo_writes_the_actions_that_were_played(tmp_path):
    env = make_game("tennis", num_arenas=3, seed=1)
    players = tennis_players(env)
    # deterministic: the two sides may see equal observations, and must then act alike
    path = record_demo(
        env, players, path=tmp_path / "t.demo", behavior_name="Tennis", episodes=7,
        deterministic=True,
    )  # fmt: skip
    demo = read_demo(path)
    assert (demo.episodes, int(demo.done.sum()), demo.behavior_name) == (7, 7, "Tennis")
    assert demo.done[-1]  # whole episodes only
    given = {}
    for player in players.values():
        given.update(player.given)
    for row, continuous, done in zip(demo.observations[0], demo.continuous_actions, demo.done, strict=True):  # fmt: skip
        if done:
            assert not continuous.any()
        else:
            np.testing.assert_array_equal(continuous, given[row.tobytes()][0])
    ids = agent_ids(path)  # each episode is one agent's, its rows together
    starts = np.flatnonzero(demo.episode_start)
    for begin, end in zip(starts, [*starts[1:], demo.steps], strict=True):
        assert len(set(ids[begin:end])) == 1
    assert {i % 2 for i in ids} == {0, 1}  # both teams' agents
    assert np.abs(demo.rewards[demo.done]).max() == 1.0


def test_one_team_and_a_discrete_game_with_masks(tmp_path):
    env = make_game("soccer", num_arenas=2, seed=0, max_episode_steps=30)
    players = {
        name: scripted_policy("soccer", "weak", seed=i) for i, name in enumerate(env.behavior_specs)
    }
    record_demo(env, players, path=tmp_path / "s.demo", behavior_name="SoccerTwos", team=1, episodes=3)  # fmt: skip
    demo = read_demo(tmp_path / "s.demo")
    assert demo.episodes == 3 and demo.spec == env.behavior_specs["SoccerTwos?team=1"]
    assert demo.action_masks is not None and demo.action_masks.shape == (demo.steps, 6)
    assert demo.discrete_actions.max() <= 2 and demo.continuous_actions.shape == (demo.steps, 0)
    assert demo.max_step_reached[demo.done].any()  # 30 steps cut the episodes off


def test_the_recorder_leaves_out_episodes_cut_by_a_reset(tmp_path):
    env = make_game("tennis", num_arenas=2, seed=0)
    recorder = DemoRecorder(env, path=tmp_path / "r.demo", behavior_name="Tennis", team=0)
    recorder.reset()
    for _ in range(5):  # no episode ends this soon
        recorder.step()
    recorder.reset()
    assert recorder.dropped_steps == 10 and recorder.episodes == 0
    while recorder.episodes < 2:
        name = "Tennis?team=0"
        decision, _ = recorder.get_steps(name)
        for agent in decision.agent_id:  # one by one: set_action_for_agent is recorded too
            recorder.set_action_for_agent(name, agent, ActionTuple(continuous=np.full((1, 2), 0.5, np.float32)))  # fmt: skip
        recorder.step()
    recorder.close()
    demo = read_demo(tmp_path / "r.demo")
    assert (demo.continuous_actions[~demo.done] == 0.5).all()
    assert set(agent_ids(tmp_path / "r.demo")) <= {0, 2}  # team 0's agents only


def test_unknown_behaviors_and_missing_players(tmp_path):
    env = make_game("tennis", num_arenas=1)
    with pytest.raises(ValueError, match="no behavior 'Tennis\\?team=4' to record"):
        DemoRecorder(env, path=tmp_path / "x.demo", behavior_name="Tennis", team=4)
    with pytest.raises(ValueError, match="no player for \\['Tennis\\?team=1'\\]"):
        record_demo(env, {"Tennis?team=0": None}, path=tmp_path / "x.demo", behavior_name="Tennis", episodes=1)  # fmt: skip
    assert not list(tmp_path.iterdir())


# -------------------------------------------------------------------- ML-Agents 1.1 itself
def run_checks(mlagents: Path, *args: str) -> None:
    done = subprocess.run(
        [str(mlagents / "python"), str(CHECKS), *args],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]


def test_mlagents_reads_what_we_write(mlagents, tmp_path):
    rows = hybrid_rows()
    path = write_rows(tmp_path / "ours.demo", rows)
    run_checks(mlagents, "load", str(path), str(tmp_path / "theirs.npz"))
    theirs = dict(np.load(tmp_path / "theirs.npz"))
    spec = json.loads(str(theirs["spec"]))
    assert spec == {
        "obs_shapes": [[4], [2, 3]], "continuous_size": 2, "branches": [3, 2], "expected": 14,
    }  # fmt: skip
    ours = read_demo(path)
    for index in range(2):
        flat = ours.observations[index].reshape(ours.steps, -1)
        np.testing.assert_array_equal(theirs[f"row_obs_{index}"], flat)
        # the buffer pairs each row with the next one's reward and done, and drops the last
        np.testing.assert_array_equal(theirs[f"buffer_obs_{index}"], ours.observations[index][:-1])
    np.testing.assert_array_equal(theirs["row_reward"], ours.rewards)
    np.testing.assert_array_equal(theirs["row_done"], ours.done)
    np.testing.assert_array_equal(theirs["row_max_step"], ours.max_step_reached)
    np.testing.assert_array_equal(theirs["row_continuous"], ours.continuous_actions)
    np.testing.assert_array_equal(theirs["row_discrete"], ours.discrete_actions)
    np.testing.assert_array_equal(theirs["buffer_continuous"], ours.continuous_actions[:-1])
    np.testing.assert_array_equal(theirs["buffer_discrete"], ours.discrete_actions[:-1])
    np.testing.assert_array_equal(theirs["buffer_reward"], ours.rewards[1:])
    np.testing.assert_array_equal(theirs["buffer_done"], ours.done[1:])


def test_we_read_what_mlagents_writes(mlagents, tmp_path):
    run_checks(mlagents, "write", str(tmp_path))
    for kind, rows in (("tiny", tiny_rows()), ("legacy", legacy_rows())):
        written = dict(np.load(tmp_path / f"{kind}.npz"))
        demo = read_demo(tmp_path / f"{kind}.demo")
        assert_like(demo, rows)
        for index, column in enumerate(demo.observations):
            np.testing.assert_array_equal(column, written[f"obs_{index}"])
        np.testing.assert_array_equal(demo.discrete_actions, written["discrete"])
        # the committed files are ML-Agents' own
        assert (tmp_path / f"{kind}.demo").read_bytes() == (FIXTURES / f"{kind}.demo").read_bytes()
