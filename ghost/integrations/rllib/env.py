"""``GhostMultiAgentEnv``: one match of any of our games as an RLlib ``MultiAgentEnv``.

One environment is one arena (one table of a turn-based game, one court of a real-time game), so
one RLlib episode is one match; RLlib's ``num_envs_per_env_runner`` plays several at once.

- **Agent ids** say the team: ``"t<team>_a<agent>"`` (``agent_id`` and ``team_of`` convert).
- **Turn-based games** return observations only for the agent to move, as their ``DecisionSteps``
  do; rewards a waiting agent earns arrive with its next observation.
- **Action masks** (``action_mask=True``, the default for turn-based games): each observation
  ends with one flag per discrete action (1: legal), so observations stay one flat ``Box``.
  ``MaskedPPOTorchRLModule`` (``ghost.integrations.rllib.modules``) reads them.
- A match's end reaches every agent (``terminateds``, or ``truncateds`` when it was cut off);
  the terminal agents' ``infos`` carry ``final_reward`` and ``interrupted``, from which the
  self-play callback rates the match.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any, TypeAlias

import attrs
import gymnasium as gym
import numpy as np
from mlagents_envs.base_env import ActionTuple, BaseEnv, BehaviorSpec
from ray.rllib.env.multi_agent_env import MultiAgentEnv
from ray.rllib.utils.typing import AgentID, MultiAgentDict

from envs.behavior_id import BehaviorId
from envs.seated_game import SeatedGame
from ghost.exceptions import GhostError

#: what ``GhostMultiAgentEnv`` plays: an ``--env`` string, a BaseEnv, or a factory
#: ``factory(*, worker_id, seed) -> BaseEnv``
EnvSource: TypeAlias = str | BaseEnv | Callable[..., BaseEnv]

FINAL_REWARD = "final_reward"
INTERRUPTED = "interrupted"


def agent_id(team: int, agent: int) -> str:
    """The RLlib agent id of agent ``agent`` of team ``team``: ``"t1_a3"``."""
    return f"t{team}_a{agent}"


def team_of(agent: str) -> int:
    """The team in an agent id made by ``agent_id``."""
    return int(agent.partition("_")[0][1:])


@attrs.frozen
class SingleArenaFactory:
    """Makes one arena of a game named by an ``--env`` string (picklable for env runners)."""

    source: Any
    builtin: str | None = None

    def __call__(self, *, worker_id: int = 0, seed: int = 0) -> BaseEnv:
        if self.builtin is not None:
            from envs.games import make_game

            return make_game(self.builtin, worker_id=worker_id, seed=seed, num_arenas=1)
        return self.source(worker_id=worker_id, seed=seed)


@attrs.frozen
class _CopyOf:
    """A factory handing out copies of one BaseEnv (each RLlib env needs its own)."""

    env: BaseEnv

    def __call__(self, *, worker_id: int = 0, seed: int = 0) -> BaseEnv:
        return copy.deepcopy(self.env)


def env_factory(env: EnvSource) -> Callable[..., BaseEnv]:
    """A factory of one-arena BaseEnvs for ``env``: a string as ``resolve_env`` reads it
    (OpenSpiel and PettingZoo games get one table, built-in games one arena), a BaseEnv (copied
    for each RLlib env), or a factory (used as it is)."""
    if isinstance(env, BaseEnv):
        return _CopyOf(env)
    if isinstance(env, str):
        from envs.openspiel import OpenSpielSource
        from envs.pettingzoo import PettingZooSource
        from envs.sources import BuiltinGame, resolve_env

        source = resolve_env(env)
        if isinstance(source, BuiltinGame):
            return SingleArenaFactory(source=None, builtin=source.name)
        if isinstance(source, OpenSpielSource | PettingZooSource):
            return SingleArenaFactory(source=attrs.evolve(source, copies=1))
        return SingleArenaFactory(source=source)
    if callable(env):
        return env
    raise GhostError(
        f"env must be an --env string (e.g. 'openspiel:connect_four'), a BaseEnv or a factory "
        f"factory(*, worker_id, seed) -> BaseEnv; got {type(env).__name__}"
    )


def _action_space(spec: BehaviorSpec) -> gym.Space:
    action = spec.action_spec
    if action.continuous_size and action.discrete_size:
        raise GhostError(
            "RLlib has no space for actions both continuous and discrete; this game's behavior "
            "has both, so it cannot be played through GhostMultiAgentEnv"
        )
    if action.continuous_size:
        return gym.spaces.Box(-1.0, 1.0, (action.continuous_size,), np.float32)
    branches = action.discrete_branches
    if len(branches) == 1:
        return gym.spaces.Discrete(branches[0])
    return gym.spaces.MultiDiscrete(list(branches))


def _observation_size(spec: BehaviorSpec) -> int:
    return int(sum(np.prod(o.shape) for o in spec.observation_specs))


class GhostMultiAgentEnv(MultiAgentEnv):
    """One arena of a BaseEnv game as a ``MultiAgentEnv`` (see the module docstring).

    Args:
        config: RLlib's ``env_config`` (an ``EnvContext``): ``env`` (an ``EnvSource``) and
            optionally ``action_mask`` (True, False or None: only for turn-based games).
    """

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        self._worker = int(getattr(config, "worker_index", 0) or 0)  # an EnvContext's
        config = dict(config or {})
        if "env" not in config:
            raise GhostError("GhostMultiAgentEnv needs env_config={'env': ...} (a game to play)")
        self._factory = env_factory(config["env"])
        # fresh entropy until RLlib's first reset brings a seed (it does when config.seed is set)
        entropy = int(np.random.SeedSequence().generate_state(1)[0])
        self._base = self._factory(worker_id=self._worker, seed=entropy)
        mask = config.get("action_mask")
        self.action_mask = isinstance(self._base, SeatedGame) if mask is None else bool(mask)
        self._behaviors = {name: BehaviorId.parse(name) for name in self._base.behavior_specs}
        self._spaces_from(self._base)
        self._next_start: dict[str, Any] | None = None
        self._deciding: dict[str, list[int]] = {}

    @property
    def behavior_names(self) -> list[str]:
        """The game's behaviors (``Name?team=N``)."""
        return list(self._behaviors)

    def spaces_of(self, agent: str) -> tuple[gym.Space, gym.Space]:
        """``agent``'s observation and action spaces."""
        assert self.observation_spaces is not None and self.action_spaces is not None
        return self.observation_spaces[agent], self.action_spaces[agent]

    # -- spaces ------------------------------------------------------------------------------
    def _spaces_from(self, base: BaseEnv) -> None:
        specs = base.behavior_specs
        agents = self._agents_of(base)
        observation_spaces: dict[AgentID, gym.Space] = {}
        action_spaces: dict[AgentID, gym.Space] = {}
        self._sizes: dict[str, int] = {}
        for name, behavior_name in agents.items():
            spec = specs[behavior_name]
            size = _observation_size(spec)
            if self.action_mask and spec.action_spec.discrete_size:
                size += int(sum(spec.action_spec.discrete_branches))
            self._sizes[name] = size
            observation_spaces[name] = gym.spaces.Box(-np.inf, np.inf, (size,), np.float32)
            action_spaces[name] = _action_space(spec)
        self.possible_agents = list(agents)
        self.agents = list(agents)
        self.observation_spaces = observation_spaces
        self.action_spaces = action_spaces
        self.observation_space = gym.spaces.Dict(dict(observation_spaces))  # type: ignore[arg-type]
        self.action_space = gym.spaces.Dict(dict(action_spaces))  # type: ignore[arg-type]

    def _agents_of(self, base: BaseEnv) -> dict[str, str]:
        """Every agent of the arena → its behavior name (a seated game's seats, else the agents
        awaiting a decision after reset)."""
        if isinstance(base, SeatedGame):
            if len(base.tables) != 1:
                raise GhostError(
                    f"GhostMultiAgentEnv plays one table per environment; this game has "
                    f"{len(base.tables)} (set copies=1; RLlib's num_envs_per_env_runner plays "
                    "several)"
                )
            return {
                agent_id(seat.behavior.team, index): seat.behavior.full_name
                for index, seat in enumerate(base.seats)
            }
        base.reset()
        agents: dict[str, str] = {}
        arenas: set[int] = set()
        for name, behavior in self._behaviors.items():
            decisions, _ = base.get_steps(name)
            for agent in decisions.agent_id.tolist():
                agents[agent_id(behavior.team, agent)] = name
            if hasattr(base, "arena_of") and len(decisions):
                arenas.update(base.arena_of(name, decisions.agent_id).tolist())
        if len(arenas) > 1:
            raise GhostError(
                f"GhostMultiAgentEnv plays one arena per environment; this game runs "
                f"{len(arenas)} (make it with num_arenas=1; RLlib's num_envs_per_env_runner "
                "plays several)"
            )
        if not agents:
            raise GhostError("the game has no agent awaiting a decision after reset")
        return agents

    # -- MultiAgentEnv -----------------------------------------------------------------------
    def reset(  # type: ignore[override]  # RLlib's multi-agent reset (dicts by agent)
        self, *, seed: int | None = None, options: dict | None = None
    ) -> tuple[MultiAgentDict, MultiAgentDict]:
        if seed is not None:
            self._base.close()
            self._base = self._factory(worker_id=self._worker, seed=int(seed))
            self._next_start = None
        if self._next_start is None:
            self._base.reset()
            rows = {name: self._base.get_steps(name)[0] for name in self._behaviors}
        else:
            rows, self._next_start = self._next_start, None
        observations, _ = self._decisions(rows)
        return observations, {}

    def step(  # type: ignore[override]  # RLlib's multi-agent step (dicts by agent)
        self, action_dict: MultiAgentDict
    ) -> tuple[MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict]:
        for name, agents in self._deciding.items():
            if agents:
                self._base.set_actions(name, self._action_tuple(name, agents, action_dict))
        self._base.step()
        steps = {name: self._base.get_steps(name) for name in self._behaviors}
        terminal_rows = sum(len(terminal) for _, terminal in steps.values())
        if terminal_rows:
            return self._match_end(steps)
        observations, rewards = self._decisions({n: d for n, (d, _) in steps.items()})
        return observations, rewards, {"__all__": False}, {"__all__": False}, {}

    def close(self) -> None:
        self._base.close()

    # -- rows --------------------------------------------------------------------------------
    def _match_end(
        self, steps: Mapping[str, Any]
    ) -> tuple[MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict]:
        """Every agent's final observation and reward; the arena already started the next
        match, which ``reset`` hands out."""
        self._next_start = {name: decisions for name, (decisions, _) in steps.items()}
        self._deciding = {}
        observations: MultiAgentDict = {}
        rewards: MultiAgentDict = {}
        infos: MultiAgentDict = {}
        terminateds: MultiAgentDict = {}
        truncateds: MultiAgentDict = {}
        for name, (_, terminal) in steps.items():
            team = self._behaviors[name].team
            for row, agent in enumerate(terminal.agent_id.tolist()):
                key = agent_id(team, agent)
                cut = bool(terminal.interrupted[row])
                observations[key] = self._observation(terminal.obs, row, None, key)
                reward = float(terminal.reward[row] + terminal.group_reward[row])
                rewards[key] = reward
                infos[key] = {FINAL_REWARD: reward, INTERRUPTED: cut}
                terminateds[key] = not cut
                truncateds[key] = cut
        everyone_cut = all(truncateds.values())
        terminateds["__all__"] = not everyone_cut
        truncateds["__all__"] = everyone_cut
        return observations, rewards, terminateds, truncateds, infos

    def _decisions(self, rows: Mapping[str, Any]) -> tuple[MultiAgentDict, MultiAgentDict]:
        observations: MultiAgentDict = {}
        rewards: MultiAgentDict = {}
        self._deciding = {}
        for name, decisions in rows.items():
            team = self._behaviors[name].team
            agents = decisions.agent_id.tolist()
            self._deciding[name] = agents
            masks = decisions.action_mask
            for row, agent in enumerate(agents):
                key = agent_id(team, agent)
                observations[key] = self._observation(decisions.obs, row, masks, key)
                rewards[key] = float(decisions.reward[row] + decisions.group_reward[row])
        return observations, rewards

    def _observation(self, obs: list[np.ndarray], row: int, masks: Any, key: str) -> np.ndarray:
        parts = [np.asarray(o[row], dtype=np.float32).reshape(-1) for o in obs]
        if self.action_mask:
            if masks is not None:  # BaseEnv masks say "blocked"; the flags here say "legal"
                parts += [(~np.asarray(m[row], dtype=bool)).astype(np.float32) for m in masks]
            else:  # a final observation: nothing to choose, nothing legal
                size = self._sizes[key]
                parts.append(np.zeros(size - sum(p.size for p in parts), np.float32))
        return np.concatenate(parts) if len(parts) > 1 else parts[0]

    def _action_tuple(self, name: str, agents: list[int], actions: MultiAgentDict) -> Any:
        team = self._behaviors[name].team
        spec = self._base.behavior_specs[name].action_spec
        chosen = [np.asarray(actions[agent_id(team, agent)]).reshape(-1) for agent in agents]
        rows = np.stack(chosen)
        if spec.continuous_size:
            return ActionTuple(continuous=np.clip(rows.astype(np.float32), -1.0, 1.0))
        return ActionTuple(discrete=rows.astype(np.int32))
