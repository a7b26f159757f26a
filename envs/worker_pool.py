"""``WorkerPoolStepper``: environments in workers that the trainer drives by messages.

The pool keeps what does not depend on where a worker runs: every ``reset``/``step`` sends one
command to each worker and merges the answers into one ``BehaviorSteps`` per behavior id, in worker
order; worker failures are restarted under ML-Agents' ``env_settings`` limits. Subclasses supply the
transport: ``envs.workers.SubprocessStepper`` (worker processes on this machine) and
``envs.ray_workers.RayStepper`` (Ray actors, anywhere on a Ray cluster).

Worker ``w`` owns the agent-id range ``[b * AGENT_ID_STRIDE, (b + 1) * AGENT_ID_STRIDE)`` with
``b = w + restarts * num_envs`` (a restarted worker's agents are new agents): its agent ids and
nonzero group ids are moved there inside the worker (``envs.worker_process``), and its arena keys
carry ``w * ARENA_STRIDE``.

A worker whose environment raises, or that dies, is logged with its traceback, replaced (same
worker id, new seed) and reset. Its agents are missing from the output of the step that failed and
come back, with the reset observations, in the output of the next ``step``. Restarts are limited
per worker as in ML-Agents (``-1`` = unlimited). Restarts are for crashes during the run: a worker
whose environment fails at the first start (a build that is not one, a port in use, a player that
never connects) stops the pool at once with that failure, since starting it again would only fail
the same way.

**Answers that arrive late.** ``step`` asks ``_gather`` for the answers of the workers it is
waiting on. The default waits for all of them (lock-step); a subclass may return only some and keep
waiting on the rest at the next ``step``. A worker is sent actions only once its previous answer
has been delivered, and only for the agents of that answer: each worker alternates answer, actions,
answer, so its agents' trajectories stay whole; a worker still stepping simply has no agents in
that step's output, as an ML-Agents agent that requests no decision.
"""

from __future__ import annotations

import abc
import collections
import logging
import time
import weakref
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, ClassVar, Protocol

import numpy as np
from mlagents_envs.base_env import ActionTuple, BaseEnv, BehaviorSpec, DecisionSteps, TerminalSteps

from envs.behavior_id import BehaviorId
from envs.environment_parameters import EnvironmentStats, ParameterValue
from envs.exceptions import EnvironmentWorkerError
from envs.stepping import BehaviorSteps, EnvStepper, StepResult
from envs.worker_process import PARAMETERS, RESET, STEP, Answer, WorkerActions, WorkerFailure

logger = logging.getLogger(__name__)


class WorkerLink(Protocol):
    """The trainer's end of one worker, whatever carries the messages."""

    worker_id: int

    def send(self, message: tuple[str, Any]) -> None:
        """Send one command; raises ``WorkerFailure`` if the worker is gone."""

    def receive(self) -> Any:
        """The payload of the worker's next answer; raises ``WorkerFailure`` on ERROR or death."""


class WorkerPoolStepper(EnvStepper):
    """Runs ``num_envs`` environments in workers and steps them in parallel.

    Args:
        factory: picklable callable called in worker ``i`` as ``factory(worker_id=i,
            seed=seed + i)``; returns a ``BaseEnv``.
        num_envs: number of workers (>= 1).
        seed: base seed; worker ``i`` gets ``seed + i``, its ``k``-th replacement
            ``seed + i + k * num_envs``.
        max_lifetime_restarts: restarts allowed per worker over the run; ``-1`` = unlimited.
        restarts_rate_limit_n: restarts allowed per worker within
            ``restarts_rate_limit_period_s`` seconds; ``-1`` = unlimited.
        restarts_rate_limit_period_s: the window of the rate limit, in seconds.
    """

    #: what the workers are called in log lines and errors
    worker_kind: ClassVar[str] = "worker"

    def __init__(
        self,
        *,
        factory: Callable[..., BaseEnv],
        num_envs: int,
        seed: int,
        max_lifetime_restarts: int = 10,
        restarts_rate_limit_n: int = 1,
        restarts_rate_limit_period_s: float = 60,
    ) -> None:
        check_pool_arguments(
            num_envs=num_envs,
            max_lifetime_restarts=max_lifetime_restarts,
            restarts_rate_limit_n=restarts_rate_limit_n,
            restarts_rate_limit_period_s=restarts_rate_limit_period_s,
        )
        self._factory = factory
        self._num_envs = num_envs
        self._seed = seed
        self._max_lifetime_restarts = max_lifetime_restarts
        self._restarts_rate_limit_n = restarts_rate_limit_n
        self._restarts_rate_limit_period_s = restarts_rate_limit_period_s
        self._workers: list[Any] = [None] * num_envs
        self._restarts = [0] * num_envs
        self._restart_times = [collections.deque[float]() for _ in range(num_envs)]
        self._specs: dict[BehaviorId, BehaviorSpec] = {}
        # Reset answers of restarted workers, delivered by the next step() instead of a step.
        self._pending: dict[int, Answer] = {}
        # Workers sent a command whose answer has not been delivered yet.
        self._outstanding: set[int] = set()
        # Per behavior: (worker, first row, end row) of each worker in the last decision steps.
        self._rows: dict[BehaviorId, list[tuple[int, int, int]]] = {}
        # The latest environment parameters, given again to every restarted worker.
        self._parameters: dict[str, ParameterValue] = {}
        self._stats: list[tuple[int, EnvironmentStats]] = []
        # Set during reset()/step(): one cut short (Ctrl-C) can leave answers unread.
        self._in_flight = False
        # Runs the shutdown once: on close(), on garbage collection, or at interpreter exit.
        self._finalizer = weakref.finalize(self, self._stop_links, self._workers)

    # -- transport, supplied by subclasses -----------------------------------------------------

    @abc.abstractmethod
    def _open_link(self, worker_id: int, seed: int, id_block: int) -> WorkerLink:
        """Start worker ``worker_id``; its first answer is its new behavior specs (READY)."""

    @staticmethod
    @abc.abstractmethod
    def _stop_links(links: list[Any]) -> None:
        """Close every live link of ``links`` and set each entry to None (no stepper needed, so
        ``weakref.finalize`` can run it)."""

    def _gather(
        self, waiting: Collection[int], *, everyone: bool = True
    ) -> tuple[dict[int, Answer], dict[int, str]]:
        """Answers (and failure details) of workers in ``waiting``: of all of them by default;
        with ``everyone`` False a subclass may answer for some and keep the rest waiting."""
        answers: dict[int, Answer] = {}
        failures: dict[int, str] = {}
        for worker_id in sorted(waiting):
            try:
                answers[worker_id] = self._worker(worker_id).receive()
            except WorkerFailure as failure:
                failures[worker_id] = failure.details
        return answers, failures

    # -- EnvStepper ----------------------------------------------------------------------------

    @property
    def num_envs(self) -> int:
        return self._num_envs

    @property
    def behavior_specs(self) -> dict[BehaviorId, BehaviorSpec]:
        """Union of the behaviors every worker has reported (the first report of an id wins)."""
        return dict(self._specs)

    @property
    def restart_counts(self) -> list[int]:
        """How many times each worker has been restarted."""
        return list(self._restarts)

    def reset(self) -> StepResult:
        self._check_open()
        self._in_flight = True
        self._pending.clear()
        # A step still under way must end before its worker can take the reset.
        _, failures = self._gather(set(self._outstanding))
        self._outstanding.clear()
        healthy = (w for w in range(self._num_envs) if w not in failures)
        failures.update(self._send({w: (RESET, None) for w in healthy}))
        answers, more_failures = self._gather(set(self._outstanding))
        self._outstanding.clear()
        failures.update(more_failures)
        for worker_id, details in sorted(failures.items()):
            answers[worker_id] = self._restart(worker_id, details, phase="reset")
        self._in_flight = False
        return self._merge(answers)

    def step(self, actions: Mapping[BehaviorId, ActionTuple]) -> StepResult:
        self._check_open()
        split = self._split_actions(actions)
        self._in_flight = True
        answers = dict(self._pending)
        self._pending.clear()
        idle = (w for w in range(self._num_envs) if w not in answers and w not in self._outstanding)
        failures = self._send({w: (STEP, split[w]) for w in idle})
        stepped, more_failures = self._gather(set(self._outstanding), everyone=False)
        self._outstanding.difference_update(stepped)
        self._outstanding.difference_update(more_failures)
        answers.update(stepped)
        failures.update(more_failures)
        for worker_id, details in sorted(failures.items()):
            self._pending[worker_id] = self._restart(worker_id, details, phase="step")
        self._in_flight = False
        return self._merge(answers)

    def set_environment_parameters(self, values: Mapping[str, ParameterValue]) -> None:
        self._check_open()
        self._parameters = dict(values)
        for worker_id, link in enumerate(self._workers):
            if link is None:
                continue
            try:
                link.send((PARAMETERS, self._parameters))
            except WorkerFailure:
                # Its next step finds it gone and restarts it, with these parameters.
                logger.debug(
                    "%s %d is gone; it gets the parameters when restarted",
                    self.worker_kind,
                    worker_id,
                )

    def environment_stats(self) -> list[tuple[int, EnvironmentStats]]:
        stats, self._stats = self._stats, []
        return stats

    def close(self) -> None:
        """Ask every worker to close its environment; stop those that do not exit in time."""
        self._finalizer()

    # -- workers -------------------------------------------------------------------------------

    def _check_open(self) -> None:
        name = type(self).__name__
        if not self._finalizer.alive:
            raise RuntimeError(f"{name} is closed; create a new one to keep stepping")
        if self._in_flight:
            raise RuntimeError(
                f"a previous reset()/step() of this {name} did not finish (interrupted or "
                "failed), so its workers may be out of step; close() it and create a new one"
            )

    def _launch(self, worker_id: int, seed: int) -> WorkerLink:
        link = self._open_link(
            worker_id, seed, id_block=worker_id + self._restarts[worker_id] * self._num_envs
        )
        self._workers[worker_id] = link
        return link

    def _worker(self, worker_id: int) -> WorkerLink:
        link = self._workers[worker_id]
        assert link is not None, f"{self.worker_kind} {worker_id} is not running"
        return link

    def _start_all(self, description: str) -> None:
        """Launch every worker and read its specs; call at the end of a subclass ``__init__``."""
        started = time.perf_counter()
        try:
            links = [self._launch(w, self._seed + w) for w in range(self._num_envs)]
            for link in links:
                try:
                    self._absorb_specs(link.receive())
                except WorkerFailure as failure:
                    raise self._startup_failure(link.worker_id, failure.details) from None
        except BaseException:
            self.close()
            raise
        logger.info(
            "Started %d environment %ss (%s) in %.2f s",
            self._num_envs,
            self.worker_kind,
            description,
            time.perf_counter() - started,
        )

    def _startup_failure(self, worker_id: int, details: str) -> EnvironmentWorkerError:
        """The error of a worker that failed at its first start: not restarted, its details as
        they are (a traceback on lines of its own)."""
        separator = "\n" if details.startswith("Traceback") else " "
        return EnvironmentWorkerError(
            f"Environment {self.worker_kind} {worker_id} failed during startup:{separator}{details}"
        )

    def _send(self, messages: Mapping[int, tuple[str, Any]]) -> dict[int, str]:
        """Send every message; the workers reached are then outstanding. Returns failures."""
        failures: dict[int, str] = {}
        for worker_id, message in messages.items():
            try:
                self._worker(worker_id).send(message)
                self._outstanding.add(worker_id)
            except WorkerFailure as failure:
                failures[worker_id] = failure.details
        return failures

    def _restart(self, worker_id: int, details: str, *, phase: str) -> Answer:
        """Replace a worker that failed during the run and reset it; returns its reset answer.

        Raises ``EnvironmentWorkerError`` once the worker is out of restarts.
        """
        self._outstanding.discard(worker_id)
        while True:
            self._check_restart_quota(worker_id, details, phase)
            self._restarts[worker_id] += 1
            self._restart_times[worker_id].append(time.monotonic())
            logger.error(
                "Environment %s %d failed during %s; restarting it (restart %d, "
                "max_lifetime_restarts=%d). Worker error:\n%s",
                self.worker_kind,
                worker_id,
                phase,
                self._restarts[worker_id],
                self._max_lifetime_restarts,
                details,
            )
            self._discard(worker_id)
            link = self._launch(
                worker_id, self._seed + worker_id + self._restarts[worker_id] * self._num_envs
            )
            try:
                phase = "startup after a restart"
                self._absorb_specs(link.receive())
                if self._parameters:
                    link.send((PARAMETERS, self._parameters))
                phase = "reset after a restart"
                link.send((RESET, None))
                return link.receive()
            except WorkerFailure as failure:
                details = failure.details

    def _check_restart_quota(self, worker_id: int, details: str, phase: str) -> None:
        now = time.monotonic()
        recent = self._restart_times[worker_id]
        while recent and now - recent[0] > self._restarts_rate_limit_period_s:
            recent.popleft()
        count = self._restarts[worker_id]
        if self._max_lifetime_restarts != -1 and count >= self._max_lifetime_restarts:
            reason = (
                f"it has been restarted {count} times and max_lifetime_restarts is "
                f"{self._max_lifetime_restarts}"
            )
        elif self._restarts_rate_limit_n != -1 and len(recent) >= self._restarts_rate_limit_n:
            reason = (
                f"it has been restarted {len(recent)} times in the last "
                f"{self._restarts_rate_limit_period_s} s ({count} in all) and "
                f"restarts_rate_limit_n is {self._restarts_rate_limit_n}"
            )
        else:
            return
        self._discard(worker_id)
        raise EnvironmentWorkerError(
            f"Environment {self.worker_kind} {worker_id} failed during {phase} and is not "
            f"restarted again: {reason}. Fix the environment, or raise the limit in "
            f"env_settings (-1 = unlimited). Last worker error:\n{details}"
        )

    def _discard(self, worker_id: int) -> None:
        link = self._workers[worker_id]
        self._workers[worker_id] = None
        self._stop_links([link])

    # -- data ----------------------------------------------------------------------------------

    def _absorb_specs(self, specs: Mapping[BehaviorId, BehaviorSpec] | None) -> None:
        if specs:
            for behavior_id, spec in specs.items():
                self._specs.setdefault(behavior_id, spec)

    def _split_actions(self, actions: Mapping[BehaviorId, ActionTuple]) -> list[WorkerActions]:
        split: list[WorkerActions] = [{} for _ in range(self._num_envs)]
        for behavior_id, action in actions.items():
            rows = self._rows.get(behavior_id, [])
            expected = rows[-1][2] if rows else 0
            continuous, discrete = action.continuous, action.discrete
            given = len(
                continuous if continuous is not None else discrete if discrete is not None else ()
            )
            if given != expected:
                raise ValueError(
                    f"actions for {behavior_id} have {given} rows but the last decision steps of "
                    f"that behavior had {expected} agents; pass one row per decision step, in order"
                )
            for worker_id, start, end in rows:
                split[worker_id][behavior_id] = (
                    None if continuous is None else continuous[start:end],
                    None if discrete is None else discrete[start:end],
                )
        return split

    def _merge(self, answers: Mapping[int, Answer]) -> StepResult:
        parts: dict[BehaviorId, list[tuple[int, BehaviorSteps]]] = {}
        for worker_id in sorted(answers):
            specs, steps, stats = answers[worker_id]
            self._absorb_specs(specs)
            if stats:
                self._stats.append((worker_id, stats))
            for behavior_id, behavior_steps in steps.items():
                parts.setdefault(behavior_id, []).append((worker_id, behavior_steps))
        result: StepResult = {}
        self._rows = {}
        for behavior_id, worker_parts in parts.items():
            rows, end = [], 0
            for worker_id, behavior_steps in worker_parts:
                if n := len(behavior_steps.decision):
                    rows.append((worker_id, end, end + n))
                    end += n
            self._rows[behavior_id] = rows
            nonempty = [s for _, s in worker_parts if len(s.decision) or len(s.terminal)]
            if len(nonempty) <= 1:
                # Nothing to concatenate: hand the worker's arrays over without a copy.
                result[behavior_id] = nonempty[0] if nonempty else worker_parts[0][1]
            else:
                result[behavior_id] = _concatenate(nonempty, self._specs.get(behavior_id))
        # Behaviors of a worker that is down still appear, with no agents, as they would in-process.
        for behavior_id, spec in self._specs.items():
            if behavior_id not in result:
                result[behavior_id] = _empty(behavior_id, spec)
                self._rows[behavior_id] = []
        return result


def _concatenate(parts: Sequence[BehaviorSteps], spec: BehaviorSpec | None) -> BehaviorSteps:
    decisions = [p.decision for p in parts]
    terminals = [p.terminal for p in parts]
    decision = DecisionSteps(
        obs=[np.concatenate(obs) for obs in zip(*(d.obs for d in decisions), strict=True)],
        reward=np.concatenate([d.reward for d in decisions]),
        agent_id=np.concatenate([d.agent_id for d in decisions]),
        action_mask=_concatenate_masks(decisions, spec),
        group_id=np.concatenate([d.group_id for d in decisions]),
        group_reward=np.concatenate([d.group_reward for d in decisions]),
    )
    terminal = TerminalSteps(
        obs=[np.concatenate(obs) for obs in zip(*(t.obs for t in terminals), strict=True)],
        reward=np.concatenate([t.reward for t in terminals]),
        interrupted=np.concatenate([t.interrupted for t in terminals]),
        agent_id=np.concatenate([t.agent_id for t in terminals]),
        group_id=np.concatenate([t.group_id for t in terminals]),
        group_reward=np.concatenate([t.group_reward for t in terminals]),
    )
    return BehaviorSteps(
        behavior_id=parts[0].behavior_id,
        decision=decision,
        terminal=terminal,
        decision_arenas=np.concatenate([p.decision_arenas for p in parts]),
        terminal_arenas=np.concatenate([p.terminal_arenas for p in parts]),
    )


def _empty(behavior_id: BehaviorId, spec: BehaviorSpec) -> BehaviorSteps:
    no_ids = np.zeros(0, dtype=np.int64)
    decision, terminal = DecisionSteps.empty(spec), TerminalSteps.empty(spec)
    decision.agent_id = decision.group_id = terminal.agent_id = terminal.group_id = no_ids
    return BehaviorSteps(
        behavior_id=behavior_id,
        decision=decision,
        terminal=terminal,
        decision_arenas=no_ids,
        terminal_arenas=no_ids,
    )


def _concatenate_masks(
    decisions: Sequence[DecisionSteps], spec: BehaviorSpec | None
) -> list[np.ndarray] | None:
    masks = [d.action_mask for d in decisions]
    if all(m is None for m in masks):
        return None
    branches = (
        spec.action_spec.discrete_branches
        if spec is not None
        else next(tuple(b.shape[1] for b in m) for m in masks if m is not None)
    )
    # A worker without masks allows every action: pad it with False (= not masked).
    filled = [
        m if m is not None else [np.zeros((len(d), size), dtype=bool) for size in branches]
        for m, d in zip(masks, decisions, strict=True)
    ]
    return [np.concatenate(branch) for branch in zip(*filled, strict=True)]


def check_pool_arguments(
    *,
    num_envs: int,
    max_lifetime_restarts: int,
    restarts_rate_limit_n: int,
    restarts_rate_limit_period_s: float,
) -> None:
    """Raise ``ValueError`` for a worker count or restart limit out of range."""
    if num_envs < 1:
        raise ValueError(f"num_envs must be at least 1, got {num_envs}")
    for name, value in (
        ("max_lifetime_restarts", max_lifetime_restarts),
        ("restarts_rate_limit_n", restarts_rate_limit_n),
    ):
        if value < -1:
            raise ValueError(f"{name} must be >= 0, or -1 for unlimited; got {value}")
    if restarts_rate_limit_period_s <= 0:
        raise ValueError(
            f"restarts_rate_limit_period_s must be positive, got {restarts_rate_limit_period_s}"
        )
