"""ML-Agents' settings written back out whole: ``configuration.yaml``, the "Hyperparameters for
behavior" log and TensorBoard's hyperparameter text, for every trainer type in the run.

ML-Agents 1.1 writes them with ``cattr.unstructure`` (``RunOptions.as_dict``), and it lays
``default_settings`` under each behavior the same way. It was written for cattrs < 1.7, which
unstructured every attrs field by the class of the *value*. ghost-trainer requires cattrs >= 23.1,
whose converter generates one function per class from the *declared* field types: a field declared
``HyperparamSettings`` holding ``PPOSettings`` keeps only the base class's keys (``beta``,
``epsilon``, ``lambd``, ``num_epoch`` are lost), a reward signal declared ``RewardSignalSettings``
loses its subclass's keys (curiosity's ``learning_rate``), and a ``ghost_*`` behavior's
``self_play``, kept inside its hyperparameters (``settings``), disappears. Training reads the
parsed objects and is right; only what is written (and what ``default_settings`` passes on) is cut.

``install_unstructure_hooks`` registers on ML-Agents' global converter (an internal of ML-Agents
1.x; ``registration`` checks the version):

- every attrs class of ML-Agents, and the plugin's subclasses, unstructured field by field by the
  value's class, as ML-Agents was written for;
- ``TrainerSettings`` of a ``ghost_*`` type with its ``self_play`` where the user writes it, the
  behavior's ``self_play:``, every key with its value (defaults filled in), so the file reads back.
"""

from typing import Any

import attr
import cattr
from mlagents.trainers.settings import TrainerSettings

from ghost.config.structuring import converter as ghost_converter
from ghost.core.settings import SelfPlaySettings
from ghost.mlagents_plugin.settings import GHOST_SETTINGS_CLASSES, SELF_PLAY

MLAGENTS_PACKAGE = "mlagents."


def is_mlagents_settings(cls: Any) -> bool:
    """An attrs class of ML-Agents, or one derived from one (the ``ghost_*`` settings)."""
    return (
        isinstance(cls, type)
        and attr.has(cls)
        and any(base.__module__.startswith(MLAGENTS_PACKAGE) for base in cls.__mro__)
    )


def unstructure_by_value(obj: Any) -> dict[str, Any]:
    """``obj``'s fields, each unstructured by the class of its value (cattrs < 1.7's way)."""
    return {
        field.name: cattr.unstructure(getattr(obj, field.name)) for field in attr.fields(type(obj))
    }


def unstructure_trainer_settings(settings: TrainerSettings) -> dict[str, Any]:
    """A behavior's settings; a ``ghost_*`` type's ``self_play`` goes back to the behavior."""
    record = unstructure_by_value(settings)
    if isinstance(settings.hyperparameters, GHOST_SETTINGS_CLASSES):
        record[SELF_PLAY] = record["hyperparameters"].pop(SELF_PLAY)
    return record


def unstructure_self_play(settings: SelfPlaySettings) -> dict[str, Any]:
    """Our ``self_play`` section as this project's converter writes (and reads) it."""
    return ghost_converter.unstructure(settings)


def install_unstructure_hooks() -> None:
    """Register the hooks on ML-Agents' global cattrs converter (idempotent)."""
    if getattr(install_unstructure_hooks, "installed", False):
        return
    # class hooks are looked up before predicate hooks: ML-Agents' own (sampler settings) stay
    cattr.register_unstructure_hook_func(is_mlagents_settings, unstructure_by_value)
    cattr.register_unstructure_hook(TrainerSettings, unstructure_trainer_settings)
    cattr.register_unstructure_hook(SelfPlaySettings, unstructure_self_play)
    install_unstructure_hooks.installed = True  # type: ignore[attr-defined]
