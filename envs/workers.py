"""``SubprocessStepper``: ``--num-envs N`` environments, each in its own worker process.

Every ``reset``/``step`` sends one command to every worker, then receives every answer, so the
environments run in parallel and stay in lock-step. Answers are merged into one ``BehaviorSteps``
per behavior id, in worker order. Worker ``w`` owns the id range
``[b * AGENT_ID_STRIDE, (b + 1) * AGENT_ID_STRIDE)`` with ``b = w + restarts * num_envs`` (a
restarted worker's agents are new agents): its agent ids and nonzero group ids are moved there (in the worker, see ``envs.worker_process``), and its arena keys carry ``w * ARENA_STRIDE``.

A worker whose environment raises, or whose process dies, is logged with its traceback, replaced by
a fresh process (same worker id, new seed) and reset. Its agents are missing from the output of the
step that failed and come back, with the reset observations, in the output of the next ``step``.
Restarts are limited per worker as in ML-Agents' ``env_settings`` (``-1`` = unlimited).

Size: ~440 lines: the parent side of the worker protocol with its restart rules; the worker
side is ``envs.worker_process``.
"""

from __future__ import annotations

import collections
import logging
import multiprocessing
import pickle
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from mlagents_envs.base_env import ActionTuple, BaseEnv, BehaviorSpec, DecisionSteps, TerminalSteps

from envs.behavior_id import BehaviorId
from envs.environment_parameters import EnvironmentStats, ParameterValue
from envs.exceptions import EnvironmentWorkerError
from envs.stepping import BehaviorSteps, EnvStepper, StepResult
from envs.worker_process import (
    PARAMETERS,
    RESET,
    STEP,
    Answer,
    WorkerActions,
    WorkerFailure,
    WorkerHandle,
    configure_forkserver,
    stop_workers,
)

logger = logging.getLogger(__name__)

_CLOSE_TIMEOUT_S = 5.0


def default_start_method() -> str:
    """``forkserver`` where available (cheap starts and restarts), else ``spawn``."""
    return "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"


class SubprocessStepper(EnvStepper):
    """Runs ``num_envs`` environments in worker processes and steps them in parallel.

    :param factory: picklable callable (a module-level function or a ``functools.partial`` of one)
        called in worker ``i`` as ``factory(worker_id=i, seed=seed + i)``; returns a ``BaseEnv``.
    :param num_envs: number of worker processes (>= 1).
    :param seed: base seed; worker ``i`` gets ``seed + i``, its ``k``-th replacement
        ``seed + i + k * num_envs``.
    :param max_lifetime_restarts: restarts allowed per worker over the run; ``-1`` = unlimited.
    :param restarts_rate_limit_n: restarts allowed per worker within
        ``restarts_rate_limit_period_s`` seconds; ``-1`` = unlimited.
    :param restarts_rate_limit_period_s: the window of the rate limit, in seconds.
    :param start_method: ``"forkserver"`` or ``"spawn"``; default ``default_start_method()``.
        ``"fork"`` is refused: the parent has torch (and its threads) loaded.
    """

    def __init__(
        self,
        *,
        factory: Callable[..., BaseEnv],
        num_envs: int,
        seed: int,
        max_lifetime_restarts: int = 10,
        restarts_rate_limit_n: int = 1,
        restarts_rate_limit_period_s: float = 60,
        start_method: str | None = None,
    ) -> None:
        start_method = start_method or default_start_method()
        _check_arguments(
            factory=factory,
            num_envs=num_envs,
            max_lifetime_restarts=max_lifetime_restarts,
            restarts_rate_limit_n=restarts_rate_limit_n,
            restarts_rate_limit_period_s=restarts_rate_limit_period_s,
            start_method=start_method,
        )
        self._factory = factory
        self._num_envs = num_envs
        self._seed = seed
        self._max_lifetime_restarts = max_lifetime_restarts
        self._restarts_rate_limit_n = restarts_rate_limit_n
        self._restarts_rate_limit_period_s = restarts_rate_limit_period_s
        if start_method == "forkserver":
            configure_forkserver(factory)
        # Any: typeshed's BaseContext lacks Process/Pipe although every concrete context has them.
        self._context: Any = multiprocessing.get_context(start_method)
        self._workers: list[WorkerHandle | None] = [None] * num_envs
        self._restarts = [0] * num_envs
        self._restart_times = [collections.deque[float]() for _ in range(num_envs)]
        self._specs: dict[BehaviorId, BehaviorSpec] = {}
        # Reset answers of restarted workers, delivered by the next step() instead of a step.
        self._pending: dict[int, Answer] = {}
        # Per behavior: (worker, first row, end row) of each worker in the last decision steps.
        self._rows: dict[BehaviorId, list[tuple[int, int, int]]] = {}
        # The latest environment parameters, given again to every restarted worker.
        self._parameters: dict[str, ParameterValue] = {}
        self._stats: list[tuple[int, EnvironmentStats]] = []
        # Set during reset()/step(): one cut short (Ctrl-C) can leave answers unread in the pipes.
        self._in_flight = False
        # Runs the shutdown once: on close(), on garbage collection, or at interpreter exit.
        self._finalizer = weakref.finalize(self, stop_workers, self._workers, _CLOSE_TIMEOUT_S)
        try:
            self._start_all()
        except BaseException:
            self.close()
            raise

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

    @property
    def worker_pids(self) -> list[int | None]:
        """Process id of each worker (``None`` once closed); for diagnostics and tests."""
        return [w.process.pid if w is not None else None for w in self._workers]

    def reset(self) -> StepResult:
        self._check_open()
        self._in_flight = True
        self._pending.clear()
        answers, failures = self._exchange({w: (RESET, None) for w in range(self._num_envs)})
        for worker_id, details in failures.items():
            answers[worker_id] = self._restart(worker_id, details, phase="reset")
        self._in_flight = False
        return self._merge(answers)

    def step(self, actions: Mapping[BehaviorId, ActionTuple]) -> StepResult:
        self._check_open()
        split = self._split_actions(actions)
        self._in_flight = True
        answers = dict(self._pending)
        self._pending.clear()
        stepped, failures = self._exchange(
            {w: (STEP, split[w]) for w in range(self._num_envs) if w not in answers}
        )
        answers.update(stepped)
        for worker_id, details in failures.items():
            self._pending[worker_id] = self._restart(worker_id, details, phase="step")
        self._in_flight = False
        return self._merge(answers)

    def set_environment_parameters(self, values: Mapping[str, ParameterValue]) -> None:
        self._check_open()
        self._parameters = dict(values)
        for worker_id, handle in enumerate(self._workers):
            if handle is None:
                continue
            try:
                handle.send((PARAMETERS, self._parameters))
            except WorkerFailure:
                # Its next step finds it gone and restarts it, with these parameters.
                logger.debug("worker %d is gone; it gets the parameters when restarted", worker_id)

    def environment_stats(self) -> list[tuple[int, EnvironmentStats]]:
        stats, self._stats = self._stats, []
        return stats

    def close(self) -> None:
        """Ask every worker to close its environment; terminate those that do not exit in time."""
        self._finalizer()

    # -- workers -------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if not self._finalizer.alive:
            raise RuntimeError("SubprocessStepper is closed; create a new one to keep stepping")
        if self._in_flight:
            raise RuntimeError(
                "a previous reset()/step() of this SubprocessStepper did not finish (interrupted "
                "or failed), so its workers may be out of step; close() it and create a new one"
            )

    def _launch(self, worker_id: int, seed: int) -> WorkerHandle:
        handle = WorkerHandle.launch(
            context=self._context,
            factory=self._factory,
            worker_id=worker_id,
            seed=seed,
            id_block=worker_id + self._restarts[worker_id] * self._num_envs,
        )
        self._workers[worker_id] = handle
        return handle

    def _worker(self, worker_id: int) -> WorkerHandle:
        handle = self._workers[worker_id]
        assert handle is not None, f"worker {worker_id} is not running"
        return handle

    def _start_all(self) -> None:
        started = time.perf_counter()
        handles = [self._launch(w, self._seed + w) for w in range(self._num_envs)]
        for handle in handles:
            try:
                self._absorb_specs(handle.receive())
            except WorkerFailure as failure:
                self._restart(handle.worker_id, failure.details, phase="startup", reset=False)
        logger.info(
            "Started %d environment workers (%s) in %.2f s",
            self._num_envs,
            self._context.get_start_method(),
            time.perf_counter() - started,
        )

    def _exchange(
        self, messages: Mapping[int, tuple[str, Any]]
    ) -> tuple[dict[int, Answer], dict[int, str]]:
        """Send every message, then receive every answer: (answers, failure details) by worker."""
        failures: dict[int, str] = {}
        sent = []
        for worker_id, message in messages.items():
            try:
                self._worker(worker_id).send(message)
                sent.append(worker_id)
            except WorkerFailure as failure:
                failures[worker_id] = failure.details
        answers: dict[int, Answer] = {}
        for worker_id in sent:
            try:
                answers[worker_id] = self._worker(worker_id).receive()
            except WorkerFailure as failure:
                failures[worker_id] = failure.details
        return answers, failures

    def _restart(self, worker_id: int, details: str, *, phase: str, reset: bool = True) -> Answer:
        """Replace a failed worker and (with ``reset``) reset it; returns its reset answer.

        Raises ``EnvironmentWorkerError`` once the worker is out of restarts.
        """
        while True:
            self._check_restart_quota(worker_id, details, phase)
            self._restarts[worker_id] += 1
            self._restart_times[worker_id].append(time.monotonic())
            logger.error(
                "Environment worker %d failed during %s; restarting it (restart %d, "
                "max_lifetime_restarts=%d). Worker error:\n%s",
                worker_id,
                phase,
                self._restarts[worker_id],
                self._max_lifetime_restarts,
                details,
            )
            self._discard(worker_id)
            handle = self._launch(
                worker_id, self._seed + worker_id + self._restarts[worker_id] * self._num_envs
            )
            try:
                phase = "startup after a restart"
                self._absorb_specs(handle.receive())
                if self._parameters:
                    handle.send((PARAMETERS, self._parameters))
                if not reset:
                    return None, {}, None
                phase = "reset after a restart"
                handle.send((RESET, None))
                return handle.receive()
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
            f"Environment worker {worker_id} failed during {phase} and is not restarted again: "
            f"{reason}. Fix the environment, or raise the limit in env_settings (-1 = unlimited). "
            f"Last worker error:\n{details}"
        )

    def _discard(self, worker_id: int) -> None:
        handle = self._workers[worker_id]
        self._workers[worker_id] = None
        stop_workers([handle], _CLOSE_TIMEOUT_S)

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


def _check_arguments(
    *,
    factory: Callable[..., BaseEnv],
    num_envs: int,
    max_lifetime_restarts: int,
    restarts_rate_limit_n: int,
    restarts_rate_limit_period_s: float,
    start_method: str,
) -> None:
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
