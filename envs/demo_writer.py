"""``DemoWriter``: one behavior's rows written to an ML-Agents ``.demo`` file (``envs.demo_format``).

The file appears whole or not at all: rows go to a temporary file beside the target, and ``close``
writes the metadata into its first bytes, then renames it over the target. Observations are
stored uncompressed (floats), actions in the current ``continuous_actions`` and
``discrete_actions`` fields, as Unity's own writer does.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from types import TracebackType
from typing import IO

import numpy as np
from mlagents_envs.base_env import BehaviorSpec

from envs.demo_format import (
    API_VERSION,
    METADATA_REGION,
    AgentActionProto,
    AgentInfoActionPairProto,
    AgentInfoProto,
    DemonstrationMetaProto,
    brain_parameters,
    delimited,
    observation_proto,
)
from envs.exceptions import DemoFileError
from envs.temporary_files import create_temporary

logger = logging.getLogger(__name__)


def _create_temporary(path: Path) -> tuple[IO[bytes], Path]:
    """A new file beside ``path`` (its folders made), open for writing."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = create_temporary(path.parent, path.name)
    return os.fdopen(fd, "wb"), tmp


class DemoWriter:
    """Write one behavior's rows to the ``.demo`` file ``path``, which ML-Agents 1.1 reads.

    Add the rows of each episode one after the other (``done`` on its last), then ``close``. As a
    context manager it closes on leaving the block, or discards the file on an exception.

    Args:
        path: the file to write (its folders are made); replaced only at ``close``.
        behavior_name: stored as the brain name (``"Tennis"``; readers drop any ``?team=``).
        spec: the behavior spec every row must fit.
    """

    def __init__(self, path: str | Path, behavior_name: str, spec: BehaviorSpec) -> None:
        self.path = Path(path)
        self.behavior_name = behavior_name
        self.spec = spec
        self.steps = 0
        self._finished_episodes = 0
        self._open_episode = False
        self._total_reward = 0.0
        self._handle: IO[bytes] | None
        self._handle, self._tmp = _create_temporary(self.path)
        self._handle.write(bytes(METADATA_REGION))
        self._handle.write(delimited(brain_parameters(behavior_name, spec).SerializeToString()))

    @property
    def episodes(self) -> int:
        """Episodes so far: the finished ones, and one more if the last has no ``done`` row yet."""
        return self._finished_episodes + int(self._open_episode)

    def add(
        self,
        observations: list[np.ndarray],
        *,
        reward: float,
        done: bool,
        max_step_reached: bool = False,
        continuous: np.ndarray | None = None,
        discrete: np.ndarray | None = None,
        action_mask: np.ndarray | None = None,
        agent_id: int = 0,
    ) -> None:
        """Append one row.

        Args:
            observations: one array per observation spec, one row each (no batch axis).
            reward: the reward received since the agent's previous row.
            done: this row ends its episode (its observations are the last ones).
            max_step_reached: the episode was cut off rather than ended (needs ``done``).
            continuous: the continuous actions taken here; ``None`` is zeros (a ``done`` row).
            discrete: the discrete actions taken here; ``None`` is zeros.
            action_mask: ``sum(branch sizes)`` flags, ``True`` where an action was not allowed.
            agent_id: the agent's id in its environment.

        Raises:
            ValueError: the row does not fit the spec, or the writer is closed.
        """
        if self._handle is None:
            raise ValueError(f"the DemoWriter of {self.path} is closed; make a new one")
        if max_step_reached and not done:
            raise ValueError("max_step_reached=True needs done=True: it says how an episode ended")
        info = AgentInfoProto(
            reward=float(reward),
            done=bool(done),
            max_step_reached=bool(max_step_reached),
            id=int(agent_id),
            observations=self._observations(observations),
            action_mask=self._mask(action_mask),
        )
        action = AgentActionProto(
            continuous_actions=self._continuous(continuous),
            discrete_actions=self._discrete(discrete),
        )
        pair = AgentInfoActionPairProto(agent_info=info, action_info=action)
        self._handle.write(delimited(pair.SerializeToString()))
        self.steps += 1
        self._total_reward += float(reward)
        self._open_episode = not done
        self._finished_episodes += int(bool(done))

    def close(self) -> None:
        """Write the metadata (steps, episodes, mean reward per episode) and put the file in place.

        Raises:
            DemoFileError: no row was added (the file would not load); nothing is written.
        """
        if self._handle is None:
            return
        if not self.steps:
            self.discard()
            raise DemoFileError(f"{self.path}: no steps were recorded, so no file was written")
        meta = self._metadata()
        handle, self._handle = self._handle, None
        try:
            handle.seek(0)
            handle.write(meta)
            handle.flush()
            os.fsync(handle.fileno())
            handle.close()
            os.replace(self._tmp, self.path)
        except BaseException:
            handle.close()
            self._tmp.unlink(missing_ok=True)
            raise
        logger.info(
            "wrote %s: %d steps of %s in %d episodes", self.path, self.steps, self.behavior_name,
            self.episodes,
        )  # fmt: skip

    def discard(self) -> None:
        """Stop without writing: the temporary file goes, ``path`` is left as it was."""
        if self._handle is not None:
            self._handle.close()
            self._handle = None
            self._tmp.unlink(missing_ok=True)

    def __enter__(self) -> DemoWriter:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if kind is None:
            self.close()
        else:
            self.discard()

    # ------------------------------------------------------------------------ helpers
    def _metadata(self) -> bytes:
        """The delimited metadata, its name (the file's stem) shortened until it fits its region
        (Unity keeps names to 16 characters for the same reason)."""
        name = self.path.stem
        while True:
            meta = DemonstrationMetaProto(
                api_version=API_VERSION,
                demonstration_name=name,
                number_steps=self.steps,
                number_episodes=self.episodes,
                mean_reward=self._total_reward / max(self.episodes, 1),
            )
            encoded = delimited(meta.SerializeToString())
            if len(encoded) <= METADATA_REGION or not name:
                return encoded
            name = name[:-1]

    def _observations(self, observations: list[np.ndarray]) -> list:
        specs = self.spec.observation_specs
        if len(observations) != len(specs):
            raise ValueError(
                f"{self.behavior_name} has {len(specs)} observations per step; got "
                f"{len(observations)}"
            )
        protos = []
        for index, (spec, row) in enumerate(zip(specs, observations, strict=True)):
            values = np.asarray(row, dtype=np.float32)
            if values.size != int(np.prod(spec.shape)):
                raise ValueError(
                    f"observation {index} of {self.behavior_name} has shape {tuple(spec.shape)}; "
                    f"got {values.size} values (one agent's row, no batch axis)"
                )
            protos.append(observation_proto(spec, values))
        return protos

    def _continuous(self, continuous: np.ndarray | None) -> list[float]:
        size = self.spec.action_spec.continuous_size
        if continuous is None:
            return [0.0] * size
        values = np.asarray(continuous, dtype=np.float32).ravel()
        if values.size != size:
            raise ValueError(
                f"{self.behavior_name} takes {size} continuous actions; got {values.size}"
            )
        return values.tolist()

    def _discrete(self, discrete: np.ndarray | None) -> list[int]:
        branches = np.asarray(self.spec.action_spec.discrete_branches, dtype=np.int64)
        if discrete is None:
            return [0] * len(branches)
        choices = np.asarray(discrete).ravel().astype(np.int64)
        if choices.size != len(branches) or (choices < 0).any() or (choices >= branches).any():
            raise ValueError(
                f"{self.behavior_name} takes one discrete action per branch "
                f"{tuple(branches.tolist())}, each in [0, branch size); got {choices.tolist()}"
            )
        return choices.tolist()

    def _mask(self, action_mask: np.ndarray | None) -> list[bool]:
        if action_mask is None:
            return []
        width = int(sum(self.spec.action_spec.discrete_branches))
        flags = np.asarray(action_mask, dtype=bool).ravel()
        if flags.size != width:
            raise ValueError(
                f"{self.behavior_name}'s action mask has one flag per discrete action ({width}); "
                f"got {flags.size}"
            )
        return flags.tolist()
