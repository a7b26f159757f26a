"""The ``self_play:`` section for RLlib: the same keys and the same strict errors as ghost-learn.

Read as every host's ``self_play=`` is (``ghost.config.host_self_play``): a mapping, a
``SelfPlaySettings``, or the path of a YAML file holding the section or a whole ghost-learn
trainer configuration. Keys that need ghost-learn's own trainer or environment stepping are
refused with the reason, never ignored.
"""

from __future__ import annotations

from ghost.config.host_self_play import GHOST_LEARN_ONLY, SelfPlayArgument, host_self_play_settings
from ghost.core.settings import SelfPlaySettings

SelfPlaySource = SelfPlayArgument

#: what the RLlib integration cannot run, beyond ghost-learn's own keys
REFUSALS = {
    **GHOST_LEARN_ONLY,
    "self_play.fixed_opponents": (
        lambda s: bool(s.fixed_opponents),
        "fixed opponents are scripted levels and policy files of ghost-learn, which RLlib "
        "modules cannot play; remove them",
    ),
    "self_play.learn_from_latest": (
        lambda s: s.learn_from_latest,
        "the ghosted team's experience would have to reach RLlib's learner, which trains only "
        "the learning team's module; remove the key",
    ),
}


def self_play_settings(value: SelfPlaySource, *, behavior: str | None = None) -> SelfPlaySettings:
    """Strict ``SelfPlaySettings`` from ``value``; None means every default. ``behavior`` picks
    the behavior of a trainer configuration with several.

    Raises:
        ConfigError: an unknown key, a wrong type or value (named by its ``self_play.`` path),
            or a key this integration does not support.
    """
    return host_self_play_settings(value, host="RLlib", refusals=REFUSALS, behavior=behavior)
