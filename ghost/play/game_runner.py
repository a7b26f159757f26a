"""Where rating and evaluation games are played: here, now, or as Ray tasks beside training.

A ``GameRunner`` takes calls (``submit(key, function, **arguments)``) and hands back finished
results by key (``finished()``), in the order they were submitted. ``InlineGames`` plays each call
at once in this process. ``RayGames`` sends each to the Ray cluster as a task and returns without
waiting, so a learner that schedules evaluation games keeps stepping while they are played; the
arguments (a policy included) are serialized when the call is submitted, so later training does not
change what is being evaluated.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable
from typing import Any, Protocol

logger = logging.getLogger(__name__)


class GameRunner(Protocol):
    """Plays submitted game calls and returns their results by key."""

    def submit(self, key: Hashable, function: Callable[..., Any], **arguments: Any) -> None:
        """Play ``function(**arguments)``; its result comes back from ``finished`` under ``key``."""

    def finished(self, *, wait: bool = False) -> list[tuple[Hashable, Any]]:
        """Results ready now (with ``wait``: every submitted one), in submission order; a call
        that raised re-raises here."""


class InlineGames:
    """Plays each call as it is submitted, in this process."""

    def __init__(self) -> None:
        self._done: list[tuple[Hashable, Any]] = []

    def submit(self, key: Hashable, function: Callable[..., Any], **arguments: Any) -> None:
        self._done.append((key, function(**arguments)))

    def finished(self, *, wait: bool = False) -> list[tuple[Hashable, Any]]:
        done, self._done = self._done, []
        return done


def _call(function: Callable[..., Any], arguments: dict[str, Any]) -> Any:
    return function(**arguments)


class RayGames:
    """Plays each call as a Ray task (one CPU each), anywhere on the cluster.

    Args:
        address: the Ray cluster (see ``envs.ray_workers.connect_ray``); a session this process
            already has is kept.
    """

    def __init__(self, address: str | None = None) -> None:
        from envs.ray_workers import connect_ray

        self._ray = connect_ray(address)
        self._task = self._ray.remote(_call).options(scheduling_strategy="SPREAD")
        self._running: list[tuple[Hashable, Any]] = []

    def submit(self, key: Hashable, function: Callable[..., Any], **arguments: Any) -> None:
        self._running.append((key, self._task.remote(function, arguments)))

    def finished(self, *, wait: bool = False) -> list[tuple[Hashable, Any]]:
        if not self._running:
            return []
        references = [reference for _, reference in self._running]
        if wait:
            ready = set(references)
        else:
            done, _ = self._ray.wait(references, num_returns=len(references), timeout=0)
            ready = set(done)
        results = [(key, self._ray.get(ref)) for key, ref in self._running if ref in ready]
        self._running = [(key, ref) for key, ref in self._running if ref not in ready]
        return results

    @property
    def pending(self) -> int:
        """Calls submitted and not yet returned by ``finished``."""
        return len(self._running)
