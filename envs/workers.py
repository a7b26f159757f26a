"""``SubprocessStepper``: ``--num-envs N`` environments, each in its own worker process.

The worker protocol, merging and restart rules are ``envs.worker_pool.WorkerPoolStepper``'s; this
module supplies the transport: one process per worker (``envs.worker_process``), started with
``forkserver`` where available, spoken to over a pipe, always in lock-step.
"""

from __future__ import annotations

import multiprocessing
import pickle
from collections.abc import Callable
from typing import Any

from mlagents_envs.base_env import BaseEnv

from envs.worker_pool import WorkerPoolStepper
from envs.worker_process import WorkerHandle, configure_forkserver, stop_workers

_CLOSE_TIMEOUT_S = 5.0


def default_start_method() -> str:
    """``forkserver`` where available (cheap starts and restarts), else ``spawn``."""
    return "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"


class SubprocessStepper(WorkerPoolStepper):
    """Runs ``num_envs`` environments in worker processes and steps them in parallel.

    Takes ``WorkerPoolStepper``'s arguments (``factory``, ``num_envs``, ``seed`` and the restart
    limits) and the one below.

    Args:
        start_method: ``"forkserver"`` or ``"spawn"``; default ``default_start_method()``.
            ``"fork"`` is refused: the parent has torch (and its threads) loaded.
    """

    worker_kind = "worker"

    def __init__(
        self,
        *,
        factory: Callable[..., BaseEnv],
        start_method: str | None = None,
        **pool_options: Any,
    ) -> None:
        start_method = start_method or default_start_method()
        _check_transport(factory, start_method)
        super().__init__(factory=factory, **pool_options)
        if start_method == "forkserver":
            configure_forkserver(factory)
        # Any: typeshed's BaseContext lacks Process/Pipe although every concrete context has them.
        self._context: Any = multiprocessing.get_context(start_method)
        self._start_all(start_method)

    @property
    def worker_pids(self) -> list[int | None]:
        """Process id of each worker (``None`` once closed); for diagnostics and tests."""
        return [w.process.pid if w is not None else None for w in self._workers]

    def _open_link(self, worker_id: int, seed: int, id_block: int) -> WorkerHandle:
        return WorkerHandle.launch(
            context=self._context,
            factory=self._factory,
            worker_id=worker_id,
            seed=seed,
            id_block=id_block,
        )

    @staticmethod
    def _stop_links(links: list[Any]) -> None:
        stop_workers(links, _CLOSE_TIMEOUT_S)


def _check_transport(factory: Callable[..., BaseEnv], start_method: str) -> None:
    if start_method not in ("forkserver", "spawn"):
        raise ValueError(
            f"start_method must be 'forkserver' or 'spawn', got {start_method!r} ('fork' is "
            f"unsafe in a parent that has torch loaded)"
        )
    try:
        pickle.dumps(factory)
    except Exception as error:
        raise TypeError(
            f"factory {factory!r} cannot be pickled for the worker processes ({error}); use a "
            f"module-level function or a functools.partial of one"
        ) from error
