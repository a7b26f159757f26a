"""``summary_freq`` when no configuration writes it: a default that scales with ``max_steps``.

ML-Agents' default, a summary every 50000 trainer steps, leaves a shorter run silent: a
20000-step run prints no summary line, writes no TensorBoard point and leaves ``ghost-eval
report`` nothing to draw. Where neither the behavior's section, ``default_settings``, a flag nor a
keyword writes ``summary_freq``, a behavior reports about ten times a run instead
(``default_summary_freq``): a tenth of its ``max_steps`` (``--max-steps`` applied) rounded down to
one significant digit, at least 100 steps (or ``max_steps`` when the run is shorter) and at most
ML-Agents' 50000, which a run of 500000 steps or more keeps. A written ``summary_freq`` is kept as
written. The resolved ``configuration.yaml`` records the value, so a resumed run keeps it.
"""

from __future__ import annotations

import logging
import math

import attrs

from ghost.config.auto_preset import Written
from ghost.config.settings import BehaviorSettings, RunOptions

logger = logging.getLogger(__name__)

#: ML-Agents' ``summary_freq`` default, and the longest default interval here
ML_AGENTS_SUMMARY_FREQ = 50000
#: the shortest default interval (unless ``max_steps`` is shorter)
MIN_SUMMARY_FREQ = 100
#: about how many summaries a run writes with the default
SUMMARIES_PER_RUN = 10


def default_summary_freq(max_steps: int) -> int:
    """Trainer steps between summaries for a behavior of ``max_steps`` with no written
    ``summary_freq`` (see the module docstring): 20000 -> 2000, 300000 -> 30000, 123456 ->
    10000, 500000 and more -> 50000."""
    tenth = max_steps // SUMMARIES_PER_RUN
    readable = 0
    if tenth > 0:
        unit = 10 ** int(math.log10(tenth))
        readable = tenth // unit * unit
    shortest = min(MIN_SUMMARY_FREQ, max(max_steps, 1))
    return min(ML_AGENTS_SUMMARY_FREQ, max(shortest, readable))


def with_summary_freq_defaults(options: RunOptions, written: Written = None) -> RunOptions:
    """``options`` with the scaled ``summary_freq`` in every behavior (and ``default_settings``)
    whose configuration did not write one.

    Args:
        options: the configuration, ``max_steps`` overrides applied.
        written: the key paths the configuration wrote (``behaviors.B.summary_freq``,
            ``default_settings.summary_freq``); None when only structured settings are known:
            then a ``summary_freq`` still at ML-Agents' default counts as not written.
    """

    def was_written(section: str, settings: BehaviorSettings) -> bool:
        if written is None:
            return settings.summary_freq != ML_AGENTS_SUMMARY_FREQ
        return f"{section}.summary_freq" in written or "default_settings.summary_freq" in written

    def scaled(where: str, settings: BehaviorSettings) -> BehaviorSettings:
        if was_written(where, settings):
            return settings
        every = default_summary_freq(settings.max_steps)
        if every != settings.summary_freq:
            logger.info(
                "%s.summary_freq: %d, about a tenth of max_steps %d (not written; ML-Agents' "
                "default is %d)",
                where, every, settings.max_steps, ML_AGENTS_SUMMARY_FREQ,
            )  # fmt: skip
        return attrs.evolve(settings, summary_freq=every)

    behaviors = {
        name: scaled(f"behaviors.{name}", settings) for name, settings in options.behaviors.items()
    }
    default = options.default_settings
    if default is not None:
        default = scaled("default_settings", default)
    return attrs.evolve(options, behaviors=behaviors, default_settings=default)
