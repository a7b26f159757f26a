"""The typed ``Name?team=N`` behavior id, parsed once at the environment boundary."""

from __future__ import annotations

import attrs

_TEAM_MARK = "?team="


@attrs.frozen(order=True)
class BehaviorId:
    """A behavior as the environment names it: ``name`` keys the trainer config, ``team`` the side.

    Names may contain any character (``:``, ``#``, spaces, even ``?``); only the last ``?team=``
    followed by an integer is read as the team. A name without it is team 0.
    """

    name: str
    team: int = 0

    @classmethod
    def parse(cls, behavior_name: str) -> BehaviorId:
        """Read ``Name?team=N`` (or a bare ``Name``) into a ``BehaviorId``."""
        head, mark, tail = behavior_name.rpartition(_TEAM_MARK)
        if mark and tail.lstrip("-").isdigit():
            return cls(head, int(tail))
        return cls(behavior_name, 0)

    @property
    def full_name(self) -> str:
        """The string form the environment uses (``Name?team=N``)."""
        return f"{self.name}{_TEAM_MARK}{self.team}"

    def __str__(self) -> str:
        return self.full_name
