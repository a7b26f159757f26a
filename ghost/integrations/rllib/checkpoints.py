"""RLlib checkpoints that carry the self-play state.

An Algorithm built from a ``ghost_self_play`` config is a ``GhostPPO`` (``algorithm``), whose class
mixes in ``SelfPlayCheckpoints``: RLlib's own ``save_to_path`` (also behind ``Algorithm.save`` and
Tune's checkpoints) writes RLlib's checkpoint, then the self-play state into its
``ghost_self_play`` folder: the window's snapshots, ``state.pt`` (window, ratings, counters,
opponents in play, learning team, the learner's and exploiters' steps, the league) and
``payoff.csv``, each file written atomically. ``restore_from_path`` (behind ``Algorithm.restore``,
``Algorithm.from_checkpoint`` and Tune's restore) reads both back; our files are read by torch's
weights-only unpickler (``trainers.run_files.safe_load``), so a checkpoint cannot run code as it loads.

``save_checkpoint`` / ``restore_checkpoint`` do the same as functions.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from ghost.exceptions import GhostError
from ghost.integrations.rllib.callback import GhostSelfPlayCallback
from ghost.integrations.rllib.host import FOLDER, RLlibSelfPlay

logger = logging.getLogger(__name__)


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


class SelfPlayCheckpoints:
    """Mix into an RLlib ``Algorithm`` class (before it) to carry the self-play state in its
    checkpoints (see the module docstring).

    A checkpoint without the folder (written before self-play was added) restores RLlib's part
    and says that self-play starts afresh; restoring one component (``component=``) leaves the
    self-play state alone.
    """

    def save_to_path(self, path: Any = None, *, filesystem: Any = None, **kwargs: Any) -> str:
        if filesystem is not None:
            raise GhostError(
                "the self-play state is written to local folders only; save to a local path "
                "and copy the checkpoint with its ghost_self_play folder"
            )
        written = super().save_to_path(path, **kwargs)  # type: ignore[misc]
        self_play_of(self).save(written)
        return written

    def restore_from_path(self, path: Any, *args: Any, **kwargs: Any) -> None:
        super().restore_from_path(path, *args, **kwargs)  # type: ignore[misc]
        if kwargs.get("component") is not None:
            return
        if (Path(path) / FOLDER).is_dir():
            self_play_of(self).load(path)
        else:
            logger.warning(
                "%s holds no self-play state (%s/): RLlib's state is restored, self-play "
                "starts afresh", path, FOLDER,
            )  # fmt: skip


def save_checkpoint(algorithm: Any, path: str | Path) -> Path:
    """Write RLlib's checkpoint of ``algorithm`` and its self-play state to ``path``."""
    path = Path(path).absolute()
    algorithm.save_to_path(str(path))
    if not isinstance(algorithm, SelfPlayCheckpoints):
        self_play_of(algorithm).save(path)
    return path


def restore_checkpoint(algorithm: Any, path: str | Path) -> None:
    """Continue ``algorithm`` (built from the same config) from a ``save_checkpoint`` folder."""
    path = Path(path).absolute()
    self_play = self_play_of(algorithm)  # checked before RLlib's state is replaced
    if not (path / FOLDER / "state.pt").is_file():
        self_play.load(path)  # raises, naming what is missing
    algorithm.restore_from_path(str(path))
    if not isinstance(algorithm, SelfPlayCheckpoints):
        self_play.load(path)
