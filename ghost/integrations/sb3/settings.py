"""The ``self_play=`` argument of ``GhostVecEnv``: a dict, a ``SelfPlaySettings`` or a YAML file.

Read as every host's ``self_play=`` is (``ghost.config.host_self_play``): the same keys and strict
errors as ``ghost-learn``. Keys that only ghost-learn's own trainer can act on (league exploiters,
the average policy, scheduled evaluations, exploitability scores, presets, shuffled seats,
``learn_from_latest``) are refused rather than ignored.
"""

from __future__ import annotations

from ghost.config.host_self_play import GHOST_LEARN_ONLY, SelfPlayArgument, host_self_play_settings
from ghost.core.settings import SelfPlaySettings

__all__ = ["SelfPlayArgument", "self_play_settings"]

#: what the Stable-Baselines3 integration cannot run, beyond ghost-learn's own keys
REFUSALS = {
    **GHOST_LEARN_ONLY,
    "self_play.league": (
        lambda s: bool(s.league.exploiters),
        "league exploiters need trainers of their own, which one SB3 model is not; remove them",
    ),
    "self_play.learn_from_latest": (
        lambda s: s.learn_from_latest,
        "the VecEnv shows SB3 the learning team only; remove the key",
    ),
}


def self_play_settings(value: SelfPlayArgument, *, behavior: str) -> SelfPlaySettings:
    """The ``SelfPlaySettings`` that ``value`` describes, checked for what SB3 can run.

    Args:
        value: None (every default), a ``SelfPlaySettings``, a dict of ``self_play:`` keys, or
            the path of a YAML file (the section, or a trainer YAML: its
            ``behaviors.<behavior>.self_play``, else ``default_settings.self_play``).
        behavior: the behavior name of the game (``tictactoe``), to find its YAML section.

    Raises:
        ConfigError: an unknown key, a bad value, or a key the SB3 integration does not support
            (the message names the key and the fix).
    """
    return host_self_play_settings(
        value, host="Stable-Baselines3", refusals=REFUSALS, behavior=behavior
    )
