"""PettingZoo games as a ``BaseEnv``: ``adapt(connect_four_v3.env)`` is an environment factory.

Each table of an ``envs.seated_game.SeatedGame`` is one PettingZoo environment, AEC (turn-based:
only ``agent_selection`` moves) or Parallel (every live agent moves each step). Seat ``i`` is
``possible_agents[i]``.

Behaviors (``seats=``): ``"auto"`` puts every seat on one behavior ``game?team=i`` when all agents
observe and act alike, else seat ``i`` on ``agent_name?team=i``; ``"teams"`` and ``"separate"``
force one or the other; a mapping ``agent → "Name?team=N"`` is used as given. ``game`` is
``name=`` or ``metadata["name"]`` without its ``_v3`` version.

Spaces: actions ``Discrete`` / ``MultiDiscrete`` / ``MultiBinary`` become discrete branches,
``Box`` a continuous vector mapped from [-1, 1] onto its bounds (infinite bounds unscaled).
Observations ``Box`` / ``MultiBinary`` are flattened, ``Discrete`` one-hot, and
``Dict(observation=..., action_mask=...)`` gives the flattened observation plus the legal-action
mask (also read from ``infos[agent]["action_mask"]``).

Seeding: a table seeds its environment at its first reset only (PettingZoo's convention; later
resets continue that stream, and rlcard games rebuild themselves on every seeded reset).
"""

from __future__ import annotations

import importlib
import re
import warnings
from collections.abc import Callable, Mapping
from typing import Any

import attrs
import numpy as np
from mlagents_envs.base_env import ActionSpec

from envs.behavior_id import BehaviorId
from envs.exceptions import EnvironmentSourceError
from envs.seated_game import Seat, SeatedGame, Table
from envs.vector_game import mix_seed

#: tables per environment when ``env_settings.num_areas`` is left at 1
DEFAULT_COPIES = 16
_SEAT_MODES = ("auto", "teams", "separate")
_MASKED_KEYS = ({"observation"}, {"observation", "action_mask"})
_VERSION = re.compile(r"_v\d+$")
_INSTALL = 'pip install "ghost-trainer[pettingzoo]" (or pip install "pettingzoo[classic]")'

Encode = Callable[[Any], tuple[np.ndarray, Any]]
Decode = Callable[[np.ndarray, np.ndarray], Any]


# --------------------------------------------------------------------------- sources
@attrs.frozen(kw_only=True)
class ModuleEnvFn:
    """``module.attribute()``, imported where it is called, so it pickles to worker processes."""

    module: str
    attribute: str

    def __call__(self) -> Any:
        return getattr(_import(self.module), self.attribute)()

    def describe(self) -> str:
        return f"{self.module}.{self.attribute}"


def _seat_option(value: Any) -> str | tuple[tuple[str, str], ...]:
    # a mapping is stored as pairs so the frozen source stays hashable (and evolve() re-reads them)
    if isinstance(value, Mapping | tuple):
        return tuple((str(agent), str(behavior)) for agent, behavior in dict(value).items())
    if value not in _SEAT_MODES:
        raise ValueError(
            f"seats={value!r} is not a seat mapping; pass one of {', '.join(_SEAT_MODES)} or a "
            "mapping agent name → 'Name?team=N'"
        )
    return value


def _positive_or_none(instance: Any, attribute: attrs.Attribute, value: int | None) -> None:
    if value is not None and value < 1:
        raise ValueError(f"{attribute.name} must be >= 1 (got {value})")


@attrs.frozen(kw_only=True)
class PettingZooSource:
    """Environment factory: ``copies`` PettingZoo environments as one ``SeatedGame``.

    Make it with ``adapt`` or ``from_module``. It pickles when ``env_fn`` does (a module-level
    function, or the ``ModuleEnvFn`` that ``from_module`` stores).
    """

    env_fn: Callable[[], Any]
    copies: int = attrs.field(default=DEFAULT_COPIES, validator=_positive_or_none)
    seats: str | tuple[tuple[str, str], ...] = attrs.field(default="auto", converter=_seat_option)
    name: str | None = None
    max_episode_steps: int | None = attrs.field(default=None, validator=_positive_or_none)
    #: deal the seats to the teams at random every game (``SeatedGame``)
    shuffle_seats: bool = False

    def __call__(self, *, worker_id: int = 0, seed: int = 0) -> SeatedGame:
        """``copies`` tables seeded from ``seed`` and ``worker_id`` (see ``mix_seed``)."""
        envs = [self.env_fn() for _ in range(self.copies)]
        layout = _layout(envs[0], seats=self.seats, name=self.name)
        table = _ParallelTable if layout.parallel else _AecTable
        return SeatedGame(
            tables=[table(env=env, layout=layout) for env in envs],
            seats=[codec.seat for codec in layout.codecs],
            seed=mix_seed(seed, worker_id),
            max_episode_steps=self.max_episode_steps,
            shuffle_seats=self.shuffle_seats,
        )

    @property
    def env_path(self) -> str | None:
        """The ``--env`` text naming this game (None for a function given to ``adapt``)."""
        if isinstance(self.env_fn, ModuleEnvFn):
            return f"pettingzoo:{self.env_fn.module}"
        return None

    def behavior_names(self) -> tuple[str, ...]:
        """The behaviors (``Name?team=N``) in seat order, from one throw-away environment."""
        env = self.env_fn()
        try:
            layout = _layout(env, seats=self.seats, name=self.name)
        finally:
            env.close()
        return tuple(dict.fromkeys(codec.seat.behavior.full_name for codec in layout.codecs))

    def describe(self) -> str:
        describe = getattr(self.env_fn, "describe", None)
        qualname = getattr(self.env_fn, "__qualname__", repr(self.env_fn))
        label = describe() if describe else f"{getattr(self.env_fn, '__module__', '')}.{qualname}"
        return f"PettingZoo {label} ({self.copies} tables per environment)"


def adapt(
    env_fn: Callable[[], Any],
    *,
    copies: int = DEFAULT_COPIES,
    seats: str | Mapping[str, str] = "auto",
    name: str | None = None,
    max_episode_steps: int | None = None,
) -> PettingZooSource:
    """A factory running ``env_fn()`` environments (PettingZoo AEC or Parallel) as one BaseEnv.

    Args:
        env_fn: zero-argument callable returning a PettingZoo environment, e.g.
            ``connect_four_v3.env``; module-level, so the factory pickles to worker processes.
        copies: tables (environments) per ``SeatedGame``.
        seats: ``"auto"``, ``"teams"``, ``"separate"`` or agent name → ``"Name?team=N"``
            (see the module docstring).
        name: the behavior name of symmetric games (default: the environment's metadata name
            without its version).
        max_episode_steps: moves after which an episode is interrupted (None: the game's own).

    Raises:
        EnvironmentSourceError: the environment's agents or spaces cannot be adapted (checked
            now, on one environment).
    """
    if not callable(env_fn):
        raise TypeError(f"env_fn must be a callable returning a PettingZoo env (got {env_fn!r})")
    source = PettingZooSource(
        env_fn=env_fn, copies=copies, seats=seats, name=name, max_episode_steps=max_episode_steps
    )
    source.behavior_names()
    return source


def from_module(module_path: str, **options: Any) -> PettingZooSource:
    """``adapt`` the ``parallel_env`` (preferred) or ``env`` of a module, for ``--env pettingzoo:``.

    Args:
        module_path: e.g. ``pettingzoo.classic.connect_four_v3``.
        **options: ``adapt``'s keyword options.

    Raises:
        EnvironmentSourceError: the module is missing or has neither function.
    """
    module = _import(module_path)
    for attribute in ("parallel_env", "env"):
        if callable(getattr(module, attribute, None)):
            return adapt(ModuleEnvFn(module=module_path, attribute=attribute), **options)
    raise EnvironmentSourceError(
        f"module {module_path!r} has neither parallel_env nor env, so it is not a PettingZoo "
        "environment module; name one such as pettingzoo.classic.connect_four_v3"
    )


def _import(module_path: str) -> Any:
    try:
        with warnings.catch_warnings():
            # the versioned modules warn against importing them directly, which is the point here
            warnings.simplefilter("ignore", DeprecationWarning)
            return importlib.import_module(module_path)
    except ModuleNotFoundError as error:
        if error.name == "pettingzoo":
            raise EnvironmentSourceError(
                f"PettingZoo is not installed (needed for {module_path!r}); {_INSTALL}"
            ) from None
        if error.name and (module_path + ".").startswith(error.name + "."):
            raise EnvironmentSourceError(
                f"PettingZoo module {module_path!r} not found; check the spelling (e.g. "
                f"pettingzoo.classic.connect_four_v3) or install it: {_INSTALL}"
            ) from None
        raise EnvironmentSourceError(
            f"importing {module_path!r} failed: {error}; install the missing package ({_INSTALL})"
        ) from error


# --------------------------------------------------------------------------- seats and spaces
@attrs.frozen(kw_only=True)
class _SeatCodec:
    """One seat: its ``Seat``, raw observation → (flat obs, mask or None), action rows → action."""

    seat: Seat
    encode: Encode
    decode: Decode


@attrs.frozen(kw_only=True)
class _Layout:
    """What every table of one game shares: the agents in seat order and their codecs."""

    agents: tuple[str, ...]
    codecs: tuple[_SeatCodec, ...]
    parallel: bool


def _layout(env: Any, *, seats: str | tuple[tuple[str, str], ...], name: str | None) -> _Layout:
    from pettingzoo import AECEnv, ParallelEnv

    if not isinstance(env, AECEnv | ParallelEnv):
        raise EnvironmentSourceError(
            f"env_fn returned a {type(env).__name__}, not a PettingZoo AECEnv or ParallelEnv"
        )
    agents = tuple(env.possible_agents)
    observed = [env.observation_space(agent) for agent in agents]
    acted = [env.action_space(agent) for agent in agents]
    alike = all(o == observed[0] for o in observed) and all(a == acted[0] for a in acted)
    if isinstance(seats, tuple):
        behaviors = _mapped_behaviors(agents, dict(seats), observed, acted)
    elif seats == "teams" or (seats == "auto" and alike):
        if not alike:
            raise EnvironmentSourceError(
                f"seats='teams' needs agents that observe and act alike, but {agents} differ; "
                "use seats='separate' or a mapping"
            )
        game = name or _VERSION.sub("", str(getattr(env, "metadata", {}).get("name", "")))
        if not game:
            raise EnvironmentSourceError("the environment's metadata has no name; pass name=")
        behaviors = [BehaviorId(game, seat) for seat in range(len(agents))]
    else:
        behaviors = [BehaviorId(agent, seat) for seat, agent in enumerate(agents)]
    codecs = []
    for agent, behavior, obs_space, action_space in zip(
        agents, behaviors, observed, acted, strict=True
    ):
        obs_size, encode = _observation_codec(agent, obs_space)
        action_spec, decode = _action_codec(agent, action_space)
        seat = Seat(behavior=behavior, obs_size=obs_size, action_spec=action_spec)
        codecs.append(_SeatCodec(seat=seat, encode=encode, decode=decode))
    return _Layout(agents=agents, codecs=tuple(codecs), parallel=isinstance(env, ParallelEnv))


def _mapped_behaviors(
    agents: tuple[str, ...], given: dict[str, str], observed: list, acted: list
) -> list[BehaviorId]:
    if set(given) != set(agents):
        raise EnvironmentSourceError(
            f"seats mapping must name every agent {list(agents)} exactly; missing "
            f"{sorted(set(agents) - set(given))}, unknown {sorted(set(given) - set(agents))}"
        )
    behaviors = [BehaviorId.parse(given[agent]) for agent in agents]
    first: dict[BehaviorId, int] = {}
    for seat, behavior in enumerate(behaviors):
        other = first.setdefault(behavior, seat)
        if observed[seat] != observed[other] or acted[seat] != acted[other]:
            raise EnvironmentSourceError(
                f"agents {agents[other]!r} and {agents[seat]!r} share behavior {behavior} but "
                "observe or act differently; give them different behaviors"
            )
    return behaviors


def _observation_codec(agent: str, space: Any) -> tuple[int, Encode]:
    from gymnasium import spaces

    if isinstance(space, spaces.Dict) and set(space.spaces) in _MASKED_KEYS:
        size, flatten = _flat_observation(agent, space["observation"])
        return size, lambda raw: (flatten(raw["observation"]), raw.get("action_mask"))
    size, flatten = _flat_observation(agent, space)
    return size, lambda raw: (flatten(raw), None)


def _flat_observation(agent: str, space: Any) -> tuple[int, Callable[[Any], np.ndarray]]:
    from gymnasium import spaces

    if isinstance(space, spaces.Box | spaces.MultiBinary):
        size = int(np.prod(space.shape))
        return size, lambda raw: np.array(raw, dtype=np.float32).reshape(size)
    if isinstance(space, spaces.Discrete):
        one_hot, start = np.eye(int(space.n), dtype=np.float32), int(space.start)
        return int(space.n), lambda raw: one_hot[int(raw) - start]
    raise EnvironmentSourceError(
        f"agent {agent!r} observes {space}, which the PettingZoo adapter cannot flatten (it reads "
        "Box, MultiBinary, Discrete and Dict(observation=..., action_mask=...)); wrap the "
        "environment to give one of those"
    )


def _action_codec(agent: str, space: Any) -> tuple[ActionSpec, Decode]:
    from gymnasium import spaces

    if isinstance(space, spaces.Discrete):
        start = int(space.start)
        return ActionSpec.create_discrete((int(space.n),)), lambda c, d: int(d[0]) + start
    if isinstance(space, spaces.MultiDiscrete):
        nvec, offset = np.asarray(space.nvec), np.asarray(space.start)
        spec = ActionSpec.create_discrete(tuple(int(n) for n in nvec.reshape(-1)))
        return spec, lambda c, d: (d.reshape(nvec.shape) + offset).astype(space.dtype)
    if isinstance(space, spaces.MultiBinary):
        shape = space.shape
        spec = ActionSpec.create_discrete((2,) * int(np.prod(shape)))
        return spec, lambda c, d: d.reshape(shape).astype(space.dtype)
    if isinstance(space, spaces.Box):
        return ActionSpec.create_continuous(int(np.prod(space.shape))), _box_decoder(space)
    raise EnvironmentSourceError(
        f"agent {agent!r} acts in {space}, which the PettingZoo adapter cannot map (it maps "
        "Discrete, MultiDiscrete, MultiBinary and Box); wrap the environment to give one of those"
    )


def _box_decoder(space: Any) -> Decode:
    low = space.low.reshape(-1).astype(np.float64)
    high = space.high.reshape(-1).astype(np.float64)
    bounded = np.isfinite(low) & np.isfinite(high)
    low_or_0, high_or_0 = np.where(bounded, low, 0.0), np.where(bounded, high, 0.0)
    half = np.where(bounded, (high_or_0 - low_or_0) / 2, 1.0)
    middle = (high_or_0 + low_or_0) / 2

    def decode(continuous: np.ndarray, discrete: np.ndarray) -> np.ndarray:
        scaled = np.where(bounded, np.clip(continuous, -1.0, 1.0), continuous) * half + middle
        return np.clip(scaled, low, high).reshape(space.shape).astype(space.dtype)

    return decode


# --------------------------------------------------------------------------- tables
class _PettingZooTable(Table):
    """Reward tally, departures and cached observations shared by the AEC and Parallel tables."""

    def __init__(self, *, env: Any, layout: _Layout) -> None:
        self.env = env
        self.layout = layout
        self._seat_of = {agent: seat for seat, agent in enumerate(layout.agents)}
        self._rewards = np.zeros(len(layout.agents))
        self._seeded = False
        self._begin()

    def _begin(self) -> None:
        self._rewards[:] = 0.0
        self._departed: dict[int, bool] = {}
        self._seen: set[int] = set()
        self._gone: set[int] = set()
        self._views: dict[int, tuple[np.ndarray, Any]] = {}
        self._final: dict[int, tuple[np.ndarray, Any]] = {}
        self._acting: tuple[int, ...] = ()

    def _seed(self, rng: np.random.Generator) -> int | None:
        if self._seeded:
            return None
        self._seeded = True
        return int(rng.integers(2**31 - 1))

    def acting(self) -> tuple[int, ...]:
        return self._acting

    def observe(self, seat: int) -> np.ndarray:
        return self._view(seat)[0]

    def legal(self, seat: int) -> np.ndarray | None:
        mask = self._view(seat)[1]
        branches = self.layout.codecs[seat].seat.action_spec.discrete_branches
        if mask is None or not branches:
            return None
        legal = np.asarray(mask).reshape(-1) != 0
        if legal.size != sum(branches):
            raise EnvironmentSourceError(
                f"agent {self.layout.agents[seat]!r}: action_mask has {legal.size} entries but "
                f"its action branches {branches} have {sum(branches)} actions"
            )
        return legal

    def take_rewards(self) -> np.ndarray:
        rewards = self._rewards.copy()
        self._rewards[:] = 0.0
        return rewards

    def take_departed(self) -> dict[int, bool]:
        departed, self._departed = self._departed, {}
        return departed

    def close(self) -> None:
        self.env.close()

    def _raw(self, agent: str) -> tuple[Any, Mapping]:
        """``agent``'s raw observation and info dict now."""
        raise NotImplementedError

    def _agents(self) -> list[str]:
        return self.env.agents

    def _view(self, seat: int) -> tuple[np.ndarray, Any]:
        view = self._final.get(seat) or self._views.get(seat)
        if view is None:
            raw, info = self._raw(self.layout.agents[seat])
            obs, mask = self.layout.codecs[seat].encode(raw)
            if mask is None and isinstance(info, Mapping):
                mask = info.get("action_mask")
            view = self._views[seat] = (obs, mask)
        return view

    def _seat(self, agent: str) -> int:
        try:
            return self._seat_of[agent]
        except KeyError:
            raise EnvironmentSourceError(
                f"the environment reported agent {agent!r}, which is not one of its "
                f"possible_agents {list(self.layout.agents)}"
            ) from None

    def _settle(self, rewards: Mapping, terminations: Mapping, truncations: Mapping) -> None:
        """Tally ``rewards``; seats that ended (or vanished from ``env.agents``) depart once."""
        for agent, reward in rewards.items():
            self._rewards[self._seat(agent)] += reward
        present = set(self._agents())
        for seat, agent in enumerate(self.layout.agents):
            if seat in self._gone:
                continue
            terminated, truncated = terminations.get(agent, False), truncations.get(agent, False)
            if terminated or truncated or (seat in self._seen and agent not in present):
                self._final[seat] = self._view(seat)
                self._departed[seat] = bool(truncated and not terminated)
                self._gone.add(seat)
            elif agent in present:
                self._seen.add(seat)


def _state_holder(env: Any) -> Any:
    """The layer of ``env`` that holds its agents, rewards, terminations...: below PettingZoo's
    own wrappers, which only forward them (a ``__getattr__`` per layer and read is a third of a
    tic-tac-toe move). Other wrappers may change them, so they are read through."""
    from pettingzoo.utils import wrappers

    forwarding = {
        wrappers.AssertOutOfBoundsWrapper,
        wrappers.CaptureStdoutWrapper,
        wrappers.ClipOutOfBoundsWrapper,
        wrappers.OrderEnforcingWrapper,
        wrappers.TerminateIllegalWrapper,
    }
    while type(env) in forwarding:
        env = env.env
    return env


class _AecTable(_PettingZooTable):
    """An AEC game: the selected agent moves; dead agents are stepped with ``None`` here."""

    def __init__(self, *, env: Any, layout: _Layout) -> None:
        super().__init__(env=env, layout=layout)
        self._state = _state_holder(env)

    def reset(self, rng: np.random.Generator) -> None:
        self.env.reset(seed=self._seed(rng))
        self._begin()
        self._advance()

    def apply(self, actions: Mapping[int, tuple[np.ndarray, np.ndarray]]) -> None:
        ((seat, (continuous, discrete)),) = actions.items()
        self._views = {}
        self.env.step(self.layout.codecs[seat].decode(continuous, discrete))
        self._advance()

    def _raw(self, agent: str) -> tuple[Any, Mapping]:
        return self.env.observe(agent), self._state.infos.get(agent, {})

    def _agents(self) -> list[str]:
        return self._state.agents

    def _advance(self) -> None:
        """Settle the last step, then step dead agents until a live one is selected (or none)."""
        env = self._state
        while True:
            self._views = {}
            terminations, truncations = env.terminations, env.truncations
            self._settle(env.rewards, terminations, truncations)
            selected = env.agent_selection
            if not env.agents or not (terminations.get(selected) or truncations.get(selected)):
                break
            left = len(env.agents)
            self.env.step(None)
            if len(env.agents) >= left:
                raise EnvironmentSourceError(
                    f"stepping dead agent {selected!r} with None did not remove it; the AEC env "
                    "must call _was_dead_step for terminated or truncated agents"
                )
        seat = self._seat_of.get(env.agent_selection)
        if env.agents and seat is not None and seat not in self._gone:
            self._acting = (seat,)
        else:
            self._acting = ()


class _ParallelTable(_PettingZooTable):
    """A Parallel game: every live agent moves each step."""

    def reset(self, rng: np.random.Generator) -> None:
        observations, infos = self.env.reset(seed=self._seed(rng))
        self._begin()
        self._observations, self._infos = dict(observations), dict(infos)
        self._settle({}, {}, {})
        self._update_acting()

    def apply(self, actions: Mapping[int, tuple[np.ndarray, np.ndarray]]) -> None:
        joint = {
            self.layout.agents[seat]: self.layout.codecs[seat].decode(continuous, discrete)
            for seat, (continuous, discrete) in actions.items()
        }
        observations, rewards, terminations, truncations, infos = self.env.step(joint)
        self._observations.update(observations)
        self._infos.update(infos)
        self._views = {}
        self._settle(rewards, terminations, truncations)
        self._update_acting()

    def _raw(self, agent: str) -> tuple[Any, Mapping]:
        return self._observations[agent], self._infos.get(agent, {})

    def _update_acting(self) -> None:
        seats = (self._seat(agent) for agent in self.env.agents)
        self._acting = tuple(sorted(seat for seat in seats if seat not in self._gone))
