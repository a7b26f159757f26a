"""``.onnx`` brains: the interface ML-Agents 1.1 exports, and outputs equal to our torch policy's.

The reference interface was exported by ML-Agents itself (``scripts/onnx_reference.py``, run in
the ML-Agents peer venv) into ``tests/fixtures/mlagents_onnx_interface.json``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from mlagents_envs.base_env import (
    ActionSpec,
    BehaviorSpec,
    DimensionProperty,
    ObservationSpec,
    ObservationType,
)

from trainers.onnx_export import export_onnx
from trainers.policy import TorchPolicy, load_policy
from trainers.settings import MemorySettings, NetworkSettings

onnx = pytest.importorskip("onnx", reason="the onnx extra is not installed")
ort = pytest.importorskip("onnxruntime", reason="the onnx extra is not installed")

pytestmark = pytest.mark.usefixtures("one_torch_thread")

FIXTURE = Path(__file__).parent / "fixtures" / "mlagents_onnx_interface.json"
REFERENCE = json.loads(FIXTURE.read_text())["cases"]
#: deterministic outputs of onnxruntime and torch agree to this (float32 arithmetic)
TOLERANCE = 1e-5


def _observation_spec(shape: list[int]) -> ObservationSpec:
    none, translational = DimensionProperty.NONE, DimensionProperty.TRANSLATIONAL_EQUIVARIANCE
    properties = (none, translational, translational) if len(shape) == 3 else (none,)
    return ObservationSpec(tuple(shape), properties, ObservationType.DEFAULT, "")


def _spec(case: dict) -> BehaviorSpec:
    observations = [_observation_spec(shape) for shape in case["observations"]]
    return BehaviorSpec(observations, ActionSpec(case["continuous"], tuple(case["branches"])))


def _policy(case: dict, *, squash: bool = False, seed: int = 0) -> TorchPolicy:
    torch.manual_seed(seed)
    memory = MemorySettings(memory_size=case["memory"]) if case.get("memory") else None
    settings = NetworkSettings(hidden_units=16, num_layers=1, normalize=True, memory=memory)
    policy = TorchPolicy(behavior_spec=_spec(case), network_settings=settings, squash=squash,
                         conditional_std=squash)  # fmt: skip
    vectors = [np.random.default_rng(seed).normal(2.0, 3.0, (64, *o.shape)).astype(np.float32)
               for o in policy.behavior_spec.observation_specs]  # fmt: skip
    policy.update_normalizer(vectors)  # non-trivial normalizer statistics go into the graph
    return policy


def _interface(model) -> dict:
    def describe(value) -> dict:
        tensor = value.type.tensor_type
        dims = ["dynamic" if d.dim_param else d.dim_value for d in tensor.shape.dim]
        return {"name": value.name, "elem_type": onnx.TensorProto.DataType.Name(tensor.elem_type),
                "dims": dims}  # fmt: skip

    return {
        "opset": [o.version for o in model.opset_import],
        "inputs": [describe(v) for v in model.graph.input],
        "outputs": [describe(v) for v in model.graph.output],
    }


def _reference_interface(case: dict) -> dict:
    def dynamic(value: dict) -> dict:
        dims = ["dynamic" if isinstance(d, str) else d for d in value["dims"]]
        return {**value, "dims": dims}

    return {
        "opset": [o["version"] for o in case["opset"]],
        "inputs": [dynamic(v) for v in case["inputs"]],
        "outputs": [dynamic(v) for v in case["outputs"]],
    }


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_interface_equals_what_mlagents_exports(tmp_path, name, capsys):
    reference = REFERENCE[name]
    path = export_onnx(_policy(reference["case"]), tmp_path / f"{name}.onnx")
    ours = _interface(onnx.load(path))
    expected = _reference_interface(reference)
    with capsys.disabled():
        print(f"\n{name}: ML-Agents 1.1 vs ours")
        for kind in ("inputs", "outputs"):
            for theirs, mine in zip(expected[kind], ours[kind], strict=False):
                same = "==" if theirs == mine else "!="
                print(f"  {kind[:-1]:6} {theirs['name']:34} {theirs['elem_type']:6} "
                      f"{theirs['dims']!s:22} {same} {mine['name']} {mine['dims']}")  # fmt: skip
    assert ours == expected
    session = ort.InferenceSession(str(path))
    feeds = {i.name: np.ones([1 if isinstance(d, str) else d for d in i.shape], np.float32)
             for i in session.get_inputs()}  # fmt: skip
    results = dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds),
                       strict=True))  # fmt: skip
    for output, value in reference["constant_outputs"].items():
        assert results[output].tolist() == value, output


def _run(path: Path, inputs: list[np.ndarray]) -> dict[str, np.ndarray]:
    session = ort.InferenceSession(str(path))
    feeds = dict(zip([i.name for i in session.get_inputs()], inputs, strict=True))
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, feeds), strict=True))


def _observations(policy: TorchPolicy, count: int, seed: int = 1) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.normal(1.0, 2.0, (count, *o.shape)).astype(np.float32)
            for o in policy.behavior_spec.observation_specs]  # fmt: skip


@pytest.mark.parametrize("name", sorted(REFERENCE))
@pytest.mark.parametrize("squash", [False, True], ids=["ppo", "sac"])
def test_onnxruntime_acts_like_the_torch_policy(tmp_path, name, squash):
    case = REFERENCE[name]["case"]
    policy = _policy(case, squash=squash)
    path = export_onnx(policy, tmp_path / "brain.onnx")
    obs = _observations(policy, 50)
    branches = case["branches"]
    masks = None
    inputs = list(obs)
    if branches:
        rng = np.random.default_rng(2)
        masks = [rng.random((50, size)) < 0.3 for size in branches]
        for mask in masks:
            mask[:, 0] = False  # one action always allowed
        inputs.append((~np.concatenate(masks, axis=1)).astype(np.float32))  # Unity: 1 = allowed
    by_agent = {}
    if policy.memory_size:
        agents = np.arange(50)
        memories = np.random.default_rng(3).normal(0, 0.5, (50, policy.memory_size))
        policy.memories.store(agents, memories.astype(np.float32))
        inputs.append(memories[:, None, :].astype(np.float32))
        by_agent = {"agent_ids": agents}
    out = _run(path, inputs)
    greedy = policy.act(obs, action_mask=masks, deterministic=True, **by_agent)
    if policy.memory_size:  # the memory Unity feeds back next time is the one the policy keeps
        np.testing.assert_allclose(
            out["recurrent_out"][:, 0, :], policy.memories.recall(agents), atol=TOLERANCE
        )
    if case["continuous"]:
        np.testing.assert_allclose(out["deterministic_continuous_actions"], greedy.continuous,
                                   atol=TOLERANCE)  # fmt: skip
        assert np.all(np.abs(out["continuous_actions"]) <= 1.0)
    if branches:
        assert np.array_equal(out["deterministic_discrete_actions"], greedy.discrete)
        sampled = out["discrete_actions"]
        for branch, mask in enumerate(masks):
            assert not mask[np.arange(50), sampled[:, branch]].any()  # never a masked action


@pytest.mark.parametrize("name", ["memory_continuous", "memory_discrete"])
def test_onnxruntime_carries_memory_like_the_torch_policy_over_50_steps(tmp_path, name):
    """Unity feeds ``recurrent_out`` back as the next ``recurrent_in``; over 50 consecutive
    decisions that must give the torch policy's actions and carried memories at every step."""
    case = REFERENCE[name]["case"]
    policy = _policy(case)
    session = ort.InferenceSession(str(export_onnx(policy, tmp_path / "brain.onnx")))
    names = [o.name for o in session.get_outputs()]
    agents, steps = np.array([3, 11, 4, 40, 7]), 50
    rng = np.random.default_rng(4)
    allowed = [np.ones((len(agents), sum(case["branches"])), np.float32)] * bool(case["branches"])
    memory = np.zeros((len(agents), 1, policy.memory_size), np.float32)  # Unity starts at zeros
    for step in range(steps):
        obs = [rng.normal(0.0, 2.0, (len(agents), *o.shape)).astype(np.float32)
               for o in policy.behavior_spec.observation_specs]  # fmt: skip
        feeds = [*obs, *allowed, memory]
        out = dict(zip(names, session.run(None, dict(zip(
            [i.name for i in session.get_inputs()], feeds, strict=True))), strict=True))  # fmt: skip
        greedy = policy.act(obs, deterministic=True, agent_ids=agents)
        memory = out["recurrent_out"]
        np.testing.assert_allclose(memory[:, 0, :], policy.memories.recall(agents),
                                   atol=TOLERANCE, err_msg=f"memory at step {step}")  # fmt: skip
        if case["continuous"]:
            np.testing.assert_allclose(out["deterministic_continuous_actions"], greedy.continuous,
                                       atol=TOLERANCE, err_msg=f"actions at step {step}")  # fmt: skip
        if case["branches"]:
            assert np.array_equal(out["deterministic_discrete_actions"], greedy.discrete), step
    assert np.abs(memory).max() > 0.05  # the carried state is far from zeros after 50 steps


@pytest.mark.parametrize("name", ["vector_continuous", "vector_discrete"])
def test_sampled_outputs_follow_the_policy_distribution(tmp_path, name):
    case = REFERENCE[name]["case"]
    policy = _policy(case)
    path = export_onnx(policy, tmp_path / "brain.onnx")
    one = _observations(policy, 1)
    many = [np.repeat(o, 4000, axis=0) for o in one]
    inputs = list(many) + ([np.ones((4000, sum(case["branches"])), np.float32)]
                           if case["branches"] else [])  # fmt: skip
    out = _run(path, inputs)
    if case["continuous"]:
        ours = np.stack([policy.act(one).continuous[0] for _ in range(4000)])
        np.testing.assert_allclose(out["continuous_actions"].mean(0), ours.mean(0), atol=0.03)
        np.testing.assert_allclose(out["continuous_actions"].std(0), ours.std(0), atol=0.03)
    else:
        for branch, probabilities in enumerate(policy.action_probabilities(one)):
            counts = np.bincount(out["discrete_actions"][:, branch],
                                 minlength=probabilities.shape[1]) / 4000  # fmt: skip
            np.testing.assert_allclose(counts, probabilities[0], atol=0.03)


def test_a_run_writes_the_onnx_brain_beside_the_final_policy(tmp_path):
    import ghost

    config = {
        "behaviors": {"Tennis": {
            "hyperparameters": {"batch_size": 64, "buffer_size": 256},
            "network_settings": {"hidden_units": 16}, "max_steps": 500,
            "self_play": {"save_steps": 200, "team_change": 400},
        }},
        "env_settings": {"env_path": "tennis", "seed": 0},
    }  # fmt: skip
    run = ghost.train(config, run_id="r", results_dir=tmp_path).run_dir
    policy = load_policy(run / "Tennis.pt")
    obs = _observations(policy, 5)
    out = _run(run / "Tennis.onnx", obs)
    greedy = policy.act(obs, deterministic=True)
    np.testing.assert_allclose(out["deterministic_continuous_actions"], greedy.continuous,
                               atol=TOLERANCE)  # fmt: skip


def test_without_the_onnx_package_the_error_says_what_to_install(tmp_path, monkeypatch):
    from trainers import onnx_export
    from trainers.exceptions import UnsupportedFeatureError

    monkeypatch.setattr(onnx_export, "onnx_available", lambda: False)
    with pytest.raises(UnsupportedFeatureError, match=r"pip install -e \"\.\[onnx\]\""):
        export_onnx(_policy(REFERENCE["vector_discrete"]["case"]), tmp_path / "x.onnx")


def test_ghost_export_writes_every_policy_of_a_run(tmp_path, capsys):
    import ghost
    from ghost.running.export import main as ghost_export

    config = {
        "behaviors": {"Tennis": {
            "hyperparameters": {"batch_size": 64, "buffer_size": 256},
            "network_settings": {"hidden_units": 8}, "max_steps": 600,
            "checkpoint_interval": 300, "self_play": {"save_steps": 200, "team_change": 400},
        }},
        "env_settings": {"env_path": "tennis", "seed": 0},
    }  # fmt: skip
    run = ghost.train(config, run_id="r", results_dir=tmp_path).run_dir
    (run / "Tennis.onnx").unlink()
    assert ghost_export([str(run), "--all"]) == 0
    written = capsys.readouterr().out.splitlines()
    sources = [Path(line.split(" -> ")[0]) for line in written]
    assert run / "Tennis.pt" in sources
    assert any("checkpoints" in str(s) for s in sources) and any(
        "snapshots" in str(s) for s in sources
    )
    for line in written:
        target = Path(line.split(" -> ")[1])
        assert _interface(onnx.load(target))["outputs"][0]["name"] == "version_number"
    chosen = tmp_path / "chosen.onnx"
    checkpoint = next(s for s in sources if "checkpoints" in str(s))
    assert ghost_export([str(checkpoint), "-o", str(chosen)]) == 0 and chosen.is_file()
    folder = tmp_path / "brains"
    folder.mkdir()
    assert ghost_export([str(run), "-o", str(folder)]) == 0
    assert (folder / "Tennis.onnx").is_file()
    capsys.readouterr()
    assert ghost_export([str(run), "-o", str(tmp_path / "new") + "/"]) == 0
    assert (tmp_path / "new" / "Tennis.onnx").is_file()
    assert ghost_export([str(tmp_path / "nothing")]) == 2
    assert "no such policy file or run folder" in capsys.readouterr().err
