"""Opponent sampling as a plug-in: how a ghosted team picks its next opponent from the pool.

The pool is the latest learner (a frozen copy), the snapshot window and the fixed opponents.
Built-in strategies (``self_play.sampling.strategy``):

- ``latest_ratio`` — ML-Agents' rule: the latest policy with probability
  ``play_against_latest_model_ratio``, else uniform over the window and fixed opponents.
- ``uniform`` — uniform over the window and fixed opponents.
- ``pfsp`` — prioritised fictitious self-play: member ``i`` weighted by ``f(p_i)`` of the learner's
  rolling win rate ``p_i`` against it (unplayed members count as ``p = 0.5``); ``hard``:
  ``(1 - p) ** pfsp_exponent``, ``variance``: ``p (1 - p)``.
- ``mixture`` — fixed probabilities of latest / window / fixed (``sampling.mixture``), uniform
  within each; an empty category's probability is shared by the others.

A new strategy subclasses ``OpponentSampler`` and is registered with ``register_sampler`` or
through the ``ghost.opponent_sampler`` entry-point group (``name=module:Class``); the ghost trainer
needs no change.
"""

from __future__ import annotations

import abc
import logging
from importlib import metadata

import numpy as np

from ghost.core.opponents import Opponent, Pool
from ghost.core.settings import PFSPWeighting, SelfPlaySettings
from ghost.core.win_rates import WinRates
from ghost.exceptions import ConfigError

logger = logging.getLogger(__name__)
ENTRY_POINT_GROUP = "ghost.opponent_sampler"


class OpponentSampler(abc.ABC):
    """Draws opponents; one instance per ghost trainer, built from its ``self_play`` settings."""

    def __init__(self, *, self_play: SelfPlaySettings) -> None:
        self.self_play = self_play
        self.sampling = self_play.sampling

    @abc.abstractmethod
    def draw(self, pool: Pool, win_rates: WinRates, rng: np.random.Generator) -> Opponent:
        """One opponent from ``pool``."""

    @staticmethod
    def uniform(members: list[Opponent], fallback: Opponent, rng: np.random.Generator) -> Opponent:
        return members[int(rng.integers(len(members)))] if members else fallback


_SAMPLERS: dict[str, type[OpponentSampler]] = {}


def register_sampler(name: str):  # type: ignore[no-untyped-def]
    """Class decorator: make a sampler available as ``sampling.strategy: <name>``."""

    def register(cls: type[OpponentSampler]) -> type[OpponentSampler]:
        _SAMPLERS[name] = cls
        return cls

    return register


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


@register_sampler("pfsp")
class PFSPSampler(OpponentSampler):
    def draw(self, pool: Pool, win_rates: WinRates, rng: np.random.Generator) -> Opponent:
        members = pool.past
        if not members:
            return pool.latest
        rates = np.array([win_rates.rate(m.key, default=0.5) for m in members])
        probabilities = pfsp_weights(
            rates, self.sampling.pfsp_weighting, self.sampling.pfsp_exponent
        )
        return members[int(rng.choice(len(members), p=probabilities))]


@register_sampler("mixture")
class MixtureSampler(OpponentSampler):
    def draw(self, pool: Pool, win_rates: WinRates, rng: np.random.Generator) -> Opponent:
        mixture = self.sampling.mixture
        groups = [[pool.latest], pool.window, pool.fixed]
        weights = np.array([mixture.latest, mixture.window, mixture.fixed])
        weights = np.where([len(g) > 0 for g in groups], weights, 0.0)
        if weights.sum() <= 0:
            return pool.latest
        group = groups[int(rng.choice(3, p=weights / weights.sum()))]
        return self.uniform(group, pool.latest, rng)


def _plugins() -> dict[str, type[OpponentSampler]]:
    found: dict[str, type[OpponentSampler]] = {}
    for entry_point in metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            found[entry_point.name] = entry_point.load()
        except Exception as error:  # a broken plugin must not take the built-ins down
            logger.warning("opponent sampler plugin %r failed to load: %s", entry_point.name, error)
    return found


def sampler_names() -> tuple[str, ...]:
    """Every strategy name ``sampling.strategy`` accepts."""
    return tuple(sorted({**_plugins(), **_SAMPLERS}))


def make_sampler(self_play: SelfPlaySettings) -> OpponentSampler:
    """The sampler ``self_play.sampling.strategy`` names."""
    samplers = {**_plugins(), **_SAMPLERS}
    strategy = self_play.sampling.strategy
    if strategy not in samplers:
        raise ConfigError(
            f"self_play.sampling.strategy = {strategy!r}: unknown opponent sampling strategy; "
            f"valid strategies: {', '.join(sorted(samplers))}"
        )
    return samplers[strategy](self_play=self_play)
