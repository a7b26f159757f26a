"""Transitions with their group mates: what MA-POCA's centralized critic reads.

A group (``group_id`` > 0, one per team of one match in a Unity scene) shares the critic's view: a
transition's **mates** are the other agents of its group whose transitions were completed in the
same environment step. They give the critic their observations and actions at that step, their
individual rewards (added to the agent's reward, as ML-Agents' POCA does) and, where a trajectory
stops, their next observations for the bootstrap value. An agent that has finished leaves the group
from the next step on: its mates' later transitions simply have one mate fewer.

Mates are stored as row numbers into the same batch of transitions, never as copies, so a buffer of
grouped transitions costs one small integer array more than an ungrouped one. (ML-Agents keeps a
mate's last known state until it reports again; agents that skip decisions while their mates act are
therefore absent here rather than stale. Built-in games and scenes with one decision period per
group never differ.)
"""

from __future__ import annotations

import attrs
import numpy as np

from trainers.rollout import Transitions


def find_mates(groups: np.ndarray) -> np.ndarray:
    """For rows with group keys ``groups`` (0: no group), ``[rows, width]`` row numbers of each
    row's group mates, padded with -1 (``width``: the largest group minus one)."""
    n = len(groups)
    grouped = np.flatnonzero(groups != 0)
    if len(grouped) == 0:
        return np.full((n, 0), -1, dtype=np.int64)
    order = np.argsort(groups[grouped], kind="stable")
    rows, keys = grouped[order], groups[grouped][order]
    first = np.r_[True, keys[1:] != keys[:-1]]
    group = np.cumsum(first) - 1
    starts = np.flatnonzero(first)
    position = np.arange(len(rows)) - starts[group]
    width = int(np.diff(np.r_[starts, len(rows)]).max())
    members = np.full((len(starts), width), -1, dtype=np.int64)
    members[group, position] = rows
    # every member column except the row's own
    columns = np.arange(width - 1)[None, :]
    columns = columns + (columns >= position[:, None])
    mates = np.full((n, width - 1), -1, dtype=np.int64)
    mates[rows] = members[group[:, None], columns]
    return mates


@attrs.frozen
class GroupTransitions:
    """``own`` transitions and, per row, the rows of its group mates (``mates``, -1: none)."""

    own: Transitions
    mates: np.ndarray

    @staticmethod
    def of(transitions: Transitions) -> GroupTransitions:
        """Group transitions completed in one environment step."""
        assert transitions.groups is not None, "transitions come from a TransitionAssembler"
        return GroupTransitions(own=transitions, mates=find_mates(transitions.groups))

    def __len__(self) -> int:
        return len(self.own)

    @property
    def slots(self) -> np.ndarray:
        return self.own.slots

    @property
    def continues(self) -> np.ndarray:
        return self.own.continues

    @staticmethod
    def concatenate(parts: list[GroupTransitions]) -> GroupTransitions:
        if len(parts) == 1:
            return parts[0]
        width = max(p.mates.shape[1] for p in parts)
        mates, start = [], 0
        for part in parts:
            padded = np.full((len(part), width), -1, dtype=np.int64)
            shifted = np.where(part.mates >= 0, part.mates + start, -1)
            padded[:, : part.mates.shape[1]] = shifted
            mates.append(padded)
            start += len(part)
        return GroupTransitions(
            own=Transitions.concatenate([p.own for p in parts]), mates=np.concatenate(mates)
        )

    # -- what the critic and the returns read -------------------------------------------------
    @property
    def members(self) -> np.ndarray:
        """``[rows, 1 + width]``: the row itself, then its mates (-1: absent)."""
        return np.concatenate([np.arange(len(self))[:, None], self.mates], axis=1)

    def group_rewards_sum(self) -> np.ndarray:
        """Each row's reward as POCA learns it: its own individual and group reward plus the
        individual rewards of its mates at the same step."""
        own = self.own
        assert own.group_rewards is not None
        individual = own.rewards - own.group_rewards
        mates = self.mates
        from_mates = np.where(mates >= 0, individual[np.maximum(mates, 0)], 0.0).sum(axis=1)
        return (own.rewards + from_mates).astype(np.float32)

    def group_finished(self) -> np.ndarray:
        """Rows after which nothing is left to bootstrap: the agent's episode really ended (not
        interrupted) and every mate's episode ended at the same step."""
        own = self.own
        assert own.ended is not None
        mates = self.mates
        mates_ended = np.where(mates >= 0, own.ended[np.maximum(mates, 0)], True).all(axis=1)
        return own.dones & mates_ended
