"""ML-Agents 1.1's side of the ``.demo`` round trip, run in the ML-Agents environment.

``tests/test_demo_files.py`` runs this file with ``.venv-mlagents``'s Python (ML-Agents 1.1 on
protobuf 3.20, no pytest) in one of three ways:

- ``load DEMO OUT.npz``: read ``DEMO`` with ML-Agents' ``load_demonstration`` and
  ``demo_to_buffer`` and save what they give (the spec, every row's fields, the training buffer);
- ``write FOLDER``: write the demonstrations of ``FIXTURES`` with ML-Agents' ``write_demo``, from
  messages built as its loader expects them, each with the rows it holds (``NAME.npz``);
- ``fixtures FOLDER``: write only the ``.demo`` files (those committed under
  ``tests/fixtures/demos``).

The rows written here come from ``tiny_rows`` and ``legacy_rows``, which need only numpy, so the
tests import them to know what the committed files hold.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

#: the committed fixtures: file name → (rows function, legacy format)
FIXTURES = {"tiny.demo": "tiny", "legacy.demo": "legacy"}


def tiny_rows() -> dict:
    """Two episodes of a hybrid behavior: 5 rows, two observations, masks, a cut-off ending.

    Returns:
        name, spec and column arrays as ``Demonstration`` holds them.
    """
    steps = np.arange(5, dtype=np.float32)
    done = np.array([False, False, True, False, True])
    decision = ~done
    return {
        "brain_name": "Tiny?team=1",
        "obs_shapes": [(3,), (2, 2)],
        "continuous_size": 1,
        "branches": (3, 2),
        "obs": [
            np.stack([steps, steps + 0.5, -steps], axis=1),
            (steps[:, None, None] * np.array([[1, 2], [3, 4]], np.float32) / 10).astype(np.float32),
        ],
        "continuous": np.where(decision, 0.1 * steps - 0.2, 0).astype(np.float32)[:, None],
        "discrete": np.where(decision[:, None], np.stack([steps % 3, steps % 2], 1), 0).astype(
            np.int64
        ),
        "rewards": (0.25 * steps).astype(np.float32),
        "done": done,
        "max_step_reached": np.array([False, False, False, False, True]),
        "masks": decision[:, None] & np.array([False, True, False, False, False]),
        "episodes": 2,
    }


def legacy_rows() -> dict:
    """One episode of a discrete behavior in the old layout (deprecated action fields only)."""
    steps = np.arange(3, dtype=np.float32)
    return {
        "brain_name": "Legacy",
        "obs_shapes": [(2,)],
        "continuous_size": 0,
        "branches": (3, 2),
        "obs": [np.stack([steps, 2 * steps], axis=1)],
        "continuous": np.zeros((3, 0), np.float32),
        "discrete": np.array([[2, 1], [1, 0], [0, 0]], np.int64),
        "rewards": np.array([0.0, 0.5, -1.0], np.float32),
        "done": np.array([False, False, True]),
        "max_step_reached": np.zeros(3, bool),
        "masks": None,
        "episodes": 1,
    }


# --------------------------------------------------------------------- ML-Agents' side
def _messages(rows: dict, legacy: bool) -> tuple:
    """ML-Agents' metadata, brain parameters and row messages for ``rows``."""
    from mlagents_envs.communicator_objects.agent_action_pb2 import AgentActionProto
    from mlagents_envs.communicator_objects.agent_info_action_pair_pb2 import (
        AgentInfoActionPairProto,
    )
    from mlagents_envs.communicator_objects.agent_info_pb2 import AgentInfoProto
    from mlagents_envs.communicator_objects.brain_parameters_pb2 import (
        ActionSpecProto,
        BrainParametersProto,
    )
    from mlagents_envs.communicator_objects.demonstration_meta_pb2 import (
        DemonstrationMetaProto,
    )
    from mlagents_envs.communicator_objects.observation_pb2 import ObservationProto

    n = len(rows["rewards"])
    meta = DemonstrationMetaProto(
        api_version=0 if legacy else 1,
        demonstration_name=rows["brain_name"].partition("?")[0].lower(),
        number_steps=n,
        number_episodes=rows["episodes"],
        mean_reward=float(rows["rewards"].sum() / rows["episodes"]),
    )
    brain = BrainParametersProto(brain_name=rows["brain_name"], is_training=True)
    if legacy:
        brain.vector_action_size_deprecated.extend(rows["branches"])
        brain.vector_action_space_type_deprecated = 0  # discrete
    else:
        brain.action_spec.CopyFrom(
            ActionSpecProto(
                num_continuous_actions=rows["continuous_size"],
                num_discrete_actions=len(rows["branches"]),
                discrete_branch_sizes=list(rows["branches"]),
            )
        )
    pairs = []
    for k in range(n):
        info = AgentInfoProto(
            reward=float(rows["rewards"][k]),
            done=bool(rows["done"][k]),
            max_step_reached=bool(rows["max_step_reached"][k]),
            id=7,
        )
        for shape, column in zip(rows["obs_shapes"], rows["obs"], strict=True):
            observation = ObservationProto(shape=list(shape))
            observation.float_data.data.extend(column[k].ravel().tolist())
            info.observations.append(observation)
        if rows["masks"] is not None and not rows["done"][k]:
            info.action_mask.extend(rows["masks"][k].tolist())
        action = AgentActionProto()
        if legacy:
            action.vector_actions_deprecated.extend(rows["discrete"][k].astype(float).tolist())
        else:
            action.continuous_actions.extend(rows["continuous"][k].tolist())
            action.discrete_actions.extend(rows["discrete"][k].tolist())
        pairs.append(AgentInfoActionPairProto(agent_info=info, action_info=action))
    return meta, brain, pairs


def write(path: str, kind: str) -> dict:
    """Write the ``kind`` rows (``tiny``/``legacy``) with ML-Agents' ``write_demo``."""
    from mlagents.trainers.demo_loader import write_demo

    rows = tiny_rows() if kind == "tiny" else legacy_rows()
    meta, brain, pairs = _messages(rows, legacy=kind == "legacy")
    write_demo(path, meta, brain, pairs)
    return rows


def load(path: str) -> dict:
    """What ML-Agents 1.1 reads from ``path``: the spec, the rows, its training buffer."""
    from mlagents.trainers.buffer import BufferKey
    from mlagents.trainers.demo_loader import demo_to_buffer, load_demonstration
    from mlagents.trainers.trajectory import ObsUtil

    spec, pairs, expected = load_demonstration(path)
    _, buffer = demo_to_buffer(path, 1, spec)
    out = {
        "spec": np.array(
            json.dumps(
                {
                    "obs_shapes": [list(s.shape) for s in spec.observation_specs],
                    "continuous_size": spec.action_spec.continuous_size,
                    "branches": list(spec.action_spec.discrete_branches),
                    "expected": expected,
                }
            )
        ),
        "row_reward": np.array([p.agent_info.reward for p in pairs], np.float32),
        "row_done": np.array([p.agent_info.done for p in pairs]),
        "row_max_step": np.array([p.agent_info.max_step_reached for p in pairs]),
        "row_continuous": np.array([list(p.action_info.continuous_actions) for p in pairs]),
        "row_discrete": np.array([list(p.action_info.discrete_actions) for p in pairs]),
        "buffer_done": np.array(buffer[BufferKey.DONE].get_batch()),
        "buffer_reward": np.array(buffer[BufferKey.ENVIRONMENT_REWARDS].get_batch()),
    }
    for index in range(len(spec.observation_specs)):
        out[f"row_obs_{index}"] = np.array(
            [list(p.agent_info.observations[index].float_data.data) for p in pairs], np.float32
        )
        out[f"buffer_obs_{index}"] = np.array(buffer[ObsUtil.get_name_at(index)].get_batch())
    if spec.action_spec.continuous_size:
        out["buffer_continuous"] = np.array(buffer[BufferKey.CONTINUOUS_ACTION].get_batch())
    if spec.action_spec.discrete_size:
        out["buffer_discrete"] = np.array(buffer[BufferKey.DISCRETE_ACTION].get_batch())
    return out


def _save_rows(rows: dict, out: str) -> None:
    arrays = {k: v for k, v in rows.items() if isinstance(v, np.ndarray)}
    arrays.update({f"obs_{i}": column for i, column in enumerate(rows["obs"])})
    np.savez(out, **arrays)


def main(argv: list[str]) -> int:
    command, *args = argv
    if command == "load":
        np.savez(args[1], **load(args[0]))
    elif command in ("write", "fixtures"):
        for name, kind in FIXTURES.items():
            rows = write(str(Path(args[0]) / name), kind)
            if command == "write":
                _save_rows(rows, str(Path(args[0]) / f"{kind}.npz"))
    else:
        print(f"unknown command {command!r}: load, write or fixtures", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
