"""``RayStepper``: environment workers as Ray actors, anywhere on a Ray cluster.

``env_settings.backend: ray`` (or ``ghost-learn --ray-address ADDRESS``) runs each of the
``num_envs`` environments in a Ray actor. The trainer process keeps batched inference and all
self-play state; actions go out and observations come back, nothing else. Seeds, agent-id blocks,
arena keys and restarts are the pool's (``envs.worker_pool``), as for worker processes, so a
Unity build in worker ``i`` listens on ``base_port + i`` on whichever node its actor lands:
ports never collide on a node. Ray itself never restarts an actor (``max_restarts=0``): a dead
actor or a raising environment is replaced by the pool, under ``max_lifetime_restarts`` and the
rate limit, exactly as a worker process would be.

**Waiting for fewer than all.** With ``ray_wait_fraction`` below 1, a step returns as soon as
that share of the environments has answered (every answer already in is taken too); the others
keep stepping and join a later step. Agent ids stay consistent because each worker has its own id
block and is sent actions only for the agents of its own delivered answer. The price: which
environments make up a step depends on timing, so runs are no longer reproducible from a seed.
With the default 1.0 the protocol is lock-step and a seeded run learns exactly what the
subprocess backend learns.

Ray is an optional extra (``pip install ghost-trainer[ray]``); it is imported only here.
"""

from __future__ import annotations

import logging
import math
import socket
from collections.abc import Callable, Collection
from typing import Any

from mlagents_envs.base_env import BaseEnv

from envs.exceptions import EnvironmentSourceError
from envs.worker_pool import WorkerPoolStepper
from envs.worker_process import (
    ERROR,
    OK,
    PARAMETERS,
    READY,
    Answer,
    EnvRunner,
    WorkerFailure,
    failure_details,
)

logger = logging.getLogger(__name__)

_CLOSE_TIMEOUT_S = 5.0
_CONNECT_TIMEOUT_S = 5.0


def import_ray() -> Any:
    """The ``ray`` module, or an error saying how to install it."""
    try:
        import ray
    except ModuleNotFoundError as error:
        if error.name != "ray":
            raise
        raise EnvironmentSourceError(
            "env_settings.backend 'ray' (--ray-address) needs Ray: pip install "
            "'ghost-trainer[ray]' (or, in a checkout, pip install -e \".[ray]\")"
        ) from None
    return ray


def connect_ray(address: str | None = None, *, num_cpus: int | None = None) -> Any:
    """Join the Ray cluster at ``address`` (``"auto"``: the one ``ray start`` began on this node),
    or start a local one when ``address`` is None; a session already connected is kept.

    Raises:
        EnvironmentSourceError: nothing answers at ``address``, or Ray refuses it.
    """
    ray = import_ray()
    if ray.is_initialized():
        return ray
    if address is not None:
        _check_reachable(address)
    # Ray's own INFO lines only when debugging us (ghost-learn/ghost-eval --debug)
    debugging = logger.isEnabledFor(logging.DEBUG)
    try:
        ray.init(
            address=address,
            num_cpus=num_cpus if address is None else None,
            include_dashboard=False,
            logging_level=logging.INFO if debugging else logging.WARNING,
            log_to_driver=True,
        )
    except (ConnectionError, ValueError, RuntimeError) as error:
        raise EnvironmentSourceError(
            f"--ray-address/env_settings.ray_address {address!r}: Ray could not connect "
            f"({error}). Start a cluster with `ray start --head` and pass auto on one of its "
            "nodes, or HOST:PORT of its head node"
        ) from None
    logger.info("Connected to Ray: %s", ray.cluster_resources())
    return ray


def _check_reachable(address: str) -> None:
    """Fail at once where a ``HOST:PORT`` address has nobody listening (Ray would retry for
    minutes); ``auto`` and ``local`` are left to Ray."""
    host, colon, port = address.removeprefix("ray://").rpartition(":")
    if not colon or not port.isdigit():
        return
    try:
        socket.create_connection((host, int(port)), timeout=_CONNECT_TIMEOUT_S).close()
    except OSError as error:
        raise EnvironmentSourceError(
            f"--ray-address/env_settings.ray_address {address!r}: nothing answers at "
            f"{host}:{port} ({error}). Start the head node there with `ray start --head "
            f"--port={port}`, or check the address (`ray status` on a node prints it)"
        ) from None


class EnvironmentActor:
    """One environment inside a Ray actor; answers the worker protocol's messages."""

    def __init__(
        self, factory: Callable[..., BaseEnv], worker_id: int, seed: int, id_block: int
    ) -> None:
        self._arguments = (factory, worker_id, seed, id_block)
        self._runner: EnvRunner | None = None
        self._failure: str | None = None

    def start(self) -> tuple[str, Any]:
        """Build the environment: ``(READY, specs)``, or ``(ERROR, details)``."""
        factory, worker_id, seed, id_block = self._arguments
        try:
            self._runner = EnvRunner(factory(worker_id=worker_id, seed=seed), worker_id, id_block)
            return READY, self._runner.new_specs() or {}
        except Exception as error:
            return ERROR, failure_details(error)

    def handle(self, message: tuple[str, Any]) -> tuple[str, Any] | None:
        """Carry out one command: ``(OK, answer)``, None for PARAMETERS, or ``(ERROR, details)``.

        Nobody reads the reply to PARAMETERS, so a failure there is the reply to the next
        command (as a worker process's error would be).
        """
        command, payload = message
        assert self._runner is not None, "start() first"
        if self._failure is not None:
            return ERROR, self._failure
        try:
            answer = self._runner.serve(command, payload)
        except Exception as error:
            self._failure = failure_details(error)
            return ERROR, self._failure
        return None if answer is None else (OK, answer)

    def close(self) -> None:
        if self._runner is not None:
            try:
                self._runner.env.close()
            except Exception:
                logger.warning("env.close() failed in a Ray actor", exc_info=True)
            self._runner = None

    def node_id(self) -> str:
        """The Ray node this actor runs on (diagnostics and tests)."""
        import ray

        return ray.get_runtime_context().get_node_id()


class RayWorkerLink:
    """The trainer's end of one environment actor; keeps the reference to its next answer."""

    def __init__(self, actor: Any, worker_id: int, seed: int) -> None:
        self.actor = actor
        self.worker_id = worker_id
        self.seed = seed
        self.reply = actor.start.remote()

    def send(self, message: tuple[str, Any]) -> None:
        if message[0] == PARAMETERS:
            # Actor calls run in order: the parameters come before the next step.
            self.actor.handle.remote(message)
        else:
            self.reply = self.actor.handle.remote(message)

    def receive(self) -> Any:
        import ray

        try:
            reply = ray.get(self.reply)
        except ray.exceptions.RayError as error:
            raise WorkerFailure(
                f"Ray actor of worker {self.worker_id} (seed {self.seed}) is gone: "
                f"{type(error).__name__}: {error}"
            ) from None
        return self.payload(reply)

    @staticmethod
    def payload(reply: tuple[str, Any]) -> Any:
        """The answer in ``reply``; raises ``WorkerFailure`` for an ERROR reply."""
        kind, payload = reply
        if kind == ERROR:
            raise WorkerFailure(payload)
        return payload


class RayStepper(WorkerPoolStepper):
    """Runs ``num_envs`` environments in Ray actors and steps them in parallel.

    Takes ``WorkerPoolStepper``'s arguments (``factory``, ``num_envs``, ``seed`` and the restart
    limits) and the ones below.

    Args:
        address: Ray cluster to join (``"auto"``, ``"ray://host:10001"``, ``"host:6379"``);
            None starts a local Ray, or keeps the session this process already has.
        wait_fraction: share of the environments a step waits for, in (0, 1]; 1 = lock-step.
        cpus_per_env: CPUs each actor reserves; None uses Ray's default for actors (one to be
            placed, none held while running), so more actors than CPUs fit.
    """

    worker_kind = "actor"

    def __init__(
        self,
        *,
        factory: Callable[..., BaseEnv],
        address: str | None = None,
        wait_fraction: float = 1.0,
        cpus_per_env: float | None = None,
        **pool_options: Any,
    ) -> None:
        if not 0.0 < wait_fraction <= 1.0:
            raise ValueError(f"wait_fraction must be in (0, 1], got {wait_fraction}")
        super().__init__(factory=factory, **pool_options)
        self._ray = connect_ray(address)
        options: dict[str, Any] = {"max_restarts": 0, "scheduling_strategy": "SPREAD"}
        if cpus_per_env is not None:
            options["num_cpus"] = cpus_per_env
        self._actor_class = self._ray.remote(EnvironmentActor).options(**options)
        self._quorum = max(1, math.ceil(wait_fraction * self.num_envs))
        self._start_all(f"Ray, waiting for {self._quorum} of {self.num_envs} per step")

    @property
    def actors(self) -> list[Any]:
        """The actor handle of each worker (``None`` once closed); for diagnostics and tests."""
        return [link.actor if link is not None else None for link in self._workers]

    def _open_link(self, worker_id: int, seed: int, id_block: int) -> RayWorkerLink:
        actor = self._actor_class.remote(self._factory, worker_id, seed, id_block)
        return RayWorkerLink(actor, worker_id, seed)

    def _link(self, worker_id: int) -> RayWorkerLink:
        link = self._worker(worker_id)
        assert isinstance(link, RayWorkerLink)
        return link

    def _gather(
        self, waiting: Collection[int], *, everyone: bool = True
    ) -> tuple[dict[int, Answer], dict[int, str]]:
        if everyone or len(waiting) <= self._quorum:
            return self._receive(sorted(waiting))
        links = {self._link(w).reply: w for w in waiting}
        ready, rest = self._ray.wait(list(links), num_returns=self._quorum)
        # Whatever else has answered by now comes along for free.
        if rest:
            more, _ = self._ray.wait(rest, num_returns=len(rest), timeout=0)
            ready += more
        return self._receive(sorted(links[reference] for reference in ready))

    def _receive(self, workers: list[int]) -> tuple[dict[int, Answer], dict[int, str]]:
        # One ray.get for all: each separate call costs a round trip to the object store.
        try:
            replies = self._ray.get([self._link(w).reply for w in workers])
        except self._ray.exceptions.RayError:
            return super()._gather(workers)  # one by one, to tell which actor failed
        answers: dict[int, Answer] = {}
        failures: dict[int, str] = {}
        for worker_id, reply in zip(workers, replies, strict=True):
            try:
                answers[worker_id] = RayWorkerLink.payload(reply)
            except WorkerFailure as failure:
                failures[worker_id] = failure.details
        return answers, failures

    @staticmethod
    def _stop_links(links: list[Any]) -> None:
        live = [link for link in links if link is not None]
        links[:] = [None] * len(links)
        if not live:
            return
        import ray

        if not ray.is_initialized():
            return  # the cluster is gone and its actors with it
        closing = [link.actor.close.remote() for link in live]
        ray.wait(closing, num_returns=len(closing), timeout=_CLOSE_TIMEOUT_S)
        for link in live:
            ray.kill(link.actor, no_restart=True)
