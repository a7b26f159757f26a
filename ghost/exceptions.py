"""Every error ghost-trainer raises for a user mistake or a failing component.

A ``GhostError`` reaching the command line is printed as one message without a traceback; anything
else is a bug and keeps its traceback.
"""


class GhostError(Exception):
    """Base class: a problem the user can fix, described in the message."""


class ConfigError(GhostError):
    """The run configuration (YAML or flags) is invalid; the message names the key and the fix."""


class TrainerTypeError(ConfigError):
    """A behavior asks for a trainer type that is not registered."""


class EnvironmentSourceError(GhostError):
    """``--env`` / ``env_path`` does not name a usable environment."""


class EnvironmentSpecError(GhostError):
    """The environment's behaviors do not fit the configuration."""


class EnvironmentWorkerError(GhostError):
    """An environment worker crashed more often than ``max_lifetime_restarts`` allows."""


class RunDirectoryError(GhostError):
    """The results folder of a run is missing, taken, or unreadable."""


class CheckpointError(GhostError):
    """A checkpoint or policy file cannot be read or does not fit the run."""


class UnsupportedFeatureError(ConfigError):
    """A valid ML-Agents setting that this project does not implement yet."""
