"""What a run's settings do, said once when it starts: the preset in effect, and each setting that
cannot take effect under this configuration and environment.

``log_effects`` runs once the environment has named its behaviors and teams
(``ghost.running.session``). It logs one INFO line per behavior with a ``self_play.preset``: the
keys the preset sets and the values in effect. It warns, with the reason and the fix, about
settings that would otherwise do nothing without a word:

- ``self_play.league`` exploiters in a single-team environment (no opponent), or whose first turn
  comes after ``max_steps`` (``main_turns`` turns of ``team_change`` steps come first), or of which
  only some get a turn before ``max_steps``;
- ``self_play.evaluation`` every more steps than ``max_steps``, or with no fixed opponent to play;
- ``team_change`` not below ``max_steps`` for a behavior on several teams: it learns one side only
  (not said of a trial whose ``max_steps`` a flag shortened, ``--max-steps`` or ``max_steps=``:
  the configuration's own budget is the one its turns were sized for);
- ``fixed_opponents`` that the sampling never draws and no evaluation plays.

Nothing is said for a run that only acts (``inference``).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping
from typing import Any

from envs.behavior_id import BehaviorId
from ghost.config.loader import MAX_STEPS_KEY
from ghost.config.presets import AUTO, NO_PRESET, Game, auto_choice, preset_values
from ghost.config.settings import BehaviorSettings, RunOptions
from ghost.core.settings import SelfPlaySettings
from trainers.settings import TrainerSettings

logger = logging.getLogger(__name__)


def shortened_by_flag(options: RunOptions) -> bool:
    """Whether a flag or keyword (``--max-steps``, ``max_steps=``) set every behavior's
    ``max_steps``: a trial of a configuration sized for longer."""
    return MAX_STEPS_KEY in options.origins.overrides


def log_effects(
    behaviors: Mapping[str, TrainerSettings],
    behavior_ids: Iterable[BehaviorId],
    *,
    training: bool = True,
    game: Game = None,
    trial: bool = False,
    presets: bool = True,
) -> None:
    """Log the presets in effect and warn about settings that cannot take effect.

    Args:
        behaviors: the settings each behavior name trains with (as matched to the environment).
        behavior_ids: every behavior id the environment reports (names and teams).
        training: False for a run that only acts: nothing is said.
        game: the run's ``env_settings`` (or its ``env_path``), for what ``preset: auto`` picked.
        trial: ``max_steps`` was shortened by a flag (``shortened_by_flag``).
        presets: False leaves the preset lines to the caller (``--check`` prints them).
    """
    if not training:
        return
    teams: dict[str, list[int]] = {}
    for behavior_id in sorted(behavior_ids):
        teams.setdefault(behavior_id.name, []).append(behavior_id.team)
    single_team = len({team for ids in teams.values() for team in ids}) == 1
    for name, settings in behaviors.items():
        if not isinstance(settings, BehaviorSettings) or settings.self_play is None:
            continue
        line = preset_line(name, settings, game) if presets else None
        if line is not None:
            logger.info(line)
        for problem in ineffective_settings(
            name, settings, teams=teams.get(name, []), single_team=single_team, trial=trial
        ):
            logger.warning(problem)


def preset_line(name: str, settings: BehaviorSettings, game: Game = None) -> str | None:
    """``behaviors.<name>: self_play.preset 'robust' sets key = value, ...`` (None without a
    preset); a key written beside the preset shows its value and the preset's. For ``auto`` it
    says the game's kind, what was picked and why."""
    preset = settings.self_play.preset if settings.self_play is not None else None
    if preset is None or preset == NO_PRESET:
        return None
    head = f"behaviors.{name}: self_play.preset {preset!r}"
    if preset == AUTO:
        choice = auto_choice(game)
        head = f"{head} picked for {choice.describe()};"
        if choice.preset is None:
            return head[:-1]
    memory = settings.network_settings.memory is not None
    values = preset_values(preset, settings.trainer_type, game, memory=memory)
    if not values and memory:
        return f"{head} sets nothing a network with memory takes (no magnet, no learn_from_latest)"
    if not values:
        return (
            f"{head} sets nothing for trainer_type {settings.trainer_type} (its keys are PPO "
            "and POCA hyperparameters)"
        )
    parts = []
    for key, chosen in values.items():
        value = _value_at(settings, key)
        if value is _ABSENT:
            continue
        mine = "" if value == chosen else f" (yours; the preset's: {chosen!r})"
        parts.append(f"{key} = {value!r}{mine}")
    return f"{head} sets {', '.join(parts)}"


_ABSENT = object()


def _value_at(settings: Any, dotted: str) -> Any:
    """The value at ``dotted``, or ``_ABSENT`` (a reward signal the behavior does not have)."""
    for attribute in dotted.split("."):
        if isinstance(settings, Mapping):
            settings = settings.get(attribute, _ABSENT)
        else:
            settings = getattr(settings, attribute)
        if settings is _ABSENT:
            break
    return settings


def ineffective_settings(
    name: str,
    settings: BehaviorSettings,
    *,
    teams: list[int],
    single_team: bool,
    trial: bool = False,
) -> list[str]:
    """Why settings of behavior ``name`` (on ``teams``) cannot take effect: one message each.
    ``trial``: ``max_steps`` was shortened by a flag."""
    self_play = settings.self_play
    if self_play is None:
        return []
    where = f"behaviors.{name}.self_play"
    problems = _league_problems(where, self_play, settings.max_steps, single_team=single_team)
    problems += _evaluation_problems(where, self_play, settings.max_steps)
    problems += _fixed_opponent_problems(where, self_play)
    problems += _learn_from_latest_problems(where, self_play, teams=teams)
    team_change = self_play.steps_per_team
    if len(teams) > 1 and team_change >= settings.max_steps and not trial:
        problems.append(
            f"{where}.team_change ({team_change}) is not below max_steps ({settings.max_steps}): "
            f"one network plays teams {', '.join(map(str, teams))} but learns only as team "
            f"{teams[0]}; lower team_change (default 5 x save_steps) or raise max_steps"
        )
    return problems


def _learn_from_latest_problems(
    where: str, self_play: SelfPlaySettings, *, teams: list[int]
) -> list[str]:
    """``learn_from_latest`` needs a ghosted team of the same behavior facing one opponent, the
    latest copy, some of the time. Said only where no preset set it: a preset sets it for a kind
    of game, where it applies to the symmetric games and harms none."""
    if not self_play.learn_from_latest or self_play.preset not in (None, NO_PRESET):
        return []
    key = f"{where}.learn_from_latest"
    if len(teams) < 2:
        return [
            f"{key} does nothing here: the behavior plays on one team, so no ghosted team of "
            "it plays the latest copy; it applies to symmetric games (Name?team=0 and ?team=1)"
        ]
    if self_play.opponents_per_swap > 1:
        return [
            f"{key} does nothing with opponents_per_swap {self_play.opponents_per_swap}: it "
            "learns from a ghosted team only while that team plays the latest copy alone; set "
            "opponents_per_swap: 1"
        ]
    if (
        self_play.sampling.strategy == "latest_ratio"
        and self_play.play_against_latest_model_ratio == 0
    ):
        return [
            f"{key} does nothing with play_against_latest_model_ratio 0: the latest copy never "
            "plays; raise the ratio"
        ]
    return []


def _league_problems(
    where: str, self_play: SelfPlaySettings, max_steps: int, *, single_team: bool
) -> list[str]:
    league = self_play.league
    count = league.exploiters
    if count == 0:
        return []
    if single_team:
        return [
            f"{where}.league has {count} exploiter(s), but the environment has a single team: "
            "there is no opponent to exploit, so none ever trains; remove self_play.league"
        ]
    team_change = self_play.steps_per_team
    # one exploiter turn after every main_turns turns of the main learner, while it trains
    main_turns = math.ceil(max_steps / team_change)
    turns = (main_turns - 1) // league.main_turns
    fix = "lower team_change or league.main_turns, or raise max_steps"
    if turns == 0:
        first = league.main_turns * team_change
        return [
            f"{where}.league cannot start: the first exploiter turn comes after main_turns "
            f"({league.main_turns}) turns of team_change ({team_change}) steps = {first} "
            f"main-learner steps, and max_steps is {max_steps}, so no exploiter ever trains; "
            f"{fix}"
        ]
    if turns < count:
        return [
            f"{where}.league: only {turns} of its {count} exploiters get a turn before max_steps "
            f"({max_steps}): one exploiter turn comes after every main_turns ({league.main_turns}) "
            f"turns of team_change ({team_change}) steps; {fix}"
        ]
    return []


def _evaluation_problems(where: str, self_play: SelfPlaySettings, max_steps: int) -> list[str]:
    evaluation = self_play.evaluation
    if evaluation is None:
        return []
    if not self_play.fixed_opponents:
        return [
            f"{where}.evaluation has no fixed opponent to play, so it never runs; add "
            "self_play.fixed_opponents (a scripted level or a policy file)"
        ]
    if evaluation.every_steps > max_steps:
        return [
            f"{where}.evaluation.every_steps ({evaluation.every_steps}) is more than max_steps "
            f"({max_steps}), so no scheduled evaluation runs; lower every_steps"
        ]
    return []


def _fixed_opponent_problems(where: str, self_play: SelfPlaySettings) -> list[str]:
    if not self_play.fixed_opponents or self_play.evaluation is not None:
        return []
    sampling = self_play.sampling
    if sampling.strategy == "mixture" and sampling.mixture.fixed == 0:
        why = "sampling.mixture.fixed is 0"
    elif sampling.strategy == "latest_ratio" and self_play.play_against_latest_model_ratio >= 1:
        why = "play_against_latest_model_ratio is 1 (always the latest policy)"
    else:
        return []
    names = ", ".join(fixed.name for fixed in self_play.fixed_opponents)
    return [
        f"{where}.fixed_opponents ({names}) are never played: {why} and no "
        "self_play.evaluation plays them; give them a share of the draws or remove them"
    ]
