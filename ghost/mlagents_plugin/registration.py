"""The ``mlagents.trainer_type`` entry point: ``ghost_ppo``, ``ghost_sac`` and ``ghost_poca``.

ML-Agents calls ``trainer_types()`` while parsing ``mlagents-learn``'s command line, before it
reads the trainer YAML. Besides the factories and settings classes it returns, five things rely
on ML-Agents' internals, so they are installed only for a tested ML-Agents version (1.0 or 1.1):

- the strict ``self_play`` hooks on ML-Agents' cattrs converter (``settings``);
- unstructure hooks on that converter, so ``configuration.yaml`` and the hyperparameters log keep
  every key with the cattrs this project requires, for ML-Agents' trainer types too
  (``unstructure``);
- environment resets on a team change: ML-Agents' trainer controller resets only when the ghost
  controller of its own trainer factory says so, so its ``should_reset`` also asks our runs;
- the self-play state is saved whenever ML-Agents checkpoints the wrapped trainer;
- the agent processor notes each finished agent's group (``groups``), so a group's match counts
  once.

With another ML-Agents version the trainer types are still registered, so a run that names one
stops with a message saying which versions work (ML-Agents would otherwise swallow the plugin's
import error and report an unknown trainer type).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import Callable, Iterator
from typing import Any

import attr
from mlagents.trainers import __version__ as MLAGENTS_VERSION
from mlagents.trainers.exception import TrainerConfigError
from mlagents_envs.logging_util import get_logger

logger = get_logger(__name__)

SUPPORTED_MLAGENTS = ("1.0.", "1.1.")  # 1.1.0 is the one tested
TRAINER_TYPE_NAMES = ("ghost_ppo", "ghost_sac", "ghost_poca")


def is_supported(version: str) -> bool:
    return version.startswith(SUPPORTED_MLAGENTS)


def trainer_types() -> tuple[dict[str, Any], dict[str, Any]]:
    """Entry point of the ``mlagents.trainer_type`` group: ``({name: factory}, {name: settings})``."""
    if not is_supported(MLAGENTS_VERSION):
        return (
            {name: _unsupported_factory for name in TRAINER_TYPE_NAMES},
            {name: UnsupportedMLAgentsSettings for name in TRAINER_TYPE_NAMES},
        )
    from ghost.mlagents_plugin.groups import install_group_hook
    from ghost.mlagents_plugin.settings import GHOST_TRAINER_TYPES, install_config_hooks
    from ghost.mlagents_plugin.unstructure import install_unstructure_hooks

    install_config_hooks()
    install_unstructure_hooks()
    _install_reset_hook()
    install_group_hook()
    factories = {
        name: functools.partial(create_ghost_trainer, name) for name in GHOST_TRAINER_TYPES
    }
    settings = {name: cls for name, (_, cls) in GHOST_TRAINER_TYPES.items()}
    return factories, settings


def _unsupported_message() -> str:
    return (
        f"ghost-trainer's {'/'.join(TRAINER_TYPE_NAMES)} trainer types work with ML-Agents 1.0 and "
        f"1.1 (mlagents 1.1.0 is tested); this environment has mlagents {MLAGENTS_VERSION}. "
        "Install mlagents==1.1.0 beside ghost-trainer, or train with ghost-learn."
    )


@attr.s(auto_attribs=True)
class UnsupportedMLAgentsSettings:
    """Stands in for the settings classes under an untested ML-Agents: building one explains."""

    def __attrs_post_init__(self) -> None:
        raise TrainerConfigError(_unsupported_message())


def _unsupported_factory(*_: Any) -> Any:
    raise TrainerConfigError(_unsupported_message())


def create_ghost_trainer(
    type_name: str,
    brain_name: str,
    reward_buff_cap: int,
    trainer_settings: Any,
    training: bool,
    load: bool,
    seed: int,
    artifact_path: str,
) -> Any:
    """ML-Agents' trainer factory signature, with the trainer type name bound first."""
    from mlagents.plugins import all_trainer_types

    from ghost.core.self_play import SelfPlayState
    from ghost.mlagents_plugin.ghost_trainer import MLAgentsGhostTrainer
    from ghost.mlagents_plugin.runs import run_for
    from ghost.mlagents_plugin.settings import GHOST_TRAINER_TYPES, self_play_of

    if trainer_settings.threaded:
        raise TrainerConfigError(
            f"behaviors.{brain_name}.threaded: {type_name} trains in the main thread (the "
            "learning team changes between environment steps); remove `threaded: true`"
        )
    self_play = self_play_of(trainer_settings)
    wrapped_type = GHOST_TRAINER_TYPES[type_name][0]
    trainer = all_trainer_types[wrapped_type](
        brain_name, reward_buff_cap, trainer_settings, training, load, seed, artifact_path
    )
    run = run_for(artifact_path)
    state = SelfPlayState(
        behavior_name=brain_name,
        settings=self_play,
        seed=seed,
        fixed_opponents=_fixed_opponents(brain_name, self_play),
    )
    ghost = MLAgentsGhostTrainer(
        trainer=trainer,
        run=run,
        state=state,
        reward_buff_cap=reward_buff_cap,
        trainer_settings=trainer_settings,
        training=training,
        load=load,
        artifact_path=artifact_path,
    )
    _save_self_play_with_checkpoints(trainer, ghost)
    _export_with_torchscript_exporter(trainer)
    return ghost


def _fixed_opponents(brain_name: str, self_play: Any) -> list[Any]:
    from ghost.core.opponents import FixedOpponent
    from ghost.mlagents_plugin.state_files import read_checkpoint_policy

    opponents = []
    for position, entry in enumerate(self_play.fixed_opponents):
        try:
            weights = read_checkpoint_policy(entry.policy)
        except ValueError as error:
            raise TrainerConfigError(
                f"behaviors.{brain_name}.self_play.fixed_opponents[{position}].policy: {error}"
            ) from None
        rating = entry.rating if entry.rating is not None else self_play.initial_elo
        opponents.append(
            FixedOpponent(name=entry.name, policy=weights, rating=rating, pinned=entry.pin_rating)
        )
    return opponents


def _install_reset_hook() -> None:
    from mlagents.trainers.ghost.controller import GhostController

    from ghost.mlagents_plugin.runs import take_team_changes

    original = GhostController.should_reset
    if getattr(original, "asks_ghost_trainer_runs", False):
        return

    def should_reset(self: Any) -> bool:
        ours = take_team_changes()
        return bool(original(self)) or ours

    should_reset.asks_ghost_trainer_runs = True  # type: ignore[attr-defined]
    GhostController.should_reset = should_reset


def _save_self_play_with_checkpoints(trainer: Any, ghost: Any) -> None:
    """Every checkpoint ML-Agents writes of ``trainer`` (periodic and final) gets the self-play
    state of the same step beside it."""
    checkpoint = trainer._checkpoint

    def checkpoint_with_self_play() -> Any:
        written = checkpoint()
        ghost.save_self_play()
        return written

    trainer._checkpoint = checkpoint_with_self_play


def _export_with_torchscript_exporter(trainer: Any) -> None:
    """ML-Agents 1.x calls ``torch.onnx.export`` without ``dynamo=``; from torch 2.9 that means the
    dynamo exporter, which needs ``onnxscript`` (absent beside ML-Agents' pins). The wrapped trainer's ONNX exports use the TorchScript exporter ML-Agents was written for."""
    import torch

    parameter = inspect.signature(torch.onnx.export).parameters.get("dynamo")
    if parameter is None or parameter.default is False:
        return
    export = trainer.model_saver.export

    def export_with_torchscript(*args: Any, **kwargs: Any) -> Any:
        with _onnx_export_defaults(torch, dynamo=False):
            return export(*args, **kwargs)

    trainer.model_saver.export = export_with_torchscript


@contextlib.contextmanager
def _onnx_export_defaults(torch: Any, **defaults: Any) -> Iterator[None]:
    original: Callable[..., Any] = torch.onnx.export
    torch.onnx.export = functools.partial(original, **defaults)
    try:
        yield
    finally:
        torch.onnx.export = original
