"""Who plays whom inside RLlib's env runners, and what the runners tell the driver.

Module ids: the learner is ``"main"``; with ``self_play.league`` every exploiter has a module of
its own, ``"exploiter_<index>"`` (RLlib trains these too, each from the turns it plays); the
frozen opponents of a ghosted team ``t`` are ``"ghost_t<t>_<slot>"``, one per opponent in play
(``self_play.opponents_per_swap``). The driver's self-play cycle decides who plays; each env
runner holds the last ``Routing`` the driver pushed to it:

- an episode is stamped when RLlib creates it (``stamp_episode``): the learning team and the
  module playing the learning turn (``"main"`` or an exploiter's) of that moment, and the
  episode's opponent slot, chosen from the env runner and the env index as ``opponent_slots``
  spreads arenas, so every slot is in play when there are enough envs. The stamp lives in the
  episode's ``custom_data``; on Ray 2.44 and 2.45, whose episodes have none, in a table by
  episode id until the episode ends;
- ``map_agent_to_module`` (the policy mapping function) reads the stamp: the learning team's
  agents act with the stamped learning module, every other team's with its ghost module of the
  episode's slot;
- each env runner keeps a ``Tally`` of the agent steps of each module and of the finished
  matches, which the driver takes after every training iteration (``take_tally``).
"""

from __future__ import annotations

import weakref
from collections import Counter
from collections.abc import Iterable
from typing import Any

import attrs
import numpy as np

from envs.stepping import ARENA_STRIDE
from ghost.core.opponents import opponent_slots
from ghost.core.ratings import result_from_reward
from ghost.integrations.rllib.env import FINAL_REWARD, INTERRUPTED, team_of

LEARNER_MODULE = "main"
_GHOST_PREFIX = "ghost_t"
_EXPLOITER_PREFIX = "exploiter_"
_LEARNING_TEAM = "ghost_learning_team"
_LEARNING_MODULE = "ghost_learning_module"
_SLOT = "ghost_slot"


def ghost_module(team: int, slot: int) -> str:
    """The module id of opponent ``slot`` of ghosted team ``team``."""
    return f"{_GHOST_PREFIX}{team}_{slot}"


def exploiter_module(index: int) -> str:
    """The module id of league exploiter ``index`` (``ghost.core.league.Exploiter.index``)."""
    return f"{_EXPLOITER_PREFIX}{index}"


@attrs.frozen
class Routing:
    """What the driver tells every env runner: who learns, with which module, and how many
    opponents are in play."""

    learning_team: int
    slots: int
    learning_module: str = LEARNER_MODULE


@attrs.frozen
class MatchResult:
    """One finished match: the learning team and module when it started, its opponent slot, its
    score."""

    learning_team: int
    slot: int
    score: float
    learning_module: str = LEARNER_MODULE


@attrs.define
class Tally:
    """What one env runner saw since the driver last took its tally."""

    learner_steps: int = 0
    #: agent steps of each exploiter module
    exploiter_steps: Counter[str] = attrs.Factory(Counter)
    #: agent steps of each ghosted team
    ghost_steps: Counter[int] = attrs.Factory(Counter)
    results: list[MatchResult] = attrs.Factory(list)

    def merge(self, other: Tally) -> None:
        self.learner_steps += other.learner_steps
        self.exploiter_steps.update(other.exploiter_steps)
        self.ghost_steps.update(other.ghost_steps)
        self.results.extend(other.results)


# Per env runner, in the process that runs it (the driver pushes and takes through
# ``foreach_env_runner``, which runs a function beside each runner).
_ROUTINGS: weakref.WeakKeyDictionary[Any, Routing] = weakref.WeakKeyDictionary()
_TALLIES: weakref.WeakKeyDictionary[Any, Tally] = weakref.WeakKeyDictionary()


def set_routing(env_runner: Any, routing: Routing) -> None:
    _ROUTINGS[env_runner] = routing


def take_tally(env_runner: Any) -> Tally:
    """The env runner's tally since the last call (then a fresh one starts)."""
    return _TALLIES.pop(env_runner, None) or Tally()


def _tally(env_runner: Any) -> Tally:
    found = _TALLIES.get(env_runner)
    if found is None:
        found = _TALLIES[env_runner] = Tally()
    return found


# Ray < 2.46: stamps by episode id (its episodes have no custom_data and take no new attributes;
# the id is kept when RLlib cuts an episode into chunks)
_STAMPS_BY_ID: dict[str, dict[str, Any]] = {}


def _writable_stamp(episode: Any) -> dict[str, Any]:
    try:
        return episode.custom_data
    except AttributeError:
        return _STAMPS_BY_ID.setdefault(episode.id_, {})


def stamp_episode(episode: Any, env_runner: Any, env_index: int) -> None:
    """Fix the learning team and opponent slot of a new episode (before any agent is mapped)."""
    routing = _ROUTINGS.get(env_runner)
    if routing is None:  # a runner the driver never routed (evaluation): main plays every seat
        return
    arena = int(getattr(env_runner, "worker_index", 0) or 0) * ARENA_STRIDE + env_index
    stamp = _writable_stamp(episode)
    stamp[_LEARNING_TEAM] = routing.learning_team
    stamp[_LEARNING_MODULE] = routing.learning_module
    stamp[_SLOT] = int(opponent_slots(np.asarray([arena]), routing.slots)[0])


def map_agent_to_module(agent_id: str, episode: Any, **kwargs: Any) -> str:
    """RLlib's policy mapping function: the learning team's agents to the episode's learning
    module (``"main"`` or an exploiter's), the others to their ghost module of the episode's
    slot."""
    stamp = _stamp_of(episode)
    learning = stamp.get(_LEARNING_TEAM)
    team = team_of(agent_id)
    if learning is None:
        return LEARNER_MODULE
    if team == learning:
        return stamp.get(_LEARNING_MODULE, LEARNER_MODULE)
    return ghost_module(team, stamp[_SLOT])


def _stamp_of(episode: Any) -> dict[str, Any]:
    """An episode's stamp; empty while RLlib is still building it (cutting an episode chunk
    asks the mapping function before its custom data exists, then keeps the known mapping)."""
    try:
        return episode.custom_data
    except AttributeError:
        episode_id = getattr(episode, "id_", None)
        return {} if episode_id is None else _STAMPS_BY_ID.get(episode_id, {})


def record_match(episode: Any, env_runner: Any) -> None:
    """Tally a finished episode's result from the learning team's side (a match cut off by a
    step limit is no result)."""
    stamp = _stamp_of(episode)
    _STAMPS_BY_ID.pop(episode.id_, None)
    learning = stamp.get(_LEARNING_TEAM)
    if learning is None:
        return
    infos = episode.get_infos(-1)
    ours = sorted(agent for agent in infos if team_of(agent) == learning)
    finals = [infos[agent] for agent in ours if FINAL_REWARD in infos[agent]]
    if not finals or finals[0].get(INTERRUPTED, False):
        return
    score = result_from_reward(float(finals[0][FINAL_REWARD]))
    _tally(env_runner).results.append(
        MatchResult(
            learning_team=learning,
            slot=stamp[_SLOT],
            score=score,
            learning_module=stamp.get(_LEARNING_MODULE, LEARNER_MODULE),
        )  # fmt: skip
    )


def count_steps(samples: Iterable[Any], env_runner: Any) -> None:
    """Tally the agent steps of sampled episode chunks by who acted: the learner, an exploiter or
    a ghost."""
    if env_runner not in _ROUTINGS:
        return
    tally = _tally(env_runner)
    for episode in samples:
        for agent, single in episode.agent_episodes.items():
            if single.module_id == LEARNER_MODULE:
                tally.learner_steps += len(single)
            elif str(single.module_id).startswith(_EXPLOITER_PREFIX):
                tally.exploiter_steps[str(single.module_id)] += len(single)
            elif str(single.module_id).startswith(_GHOST_PREFIX):
                tally.ghost_steps[team_of(agent)] += len(single)
