"""Recording one side's demonstrations while a match is played (``ghost-eval match --record-demo``).

Vocabulary:

- **recorded side**: whose agent steps go into the ``.demo`` file. By default the policy's side
  (in a ``BaseEnv`` where the policy plays each team in turn, whichever team it plays); a
  behavior name (``Tennis``, ``Goalie``) records every team of that behavior; ``Name?team=N``
  records that team only. A ``.demo`` file holds one behavior, so the side must name one.
- **counted episodes**: in a built-in game, the recording keeps exactly the matches the results
  count (each arena plays its share; an arena past its share plays on, unrecorded). A general
  ``BaseEnv`` names no arenas: it keeps the first episodes of the recorded side to end, as many
  as the counted matches hold (matches x the side's agents per match, read at the reset), so
  matches that end together with the last counted one add none.

The environment is wrapped in ``envs.demo_recorder.DemoRecorder``; the players see the same steps
and the game the same actions, so the results are those of the same match unrecorded. The file
appears whole when the match ends (it replaces an older one), or not at all.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np
from mlagents_envs.base_env import BaseEnv

from envs.behavior_id import BehaviorId
from envs.demo_recorder import DemoRecorder
from ghost.command_line import output_file
from ghost.exceptions import ConfigError, ResultsWriteError
from ghost.play.matches import Match

#: the suffix of demonstration files; a folder given as the path gets ``<Behavior>.demo``
DEMO_SUFFIX = ".demo"


@attrs.frozen(kw_only=True)
class DemoRequest:
    """What to record while a match is played (``Venue.play``'s ``record_demo``).

    Attributes:
        path: the ``.demo`` file to write (its folders are made; an existing file is replaced),
            or a folder to write ``<Behavior>.demo`` into.
        side: the recorded side: None for the policy's, ``Name`` for every team of a behavior,
            ``Name?team=N`` for one team.
    """

    path: str | Path
    side: str | None = None


@attrs.frozen(kw_only=True)
class RecordedDemo:
    """A demonstration file written during a match.

    Attributes:
        path: the file.
        behavior: the recorded behavior: ``Name?team=N`` when one team's agents were recorded,
            ``Name`` when several teams' were.
        episodes: agent episodes in the file (a match gives one per recorded agent).
        steps: rows in the file (agent steps, each episode's last observation included).
    """

    path: Path
    behavior: str
    episodes: int
    steps: int

    @property
    def line(self) -> str:
        """The sentence a command prints once the file is written."""
        return (
            f"recorded {self.episodes} episodes ({self.steps} steps) of {self.behavior} to "
            f"{self.path}"
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready values."""
        return {
            "path": str(self.path),
            "behavior": self.behavior,
            "episodes": self.episodes,
            "steps": self.steps,
        }


# -- which side ----------------------------------------------------------------------------------
def named_side(side: str, behavior_names: Sequence[str], *, game: str) -> tuple[str, int | None]:
    """The behavior name and team (None: every team) ``side`` names among ``behavior_names``.

    Args:
        side: ``Name`` or ``Name?team=N``.
        behavior_names: the environment's behaviors (``Name?team=N``).
        game: the game's name, for the error.

    Returns:
        ``(Name, team or None)``.

    Raises:
        ConfigError: no such behavior (or team).
    """
    wanted = BehaviorId.parse(side)
    team = wanted.team if "?team=" in side else None
    ids = [BehaviorId.parse(name) for name in behavior_names]
    if not any(b.name == wanted.name and team in (None, b.team) for b in ids):
        choices = sorted({b.name for b in ids} | set(behavior_names))
        raise ConfigError(
            f"record side {side!r} is not a behavior of {game}; choose one of {', '.join(choices)}"
        )
    return wanted.name, team


def policy_side(names: Sequence[str], *, game: str) -> str:
    """The one behavior name (``Name``) among the policy's behaviors ``names``.

    Raises:
        ConfigError: the policy plays several behaviors (a ``.demo`` file holds one).
    """
    found = sorted({BehaviorId.parse(name).name for name in names})
    if len(found) != 1:
        raise ConfigError(
            f"the policy plays {' and '.join(found)} in {game}, and a demonstration file holds "
            "one behavior; name the one to record (--record-side NAME, or record_demo side=)"
        )
    return found[0]


def _label(name: str, team: int | None) -> str:
    return name if team is None else f"{name}?team={team}"


def open_recorder(
    env: BaseEnv,
    request: DemoRequest,
    *,
    name: str,
    team: int | None,
    keep_episode: Callable[[str, int], bool] | None = None,
) -> DemoRecorder:
    """``env`` wrapped in a recorder of ``name`` (``team``'s agents, or every team's) writing to
    the file of ``request``.

    Raises:
        ResultsWriteError: the file cannot be written there.
        ConfigError: the teams of ``name`` observe or act differently (record one team).
    """
    path = output_file(request.path, f"{name}{DEMO_SUFFIX}")
    try:
        return DemoRecorder(
            env, path=path, behavior_name=name, team=team, keep_episode=keep_episode
        )
    except OSError as error:
        raise ResultsWriteError(
            f"cannot write {path}: {error.strerror or error}; pass another --record-demo FILE"
        ) from None
    except ValueError as error:
        raise ConfigError(f"cannot record {_label(name, team)}: {error}") from None


def finish_recording(recorder: DemoRecorder, behavior: str) -> RecordedDemo:
    """Write the recorder's file and say what it holds.

    Raises:
        ResultsWriteError: the file cannot be put in place.
        DemoFileError: no episode of the recorded side ended.
    """
    try:
        path = recorder.finish()
    except OSError as error:
        raise ResultsWriteError(
            f"cannot write {recorder.writer.path}: {error.strerror or error}"
        ) from None
    return RecordedDemo(
        path=path, behavior=behavior, episodes=recorder.writer.episodes,
        steps=recorder.writer.steps,
    )  # fmt: skip


# -- a built-in game's arenas ---------------------------------------------------------------------
class ArenaRecording:
    """A built-in game's ``Match`` played through a ``DemoRecorder``: a ``head_to_head.Playable``
    that keeps the matches ``count_results`` counts, each arena's first ``quota``.

    Args:
        match: the seated game, freshly opened (its game reset itself when it was made).
        request: what to record.
        quota: matches counted in each arena (``head_to_head.arena_quotas``).

    Raises:
        ConfigError: a side that is no behavior of the game.
        ResultsWriteError: the file cannot be written there.
    """

    def __init__(self, match: Match, request: DemoRequest, *, quota: np.ndarray) -> None:
        behaviors = list(match.env.behavior_specs)
        team: int | None
        if request.side is None:
            name, team = policy_side(match.side, game=match.game), match.team
        else:
            name, team = named_side(request.side, behaviors, game=match.game)
        self.match = match
        self.behavior = _label(name, team)
        self._quota = np.asarray(quota)
        self._ended = np.zeros(match.num_arenas, dtype=np.int64)
        self.recorder = open_recorder(
            match.env, request, name=name, team=team, keep_episode=self._counted
        )
        # the game reset itself when it was made; a second reset would change the matches
        self.recorder.start()

    @property
    def game(self) -> str:
        """The game's name."""
        return self.match.game

    @property
    def num_arenas(self) -> int:
        """Matches played at once."""
        return self.match.num_arenas

    @property
    def max_episode_steps(self) -> int:
        """The game's step limit."""
        return self.match.max_episode_steps

    def step(self) -> None:
        """Every seat acts, through the recorder; the game advances one step."""
        self.match.step(self.recorder)

    def ended(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The match's ended games (``Match.ended``), counted per arena."""
        arenas, results, interrupted = self.match.ended()
        np.add.at(self._ended, arenas, 1)
        return arenas, results, interrupted

    def finish(self) -> RecordedDemo:
        """Write the file (see ``finish_recording``)."""
        return finish_recording(self.recorder, self.behavior)

    def discard(self) -> None:
        """Leave the file as it was (nothing is left to discard once finished)."""
        self.recorder.writer.discard()

    def _counted(self, behavior_name: str, agent_id: int) -> bool:
        """Whether the episode of ``agent_id`` that just ended is a counted match: its arena had
        ended fewer than its quota before this step (``ended`` counts this one after)."""
        arena = int(self.match.env.arena_of(behavior_name, np.array([agent_id]))[0])
        return bool(self._ended[arena] < self._quota[arena])


# -- any BaseEnv ----------------------------------------------------------------------------------
class EnvRecording:
    """One side of a ``BaseEnv`` recorded across the matches of one head-to-head, where the policy
    may play each team in turn (``ghost.play.base_env_matches.EnvGames``).

    Reset and step the environment through ``env``; after each reset say which team the policy
    plays and how many matches are counted (``share_starts``).

    Args:
        env: the open environment.
        request: what to record.
        teams: team number → its behavior names (``Name?team=N``).
        playing: the teams the policy plays, in turn.
        game: the environment's name, for messages.

    Raises:
        ConfigError: a side that is no behavior of the environment, or a policy that plays
            several behaviors with no side named.
        ResultsWriteError: the file cannot be written there.
    """

    def __init__(
        self,
        env: BaseEnv,
        request: DemoRequest,
        *,
        teams: Mapping[int, Sequence[str]],
        playing: Sequence[int],
        game: str,
    ) -> None:
        self._teams = teams
        self._follows_policy = request.side is None
        #: behavior name -> episodes still kept in this share (None: every one)
        self._left: dict[str, int | None] = {}
        if request.side is None:
            names = [name for team in playing for name in teams[team]]
            name = policy_side(names, game=game)
            team = playing[0] if len(playing) == 1 else None
        else:
            every = [name for names in teams.values() for name in names]
            name, team = named_side(request.side, every, game=game)
        self.behavior = _label(name, team)
        self.recorder = open_recorder(env, request, name=name, team=team, keep_episode=self._keep)

    @property
    def env(self) -> BaseEnv:
        """The environment, recorded: what the matches reset and step."""
        return self.recorder

    def share_starts(self, *, team: int, matches: int, scorer: str) -> None:
        """Matches start from a reset: the policy plays ``team``, ``matches`` are counted, each
        scored by an agent (or a multi-agent group) of behavior ``scorer``."""
        parallel = _units(self.recorder.get_steps(scorer)[0].group_id)
        self._left = {}
        for name in self.recorder.recorded:
            if self._follows_policy and name not in self._teams[team]:
                continue
            agents = len(self.recorder.get_steps(name)[0])
            # agents that ask for no decision at a reset leave the count unknown: keep them all
            self._left[name] = -(-matches * agents // parallel) if agents and parallel else None

    def finish(self) -> RecordedDemo:
        """Write the file (see ``finish_recording``); the environment stays open."""
        return finish_recording(self.recorder, self.behavior)

    def discard(self) -> None:
        """Leave the file as it was (nothing is left to discard once finished)."""
        self.recorder.writer.discard()

    def _keep(self, behavior_name: str, agent_id: int) -> bool:
        if behavior_name not in self._left:
            return False
        left = self._left[behavior_name]
        if left is None:
            return True
        self._left[behavior_name] = left - 1
        return left > 0


def _units(group_ids: np.ndarray) -> int:
    """Matches played at once by the agents of ``group_ids``: one per agent outside a group
    (id 0), one per multi-agent group."""
    groups = np.asarray(group_ids)
    return int((groups == 0).sum()) + len(np.unique(groups[groups != 0]))
