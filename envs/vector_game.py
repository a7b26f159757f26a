"""``VectorGame``: a ``BaseEnv`` that runs many independent matches ("arenas") with numpy.

Vocabulary:

- **arena**: one match. Every ``step()`` advances all ``num_arenas`` arenas at once; a game keeps
  its state in arrays whose first axis is the arena.
- **role**: one behavior inside an arena (``Role``): a behavior name, a team, how many agents of it
  play in each arena (its *slots*), its observation size and action spec. Symmetric games have two
  roles with the same name and different teams; asymmetric games have roles with different names.
- **slot**: an agent's place in its arena, numbered across all roles in order. The agent id is
  ``arena * agents_per_arena + slot`` and never changes, so ``arena_of`` is one integer division.

Step semantics follow a Unity ML-Agents build where every agent requests a decision every step:
after ``reset()`` every agent is in ``DecisionSteps``. When an arena's episode ends, its agents
appear in ``TerminalSteps`` (final observation, final reward, ``interrupted`` only when the
``max_episode_steps`` limit cut the episode) *and*, in the same step, in ``DecisionSteps`` with the
same ids and the first observation of the new episode: arenas reset themselves. Actions not set
before a ``step()`` are zeros, as in Unity.

A game subclass supplies ``ROLES``, ``DEFAULT_MAX_EPISODE_STEPS`` and five hooks
(``_allocate_state``, ``_reset_arenas``, ``_advance``, ``_observe``, ``render_arena``), optionally
``_timeout_outcome`` when running out of time is a result rather than an interruption.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping

import attrs
import numpy as np
from mlagents_envs.base_env import (
    ActionSpec,
    ActionTuple,
    BaseEnv,
    BehaviorSpec,
    DecisionSteps,
    DimensionProperty,
    ObservationSpec,
    ObservationType,
    TerminalSteps,
)


@attrs.frozen(kw_only=True)
class Role:
    """One behavior of a game: ``slots`` agents of ``name?team=team`` in every arena."""

    name: str
    team: int
    slots: int
    obs_size: int
    action_spec: ActionSpec
    #: agents of this role share a nonzero group id per arena (for group rewards)
    grouped: bool = False

    @property
    def behavior_name(self) -> str:
        """The ``Name?team=N`` string the environment reports."""
        return f"{self.name}?team={self.team}"

    @property
    def behavior_spec(self) -> BehaviorSpec:
        """One flat vector observation of ``obs_size`` floats and this role's action spec."""
        obs_spec = ObservationSpec(
            shape=(self.obs_size,),
            dimension_property=(DimensionProperty.NONE,),
            observation_type=ObservationType.DEFAULT,
            name="vector",
        )
        return BehaviorSpec(observation_specs=[obs_spec], action_spec=self.action_spec)


def mirrored_roles(
    name: str, *, obs_size: int, action_spec: ActionSpec, slots: int = 1, grouped: bool = False
) -> tuple[Role, Role]:
    """The two roles of a symmetric game: ``name?team=0`` and ``name?team=1``, alike."""
    first, second = (
        Role(
            name=name,
            team=team,
            slots=slots,
            obs_size=obs_size,
            action_spec=action_spec,
            grouped=grouped,
        )  # fmt: skip
        for team in (0, 1)
    )
    return first, second


@attrs.frozen(kw_only=True)
class RoleActions:
    """The actions of one role for every arena: ``(arenas, slots, size)`` arrays."""

    continuous: np.ndarray
    discrete: np.ndarray


def mix_seed(seed: int, worker_id: int) -> int | None:
    """A seed for worker ``worker_id`` of a run seeded with ``seed`` (``None`` when ``seed < 0``).

    Workers must not replay each other's matches, so the worker id is hashed into the seed; a
    negative seed (ML-Agents' "random") gives ``None``, i.e. fresh entropy.
    """
    if seed < 0:
        return None
    return int(np.random.SeedSequence([seed, worker_id]).generate_state(1)[0])


@attrs.frozen(kw_only=True)
class _Outcome:
    """What one step did: per-slot ``(arenas, agents_per_arena)`` rewards, the arenas that ended
    (an int array) and which arenas were interrupted (a bool per arena)."""

    reward: np.ndarray
    group_reward: np.ndarray
    ended: np.ndarray
    interrupted: np.ndarray


class VectorGame(BaseEnv, abc.ABC):
    """Base of the built-in games: many arenas stepped together, Unity step semantics.

    Args:
        num_arenas: independent matches run by this environment.
        seed: seeds the game's ``np.random.Generator``; equal seeds give equal trajectories
            for equal actions. ``None`` draws fresh entropy.
        max_episode_steps: steps after which an episode ends (interrupted, unless the game
            scores a timeout); ``None`` uses the game's ``DEFAULT_MAX_EPISODE_STEPS``.
    """

    ROLES: tuple[Role, ...] = ()
    DEFAULT_MAX_EPISODE_STEPS: int = 1000
    #: ML-Agents' env workers read this attribute of a UnityEnvironment
    academy_capabilities = None

    def __init__(
        self, *, num_arenas: int = 32, seed: int | None = 0, max_episode_steps: int | None = None
    ) -> None:
        if num_arenas < 1:
            raise ValueError(f"num_arenas must be >= 1 (got {num_arenas})")
        steps = self.DEFAULT_MAX_EPISODE_STEPS if max_episode_steps is None else max_episode_steps
        if steps < 1:
            raise ValueError(f"max_episode_steps must be >= 1 (got {max_episode_steps})")
        self.num_arenas = num_arenas
        self.max_episode_steps = steps
        self.rng = np.random.default_rng(seed)
        self.agents_per_arena = sum(role.slots for role in self.ROLES)
        self._roles = {role.behavior_name: role for role in self.ROLES}
        self._specs = {name: role.behavior_spec for name, role in self._roles.items()}
        self._slots: dict[str, np.ndarray] = {}
        first = 0
        for name, role in self._roles.items():
            self._slots[name] = np.arange(first, first + role.slots)
            first += role.slots
        arenas = np.arange(num_arenas)
        self._agent_ids = {
            name: (arenas[:, None] * self.agents_per_arena + slots[None, :])
            .ravel()
            .astype(np.int32)
            for name, slots in self._slots.items()
        }
        self._group_ids = {}
        for index, (name, role) in enumerate(self._roles.items()):
            group = arenas * len(self.ROLES) + index + 1 if role.grouped else np.zeros(num_arenas)
            self._group_ids[name] = np.repeat(group, role.slots).astype(np.int32)
        # Unity always sends discrete behaviors a mask (all False: every action allowed), and
        # ML-Agents' trainers mis-shape their buffers without one
        self._masks = {
            name: [np.zeros((num_arenas * role.slots, b), dtype=bool) for b in branches]
            if (branches := role.action_spec.discrete_branches)
            else None
            for name, role in self._roles.items()
        }
        self.episode_steps = np.zeros(num_arenas, dtype=np.int64)
        self._pending: dict[str, RoleActions] = {}
        self._steps: dict[str, tuple[DecisionSteps, TerminalSteps]] = {}
        self._closed = False
        self._allocate_state()
        self.reset()

    # ----------------------------------------------------------------- hooks for the games
    @abc.abstractmethod
    def _allocate_state(self) -> None:
        """Create the state arrays (first axis ``num_arenas``); ``_reset_arenas`` fills them."""

    @abc.abstractmethod
    def _reset_arenas(self, arenas: np.ndarray) -> None:
        """Start a new episode in the arenas indexed by ``arenas`` (an int array)."""

    @abc.abstractmethod
    def _advance(self, actions: list[RoleActions]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Advance every arena one step under ``actions`` (one entry per role, in ``ROLES`` order).

        Returns:
            ``(reward, group_reward, done)``: per-slot ``(num_arenas, agents_per_arena)``
            float arrays and a ``(num_arenas,)`` bool array of arenas whose episode ended.
        """

    @abc.abstractmethod
    def _observe(self, arenas: np.ndarray) -> list[np.ndarray]:
        """Per role, the ``(len(arenas), slots, obs_size)`` observations of the given arenas."""

    @abc.abstractmethod
    def render_arena(self, arena: int) -> dict:
        """A plain dict of one arena's positions (players, ball...) for drawing a frame."""

    def _timeout_outcome(self, arenas: np.ndarray) -> np.ndarray | None:
        """Final per-slot rewards when ``arenas`` run out of time, or ``None`` to interrupt them."""
        return None

    # ----------------------------------------------------------------------- BaseEnv API
    @property
    def behavior_specs(self) -> Mapping[str, BehaviorSpec]:
        """Behavior name (``Name?team=N``) → spec, in ``ROLES`` order."""
        return dict(self._specs)

    def arena_of(self, behavior_name: str, agent_ids: np.ndarray) -> np.ndarray:
        """The arena index of each of ``agent_ids`` (agents of ``behavior_name``)."""
        self._role(behavior_name)
        return np.asarray(agent_ids, dtype=np.int64) // self.agents_per_arena

    def reset(self) -> None:
        """Start a new episode in every arena; every agent then awaits a decision."""
        everything = np.arange(self.num_arenas)
        self._reset_arenas(everything)
        self.episode_steps[:] = 0
        self._clear_actions()
        nothing = np.zeros((self.num_arenas, self.agents_per_arena), dtype=np.float32)
        self._publish(
            self._observe(everything),
            [],
            _Outcome(
                reward=nothing,
                group_reward=nothing,
                ended=np.zeros(0, dtype=np.int64),
                interrupted=np.zeros(self.num_arenas, dtype=bool),
            ),
        )

    def step(self) -> None:
        """Advance every arena one step; finished arenas report terminals and restart."""
        if self._closed:
            raise RuntimeError(f"{type(self).__name__} is closed; create a new environment")
        reward, group_reward, done = self._advance(list(self._pending.values()))
        reward = np.array(reward, dtype=np.float32)
        done = np.asarray(done, dtype=bool)
        self.episode_steps += 1
        timed_out = ~done & (self.episode_steps >= self.max_episode_steps)
        interrupted = np.zeros(self.num_arenas, dtype=bool)
        if timed_out.any():
            late = np.flatnonzero(timed_out)
            final = self._timeout_outcome(late)
            if final is None:
                interrupted[late] = True
            else:
                reward[late] += np.asarray(final, dtype=np.float32)
        ended = np.flatnonzero(done | timed_out)
        final_obs: list[np.ndarray] = []
        if len(ended):
            final_obs = self._observe(ended)
            self._reset_arenas(ended)
            self.episode_steps[ended] = 0
        outcome = _Outcome(
            reward=reward,
            group_reward=np.asarray(group_reward, dtype=np.float32),
            ended=ended,
            interrupted=interrupted,
        )
        self._publish(self._observe(np.arange(self.num_arenas)), final_obs, outcome)
        self._clear_actions()

    def _publish(
        self, observations: list[np.ndarray], final_obs: list[np.ndarray], outcome: _Outcome
    ) -> None:
        """Build every role's ``DecisionSteps`` and ``TerminalSteps`` for ``get_steps``."""
        ended = outcome.ended
        # a restarted arena's reward went to TerminalSteps; its new episode starts from 0
        restarted = np.zeros((self.num_arenas, 1), dtype=bool)
        restarted[ended] = True
        for index, (name, role) in enumerate(self._roles.items()):
            slots = self._slots[name]
            reward, group_reward = outcome.reward[:, slots], outcome.group_reward[:, slots]
            decision = DecisionSteps(
                obs=[observations[index].reshape(-1, role.obs_size).astype(np.float32, copy=False)],
                reward=np.where(restarted, 0.0, reward).ravel().astype(np.float32),
                agent_id=self._agent_ids[name].copy(),
                action_mask=self._masks[name],
                group_id=self._group_ids[name].copy(),
                group_reward=np.where(restarted, 0.0, group_reward).ravel().astype(np.float32),
            )
            if not len(ended):
                self._steps[name] = (decision, TerminalSteps.empty(self._specs[name]))
                continue
            groups = self._group_ids[name].reshape(self.num_arenas, role.slots)
            terminal = TerminalSteps(
                obs=[final_obs[index].reshape(-1, role.obs_size).astype(np.float32, copy=False)],
                reward=reward[ended].ravel(),
                interrupted=np.repeat(outcome.interrupted[ended], role.slots),
                agent_id=(ended[:, None] * self.agents_per_arena + slots).ravel().astype(np.int32),
                group_id=groups[ended].ravel(),
                group_reward=group_reward[ended].ravel(),
            )
            self._steps[name] = (decision, terminal)

    def get_steps(self, behavior_name: str) -> tuple[DecisionSteps, TerminalSteps]:
        """The decision and terminal steps of ``behavior_name`` since the last step or reset."""
        self._role(behavior_name)
        return self._steps[behavior_name]

    def set_actions(self, behavior_name: str, action: ActionTuple) -> None:
        """Actions for every agent of ``behavior_name``, aligned with its ``DecisionSteps``."""
        role = self._role(behavior_name)
        n = self.num_arenas * role.slots
        spec = role.action_spec
        continuous = np.asarray(action.continuous, dtype=np.float32)
        discrete = np.asarray(action.discrete, dtype=np.int32)
        if continuous.shape != (n, spec.continuous_size) or discrete.shape != (
            n,
            spec.discrete_size,
        ):
            raise ValueError(
                f"{behavior_name} needs continuous actions of shape {(n, spec.continuous_size)} "
                f"and discrete actions of shape {(n, spec.discrete_size)} (one row per agent of "
                f"its DecisionSteps); got {continuous.shape} and {discrete.shape}"
            )
        self._check_discrete(behavior_name, spec, discrete)
        pending = self._pending[behavior_name]
        pending.continuous[:] = continuous.reshape(pending.continuous.shape)
        pending.discrete[:] = discrete.reshape(pending.discrete.shape)

    def set_action_for_agent(self, behavior_name: str, agent_id: int, action: ActionTuple) -> None:
        """The action of one agent of ``behavior_name`` (``ActionTuple`` arrays of one row)."""
        role = self._role(behavior_name)
        spec = role.action_spec
        arena, slot = divmod(int(agent_id), self.agents_per_arena)
        local = slot - int(self._slots[behavior_name][0])
        if not (0 <= arena < self.num_arenas and 0 <= local < role.slots):
            raise KeyError(f"agent {agent_id} is not an agent of {behavior_name}")
        continuous = np.asarray(action.continuous, dtype=np.float32).reshape(-1)
        discrete = np.asarray(action.discrete, dtype=np.int32).reshape(-1)
        if continuous.shape != (spec.continuous_size,) or discrete.shape != (spec.discrete_size,):
            raise ValueError(
                f"{behavior_name} needs {spec.continuous_size} continuous and "
                f"{spec.discrete_size} discrete actions per agent; got {continuous.size} and "
                f"{discrete.size}"
            )
        self._check_discrete(behavior_name, spec, discrete[None, :])
        pending = self._pending[behavior_name]
        pending.continuous[arena, local] = continuous
        pending.discrete[arena, local] = discrete

    def close(self) -> None:
        """Release the environment; later steps raise."""
        self._closed = True

    # ----------------------------------------------------------------------- helpers
    def _role(self, behavior_name: str) -> Role:
        try:
            return self._roles[behavior_name]
        except KeyError:
            raise KeyError(
                f"unknown behavior {behavior_name!r}; {type(self).__name__} has "
                f"{sorted(self._roles)}"
            ) from None

    @staticmethod
    def _check_discrete(behavior_name: str, spec: ActionSpec, discrete: np.ndarray) -> None:
        if not spec.discrete_size or not discrete.size:
            return
        high = np.asarray(spec.discrete_branches)
        if (discrete < 0).any() or (discrete >= high).any():
            raise ValueError(
                f"{behavior_name}: discrete actions must be in [0, branch size) per branch "
                f"{tuple(spec.discrete_branches)}; got values from {discrete.min()} to "
                f"{discrete.max()}"
            )

    def _clear_actions(self) -> None:
        for name, role in self._roles.items():
            pending = self._pending.get(name)
            if pending is None:
                spec = role.action_spec
                shape = (self.num_arenas, role.slots)
                self._pending[name] = RoleActions(
                    continuous=np.zeros(shape + (spec.continuous_size,), dtype=np.float32),
                    discrete=np.zeros(shape + (spec.discrete_size,), dtype=np.int32),
                )
            else:
                pending.continuous.fill(0.0)
                pending.discrete.fill(0)

    @staticmethod
    def clipped(continuous: np.ndarray) -> np.ndarray:
        """Continuous actions as the games read them: NaN → 0, then clipped to [-1, 1]."""
        clipped = np.clip(continuous, -1.0, 1.0)
        clipped[np.isnan(clipped)] = 0.0
        return clipped
