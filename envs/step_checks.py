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
