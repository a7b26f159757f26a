"""ML-Agents 1.1's own actor outputs for a checkpoint: the reference ``MLAgentsActor`` must match.

Run with the ML-Agents venv's python (``../shared/peers/setup-mlagents.sh`` builds it)::

    /tmp/peer-mlagents/bin/python scripts/mlagents_actor_reference.py --checkpoint A.pt \
        --obs obs.npz --out ref.npz [--create --obs-size 10 --continuous 2 --branches 3 3 \
        --hidden 64 --layers 2 --normalize]

``--create`` first writes a checkpoint as ML-Agents does (``{"Policy": actor.state_dict()}``) of a
freshly initialized ``SimpleActor``, its normalizer fed with random observations. Then the
checkpoint is loaded into a ``SimpleActor`` whose settings are read off its tensors, and its
deterministic environment actions (``SimpleActor.forward``'s, as exported to Unity) for the
observations ``obs`` of ``obs.npz`` (and the blocked-action masks ``mask``, when present) go to
``ref.npz``: ``continuous``, ``discrete``, and the network body's ``encoding``.
"""

import argparse
import re

import numpy as np
import torch
from mlagents.trainers.settings import NetworkSettings
from mlagents.trainers.torch_entities.networks import SimpleActor
from mlagents_envs.base_env import ActionSpec, DimensionProperty, ObservationSpec, ObservationType


def _actor(obs_size: int, action_spec: ActionSpec, hidden: int, layers: int, normalize: bool):
    spec = ObservationSpec(
        shape=(obs_size,),
        dimension_property=(DimensionProperty.NONE,),
        observation_type=ObservationType.DEFAULT,
        name="vector",
    )
    settings = NetworkSettings(normalize=normalize, hidden_units=hidden, num_layers=layers)
    return SimpleActor([spec], settings, action_spec)


def _settings_of(state: dict) -> tuple:
    first = state["network_body._body_endoder.seq_layers.0.weight"]
    layers = sum(
        1
        for key in state
        if re.fullmatch(r"network_body\._body_endoder\.seq_layers\.\d+\.weight", key)
    )
    normalize = any(key.endswith("normalizer.running_mean") for key in state)
    continuous = int(state["continuous_act_size_vector"][0])
    branches = tuple(int(b) for b in state["discrete_act_size_vector"].reshape(-1).tolist())
    spec = ActionSpec(continuous, branches)
    return int(first.shape[1]), spec, int(first.shape[0]), layers, normalize


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--obs", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--create", action="store_true")
    parser.add_argument("--obs-size", type=int, default=10)
    parser.add_argument("--continuous", type=int, default=0)
    parser.add_argument("--branches", type=int, nargs="*", default=[])
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--normalize", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    if args.create:
        spec = ActionSpec(args.continuous, tuple(args.branches))
        actor = _actor(args.obs_size, spec, args.hidden, args.layers, args.normalize)
        if args.normalize:
            for processor in actor.network_body.observation_encoder.processors:
                shifted = torch.randn(500, args.obs_size) * 3.0 + torch.arange(args.obs_size)
                processor.update_normalization(shifted)
        with torch.no_grad():  # a trained-looking actor: outputs far from zero, some clipped
            for parameter in actor.action_model.parameters():
                parameter.mul_(30.0)
        torch.save({"Policy": actor.state_dict()}, args.checkpoint)
    state = torch.load(args.checkpoint, map_location="cpu")["Policy"]
    obs_size, spec, hidden, layers, normalize = _settings_of(state)
    actor = _actor(obs_size, spec, hidden, layers, normalize)
    actor.load_state_dict(state)
    data = np.load(args.obs)
    inputs = [torch.as_tensor(data["obs"], dtype=torch.float32)]
    masks = None
    if spec.discrete_size:
        blocked = (
            data["mask"]
            if "mask" in data
            else np.zeros((len(data["obs"]), sum(spec.discrete_branches)))
        )
        masks = torch.as_tensor(1.0 - blocked.astype(np.float32))
    with torch.no_grad():
        outputs = actor.forward(inputs, masks=masks)
        encoding, _ = actor.network_body(inputs)
    # forward(): version, memory size, then per kind: (sampled, size, deterministic)
    result = {"encoding": encoding.numpy()}
    rest = list(outputs[2:])
    if spec.continuous_size:
        result["continuous"] = rest[2].numpy()
        rest = rest[3:]
    if spec.discrete_size:
        result["discrete"] = rest[2].numpy()
    np.savez(args.out, **result)


if __name__ == "__main__":
    main()
