"""Record the ONNX interface ML-Agents 1.1 itself exports, as the fixture our exporter is checked
against (``tests/fixtures/mlagents_onnx_interface.json``).

Runs in the ML-Agents peer venv that ``../shared/peers/setup-mlagents.sh`` builds (at
``$PEER_VENV``), with ``onnx`` added::

    $PEER_VENV/bin/pip install onnx==1.15.0
    $PEER_VENV/bin/python scripts/onnx_reference.py tests/fixtures/mlagents_onnx_interface.json

For each behavior spec in ``CASES`` it builds ML-Agents' own PPO policy (``TorchPolicy`` with its
``SimpleActor``), exports it with ML-Agents' ``ModelSerializer`` and writes down what Unity's
inference engine reads: the opset, every input and output (name, element type, dimensions, with
symbolic names for dynamic ones) and the values of the constant outputs (model version, memory
size, action shapes), evaluated with onnx's reference runtime on a batch of one.
"""

from __future__ import annotations

import json
import sys
import tempfile
from importlib import metadata
from pathlib import Path

import numpy as np
import onnx
import torch
from mlagents.trainers.policy.torch_policy import TorchPolicy
from mlagents.trainers.settings import NetworkSettings
from mlagents.trainers.torch_entities import model_serialization
from mlagents.trainers.torch_entities.networks import SimpleActor
from mlagents_envs.base_env import (
    ActionSpec,
    BehaviorSpec,
    DimensionProperty,
    ObservationSpec,
    ObservationType,
)
from onnx.reference import ReferenceEvaluator

#: name → observation shapes, continuous size, discrete branches (and memory size, when recurrent)
CASES = {
    "vector_continuous": {"observations": [[8]], "continuous": 2, "branches": []},
    "vector_discrete": {"observations": [[6]], "continuous": 0, "branches": [3, 2]},
    "hybrid_two_vectors": {"observations": [[5], [3]], "continuous": 2, "branches": [3]},
    "visual_and_vector": {"observations": [[3, 36, 36], [4]], "continuous": 0, "branches": [4]},
    "memory_discrete": {"observations": [[6]], "continuous": 0, "branches": [3, 2], "memory": 32},
    "memory_continuous": {"observations": [[8]], "continuous": 2, "branches": [], "memory": 16},
}
CONSTANT_OUTPUTS = (
    "version_number", "memory_size", "continuous_action_output_shape",
    "discrete_action_output_shape",
)  # fmt: skip


def _observation_spec(shape: list[int]) -> ObservationSpec:
    if len(shape) == 3:  # channels first, as ML-Agents 1.x reads images
        properties = (DimensionProperty.NONE,) + (DimensionProperty.TRANSLATIONAL_EQUIVARIANCE,) * 2
    else:
        properties = (DimensionProperty.NONE,)
    return ObservationSpec(tuple(shape), properties, ObservationType.DEFAULT, "")


def _spec(case: dict) -> BehaviorSpec:
    observations = [_observation_spec(shape) for shape in case["observations"]]
    return BehaviorSpec(observations, ActionSpec(case["continuous"], tuple(case["branches"])))


def _legacy_exporter() -> None:
    """torch 2.13 defaults to the dynamo exporter (needs onnxscript); ML-Agents was written for the
    legacy one."""
    export = torch.onnx.export

    def legacy(*args, **kwargs):  # type: ignore[no-untyped-def]
        return export(*args, dynamo=False, **kwargs)

    model_serialization.torch.onnx.export = legacy


def _value_info(value: onnx.ValueInfoProto) -> dict:
    tensor = value.type.tensor_type
    dims = [d.dim_param if d.dim_param else d.dim_value for d in tensor.shape.dim]
    return {"name": value.name, "elem_type": onnx.TensorProto.DataType.Name(tensor.elem_type),
            "dims": dims}  # fmt: skip


def describe(case: dict) -> dict:
    memory = None
    if case.get("memory"):
        memory = NetworkSettings.MemorySettings(sequence_length=8, memory_size=case["memory"])
    settings = NetworkSettings(hidden_units=16, num_layers=1, memory=memory)
    policy = TorchPolicy(0, _spec(case), settings, SimpleActor,
                         {"conditional_sigma": False, "tanh_squash": False})  # fmt: skip
    constants = {}
    with tempfile.TemporaryDirectory() as folder:
        model_serialization.ModelSerializer(policy).export_policy_model(f"{folder}/model")
        model = onnx.load(f"{folder}/model.onnx")
        outputs = [_value_info(v) for v in model.graph.output]
        for name in CONSTANT_OUTPUTS:
            if any(o["name"] == name for o in outputs):
                # the constant's own sub-graph: onnx's reference runtime lacks Multinomial
                part = f"{folder}/{name}.onnx"
                onnx.utils.extract_model(f"{folder}/model.onnx", part, [], [name])
                (value,) = ReferenceEvaluator(part).run(None, {})
                constants[name] = np.asarray(value).tolist()
    inputs = [_value_info(v) for v in model.graph.input]
    return {
        "case": case,
        "opset": [{"domain": o.domain, "version": o.version} for o in model.opset_import],
        "inputs": inputs,
        "outputs": outputs,
        "constant_outputs": constants,
    }


def main() -> int:
    _legacy_exporter()
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else None
    document = {
        "generated_by": f"scripts/onnx_reference.py, mlagents {metadata.version('mlagents')}, "
        f"torch {torch.__version__}, onnx {onnx.__version__}",
        "cases": {name: describe(case) for name, case in CASES.items()},
    }
    text = json.dumps(document, indent=2) + "\n"
    if target is None:
        print(text)
    else:
        target.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
