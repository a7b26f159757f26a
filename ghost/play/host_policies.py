"""A policy file of any host, loaded as a player of our games.

``load_host_policy`` reads the policy files of the four hosts of our self-play
(``ghost.play.run_layouts``) and gives something with ``act(obs, action_mask=None,
deterministic=False)``, which ``ghost.play.matches`` and ``ghost.play.base_env_matches`` seat
like any policy:

- ghost-learn's policy files (final ``<Behavior>.pt``, snapshots, checkpoints): a ``TorchPolicy``
  (``trainers.policy.load_policy``);
- mlagents-learn's checkpoints (``<Behavior>/checkpoint.pt``, ``<Behavior>-<step>.pt``) and our
  plugin's snapshots (``<Behavior>/self_play/snapshot-<id>.pt``): ML-Agents' actor recomputed in
  numpy (``ghost.play.mlagents_actor``), no ML-Agents needed;
- an SB3 ``model.zip`` and the snapshots of its ``model.self_play`` folder: the model's own
  policy class, rebuilt without unpickling (``ghost.play.sb3_policies``; needs SB3);
- the snapshots of an RLlib checkpoint's ``ghost_self_play`` folder: RLlib's default PPO module
  rebuilt from the weights' shapes (``ghost.play.rllib_policies``; needs RLlib, and the game's
  behavior spec, which says what the actions are).

Which one a file is follows from where it lies and, for a ``.pt`` file elsewhere, from what it
holds. Every file is read with torch's weights-only loader (``trainers.run_files.safe_load``), SB3's JSON as
text: no pickled code runs.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from ghost.exceptions import CheckpointError
from ghost.play.run_layouts import (
    GHOST_LEARN,
    MLAGENTS,
    MLAGENTS_FOLDER,
    RLLIB,
    RLLIB_FOLDER,
    SB3,
    SB3_SUFFIX,
    MLAgentsRun,
    SB3Run,
    find_run,
)
from trainers.policy import load_policy
from trainers.run_files.safe_load import load_pt

logger = logging.getLogger(__name__)

#: ML-Agents' trainer types whose actors squash with ``tanh`` (SAC's) instead of clipping
_TANH_SQUASH = {"sac", "ghost_sac"}


def policy_host(path: Path) -> str:
    """Which host wrote the policy file ``path``, from where it lies: ``GHOST_LEARN`` for a file
    that lies in no other host's self-play folder (it may still hold an ML-Agents checkpoint)."""
    parent = path.parent
    if path.suffix == ".zip":
        return SB3
    if parent.name == RLLIB_FOLDER:
        return RLLIB
    if parent.name.endswith(SB3_SUFFIX) and SB3Run(parent).model_path.is_file():
        return SB3
    if isinstance(find_run(path), MLAgentsRun):
        return MLAGENTS  # a snapshot, checkpoint.pt or <Behavior>-<step>.pt of its run
    return GHOST_LEARN


def load_host_policy(path: str | Path, *, behavior_spec: Any = None) -> Any:
    """The policy in ``path``, whichever host wrote it, ready to ``act`` (see the module
    docstring).

    Args:
        behavior_spec: the behavior the policy will play; needed for RLlib's snapshots (their
            weights do not say whether the actions are continuous or discrete).

    Raises:
        CheckpointError: the file is missing, unsafe, of no host, needs a framework that is not
            installed, or does not fit ``behavior_spec``.
    """
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"policy file {path} does not exist")
    host = policy_host(path)
    if host == SB3:
        from ghost.play.sb3_policies import load_sb3_policy

        return load_sb3_policy(path)
    if host == RLLIB:
        from ghost.play.rllib_policies import load_rllib_policy

        return load_rllib_policy(path, behavior_spec=behavior_spec)
    if host == MLAGENTS and _holds_mlagents_actor(path):
        return _mlagents_actor(path)
    try:
        return load_policy(path)
    except CheckpointError as error:
        if not _holds_mlagents_actor(path):
            raise
        logger.debug("%s is no policy file of ours (%s); it holds an ML-Agents actor", path, error)
        return _mlagents_actor(path)


def _holds_mlagents_actor(path: Path) -> bool:
    """Whether ``path`` holds an ML-Agents actor: a checkpoint (``{"Policy": actor state}``) or
    the actor's state alone (a snapshot of our plugin)."""
    try:
        data = load_pt(path)
    except CheckpointError:
        return False
    state = data.get("Policy", data) if isinstance(data, Mapping) else None
    return isinstance(state, Mapping) and any(str(key).startswith("network_body.") for key in state)


def _mlagents_actor(path: Path) -> Any:
    """ML-Agents' actor in ``path``, squashed as its trainer type squashes."""
    from ghost.play.mlagents_actor import MLAgentsActor

    try:
        return MLAgentsActor.from_checkpoint(path, tanh_squash=_squashes(path))
    except ValueError as error:
        raise CheckpointError(f"{path}: {error}") from None


def _squashes(path: Path) -> bool:
    """Whether the behavior ``path`` belongs to trains with SAC (``trainer_type`` in the run's
    ``configuration.yaml``; the behavior is the folder the file lies in)."""
    run = find_run(path)
    configuration = run.configuration_path() if run is not None else None
    if configuration is None:
        return False
    try:
        raw = yaml.safe_load(configuration.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError):
        return False
    behaviors = raw.get("behaviors") or {} if isinstance(raw, Mapping) else {}
    folder = path.parent.parent if path.parent.name == MLAGENTS_FOLDER else path.parent
    settings = behaviors.get(folder.name) or raw.get("default_settings") or {}
    return str(settings.get("trainer_type", "")) in _TANH_SQUASH
