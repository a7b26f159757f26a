"""``configuration.yaml`` across the sessions of one run.

A fresh run records its resolved configuration. A resumed session may change hyperparameters:
the changes are logged key by key, and the configuration the earlier sessions trained with is kept
as ``configuration-<n>.yaml`` beside the new one, so that nothing of a run's history is lost. What
the environment added to the record (self-play turned on where teams oppose, with its preset) is
added to the new configuration the same way before the two are compared.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

from ghost.config.behavior_matching import as_matched_before
from ghost.config.diff import configuration_changes, describe_changes
from ghost.config.loader import load_options, write_options
from ghost.config.settings import RunOptions
from ghost.exceptions import ConfigError
from trainers.run_files.layout import RunLayout

logger = logging.getLogger(__name__)


def _free_history_path(layout: RunLayout) -> Path:
    current = layout.configuration_path
    number = 1
    while (path := current.with_name(f"{current.stem}-{number}{current.suffix}")).exists():
        number += 1
    return path


def record_configuration(layout: RunLayout, options: RunOptions, *, resumed: bool) -> Path:
    """Write ``options`` as the run's ``configuration.yaml``; returns its path.

    On a resumed run whose recorded configuration differs, the recorded file is first kept as
    ``configuration-<n>.yaml`` and every changed key is logged.
    """
    path = layout.configuration_path
    if resumed and path.is_file():
        _keep_earlier_configuration(layout, options)
    write_options(options, path)
    return path


def _keep_earlier_configuration(layout: RunLayout, options: RunOptions) -> None:
    path = layout.configuration_path
    try:
        earlier = load_options(path)
        changes = describe_changes(
            configuration_changes(earlier, as_matched_before(options, earlier))
        )
    except ConfigError as error:
        changes = [f"(the earlier configuration cannot be read: {error})"]
    if not changes:
        return
    kept = _free_history_path(layout)
    shutil.copy2(path, kept)
    logger.info(
        "Configuration changed since the last session of this run (the earlier one is kept as "
        "%s):\n  %s",
        kept.name,
        "\n  ".join(changes),
    )
