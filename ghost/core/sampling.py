"""Opponent sampling as a plug-in: how a ghosted team picks its next opponent from the pool.

The pool is the latest learner (a frozen copy), the snapshot window and the fixed opponents.
Built-in strategies (``self_play.sampling.strategy``) and their own keys:

- ``latest_ratio`` — ML-Agents' rule: the latest policy with probability
  ``play_against_latest_model_ratio`` (ML-Agents' ``self_play`` key), else uniform over the window
  and fixed opponents. No keys of its own.
- ``uniform`` — uniform over the window and fixed opponents. No keys of its own.
- ``pfsp`` — prioritised fictitious self-play: member ``i`` weighted by ``f(p_i)`` of the learner's
  rolling win rate ``p_i`` against it (unplayed members count as ``p = 0.5``); ``pfsp_weighting``
  ``hard``: ``(1 - p) ** pfsp_exponent``, ``variance``: ``p (1 - p)``.
- ``mixture`` — fixed probabilities of latest / window / fixed (``mixture``), uniform within each;
  an empty category's probability is shared by the others.

A strategy is a subclass of ``OpponentSampler`` registered with ``register_sampler`` or through
the ``ghost.opponent_sampler`` entry-point group (``name=module:Class``). Its own keys are an attrs
class, named by the sampler's ``options_class``: in YAML they sit flat in ``self_play.sampling``
beside ``strategy`` and ``win_rate_window`` (the window of the win-rate book every strategy
shares), are checked like every other key, and reach the sampler as ``self.options``. A new
strategy is one file and a registration; neither the ghost trainer nor any settings class changes.
"""

from __future__ import annotations

import abc
import enum
import logging
from importlib import metadata
from typing import Any, ClassVar

import attrs
import numpy as np

from envs.validators import positive, unit_interval
from ghost.core.opponents import Opponent, Pool
from ghost.core.win_rates import WinRates
from ghost.exceptions import ConfigError

logger = logging.getLogger(__name__)
ENTRY_POINT_GROUP = "ghost.opponent_sampler"
DEFAULT_STRATEGY = "latest_ratio"
#: the keys of ``self_play.sampling`` that every strategy has; a strategy's own keys are others
COMMON_KEYS = ("strategy", "win_rate_window")


@attrs.frozen
class NoOptions:
    """The options of a strategy without keys of its own."""


class OpponentSampler(abc.ABC):
    """Draws opponents; one instance per ghost trainer, built from its ``self_play`` settings.

    Attributes:
        self_play: the behavior's ``ghost.core.settings.SelfPlaySettings`` (typed ``Any`` here:
            that module builds on this one).
        sampling: ``self_play.sampling`` (``SamplingSettings``).
        options: ``sampling.options``, an instance of this class's ``options_class``.
    """

    #: the attrs class of this strategy's own keys under ``self_play.sampling``
    options_class: ClassVar[type] = NoOptions

    def __init__(self, *, self_play: Any) -> None:
        self.self_play = self_play
        self.sampling: SamplingSettings = self_play.sampling
        self.options: Any = self.sampling.options

    @abc.abstractmethod
    def draw(self, pool: Pool, win_rates: WinRates, rng: np.random.Generator) -> Opponent:
        """One opponent from ``pool``."""

    @staticmethod
    def uniform(members: list[Opponent], fallback: Opponent, rng: np.random.Generator) -> Opponent:
        return members[int(rng.integers(len(members)))] if members else fallback


# -- the registry ------------------------------------------------------------------------------
_SAMPLERS: dict[str, type[OpponentSampler]] = {}


def _options_problem(name: str, sampler: type) -> str | None:
    """Why ``sampler``'s ``options_class`` cannot hold keys of ``self_play.sampling``, or None."""
    options_class = getattr(sampler, "options_class", None)
    if options_class is None or not attrs.has(options_class):
        return f"sampler {name!r}: options_class must be an attrs class (got {options_class!r})"
    clash = sorted(set(attrs.fields_dict(options_class)) & {*COMMON_KEYS, "options"})
    if clash:
        return (
            f"sampler {name!r}: {options_class.__name__} declares {', '.join(clash)}, keys every "
            "strategy shares; rename them"
        )
    return None


def register_sampler(name: str):  # type: ignore[no-untyped-def]
    """Class decorator: make a sampler available as ``sampling.strategy: <name>``, with the keys
    of its ``options_class``.

    Raises:
        TypeError: ``options_class`` is not an attrs class, or declares a shared key.
    """

    def register(cls: type[OpponentSampler]) -> type[OpponentSampler]:
        problem = _options_problem(name, cls)
        if problem is not None:
            raise TypeError(problem)
        _SAMPLERS[name] = cls
        return cls

    return register


def _plugins() -> dict[str, type[OpponentSampler]]:
    found: dict[str, type[OpponentSampler]] = {}
    for entry_point in metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            sampler = entry_point.load()
        except Exception as error:  # a broken plugin must not take the built-ins down
            logger.warning("opponent sampler plugin %r failed to load: %s", entry_point.name, error)
            continue
        problem = _options_problem(entry_point.name, sampler)
        if problem is not None:
            logger.warning("opponent sampler plugin %r is left out: %s", entry_point.name, problem)
            continue
        found[entry_point.name] = sampler
    return found


def samplers() -> dict[str, type[OpponentSampler]]:
    """Every strategy by name: plugins, and the registered ones (which win a shared name)."""
    return {**_plugins(), **_SAMPLERS}


def sampler_class(strategy: str) -> type[OpponentSampler] | None:
    """The sampler registered as ``strategy`` (plugins included), or None."""
    return _SAMPLERS.get(strategy) or _plugins().get(strategy)


def sampler_names() -> tuple[str, ...]:
    """Every strategy name ``sampling.strategy`` accepts."""
    return tuple(sorted(samplers()))


def option_owners(key: str) -> list[str]:
    """The strategies whose options declare ``key`` (to tell a user where a key belongs)."""
    return sorted(
        name for name, cls in samplers().items() if key in attrs.fields_dict(cls.options_class)
    )


# -- the settings ------------------------------------------------------------------------------
@attrs.frozen(init=False)
class SamplingSettings:
    """``self_play.sampling``: the strategy that draws a ghosted team's opponents, its own keys
    and the win-rate window.

    Written flat, as in YAML: ``SamplingSettings(strategy="pfsp", pfsp_exponent=3.0)`` makes the
    strategy's ``options_class`` from the keys beyond ``strategy`` and ``win_rate_window``, and the
    strategy's keys read as attributes (``sampling.pfsp_exponent``).

    Raises:
        ValueError: an unknown strategy (the message lists the valid ones).
        TypeError: a key the strategy's options do not declare (the message names the strategies
            that do).
    """

    #: latest_ratio (ML-Agents' rule, default), uniform, pfsp, mixture, or a plugin's name
    strategy: str = DEFAULT_STRATEGY
    #: the strategy's own keys: an instance of its sampler's ``options_class``
    options: Any = None
    #: how many recent matches against each opponent the rolling win rate remembers
    win_rate_window: int = attrs.field(default=200, validator=positive)

    def __init__(
        self,
        *,
        strategy: str = DEFAULT_STRATEGY,
        win_rate_window: int = 200,
        options: Any = None,
        **keys: Any,
    ) -> None:
        sampler = sampler_class(strategy)
        if sampler is None:
            raise ValueError(
                f"unknown opponent sampling strategy {strategy!r}; valid strategies: "
                f"{', '.join(sampler_names())}"
            )
        options_class = sampler.options_class
        declared = attrs.fields_dict(options_class)
        for key in keys:
            if key not in declared:
                owners = option_owners(key)
                where = f"a key of strategy {', '.join(owners)}" if owners else "no strategy's key"
                raise TypeError(f"sampling key {key!r} is {where}, not of strategy {strategy!r}")
        if not isinstance(options, options_class):
            # another strategy's options: attrs.evolve(sampling, strategy=...) passes them on
            made: Any = options_class(**keys)
        else:
            made = attrs.evolve(options, **keys) if keys else options  # type: ignore[misc]
        self.__attrs_init__(strategy=strategy, options=made, win_rate_window=win_rate_window)

    def __getattr__(self, name: str) -> Any:
        # Reached only for names that are not fields: the strategy's own keys read as attributes.
        try:
            options = object.__getattribute__(self, "options")
        except AttributeError:  # still being built, or unpickled
            raise AttributeError(name) from None
        if not name.startswith("_") and name in attrs.fields_dict(type(options)):
            return getattr(options, name)
        owners = option_owners(name) if not name.startswith("_") else []
        where = f" (a key of strategy {', '.join(owners)})" if owners else ""
        raise AttributeError(f"sampling of strategy {self.strategy!r} has no key {name!r}{where}")

    def check(self, self_play: Any) -> None:
        """The strategy's checks against the rest of ``self_play`` (its options' ``check``, if
        they have one); raises ``ValueError``."""
        check = getattr(self.options, "check", None)
        if check is not None:
            check(self_play)


# -- the built-in strategies -------------------------------------------------------------------
@register_sampler("latest_ratio")
class LatestRatioSampler(OpponentSampler):
    def draw(self, pool: Pool, win_rates: WinRates, rng: np.random.Generator) -> Opponent:
        if rng.random() < self.self_play.play_against_latest_model_ratio:
            return pool.latest
        return self.uniform(pool.past, pool.latest, rng)


@register_sampler("uniform")
class UniformSampler(OpponentSampler):
    def draw(self, pool: Pool, win_rates: WinRates, rng: np.random.Generator) -> Opponent:
        return self.uniform(pool.past, pool.latest, rng)


class PFSPWeighting(str, enum.Enum):
    """AlphaStar's prioritised fictitious self-play weightings of the learner's win rate ``p``."""

    HARD = "hard"  # (1 - p) ** pfsp_exponent: focus on opponents the learner loses to
    VARIANCE = "variance"  # p (1 - p): focus on even matches


@attrs.frozen(kw_only=True)
class PFSPOptions:
    """``strategy: pfsp``'s keys."""

    pfsp_weighting: PFSPWeighting = PFSPWeighting.HARD
    #: the ``k`` of ``hard``
    pfsp_exponent: float = attrs.field(default=2.0, validator=positive)


def pfsp_weights(win_rates: np.ndarray, weighting: PFSPWeighting, exponent: float) -> np.ndarray:
    """Normalized PFSP probabilities for the learner's win rates against each member."""
    if weighting is PFSPWeighting.HARD:
        weights = (1.0 - win_rates) ** exponent
    else:
        weights = win_rates * (1.0 - win_rates)
    total = weights.sum()
    if total <= 0:
        return np.full(len(win_rates), 1.0 / len(win_rates))
    return weights / total


def exploiter_pfsp_exponent(sampling: SamplingSettings) -> float:
    """The exponent of league exploiters' PFSP (hard) draws: ``pfsp_exponent`` where the
    strategy is ``pfsp``, else its default."""
    options = sampling.options if isinstance(sampling.options, PFSPOptions) else PFSPOptions()
    return options.pfsp_exponent


@register_sampler("pfsp")
class PFSPSampler(OpponentSampler):
    options_class = PFSPOptions

    def draw(self, pool: Pool, win_rates: WinRates, rng: np.random.Generator) -> Opponent:
        members = pool.past
        if not members:
            return pool.latest
        rates = np.array([win_rates.rate(m.key, default=0.5) for m in members])
        probabilities = pfsp_weights(rates, self.options.pfsp_weighting, self.options.pfsp_exponent)
        return members[int(rng.choice(len(members), p=probabilities))]


@attrs.frozen(kw_only=True)
class MixtureWeights:
    """``strategy: mixture``: fixed probabilities of drawing the latest policy, a window
    snapshot, or a fixed opponent; they must sum to 1."""

    latest: float = attrs.field(default=0.5, validator=unit_interval)
    window: float = attrs.field(default=0.5, validator=unit_interval)
    fixed: float = attrs.field(default=0.0, validator=unit_interval)

    def __attrs_post_init__(self) -> None:
        total = self.latest + self.window + self.fixed
        if abs(total - 1.0) > 1e-6:
            raise ValueError(
                f"mixture weights latest + window + fixed must sum to 1 (got {self.latest} + "
                f"{self.window} + {self.fixed} = {total:g})"
            )


@attrs.frozen(kw_only=True)
class MixtureOptions:
    """``strategy: mixture``'s keys."""

    mixture: MixtureWeights = attrs.Factory(MixtureWeights)

    def check(self, self_play: Any) -> None:
        if self.mixture.fixed > 0 and not self_play.fixed_opponents:
            raise ValueError("sampling.mixture.fixed > 0 needs at least one fixed_opponents entry")


@register_sampler("mixture")
class MixtureSampler(OpponentSampler):
    options_class = MixtureOptions

    def draw(self, pool: Pool, win_rates: WinRates, rng: np.random.Generator) -> Opponent:
        mixture = self.options.mixture
        groups = [[pool.latest], pool.window, pool.fixed]
        weights = np.array([mixture.latest, mixture.window, mixture.fixed])
        weights = np.where([len(g) > 0 for g in groups], weights, 0.0)
        if weights.sum() <= 0:
            return pool.latest
        group = groups[int(rng.choice(3, p=weights / weights.sum()))]
        return self.uniform(group, pool.latest, rng)


def make_sampler(self_play: Any) -> OpponentSampler:
    """The sampler ``self_play.sampling.strategy`` names (``self_play``: a ``SelfPlaySettings``)."""
    strategy = self_play.sampling.strategy
    sampler = sampler_class(strategy)
    if sampler is None:
        raise ConfigError(
            f"self_play.sampling.strategy = {strategy!r}: unknown opponent sampling strategy; "
            f"valid strategies: {', '.join(sampler_names())}"
        )
    return sampler(self_play=self_play)
