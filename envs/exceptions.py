"""The errors of the environment layer, and the base class of every user-facing error.

A ``GhostError`` reaching a command line is printed as one message without a traceback; anything
else is a bug and keeps its traceback. Upper layers add their own subclasses (``trainers.exceptions``,
``ghost.exceptions``, which also lists them all in one place).
"""


class GhostError(Exception):
    """Base class: a problem the user can fix, described in the message."""


class EnvironmentSourceError(GhostError):
    """``--env`` / ``env_path`` does not name a usable environment."""


class EnvironmentWorkerError(GhostError):
    """An environment worker crashed more often than ``max_lifetime_restarts`` allows."""
