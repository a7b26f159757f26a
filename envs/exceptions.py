"""The errors of the environment layer, and the base class of every user-facing error.

A ``GhostError`` reaching a command line is printed as one message without a traceback; anything
else is a bug and keeps its traceback. Upper layers add their own subclasses (``trainers.exceptions``,
``ghost.exceptions``, which also lists them all in one place).
"""

import difflib
import traceback
from collections.abc import Iterable


def did_you_mean(word: object, choices: Iterable[str], *, cutoff: float = 0.6) -> str:
    """``"did you mean 'X'?"`` for the choice closest to ``word``, or ``""`` when none is close.

    One spelling of the hint for every "unknown name" message: config keys, presets, games,
    levels, commands.
    """
    close = difflib.get_close_matches(str(word), list(choices), n=1, cutoff=cutoff)
    return f"did you mean {close[0]!r}?" if close else ""


class GhostError(Exception):
    """Base class: a problem the user can fix, described in the message."""


class EnvironmentSourceError(GhostError):
    """``--env`` / ``env_path`` does not name a usable environment."""


class UnsupportedGameError(EnvironmentSourceError, ValueError):
    """An OpenSpiel game that cannot be loaded, or cannot be used the way it was asked for
    (no tensor of the kind requested, not two-player zero-sum for exploitability)."""


class GameTooLargeError(GhostError, ValueError):
    """Enumerating a game for exact exploitability would visit more states than allowed."""


class EnvironmentWorkerError(GhostError):
    """An environment failed: a worker crashed more often than ``max_lifetime_restarts`` allows,
    or the one in-process environment raised."""


class ProtobufLayoutError(GhostError, ImportError):
    """mlagents-envs' generated protocol modules are laid out in a way the loader of
    ``envs.mlagents_protobuf`` does not know, so they cannot be built on this protobuf."""


class DemoFileError(GhostError):
    """A demonstration (``.demo``) file or folder that cannot be used: not a demonstration file,
    cut short, from an unsupported format version, or recorded for a behavior whose observations
    or actions differ from the one it is used with."""


class EnvironmentOutputError(GhostError):
    """The environment returned steps that break the BaseEnv contract (shapes that differ from
    its behavior spec, NaN observations or rewards, wrong types)."""


def describe_exception(error: BaseException) -> str:
    """``ValueError: message (at my_env.py:12 in step)``: an exception raised by user code, in
    one line that says where."""
    text = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    frames = traceback.extract_tb(error.__traceback__)
    if frames:
        last = frames[-1]
        text += f" (at {last.filename}:{last.lineno} in {last.name})"
    return text
