"""The agents of a fake Unity player: their ids, the infos they send and the actions they read.

A game knows positions and rewards; this module turns its arrays into what C#'s Agents send
(``AgentInfoProto``, one ``BrainParametersProto`` per behavior) and stores the trainer's actions
where the game reads them.

Agent ids: as in C#, each Agent takes an id from one per-process counter starting at 0 when it is
enabled, and keeps it across episodes: the output after an episode ends holds the terminal info
(``done``, ``max_step_reached`` on a timeout) and, with decision period 1, the first decision of
the agent's next episode under the same id. With ``--fake-respawn-agents`` the game replaces an
agent at each episode end (destroy and instantiate), so every episode gets a new id from the same
counter. Group ids come from their own counter starting at 1; a group keeps its id across
episodes. Rewards and group rewards are those since the agent's last decision. Action masks:
``True`` = masked; once a game writes masks, every info carries one (a terminal info the mask of
the agent's last decision). A RESET command ends episodes without terminal infos (C#'s
``_AgentReset``); with ``--fake-respawn-agents`` the replaced agents send a terminal info
(``done``, not ``max_step_reached``: the Disabled path). The game takes no step between a RESET and
the first decisions.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import count
from typing import Any

import numpy as np
from mlagents_envs.communicator_objects.agent_info_pb2 import AgentInfoProto
from mlagents_envs.communicator_objects.brain_parameters_pb2 import (
    ActionSpecProto,
    BrainParametersProto,
)
from mlagents_envs.communicator_objects.unity_output_pb2 import UnityOutputProto
from mlagents_envs.communicator_objects.unity_rl_input_pb2 import UnityRLInputProto

#: ObservationProto.dimension_properties of a vector sensor: DimensionProperty.None
DIMENSION_NONE = 1


class ActionCountError(Exception):
    """The trainer sent a behavior fewer actions than it was sent decisions."""


@dataclass(frozen=True)
class AgentInfo:
    """An AgentInfoProto to be: protos are built in place in the outgoing message, because
    copying messages costs more than the rest of a step (most of all when the player is forced onto
    protobuf's pure-Python parser, as ``scripts/bench_unity_protocol.py`` does)."""

    fields: dict[str, Any]
    observation: list[float]
    mask: list[bool] | None

    def write(self, proto: AgentInfoProto) -> None:
        """Fill ``proto`` as C#'s ToAgentInfoProto and a VectorSensor's GetObservationProto do."""
        for name, value in self.fields.items():
            setattr(proto, name, value)
        size = len(self.observation)
        observation = proto.observations.add(
            shape=[size], dimension_properties=[DIMENSION_NONE], name=f"VectorSensor_size{size}"
        )
        observation.float_data.data.extend(self.observation)
        if self.mask is not None:
            proto.action_mask.extend(self.mask)


class BehaviorAgents:
    """The agents of one behavior in every area: ids, rewards since their last decision, masks,
    and the infos queued for the next output."""

    def __init__(self, *, layout: Any, num_areas: int) -> None:
        self.layout = layout
        shape = (num_areas, layout.agents_per_area)
        self.ids = np.zeros(shape, np.int64)
        self.group_ids = np.zeros(shape, np.int64)
        self.reward = np.zeros(shape, np.float32)
        self.group_reward = np.zeros(shape, np.float32)
        #: sent a decision in its current episode
        self.started = np.zeros(shape, bool)
        #: the mask of each agent's last decision; C# sends none until the game first writes one
        self.last_mask = np.zeros((*shape, sum(layout.discrete_branches)), bool)
        self.mask_written = np.zeros(shape, bool)
        self.continuous = np.zeros((*shape, layout.continuous_size), np.float32)
        self.discrete = np.zeros((*shape, len(layout.discrete_branches)), np.int32)
        self.infos: list[AgentInfo] = []

    def brain_parameters(self) -> BrainParametersProto:
        branches = list(self.layout.discrete_branches)
        action_spec = ActionSpecProto(
            num_continuous_actions=self.layout.continuous_size,
            num_discrete_actions=len(branches),
            discrete_branch_sizes=branches,
        )
        return BrainParametersProto(
            brain_name=self.layout.name, is_training=True, action_spec=action_spec
        )

    def slots(self, areas: Iterable[int]) -> Iterator[tuple[int, int]]:
        """Every (area, slot) of ``areas``, area by area."""
        return ((area, slot) for area in areas for slot in range(self.layout.agents_per_area))

    def queue(
        self,
        agents: Iterable[tuple[int, int]],
        observations: np.ndarray,
        *,
        done: bool,
        interrupted: np.ndarray | None = None,
    ) -> None:
        """Queue an info for each (area, slot) of ``agents``, with the rewards since its last
        decision; ``interrupted[area]`` says which terminal infos reached the step limit."""
        for area, slot in agents:
            max_step = interrupted is not None and bool(interrupted[area])
            info = self.info(area, slot, observations[area, slot], done=done, max_step=max_step)
            self.infos.append(info)

    def info(
        self, area: int, slot: int, obs: np.ndarray, *, done: bool, max_step: bool
    ) -> AgentInfo:
        """One agent's info for the next output; takes its rewards since the last decision."""
        fields = {
            "reward": float(self.reward[area, slot]),
            "group_reward": float(self.group_reward[area, slot]),
            "done": done,
            "max_step_reached": max_step,
            "id": int(self.ids[area, slot]),
            "group_id": int(self.group_ids[area, slot]),
        }
        mask = self.last_mask[area, slot].tolist() if self.mask_written[area, slot] else None
        self.reward[area, slot] = 0.0
        self.group_reward[area, slot] = 0.0
        return AgentInfo(fields=fields, observation=obs.tolist(), mask=mask)

    def set_actions(self, actions: Sequence[Any]) -> None:
        """Store the actions of every agent, given in the order their decisions were sent."""
        flat_count = self.ids.size
        if len(actions) < flat_count:
            raise ActionCountError(
                f"{self.layout.name}: {len(actions)} actions for {flat_count} decisions"
            )
        for index, action in enumerate(actions[:flat_count]):
            area, slot = divmod(index, self.ids.shape[1])
            if self.continuous.shape[2]:
                self.continuous[area, slot] = action.continuous_actions
            if self.discrete.shape[2]:
                self.discrete[area, slot] = action.discrete_actions


class Agents:
    """The agents of every behavior of a game, with the two id counters they share."""

    def __init__(self, *, layouts: Sequence[Any], num_areas: int) -> None:
        self._agent_ids: Iterator[int] = count(0)
        self._group_ids: Iterator[int] = count(1)
        self._brains_sent: set[str] = set()
        self.behaviors = [BehaviorAgents(layout=layout, num_areas=num_areas) for layout in layouts]
        for area in range(num_areas):
            for behavior in self.behaviors:
                if behavior.layout.grouped:
                    behavior.group_ids[area, :] = next(self._group_ids)
        self.respawn(range(num_areas))

    def has_infos(self) -> bool:
        return any(behavior.infos for behavior in self.behaviors)

    def actions(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per behavior, the (continuous, discrete) actions a game step takes."""
        return [(behavior.continuous, behavior.discrete) for behavior in self.behaviors]

    def add_rewards(
        self, rewards: Sequence[np.ndarray], group_rewards: Sequence[np.ndarray]
    ) -> None:
        for b, behavior in enumerate(self.behaviors):
            behavior.reward += rewards[b]
            behavior.group_reward += group_rewards[b]

    def queue_decisions(
        self, observations: Sequence[np.ndarray], masks: Sequence[np.ndarray | None]
    ) -> None:
        """Every agent requests a decision; a game's masks are kept for later terminal infos."""
        for b, behavior in enumerate(self.behaviors):
            if masks[b] is not None:
                behavior.last_mask[:] = masks[b]
                behavior.mask_written[:] = True
            behavior.queue(np.ndindex(behavior.ids.shape), observations[b], done=False)
            behavior.started[:] = True

    def queue_episode_ends(
        self, observations: Sequence[np.ndarray], areas: np.ndarray, *, interrupted: np.ndarray
    ) -> None:
        """The terminal infos of every agent of ``areas``."""
        for b, behavior in enumerate(self.behaviors):
            behavior.queue(
                behavior.slots(areas), observations[b], done=True, interrupted=interrupted
            )

    def destroy_started(self, observations: Sequence[np.ndarray]) -> None:
        """Destroyed agents that had decided send a terminal info (C#'s Disabled done reason);
        new agents replace those of every area where one had started."""
        for b, behavior in enumerate(self.behaviors):
            behavior.queue(
                zip(*np.nonzero(behavior.started), strict=True), observations[b], done=True
            )
        started = np.flatnonzero(np.any([b.started.any(axis=1) for b in self.behaviors], axis=0))
        self.respawn(started)

    def respawn(self, areas: Iterable[int]) -> None:
        """Replace the agents of ``areas`` by new ones (new ids; groups keep theirs)."""
        for area in areas:
            for behavior in self.behaviors:
                for slot in range(behavior.layout.agents_per_area):
                    behavior.ids[area, slot] = next(self._agent_ids)
                    behavior.mask_written[area, slot] = False

    def reset_areas(self, areas: np.ndarray) -> None:
        for behavior in self.behaviors:
            behavior.started[areas] = False
            # C#'s ResetData: stored actions are zeros until the agent's next decision
            behavior.continuous[areas] = 0.0
            behavior.discrete[areas] = 0

    def write_output(self, output: UnityOutputProto) -> None:
        """Move the queued infos into ``output``, with the brain parameters of each behavior
        the first time it has infos to send."""
        brains = []
        for behavior in self.behaviors:
            name = behavior.layout.name
            # every subscribed brain has an entry, empty or not, as in C#
            protos = output.rl_output.agentInfos[name].value
            for info in behavior.infos:
                info.write(protos.add())
            if behavior.infos and name not in self._brains_sent:
                brains.append(behavior.brain_parameters())
            behavior.infos = []
        if brains:
            output.rl_initialization_output.brain_parameters.extend(brains)
            self._brains_sent.update(brain.brain_name for brain in brains)

    def take_actions(self, rl_input: UnityRLInputProto) -> None:
        """Store the actions of each behavior that ``rl_input`` holds actions for."""
        for behavior in self.behaviors:
            actions = rl_input.agent_actions.get(behavior.layout.name)
            if actions is not None and len(actions.value):
                behavior.set_actions(actions.value)
