"""The one interface through which training steps environments.

``EnvStepper`` hides where environments run: ``InProcessStepper`` calls one ``BaseEnv`` directly;
``envs.workers.SubprocessStepper`` runs several in worker processes and
``envs.ray_workers.RayStepper`` in Ray actors (both on ``envs.worker_pool.WorkerPoolStepper``). Whatever the backend, a step returns, per behavior id, the decision and
terminal steps of *all* environments merged into one batch, with agent ids made unique across
environments, and an **arena key** per agent.

Arenas: a built-in game runs many independent matches ("arenas") inside one environment. An
environment that knows them implements ``arena_of(behavior_name, agent_ids) -> np.ndarray``; the
stepper combines that with the worker index into an arena key (``worker * ARENA_STRIDE + arena``)
so that agents with the same key play in the same match. Environments without ``arena_of`` are one
arena each. The self-play layer uses arena keys to give different matches different opponents.
"""

from __future__ import annotations

import abc
import contextlib
from collections.abc import Callable, Iterator, Mapping

import attrs
import numpy as np
from mlagents_envs.base_env import ActionTuple, BaseEnv, BehaviorSpec, DecisionSteps, TerminalSteps

from envs.behavior_id import BehaviorId
from envs.environment_parameters import (
    EnvironmentStats,
    ParameterValue,
    apply_parameters,
    stats_source,
)
from envs.exceptions import (
    EnvironmentOutputError,
    EnvironmentWorkerError,
    GhostError,
    describe_exception,
)
from envs.step_checks import ReusedArrayCheck, check_steps_types

ARENA_STRIDE = 1 << 20
AGENT_ID_STRIDE = 1 << 32


@attrs.frozen
class BehaviorSteps:
    """Decision and terminal steps of one behavior id across every environment, with arena keys."""

    behavior_id: BehaviorId
    decision: DecisionSteps
    terminal: TerminalSteps
    decision_arenas: np.ndarray
    terminal_arenas: np.ndarray


StepResult = dict[BehaviorId, BehaviorSteps]


class EnvStepper(abc.ABC):
    """Steps one or more environments in lock-step and reports merged per-behavior results."""

    @property
    @abc.abstractmethod
    def behavior_specs(self) -> dict[BehaviorId, BehaviorSpec]:
        """The behaviors the environments report, by typed behavior id."""

    @abc.abstractmethod
    def reset(self) -> StepResult:
        """Reset every environment and return the first steps."""

    @abc.abstractmethod
    def step(self, actions: Mapping[BehaviorId, ActionTuple]) -> StepResult:
        """Apply ``actions`` (aligned with the last decision steps of each behavior) and step."""

    @abc.abstractmethod
    def close(self) -> None:
        """Shut the environments down."""

    @property
    def num_envs(self) -> int:
        return 1

    def set_environment_parameters(self, values: Mapping[str, ParameterValue]) -> None:  # noqa: B027
        """Give every environment that takes parameters ``values`` (from its next reset on);
        an environment restarted later gets the latest values too. Default: none takes any."""

    def environment_stats(self) -> list[tuple[int, EnvironmentStats]]:
        """Per environment (by worker index), the statistics it reported since the last call."""
        return []


def arenas_of(env: BaseEnv, behavior_name: str, agent_ids: np.ndarray, worker: int) -> np.ndarray:
    """Arena keys of ``agent_ids`` in ``env`` running as worker number ``worker``."""
    arena_of = getattr(env, "arena_of", None)
    local = (
        np.asarray(arena_of(behavior_name, agent_ids), dtype=np.int64)
        if arena_of is not None
        else np.zeros(len(agent_ids), dtype=np.int64)
    )
    return local + worker * ARENA_STRIDE


def collect_steps(
    env: BaseEnv,
    names: Mapping[BehaviorId, str],
    worker: int = 0,
    *,
    reuse_check: ReusedArrayCheck | None = None,
) -> StepResult:
    """Read every behavior's steps from ``env`` (ids as the environment reports them); with
    ``reuse_check``, refuse arrays the environment refilled in place (in-process only: a worker
    process sends copies)."""
    result: StepResult = {}
    for behavior_id, raw_name in names.items():
        decision, terminal = env.get_steps(raw_name)
        check_steps_types(raw_name, decision, terminal)
        if reuse_check is not None:
            reuse_check(raw_name, decision, terminal)
        for steps in (decision, terminal):
            if not isinstance(steps.group_id, np.ndarray):  # mlagents_envs' UnityEnvironment
                steps.group_id = np.asarray(steps.group_id, dtype=np.int64)
        result[behavior_id] = BehaviorSteps(
            behavior_id=behavior_id,
            decision=decision,
            terminal=terminal,
            decision_arenas=arenas_of(env, raw_name, decision.agent_id, worker),
            terminal_arenas=arenas_of(env, raw_name, terminal.agent_id, worker),
        )
    if reuse_check is not None:
        reuse_check.step_done()
    return result


class InProcessStepper(EnvStepper):
    """Steps a single ``BaseEnv`` in this process: no copies, no pickling.

    An exception from the environment ends the run as an ``EnvironmentWorkerError`` that names
    it; nothing restarts an in-process environment (worker processes are restarted).
    """

    def __init__(self, env: BaseEnv) -> None:
        self.env = env
        self._names: dict[BehaviorId, str] = {}
        self._specs: dict[str, BehaviorSpec] = {}
        self._stats_source = stats_source(env)
        self._reuse_check = ReusedArrayCheck()

    @classmethod
    def open(cls, factory: Callable[..., BaseEnv], *, seed: int) -> InProcessStepper:
        """Build the environment with ``factory(worker_id=0, seed=seed)``.

        Raises:
            EnvironmentWorkerError: the factory raised (the message says what and where).
        """
        try:
            return cls(factory(worker_id=0, seed=seed))
        except GhostError:
            raise
        except Exception as error:
            raise EnvironmentWorkerError(
                f"the environment could not be created: {describe_exception(error)}{_DEBUG_HINT}"
            ) from error

    @property
    def behavior_specs(self) -> dict[BehaviorId, BehaviorSpec]:
        self._refresh_names()
        return {bid: self.env.behavior_specs[raw] for bid, raw in self._names.items()}

    def _refresh_names(self) -> None:
        specs = self.env.behavior_specs
        if len(self._names) != len(specs):
            self._names = {BehaviorId.parse(raw): raw for raw in specs}
        for raw, spec in specs.items():
            known = self._specs.setdefault(raw, spec)
            if known is not spec and known != spec:
                raise EnvironmentOutputError(
                    f"the behavior spec of {raw} changed between steps (was {known}, now "
                    f"{spec}); a BaseEnv's behavior specs stay fixed once reported"
                )

    def reset(self) -> StepResult:
        with _environment_errors("reset"):
            self.env.reset()
            self._refresh_names()
            return collect_steps(self.env, self._names, reuse_check=self._reuse_check)

    def step(self, actions: Mapping[BehaviorId, ActionTuple]) -> StepResult:
        with _environment_errors("step"):
            for behavior_id, action in actions.items():
                self.env.set_actions(self._names[behavior_id], action)
            self.env.step()
            self._refresh_names()
            return collect_steps(self.env, self._names, reuse_check=self._reuse_check)

    def set_environment_parameters(self, values: Mapping[str, ParameterValue]) -> None:
        apply_parameters(self.env, values)

    def environment_stats(self) -> list[tuple[int, EnvironmentStats]]:
        stats = self._stats_source() if self._stats_source is not None else None
        return [(0, stats)] if stats else []

    def close(self) -> None:
        self.env.close()


_DEBUG_HINT = " (--debug prints the full traceback)"


@contextlib.contextmanager
def _environment_errors(phase: str) -> Iterator[None]:
    try:
        yield
    except GhostError:
        raise
    except Exception as error:
        raise EnvironmentWorkerError(
            f"the environment raised during {phase}: {describe_exception(error)}. It runs in "
            "this process and is not restarted (with --num-envs 2 or more, a crashed worker is "
            f"restarted){_DEBUG_HINT}"
        ) from error
