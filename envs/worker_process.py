"""One environment worker process: its pipe protocol, its main loop, and the parent's handle on it.

Every message is a ``(kind, payload)`` pair on one duplex ``multiprocessing`` pipe, sent as one
``envs.wire`` buffer (``send``):

- worker -> parent, once the environment is built: ``(READY, specs)``;
- parent -> worker: ``(RESET, None)``, ``(STEP, actions)``, ``(PARAMETERS, values)`` or
  ``(CLOSE, None)``; the worker answers ``RESET`` and ``STEP`` with ``(OK, (new_specs, steps,
  stats))``, hands ``PARAMETERS`` to its environment without answering, and exits on ``CLOSE``;
- worker -> parent, instead of any answer: ``(ERROR, details)``, the formatted traceback (or, for a
  ``GhostError``, its message); the worker then closes its environment and exits.

``actions`` maps ``BehaviorId`` to ``(continuous, discrete)`` arrays of this worker's rows only.
``steps`` is a ``StepResult`` whose agent ids, group ids and arena keys are already global (see
``globalize``), so the parent only concatenates. ``new_specs`` holds the behaviors that appeared
since the previous answer, or ``None``; ``stats`` the environment's own statistics since the
previous answer (``envs.environment_parameters``), or ``None``.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import signal
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import Any

import attrs
import numpy as np
from mlagents_envs.base_env import ActionTuple, BaseEnv, BehaviorSpec, DecisionSteps, TerminalSteps

from envs.behavior_id import BehaviorId
from envs.environment_parameters import EnvironmentStats, apply_parameters, stats_source
from envs.exceptions import GhostError
from envs.stepping import AGENT_ID_STRIDE, BehaviorSteps, StepResult, collect_steps
from envs.wire import pack, step_arrays, steps_from, unpack

logger = logging.getLogger(__name__)

READY = "ready"
OK = "ok"
ERROR = "error"
RESET = "reset"
STEP = "step"
PARAMETERS = "parameters"
CLOSE = "close"

# How a message's payload travels (``send``): pickled whole, or as a step answer's or a step
# command's arrays beside their layout.
_WHOLE, _STEPS, _ACTIONS = "whole", "steps", "actions"

WorkerActions = dict[BehaviorId, tuple[np.ndarray | None, np.ndarray | None]]
Answer = tuple[dict[BehaviorId, BehaviorSpec] | None, StepResult, EnvironmentStats | None]


def send(conn: Connection, message: tuple[str, Any]) -> None:
    """Send ``message`` over ``conn`` as one ``envs.wire`` buffer: a step answer's and a step
    command's arrays as raw bytes, anything else pickled whole."""
    kind, payload = message
    packed = None
    if kind == OK:
        specs, steps, stats = payload
        counts, arrays = step_arrays(steps)
        packed = pack((kind, _STEPS, (specs, counts, stats)), arrays)
    elif kind == STEP:
        layout = [(b.name, b.team, c is not None, d is not None) for b, (c, d) in payload.items()]
        arrays = [a for pair in payload.values() for a in pair if a is not None]
        packed = pack((kind, _ACTIONS, layout), [np.asarray(a) for a in arrays])
    if packed is None:
        packed = pack((kind, _WHOLE, payload), [])
    conn.send_bytes(packed)  # type: ignore[arg-type]


def receive(conn: Connection) -> tuple[str, Any]:
    """Receive one message sent with ``send``; raises ``EOFError`` when the other end is gone."""
    (kind, form, body), arrays = unpack(conn.recv_bytes())
    if form == _STEPS:
        specs, counts, stats = body
        return kind, (specs, steps_from(counts, arrays), stats)
    if form == _ACTIONS:
        actions: WorkerActions = {}
        remaining = iter(arrays)
        for name, team, continuous, discrete in body:
            actions[BehaviorId(name, team)] = (
                next(remaining) if continuous else None,
                next(remaining) if discrete else None,
            )
        return kind, actions
    return kind, body


# -- inside the worker ---------------------------------------------------------------------------


def globalize(steps: BehaviorSteps, worker: int) -> BehaviorSteps:
    """``steps`` with agent ids and nonzero group ids moved into ``worker``'s id range (int64).

    Arena keys are left alone: ``collect_steps`` already offsets them by worker.
    """
    offset = worker * AGENT_ID_STRIDE
    d, t = steps.decision, steps.terminal
    decision = DecisionSteps(
        obs=d.obs,
        reward=d.reward,
        agent_id=np.asarray(d.agent_id, dtype=np.int64) + offset,
        action_mask=d.action_mask,
        group_id=_global_groups(d.group_id, offset),
        group_reward=d.group_reward,
    )
    terminal = TerminalSteps(
        obs=t.obs,
        reward=t.reward,
        interrupted=t.interrupted,
        agent_id=np.asarray(t.agent_id, dtype=np.int64) + offset,
        group_id=_global_groups(t.group_id, offset),
        group_reward=t.group_reward,
    )
    return attrs.evolve(steps, decision=decision, terminal=terminal)


def _global_groups(group_id: np.ndarray, offset: int) -> np.ndarray:
    groups = np.asarray(group_id, dtype=np.int64)
    if offset == 0:
        return groups
    # Group 0 means "no group" and must stay 0 in every worker.
    return np.where(groups != 0, groups + offset, 0)


class EnvRunner:
    """Keeps the behavior-name table of one environment and carries out the parent's commands."""

    def __init__(self, env: BaseEnv, worker_id: int, id_block: int) -> None:
        self.env = env
        self.worker_id = worker_id
        self.id_block = id_block
        self.names: dict[BehaviorId, str] = {}
        self.stats_source = stats_source(env)

    def new_specs(self) -> dict[BehaviorId, BehaviorSpec] | None:
        """Specs of behaviors not reported before (``None`` when there are none)."""
        specs = self.env.behavior_specs
        if len(specs) == len(self.names):
            return None
        fresh = {}
        for raw_name, spec in specs.items():
            behavior_id = BehaviorId.parse(raw_name)
            if behavior_id not in self.names:
                self.names[behavior_id] = raw_name
                fresh[behavior_id] = spec
        return fresh

    def reset(self) -> Answer:
        self.env.reset()
        return self._collect()

    def step(self, actions: WorkerActions) -> Answer:
        for behavior_id, (continuous, discrete) in actions.items():
            action = ActionTuple(continuous=continuous, discrete=discrete)
            self.env.set_actions(self.names[behavior_id], action)
        self.env.step()
        return self._collect()

    def serve(self, command: str, payload: Any) -> Answer | None:
        """Carry out one command other than CLOSE: the answer of RESET/STEP, None otherwise."""
        if command == RESET:
            return self.reset()
        if command == STEP:
            return self.step(payload)
        if command == PARAMETERS:
            apply_parameters(self.env, payload)
            return None
        raise ValueError(f"unknown worker command {command!r}")

    def _collect(self) -> Answer:
        specs = self.new_specs()
        steps = collect_steps(self.env, self.names, self.worker_id)
        stats = self.stats_source() if self.stats_source is not None else None
        return specs, {bid: globalize(s, self.id_block) for bid, s in steps.items()}, stats or None


def failure_details(error: Exception) -> str:
    """What the trainer is told of a worker's exception (call it inside ``except``).

    A ``GhostError``'s message already says what failed and what to do; anything else needs its
    traceback.
    """
    return str(error) if isinstance(error, GhostError) else traceback.format_exc()


def run_worker(
    conn: Connection, factory: Callable[..., BaseEnv], worker_id: int, seed: int, id_block: int
) -> None:
    """Entry point of a worker process: build the environment, then serve commands until CLOSE.

    ``id_block`` picks the worker's agent-id range; a restarted worker gets a new block so that
    its fresh agents never continue the trajectories of the agents that died with the old one.

    SIGINT is ignored so that Ctrl-C reaches only the parent, which then closes the workers.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    env: BaseEnv | None = None
    try:
        env = factory(worker_id=worker_id, seed=seed)
        runner = EnvRunner(env, worker_id, id_block)
        send(conn, (READY, runner.new_specs() or {}))
        while True:
            try:
                command, payload = receive(conn)
            except EOFError:
                return  # the parent is gone
            if command == CLOSE:
                return
            answer = runner.serve(command, payload)
            if answer is not None:
                send(conn, (OK, answer))
    except Exception as error:
        # Without a parent to read it, the details have nowhere to go: the exit speaks.
        with contextlib.suppress(OSError):
            send(conn, (ERROR, failure_details(error)))
    finally:
        if env is not None:
            try:
                env.close()
            except Exception:
                logger.warning(
                    "Environment worker %d: env.close() failed", worker_id, exc_info=True
                )
        conn.close()


# -- in the parent -------------------------------------------------------------------------------


class WorkerFailure(Exception):
    """A worker raised (``details``: its traceback or ``GhostError`` message) or its process died."""

    def __init__(self, details: str) -> None:
        super().__init__(details)
        self.details = details


@attrs.define
class WorkerHandle:
    """The parent's end of one worker process."""

    worker_id: int
    seed: int
    process: BaseProcess
    conn: Connection

    @classmethod
    def launch(
        cls,
        *,
        context: Any,
        factory: Callable[..., BaseEnv],
        worker_id: int,
        seed: int,
        id_block: int,
    ) -> WorkerHandle:
        """Start a worker process running ``run_worker`` (it answers READY once its env exists)."""
        parent_conn, child_conn = context.Pipe(duplex=True)
        process = context.Process(
            target=run_worker,
            args=(child_conn, factory, worker_id, seed, id_block),
            name=f"ghost-env-worker-{worker_id}",
            daemon=True,
        )
        process.start()
        # Only the worker may hold its end, so that the worker's death reads as EOF here.
        child_conn.close()
        return cls(worker_id=worker_id, seed=seed, process=process, conn=parent_conn)

    def send(self, message: tuple[str, Any]) -> None:
        """Send ``message``; raises ``WorkerFailure`` if the worker is gone."""
        try:
            send(self.conn, message)
        except OSError:
            raise WorkerFailure(self.exit_details()) from None

    def receive(self) -> Any:
        """The payload of the worker's next answer; raises ``WorkerFailure`` on ERROR or death."""
        # Waiting on the sentinel too catches a dead worker whose pipe end outlives it (inherited
        # by a process its environment started).
        ready = wait([self.conn, self.process.sentinel])
        if self.conn not in ready:
            raise WorkerFailure(self.exit_details())
        try:
            kind, payload = receive(self.conn)
        except (EOFError, OSError):
            raise WorkerFailure(self.exit_details()) from None
        if kind == ERROR:
            raise WorkerFailure(payload)
        return payload

    def exit_details(self, timeout: float = 5.0) -> str:
        """Describe how the process ended, for a worker that left without a traceback."""
        self.process.join(timeout)
        code = self.process.exitcode
        if code is None:
            how = "its pipe broke while the process still runs"
        elif code < 0:
            how = f"killed by signal {signal.Signals(-code).name}"
        else:
            how = f"exit code {code}"
        return (
            f"worker process {self.process.pid} (worker {self.worker_id}, seed {self.seed}) "
            f"exited unexpectedly ({how}); no Python traceback is available"
        )


def stop_workers(handles: list[WorkerHandle | None], timeout: float) -> None:
    """Ask ``handles`` to CLOSE, join them, terminate stragglers; empties the list in place.

    Needs no stepper, so ``weakref.finalize`` can run it at garbage collection or exit.
    """
    live = [h for h in handles if h is not None]
    handles[:] = [None] * len(handles)
    for handle in live:
        with contextlib.suppress(OSError):
            send(handle.conn, (CLOSE, None))
    deadline = time.monotonic() + timeout
    waiting = [h for h in live if h.process.is_alive()]
    while waiting and (remaining := deadline - time.monotonic()) > 0:
        ready_when: list[Any] = [h.process.sentinel for h in waiting]
        ready_when += [h.conn for h in waiting if not h.conn.closed]
        wait(ready_when, timeout=remaining)
        for handle in waiting:
            _drain(handle.conn)
        waiting = [h for h in waiting if h.process.is_alive()]
    for handle in live:
        if handle.process.is_alive():
            logger.warning(
                "Environment worker %d did not exit within %.0f s; terminating it",
                handle.worker_id,
                timeout,
            )
            handle.process.terminate()
            handle.process.join(1.0)
        if handle.process.is_alive():
            handle.process.kill()
            handle.process.join()
        handle.conn.close()
        handle.process.close()


def _drain(conn: Connection) -> None:
    # An answer nobody reads (a step interrupted by Ctrl-C) can block the worker's send forever,
    # so it would never see CLOSE.
    while not conn.closed and conn.poll():
        try:
            conn.recv_bytes()
        except (EOFError, OSError):
            conn.close()


def configure_forkserver(
    factory: Callable[..., BaseEnv], extra: Sequence[str] = ("torch",)
) -> None:
    """Have the fork server import what every worker needs, once, before it forks any worker.

    CPython 3.11 does not really preload ``__main__`` into the fork server (the main path never
    reaches it), so each worker re-runs the main module's imports: ~1 s per worker and per restart
    when torch is among them, unless the server already holds torch. Only takes effect while the
    fork server is not running yet (it is shared by the whole process).
    """
    factory_module = getattr(getattr(factory, "func", factory), "__module__", None)
    modules = ["__main__", __name__]
    for module in (factory_module, *extra):
        if module and module in sys.modules and module not in modules:
            modules.append(module)
    multiprocessing.get_context("forkserver").set_forkserver_preload(modules)
