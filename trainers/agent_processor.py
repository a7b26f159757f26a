"""The environment side of a behavior id: let its acting policy answer, queue what happened."""

from __future__ import annotations

import numpy as np
from mlagents_envs.base_env import ActionTuple

from envs.step_checks import check_behavior_steps
from envs.stepping import BehaviorSteps
from trainers.base import (
    ActionOutput,
    ArenaPolicy,
    ExperienceQueue,
    Policy,
    StepBatch,
    action_components,
)


class AgentProcessor:
    """Answers one behavior id's decision requests in one batch and queues the step batch."""

    def __init__(self, *, policy: Policy, queue: ExperienceQueue) -> None:
        self.policy = policy
        self.queue = queue
        self.behavior_spec = policy.behavior_spec
        spec = policy.behavior_spec.action_spec
        self._empty = ActionOutput(
            actions=spec.empty_action(0),
            log_probs=np.zeros((0, action_components(spec)), np.float32),
            continuous_raw=np.zeros((0, spec.continuous_size), np.float32),
        )

    def process(self, steps: BehaviorSteps) -> ActionTuple | None:
        """The actions for ``steps.decision`` (None when no agent asked for one).

        Raises:
            EnvironmentOutputError: the steps do not fit the behavior spec (NaN, shapes).
        """
        decision = steps.decision
        check_behavior_steps(steps.behavior_id, self.behavior_spec, decision, steps.terminal)
        # an agent in both lists ended an episode and begins the next: it starts from no memory
        remembers = getattr(self.policy, "memory_size", 0) > 0
        if remembers and len(steps.terminal):
            self.policy.forget(steps.terminal.agent_id)
        by_agent = {"agent_ids": decision.agent_id} if remembers else {}
        if len(decision) == 0:
            output = self._empty
        elif isinstance(self.policy, ArenaPolicy):
            output = self.policy.sample_in_arenas(
                decision.obs, decision.action_mask, steps.decision_arenas, **by_agent
            )
        else:
            output = self.policy.sample(decision.obs, decision.action_mask, **by_agent)
        if len(decision) or len(steps.terminal):
            self.queue.put(StepBatch(steps=steps, output=output))
        return output.actions if len(decision) else None

    def forget_memories(self) -> None:
        """The environments were reset: every agent starts again from no memory."""
        if getattr(self.policy, "memory_size", 0):
            self.policy.forget()
