"""``TeamPolicy``: what one team acts with inside ``mlagents-learn``.

ML-Agents keeps one policy object per behavior id (``Pong?team=1``) and asks it for the actions of
every environment worker in turn, passing the worker's index. A ``TeamPolicy`` holds one ML-Agents
policy per opponent in play and answers each worker with the opponent assigned to it, so the
``opponents_per_swap`` draws of a ghosted team are spread over ``--num-envs`` workers. The
training areas inside one Unity build arrive in one request without an area index, so every area
of one worker faces the same opponent (the limit of ML-Agents' policy plumbing).

Recurrent memories and previous actions are kept by agent id, which is unique across workers: the
members share one set of those tables, the ones ML-Agents' agent processor reads on this object.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from mlagents.trainers.policy import Policy

from envs.stepping import ARENA_STRIDE
from ghost.core.opponents import Opponent, opponent_slots


def worker_arena(worker_id: int) -> int:
    """The arena key of a worker's matches (areas inside one worker cannot be told apart)."""
    return worker_id * ARENA_STRIDE


def worker_of(global_agent_id: str) -> int:
    """The worker index in ML-Agents' global agent id ``agent_<worker>-<id>`` (0 if unknown)."""
    head = global_agent_id.rpartition("-")[0]
    digits = head.rpartition("_")[2]
    return int(digits) if digits.isdigit() else 0


class TeamPolicy(Policy):
    """One team's acting policy: the learner's weights, or frozen opponents spread over workers.

    Args:
        make_member: creates one more ML-Agents policy of this behavior (same spec and network).
    """

    def __init__(self, make_member: Callable[[], Policy]) -> None:
        first = make_member()
        super().__init__(first.seed, first.behavior_spec, first.network_settings)
        self.m_size = first.m_size
        self._make_member = make_member
        self._members: list[Policy] = []
        self._in_play = 1
        self._adopt(first)

    def _adopt(self, member: Policy) -> None:
        member.memory_dict = self.memory_dict
        member.previous_memory_dict = self.previous_memory_dict
        member.previous_action_dict = self.previous_action_dict
        self._members.append(member)

    def play(self, weights: Sequence[Any]) -> None:
        """Act with these weights from now on, ``weights[i]`` in the workers of slot ``i``."""
        while len(self._members) < len(weights):
            self._adopt(self._make_member())
        for member, member_weights in zip(self._members, weights, strict=False):
            member.load_weights(member_weights)
        self._in_play = len(weights)

    def face(self, opponents: Sequence[Opponent]) -> None:
        """Act as these opponents from now on (snapshots' weights, or fixed opponents' policies)."""
        self.play([_weights_of(opponent) for opponent in opponents])

    def member_for(self, worker_id: int) -> Policy:
        if self._in_play == 1:
            return self._members[0]
        slot = int(opponent_slots(np.asarray([worker_arena(worker_id)]), self._in_play)[0])
        return self._members[slot]

    def get_action(self, decision_requests: Any, worker_id: int = 0) -> Any:
        return self.member_for(worker_id).get_action(decision_requests, worker_id)

    def increment_step(self, n_steps: int) -> int:
        return self._members[0].increment_step(n_steps)

    def get_current_step(self) -> int:
        return self._members[0].get_current_step()

    def load_weights(self, values: Any) -> None:
        self.play([values])

    def get_weights(self) -> Any:
        return self._members[0].get_weights()

    def init_load_weights(self) -> None:
        for member in self._members:
            member.init_load_weights()


def _weights_of(opponent: Opponent) -> Any:
    if opponent.fixed is not None:
        return opponent.fixed.policy
    assert opponent.snapshot is not None
    return opponent.snapshot.weights
