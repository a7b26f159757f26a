"""Every error ghost-trainer raises for a user mistake or a failing component, in one place.

Each error is defined in the lowest layer that raises it (``envs.exceptions``,
``trainers.exceptions``) and listed here, so ``except ghost.exceptions.ConfigError`` works whatever
layer raised it. A ``GhostError`` reaching the command line is printed as one message without a
traceback; anything else is a bug and keeps its traceback.
"""

from envs.exceptions import (
    EnvironmentOutputError,
    EnvironmentSourceError,
    EnvironmentWorkerError,
    GhostError,
)
from trainers.exceptions import (
    CheckpointError,
    ConfigError,
    NetworkMismatchError,
    ResultsWriteError,
    RunLockedError,
    TrainerTypeError,
    UnreadableFileError,
    UnsupportedFeatureError,
)

__all__ = [
    "CheckpointError",
    "ConfigError",
    "EnvironmentOutputError",
    "EnvironmentSourceError",
    "EnvironmentSpecError",
    "EnvironmentWorkerError",
    "GhostError",
    "NetworkMismatchError",
    "ResultsWriteError",
    "RunDirectoryError",
    "RunLockedError",
    "TrainerTypeError",
    "UnreadableFileError",
    "UnsupportedFeatureError",
]


class EnvironmentSpecError(GhostError):
    """The environment's behaviors do not fit the configuration."""


class RunDirectoryError(GhostError):
    """The results folder of a run is missing, taken, or unreadable."""
