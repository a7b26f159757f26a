"""Structuring ML-Agents trainer YAML into ``ghost.config.settings`` classes: the converter.

Strict where ML-Agents is lenient: an unknown key anywhere, a value of the wrong type or outside its
range is a ``ConfigError`` that names the full key path (``behaviors.Tennis.self_play.swap_step``),
the value, the allowed range or the closest valid key, so a typo never trains with a silent default.
Valid ML-Agents settings this project does not implement yet raise ``UnsupportedFeatureError``.

ML-Agents semantics kept on purpose:

- ``default_settings`` fills every behavior: the behavior's keys are laid over a copy of it, section
  by section and key by key (``hyperparameters: {batch_size: 64}`` keeps the other default
  hyperparameters). One deliberate difference: a behavior with another ``trainer_type`` than
  ``default_settings`` does not inherit its ``hyperparameters`` (they belong to the other type).
- ``self_play: {}`` enables self-play with every default; an empty ``self_play:`` (null) counts as
  no section (self-play then goes on with the defaults only where the environment's teams oppose).
- Numbers may be written as YAML reads them (``3.0e-4`` and ``5e6`` arrive as strings in YAML 1.1);
  integers must be whole (``max_steps: 5.0e+7`` is fine, ``2.5`` is not).

All conversion runs through one module-local ``cattrs.Converter``; nothing is registered globally.
Its hooks live with what they structure, and this module imports them all, so take ``converter``
from here:

- ``ghost.config.config_problem``: ``ConfigProblem`` and the wording of its messages;
- ``ghost.config.structure_values``: the converter; numbers, strings, enums, mappings, lists and
  any settings class;
- ``ghost.config.structure_behaviors``: a behavior's section (trainer type, hyperparameters,
  network, reward signals, what is not supported yet);
- ``ghost.config.structure_sampling``: ``self_play.sampling`` and each strategy's own keys;
- ``ghost.config.structure_environment``: ``environment_parameters``;
- ``ghost.config.default_settings``: behaviors laid over ``default_settings``, presets expanded;
- here: the whole file (``RunOptions``) and the warnings about keys that change nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

# imported for the hooks they register on the converter
from ghost.config import (  # noqa: F401
    structure_behaviors,
    structure_environment,
    structure_sampling,
)
from ghost.config.config_problem import ConfigProblem
from ghost.config.default_settings import with_defaults, with_preset
from ghost.config.settings import CheckpointSettings, RunOptions
from ghost.config.structure_values import (
    as_mapping,
    construct,
    converter,
    fields_of,
    reject_unknown,
    structure_field,
    structure_fields_of,
)

__all__ = ["ConfigProblem", "converter", "fields_of", "structure_field"]

logger = logging.getLogger(__name__)


def _structure_run_options(value: Any, _: type) -> RunOptions:
    value = dict(as_mapping(value, RunOptions))
    reject_unknown(value, RunOptions)
    fields = fields_of(RunOptions)
    raw_defaults = value.pop("default_settings", None)
    try:
        default_settings = structure_field(raw_defaults, fields["default_settings"])
    except ConfigProblem as problem:
        raise problem.below("default_settings") from None
    behaviors = value.get("behaviors")
    if isinstance(behaviors, Mapping):
        value["behaviors"] = {
            name: with_preset(name, with_defaults(name, section, raw_defaults))
            for name, section in behaviors.items()
        }
    elif behaviors is None:
        value["behaviors"] = {}
    kwargs = structure_fields_of(value, RunOptions)
    options = construct(RunOptions, {**kwargs, "default_settings": default_settings})
    _warn_ineffective_keys(options)
    return options


def _warn_ineffective_keys(options: RunOptions) -> None:
    """Warn about ML-Agents keys that are valid but change nothing here when set."""
    sections = {f"behaviors.{name}": section for name, section in options.behaviors.items()}
    if options.default_settings is not None:
        sections["default_settings"] = options.default_settings
    threaded = [f"{where}.threaded" for where, section in sections.items() if section.threaded]
    if threaded:
        logger.warning(
            "%s: true has no effect: trainers here always update in the main loop, between "
            "environment steps (ML-Agents' `threaded` runs each in its own thread); remove it",
            ", ".join(threaded),
        )
    _warn_deprecated_checkpoint_flags(options.checkpoint_settings)


def _warn_deprecated_checkpoint_flags(checkpoint: CheckpointSettings) -> None:
    # ML-Agents keeps these deprecated flags in its schema and only warns about them; so do we.
    if checkpoint.load_model:
        logger.warning(
            "checkpoint_settings.load_model (ML-Agents' deprecated --load) has no effect: the run "
            "does not resume; use `resume: true` (--resume) to continue a run from its checkpoint"
        )
    if checkpoint.train_model:
        logger.warning(
            "checkpoint_settings.train_model (ML-Agents' deprecated --train) has no effect: "
            "training is the default; use `inference: true` (--inference) to only act"
        )


converter.register_structure_hook(RunOptions, _structure_run_options)
