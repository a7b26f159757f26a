"""The same seed plays the same run whatever ``PYTHONHASHSEED`` a process has.

RLlib's ``MultiAgentEpisode`` hands out its agents as ``set``s of agent ids, and its connectors
batch the agents in a set's order. A set of strings iterates in the order of the strings'
hashes, which Python salts per process, so the same run would draw its actions from torch's
random stream in another order (which module samples first, which agent of a module gets which
row) and cut the learner's minibatches from other rows in every process. ``AgentOrder`` puts
each batch in one order just before RLlib maps agents to modules: episodes as RLlib lists them,
then agent ids sorted. ``pin_agent_order`` adds it to an env runner's env-to-module pipeline and
``pin_learner_agent_order`` to a learner's pipeline, each once.

In the learner, RLlib's advantage estimation splits a module's rows by episode lengths taken in
RLlib's own order; agents of one module in one episode are therefore reordered only when their
lengths are equal (true of every game shipped here), and otherwise keep RLlib's order.
"""

from __future__ import annotations

import logging
import weakref
from collections import defaultdict
from typing import Any

from ray.rllib.connectors.common.agent_to_module_mapping import AgentToModuleMapping
from ray.rllib.connectors.connector_v2 import ConnectorV2

logger = logging.getLogger(__name__)

# a batch column of one agent's items: {(episode_id, agent_id, module_id): items}
Key = tuple[Any, Any, Any]

# env runners and learners whose pipeline already has the connector
_PINNED: weakref.WeakSet[Any] = weakref.WeakSet()


class AgentOrder(ConnectorV2):
    """Connector piece: every per-agent column in episode order, then agent id order.

    The module order and each module's rows that ``AgentToModuleMapping`` builds next follow
    the order of the per-agent columns. A batch whose per-agent columns hold different agents
    is left as it is (reordering one column alone would misalign the others).
    """

    def __call__(
        self, *, rl_module: Any, batch: dict[str, Any], episodes: list[Any], **kwargs: Any
    ) -> Any:
        columns = [column for column, data in batch.items() if _per_agent(data)]
        if not columns:
            return batch
        reference = batch[columns[0]]
        if any(batch[column].keys() != reference.keys() for column in columns[1:]):
            return batch
        position: dict[Any, int] = {}
        for index, episode in enumerate(episodes):
            position.setdefault(episode.id_, index)
        order = agent_order(reference, position)
        for column in columns:
            data = batch[column]
            batch[column] = {key: data[key] for key in order}
        return batch


def agent_order(data: dict[Key, Any], position: dict[Any, int]) -> list[Key]:
    """``data``'s keys by episode ``position`` (unknown episodes last, as they came), then by
    agent id; agents of one module in one episode whose item counts differ keep their order."""
    by_episode: dict[int, list[Key]] = defaultdict(list)
    for key in data:
        by_episode[position.get(key[0], len(position))].append(key)
    order: list[Key] = []
    for index in sorted(by_episode):
        keys = by_episode[index]
        if index == len(position):
            order += keys
        else:
            order += _episode_order(keys, data)
    return order


def _episode_order(keys: list[Key], data: dict[Key, Any]) -> list[Key]:
    ordered = sorted(keys, key=lambda key: str(key[1]))
    by_module: dict[Any, list[Key]] = defaultdict(list)
    for key in keys:
        by_module[key[2]].append(key)
    for module_id, group in by_module.items():
        if len({len(data[key]) for key in group}) > 1:
            slots = [i for i, key in enumerate(ordered) if key[2] == module_id]
            for slot, key in zip(slots, group, strict=True):
                ordered[slot] = key
    return ordered


def _per_agent(data: Any) -> bool:
    return (
        isinstance(data, dict)
        and bool(data)
        and all(isinstance(key, tuple) and len(key) == 3 for key in data)
    )


def pin_agent_order(env_runner: Any) -> None:
    """Add ``AgentOrder`` before ``AgentToModuleMapping`` in ``env_runner``'s env-to-module
    pipeline, once."""
    _pin(env_runner, "_env_to_module")


def pin_learner_agent_order(learner: Any) -> None:
    """Add ``AgentOrder`` before ``AgentToModuleMapping`` in ``learner``'s learner pipeline,
    once."""
    _pin(learner, "_learner_connector")


def _pin(owner: Any, attribute: str) -> None:
    """A pipeline without ``AgentToModuleMapping`` is left as it is, with a warning."""
    if owner in _PINNED:
        return
    _PINNED.add(owner)
    pipeline = getattr(owner, attribute, None)
    pieces = getattr(pipeline, "connectors", None)
    if pipeline is None or pieces is None:
        return
    if not any(type(piece) is AgentToModuleMapping for piece in pieces):
        logger.warning(
            "%s of %s has no AgentToModuleMapping: its agents stay in RLlib's set order, so runs "
            "with the same seed match only under the same PYTHONHASHSEED",
            attribute.strip("_"),
            type(owner).__name__,
        )
        return
    if not any(isinstance(piece, AgentOrder) for piece in pieces):
        pipeline.insert_before(AgentToModuleMapping, AgentOrder())
