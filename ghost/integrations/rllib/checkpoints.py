"""RLlib checkpoints that carry the self-play state.

``save_checkpoint`` writes RLlib's own checkpoint (``Algorithm.save_to_path``), then the
self-play state into its ``ghost_self_play`` folder: the window's snapshots, ``state.pt`` (window,
ratings, counters, opponents in play, learning team, the learner's step) and ``payoff.csv``, each
file written atomically. ``restore_checkpoint`` restores both; our files are read by torch's
weights-only unpickler (``trainers.safe_load``), so a checkpoint cannot run code as it loads.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ghost.exceptions import GhostError
from ghost.integrations.rllib.callback import GhostSelfPlayCallback
from ghost.integrations.rllib.host import RLlibSelfPlay


def self_play_of(algorithm: Any) -> RLlibSelfPlay:
    """The self-play of an Algorithm built from a ``ghost_self_play`` config."""
    callbacks = algorithm.callbacks
    for callback in callbacks if isinstance(callbacks, list | tuple) else [callbacks]:
        if isinstance(callback, GhostSelfPlayCallback) and callback.self_play is not None:
            return callback.self_play
    raise GhostError(
        "this Algorithm runs no ghost self-play; build it from a config passed through "
        "ghost.integrations.rllib.ghost_self_play"
    )


def save_checkpoint(algorithm: Any, path: str | Path) -> Path:
    """Write RLlib's checkpoint of ``algorithm`` and its self-play state to ``path``."""
    path = Path(path).absolute()
    algorithm.save_to_path(str(path))
    self_play_of(algorithm).save(path)
    return path


def restore_checkpoint(algorithm: Any, path: str | Path) -> None:
    """Continue ``algorithm`` (built from the same config) from a ``save_checkpoint`` folder."""
    path = Path(path).absolute()
    self_play = self_play_of(algorithm)  # checked before RLlib's state is replaced
    algorithm.restore_from_path(str(path))
    self_play.load(path)
