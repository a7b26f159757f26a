"""What a study is: the settings every trial of it shares, kept with the study in its storage.

A study's trials are comparable only if they train the same base config for the same budget and
are judged by the same yardstick over the same space; the settings are therefore written into the
study (``study.user_attrs``) when it is created, and a later command continuing the study must
agree with them (or give none: ``ghost-tune --study-name NAME --storage URL`` joins a study as it
was made).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import attrs

from ghost.exceptions import ConfigError
from ghost.tuning.space import SearchSpace

#: the study attribute holding the settings
SETTINGS_ATTR = "ghost_tune"


@attrs.frozen(kw_only=True)
class TuneSettings:
    """The settings of one study.

    Attributes:
        base_config: the raw trainer config (as a YAML file holds it) every trial starts from;
            ``env_settings.env_path`` names the game.
        space: key path → parameter.
        yardstick: how a trial is judged: ``exploitability``, ``scripted:LEVEL`` or
            ``exploiter`` (``auto`` already resolved).
        steps: trainer steps of each training run (``max_steps`` of every behavior).
        seeds: the seeds each trial trains with; its value is the mean over them.
        reports: evaluations during a run (the pruner's points).
        games: games per evaluation (scripted levels, exploiters).
        exploiter_steps: training steps of an exploiter (``exploiter`` yardstick).
    """

    base_config: dict[str, Any]
    space: SearchSpace
    yardstick: str
    steps: int
    seeds: tuple[int, ...]
    reports: int = 4
    games: int = 100
    exploiter_steps: int = 0

    @property
    def env_path(self) -> str:
        """The game every trial trains."""
        env_settings = self.base_config.get("env_settings") or {}
        return str(env_settings.get("env_path") or "")

    @property
    def report_interval(self) -> int:
        """Trainer steps between two evaluations (the checkpoint interval of the trials)."""
        return max(1, self.steps // max(1, self.reports))

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data (``from_dict`` reads it back)."""
        data = attrs.asdict(self, recurse=False)
        data["space"] = self.space.to_dict()
        data["seeds"] = list(self.seeds)
        return json.loads(json.dumps(data, default=str))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TuneSettings:
        """The settings ``to_dict`` wrote."""
        values = dict(data)
        values["space"] = SearchSpace.from_dict(values["space"], source="the study's own space")
        values["seeds"] = tuple(values["seeds"])
        return cls(**values)

    def differences(self, other: TuneSettings) -> list[str]:
        """The settings (by name) where ``other`` differs from these."""
        mine, theirs = self.to_dict(), other.to_dict()
        return [name for name in mine if mine[name] != theirs.get(name)]


def check_same_study(stored: TuneSettings, given: TuneSettings, *, study_name: str) -> None:
    """Raise ``ConfigError`` when a command continuing ``study_name`` changes what it measures."""
    differences = stored.differences(given)
    if not differences:
        return
    flags = {
        "base_config": "the config (CONFIG or --env)",
        "space": "the search space (--space, or the budget the built-in space is laid around)",
        "yardstick": "--yardstick",
        "steps": "--steps",
        "seeds": "--seeds-per-trial (or the config's seed)",
        "reports": "--reports",
        "games": "--games",
        "exploiter_steps": "--exploiter-steps",
    }
    raise ConfigError(
        f"study {study_name!r} was made with other settings: "
        + "; ".join(flags.get(name, name) for name in differences)
        + " differ, so its trials would not be comparable. Repeat the command that made it "
        "(or give only --study-name and --storage to continue it as it is), or choose a new "
        "--study-name"
    )
