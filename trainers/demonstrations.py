"""Demonstrations as imitation learns from them: the steps where the demonstrator acted.

A recorded demonstration (``envs.demo_files.Demonstration``, ML-Agents' ``.demo`` format) holds
one row per agent step, the episode's terminal observation included; that row carries no action
(ML-Agents records zeros there). Behavioral cloning (``trainers.behavioral_cloning``) and GAIL
(``trainers.gail``) learn from the other rows only: ``DemoRows`` keeps them, with what each needs
besides the observation and the action: whether the episode ended after the action (GAIL's
``use_actions`` reads it) and which row follows in the same episode (a network with memory reads
an episode's rows as sequences).

Continuous actions are kept as the environment received them, in [-1, 1]; the learners compare
them with the policy's actions mapped the same way (clipped or squashed).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Protocol

import attrs
import numpy as np
from mlagents_envs.base_env import BehaviorSpec

from envs.exceptions import DemoFileError


class RecordedSteps(Protocol):
    """What is read of a demonstration (``envs.demo_files.Demonstration`` is one)."""

    @property
    def observations(self) -> list[np.ndarray]: ...

    @property
    def continuous_actions(self) -> np.ndarray: ...

    @property
    def discrete_actions(self) -> np.ndarray: ...

    @property
    def done(self) -> np.ndarray: ...

    @property
    def action_masks(self) -> np.ndarray | None: ...

    @property
    def episode_start(self) -> np.ndarray: ...


@attrs.frozen
class DemoRows:
    """The rows of a demonstration where the demonstrator acted, in their recorded order."""

    obs: list[np.ndarray]
    #: ``[rows, continuous_size]`` as the environment received them
    continuous: np.ndarray
    #: ``[rows, branches]``
    discrete: np.ndarray
    #: ``[rows, sum(branches)]``, True where an action was unavailable (None: no masks)
    action_mask: np.ndarray | None
    #: the episode ended after this row's action
    ended: np.ndarray
    #: the row that follows in the same episode, -1 where none does
    next_index: np.ndarray
    #: each row's episode, numbered in recorded order
    episode: np.ndarray

    def __len__(self) -> int:
        return len(self.ended)

    @classmethod
    def of(cls, demo: RecordedSteps) -> DemoRows:
        """The acting rows of ``demo`` (its terminal rows left out)."""
        done = np.asarray(demo.done, dtype=bool)
        start = np.asarray(demo.episode_start, dtype=bool)
        acted = np.flatnonzero(~done)
        episode = np.cumsum(start) - 1
        position = np.full(len(done) + 1, -1, dtype=np.int64)
        position[acted] = np.arange(len(acted))
        # an episode cut short at the end of a file does not go on into the next file's
        position[np.flatnonzero(start)] = -1
        next_index = position[acted + 1]
        ended = np.r_[done[1:], False][acted]
        masks = demo.action_masks
        return cls(
            obs=[np.asarray(o[acted], dtype=np.float32) for o in demo.observations],
            continuous=np.asarray(demo.continuous_actions[acted], dtype=np.float32),
            discrete=np.asarray(demo.discrete_actions[acted], dtype=np.int64),
            action_mask=None if masks is None else np.asarray(masks[acted], dtype=bool),
            ended=ended,
            next_index=next_index,
            episode=episode[acted].astype(np.int64),
        )


def load_demonstration(path: str, spec: BehaviorSpec, *, where: str) -> DemoRows:
    """The acting rows of the demonstrations at ``path`` (a ``.demo`` file, or a folder whose
    ``.demo`` files are read one after the other), checked against ``spec``.

    Args:
        path: the configured ``demo_path``, relative to the working directory as in ML-Agents.
        where: the key that names ``path`` (``behaviors.Tennis.behavioral_cloning.demo_path``),
            the start of every error message.

    Raises:
        DemoFileError: nothing at ``path``, no acting step in it, or a demonstration that cannot
            be read or was recorded with other observations or actions than ``spec``'s.
    """
    if not Path(path).exists():
        raise DemoFileError(
            f"{where}: no .demo file or folder at {path!r} (from {os.getcwd()}); record "
            "demonstrations there or fix the path"
        )
    # imported here: a run without demonstrations never loads the .demo reader and its protobufs
    from envs.demo_files import check_demo_fits, read_demos

    try:
        demo = read_demos(path)
        check_demo_fits(demo, spec, where=where)
    except DemoFileError as error:
        text = str(error)
        raise DemoFileError(text if text.startswith(where) else f"{where}: {text}") from None
    rows = DemoRows.of(demo)
    if not len(rows):
        raise DemoFileError(
            f"{where}: the demonstrations at {path!r} hold no step where the demonstrator acted; "
            "record longer episodes"
        )
    return rows
