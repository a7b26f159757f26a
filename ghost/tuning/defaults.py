"""The built-in search space of each game kind (``ghost.config.game_kinds``).

Ranges are laid around the base config's own values (a learning rate ten times either way, half
to twice the batch) and the self-play intervals around the trial's budget (a snapshot every 1% to
10% of the steps), so one rule fits a 2,000-step test and a million-step Leduc study alike. Keys
the config does not have (``magnet_strength`` under SAC) or that would be ignored
(``play_against_latest_model_ratio`` unless ``sampling.strategy`` is ``latest_ratio``) are left
out.

By kind, on top of what every kind searches (learning rate, entropy bonus, clipping, epochs,
batch and buffer, network width, self-play intervals and window):

- ``imperfect_information`` and ``matrix``: the magnet (``magnet_strength``, ``magnet_rate``),
  which makes PPO converge toward an equilibrium instead of cycling;
- ``matrix``: no discount or GAE keys (a game lasts one step);
- ``control``: a discount close to 1 (long episodes).
"""

from __future__ import annotations

from typing import Any

from ghost.config.game_kinds import CONTROL, IMPERFECT_INFORMATION, MATRIX
from ghost.config.settings import BehaviorSettings, RunOptions, default_behavior_settings
from ghost.tuning.space import Choice, Parameter, Range, SearchSpace, searchable_keys


def first_behavior(options: RunOptions) -> BehaviorSettings:
    """The settings the defaults are laid around: the first behavior's, else the defaults'."""
    if options.behaviors:
        return next(iter(options.behaviors.values()))
    return options.default_settings or default_behavior_settings()


def default_space(*, kind: str, options: RunOptions, steps: int) -> SearchSpace:
    """The built-in space for a game of ``kind`` trained from ``options`` for ``steps`` steps."""
    settings = first_behavior(options)
    hyper = settings.hyperparameters
    candidates: dict[str, Parameter] = {
        "hyperparameters.learning_rate": _around(getattr(hyper, "learning_rate", 3e-4), 10.0),
        "hyperparameters.beta": _around(getattr(hyper, "beta", 0.0), 10.0, fallback=(1e-4, 1e-1)),
        "hyperparameters.epsilon": Range(low=0.1, high=0.3),
        "hyperparameters.num_epoch": Range(low=1, high=8, integer=True),
        "hyperparameters.lambd": Range(low=0.8, high=0.99),
        "network_settings.hidden_units": _scaled(settings.network_settings.hidden_units, 8),
        "self_play.save_steps": _budget_share(steps, 0.01, 0.1),
        "self_play.swap_steps": _budget_share(steps, 0.005, 0.05),
        "self_play.team_change": _budget_share(steps, 0.05, 0.34),
        "self_play.window": Range(low=3, high=30, integer=True),
        "self_play.play_against_latest_model_ratio": Range(low=0.0, high=1.0),
    }
    batch = getattr(hyper, "batch_size", None)
    buffer = getattr(hyper, "buffer_size", None)
    if isinstance(batch, int) and isinstance(buffer, int):
        batches, buffers = batch_and_buffer_choices(batch=batch, buffer=buffer, steps=steps)
        candidates["hyperparameters.batch_size"] = Choice(choices=batches)
        candidates["hyperparameters.buffer_size"] = Choice(choices=buffers)
    if kind in (IMPERFECT_INFORMATION, MATRIX):
        candidates["hyperparameters.magnet_strength"] = Range(low=0.0, high=0.3)
        candidates["hyperparameters.magnet_rate"] = Range(low=0.01, high=0.2, log=True)
    if kind == CONTROL:
        candidates["reward_signals.extrinsic.gamma"] = Range(low=0.95, high=0.999)
    elif kind != MATRIX:
        candidates["reward_signals.extrinsic.gamma"] = Range(low=0.9, high=1.0)
    if kind == MATRIX:
        del candidates["hyperparameters.lambd"]
    self_play = settings.self_play
    if self_play is not None and self_play.sampling.strategy != "latest_ratio":
        del candidates["self_play.play_against_latest_model_ratio"]
    valid = set(searchable_keys(options))
    return SearchSpace({key: value for key, value in candidates.items() if key in valid})


def batch_and_buffer_choices(*, batch: int, buffer: int, steps: int) -> tuple[tuple[int, ...], ...]:
    """Half, the same and twice the base batch and buffer, with two limits: a buffer fills at
    least 4 times in the budget (a larger one would leave a trial without updates), and every
    batch fits every buffer (so no pair drawn is refused)."""
    cap = max(1, steps // 4)
    buffers = sorted({min(size, cap) for size in (buffer // 2, buffer, buffer * 2) if size > 0})
    if len(buffers) == 1:
        buffers = sorted({max(1, cap // 2), cap})
    smallest = buffers[0]
    batches = sorted({min(size, smallest) for size in (batch // 2, batch, batch * 2) if size > 0})
    if len(batches) == 1:
        batches = sorted({max(1, smallest // 4), max(1, smallest // 2), smallest})
    return tuple(batches), tuple(buffers)


def _around(value: Any, factor: float, *, fallback: tuple[float, float] = (1e-5, 1e-2)) -> Range:
    """Log-uniform from ``value / factor`` to ``value * factor`` (``fallback`` for 0)."""
    if not isinstance(value, int | float) or value <= 0:
        return Range(low=fallback[0], high=fallback[1], log=True)
    return Range(low=float(value) / factor, high=float(value) * factor, log=True)


def _scaled(value: int, smallest: int) -> Choice:
    """Half, the same and twice ``value`` (none below ``smallest``)."""
    return Choice(choices=tuple(sorted({max(smallest, value // 2), value, value * 2})))


def _budget_share(steps: int, low: float, high: float) -> Range:
    """Whole steps from ``low`` to ``high`` of the budget, log-uniform (at least 1 and 2)."""
    lowest = max(1, round(steps * low))
    return Range(low=lowest, high=max(lowest + 1, round(steps * high)), log=True, integer=True)
