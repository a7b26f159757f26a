"""Checking what an environment returns against the BaseEnv contract, every step, cheaply.

A user's environment that sends an observation of the wrong shape, a NaN reward or a changed
behavior spec would otherwise surface as a shape error deep inside a network, or silently as NaN
weights. ``check_behavior_steps`` turns each into an ``EnvironmentOutputError`` that names the
behavior, the field and what was expected. What the API allows passes: no action mask, no
deciding agents on a step, agents that come and go.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from mlagents_envs.base_env import BehaviorSpec, DecisionSteps, TerminalSteps

from envs.behavior_id import BehaviorId
from envs.exceptions import EnvironmentOutputError


def check_steps_types(name: str, decision: object, terminal: object) -> None:
    """``get_steps(name)`` returned a ``(DecisionSteps, TerminalSteps)`` pair."""
    if not isinstance(decision, DecisionSteps) or not isinstance(terminal, TerminalSteps):
        raise EnvironmentOutputError(
            f"get_steps({name!r}) returned ({type(decision).__name__}, "
            f"{type(terminal).__name__}); a BaseEnv returns (DecisionSteps, TerminalSteps)"
        )


def check_behavior_steps(
    behavior_id: BehaviorId, spec: BehaviorSpec, decision: DecisionSteps, terminal: TerminalSteps
) -> None:
    """Raise ``EnvironmentOutputError`` where the steps do not fit ``spec`` (see module doc)."""
    _check_part(behavior_id, spec, "DecisionSteps", decision.obs, decision.reward,
                decision.group_reward, len(decision.agent_id))  # fmt: skip
    _check_part(behavior_id, spec, "TerminalSteps", terminal.obs, terminal.reward,
                terminal.group_reward, len(terminal.agent_id))  # fmt: skip
    if decision.action_mask is not None:
        _check_masks(behavior_id, spec, decision.action_mask, len(decision.agent_id))


def _check_part(
    behavior_id: BehaviorId,
    spec: BehaviorSpec,
    part: str,
    observations: Sequence[np.ndarray],
    reward: np.ndarray,
    group_reward: np.ndarray,
    agents: int,
) -> None:
    expected = spec.observation_specs
    if len(observations) != len(expected):
        raise _error(behavior_id, part, f"has {len(observations)} observations, the behavior "
                     f"spec {len(expected)}")  # fmt: skip
    for index, (obs, obs_spec) in enumerate(zip(observations, expected, strict=True)):
        shape = obs.shape
        if shape[0] != agents or shape[1:] != obs_spec.shape:
            raise _error(behavior_id, part, f"observation {index} has shape {shape}; the "
                         f"behavior spec says {(agents, *obs_spec.shape)} for {agents} "
                         "agent(s)")  # fmt: skip
        if agents and not _all_finite(obs):
            raise _error(behavior_id, part, f"observation {index} holds NaN or infinite values")
    for label, values in (("reward", reward), ("group_reward", group_reward)):
        if values.shape != (agents,):
            raise _error(behavior_id, part, f"{label} has shape {values.shape}, expected "
                         f"({agents},)")  # fmt: skip
    if agents and not _all_finite(reward, group_reward):
        label = "reward" if not _all_finite(reward) else "group_reward"
        raise _error(behavior_id, part, f"{label} holds NaN or infinite values")


def _check_masks(
    behavior_id: BehaviorId, spec: BehaviorSpec, masks: Sequence[np.ndarray], agents: int
) -> None:
    branches = spec.action_spec.discrete_branches
    if len(masks) != len(branches):
        raise _error(behavior_id, "DecisionSteps", f"has {len(masks)} action masks for "
                     f"{len(branches)} discrete branches")  # fmt: skip
    for index, (mask, size) in enumerate(zip(masks, branches, strict=True)):
        if np.shape(mask) != (agents, size):
            raise _error(behavior_id, "DecisionSteps", f"action mask {index} has shape "
                         f"{np.shape(mask)}, expected ({agents}, {size})")  # fmt: skip


class ReusedArrayCheck:
    """Catches an environment that refills last step's arrays in place.

    The trainer keeps each step's observations, rewards and agent ids until their trajectory is
    assembled; an environment that overwrites them corrupts that experience without any error (a
    policy then learns nothing). Returning the same array unchanged is fine; changing it after
    handing it out is not. Everything is checked on the first ``steps`` steps; after them, only
    the agent ids an environment was seen handing out twice (they often change only when an
    episode ends), so an environment that returns new arrays costs nothing from then on.
    """

    def __init__(self, steps: int = 64) -> None:
        self._left = steps
        self._previous: dict[str, dict[str, tuple[np.ndarray, np.ndarray]]] = {}
        self._handed_out_twice: set[tuple[str, str]] = set()

    def __call__(self, name: str, decision: DecisionSteps, terminal: TerminalSteps) -> None:
        """Raise ``EnvironmentOutputError`` if an array of ``name`` is last step's, refilled."""
        arrays = _kept_arrays(decision, terminal, everything=self._left > 0)
        if self._left <= 0:
            arrays = {f: a for f, a in arrays.items() if (name, f) in self._handed_out_twice}
            if not arrays:
                return
        for field, (previous, values) in self._previous.get(name, {}).items():
            array = arrays.get(field)
            if array is None or not _same_buffer(array, previous):
                continue
            self._handed_out_twice.add((name, field))
            if not np.array_equal(array, values, equal_nan=array.dtype.kind == "f"):
                raise EnvironmentOutputError(
                    f"get_steps({name!r}) changed the {field} array it returned the step "
                    "before; the trainer keeps every step's arrays until the trajectory is "
                    "assembled, so return new arrays each step (e.g. agent_id.copy())"
                )
        self._previous[name] = {field: (array, array.copy()) for field, array in arrays.items()}

    def step_done(self) -> None:
        """Count one environment step (after every behavior was checked)."""
        self._left -= 1


def _kept_arrays(
    decision: DecisionSteps, terminal: TerminalSteps, *, everything: bool
) -> dict[str, np.ndarray]:
    arrays = {"DecisionSteps.agent_id": decision.agent_id,
              "TerminalSteps.agent_id": terminal.agent_id}  # fmt: skip
    if everything:
        arrays["DecisionSteps.reward"] = decision.reward
        for index, obs in enumerate(decision.obs):
            arrays[f"DecisionSteps.obs[{index}]"] = obs
    return {field: array for field, array in arrays.items() if isinstance(array, np.ndarray)}


def _same_buffer(array: np.ndarray, previous: np.ndarray) -> bool:
    """``array`` is the buffer of ``previous`` (held alive, so not a new array at a freed
    address)."""
    return array is previous or (
        array.size > 0
        and array.shape == previous.shape
        and array.__array_interface__["data"][0] == previous.__array_interface__["data"][0]
    )


def _all_finite(*arrays: np.ndarray) -> bool:
    """Whether every value is finite. A sum first, since one NaN or inf makes the sum so (the
    element-wise test runs only then, to tell an overflowing sum from a bad value); Python's
    ``math.isfinite`` on the sum costs less than a numpy call."""
    total = 0.0
    for values in arrays:
        if values.dtype.kind == "f":
            total += float(values.sum())
    if math.isfinite(total):
        return True
    return all(bool(np.isfinite(values).all()) for values in arrays if values.dtype.kind == "f")


def _error(behavior_id: BehaviorId, part: str, problem: str) -> EnvironmentOutputError:
    return EnvironmentOutputError(
        f"the environment's {part} for behavior {behavior_id} {problem}; the environment must "
        "return what its behavior_specs declare"
    )
