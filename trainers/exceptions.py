"""The errors of the trainer stack (all ``GhostError``s: a problem the user can fix)."""

from envs.exceptions import GhostError


class ConfigError(GhostError):
    """The run configuration (YAML or flags) is invalid; the message names the key and the fix."""


class TrainerTypeError(ConfigError):
    """A behavior asks for a trainer type that is not registered."""


class UnsupportedFeatureError(ConfigError):
    """A valid ML-Agents setting that this project does not implement yet."""


class CheckpointError(GhostError):
    """A checkpoint or policy file cannot be read or does not fit the run."""
