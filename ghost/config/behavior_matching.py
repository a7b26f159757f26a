"""Matching an environment's behaviors to the configuration, before anything trains."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import attrs

from envs.behavior_id import BehaviorId
from ghost.config.auto_preset import (
    Written,
    all_written,
    behavior_written,
    with_auto_preset,
)
from ghost.config.presets import NOT_WITH_MEMORY
from ghost.config.settings import BehaviorSettings, RunOptions, default_behavior_settings
from ghost.core.settings import SelfPlaySettings
from ghost.exceptions import EnvironmentSpecError

logger = logging.getLogger(__name__)


def _spec_shape(spec: Any) -> tuple[Any, ...]:
    """What a shared network depends on: observation shapes and the action layout."""
    action = spec.action_spec
    shapes = tuple(tuple(obs.shape) for obs in spec.observation_specs)
    return shapes, action.continuous_size, tuple(action.discrete_branches)


def match_behaviors(
    options: RunOptions, behavior_specs: Mapping[BehaviorId, Any]
) -> dict[str, BehaviorSettings]:
    """The settings each behavior name of an environment trains with.

    Args:
        options: the run configuration.
        behavior_specs: what the environment reports, by behavior id (specs are compared only
            between teams of one name, which must match).

    Returns:
        ``{behavior name: settings}`` from ``behaviors``, else ``default_settings``, else the
        defaults (allowed only when the configuration names no behavior at all).

    Raises:
        EnvironmentSpecError: a behavior has no settings, or teams of one name report different
            observation/action specs. (An adversarial behavior, several teams of one name or
            behaviors on different teams, without ``self_play`` gets ML-Agents' defaults.)
    """
    teams = _teams_by_name(behavior_specs)
    all_teams = {behavior_id.team for behavior_id in behavior_specs}
    for name in options.behaviors.keys() - teams.keys():
        logger.warning(
            "behaviors.%s is configured but the environment has no such behavior (it has: %s)",
            name,
            ", ".join(teams) or "none",
        )

    resolved: dict[str, BehaviorSettings] = {}
    for name, ids in teams.items():
        resolved[name] = _settings_for(name, options)
        _check_teams_share_specs(name, ids, behavior_specs)
    return _with_default_self_play(teams, resolved, all_teams, options)


def _teams_by_name(behavior_specs: Mapping[BehaviorId, Any]) -> dict[str, list[BehaviorId]]:
    """The environment's behavior ids grouped by name, in sorted order."""
    teams: dict[str, list[BehaviorId]] = {}
    for behavior_id in sorted(behavior_specs):
        teams.setdefault(behavior_id.name, []).append(behavior_id)
    return teams


def as_matched_before(options: RunOptions, recorded: RunOptions) -> RunOptions:
    """``options`` as matching will make them in the environment an earlier session of the run
    met: ``recorded`` (its ``configuration.yaml``) names every behavior it had, with self-play
    where the environment's teams turned it on. A resumed run compares the two, so that only
    what its configuration changed counts as a change."""
    names = sorted(recorded.behaviors)
    try:
        resolved = {name: _settings_for(name, options, quiet=True) for name in names}
    except EnvironmentSpecError:
        return options  # the start checks refuse it, once the environment is open
    teams = {
        name: [BehaviorId(name, team) for team in (0, 1)]
        if recorded.behaviors[name].self_play is not None
        else [BehaviorId(name, 0)]
        for name in names
    }
    all_teams = {behavior_id.team for ids in teams.values() for behavior_id in ids}
    matched = _with_default_self_play(teams, resolved, all_teams, options, announce=False)
    return attrs.evolve(options, behaviors=matched)


def _settings_for(name: str, options: RunOptions, *, quiet: bool = False) -> BehaviorSettings:
    """``behaviors.<name>``, else ``default_settings``, else the defaults (only when the
    configuration names no behavior at all; said unless ``quiet``)."""
    if name in options.behaviors:
        return options.behaviors[name]
    if options.default_settings is not None:
        return options.default_settings
    if options.behaviors:
        raise EnvironmentSpecError(
            f"the environment's behavior {name!r} has no settings: add behaviors.{name} "
            "to the configuration, or a default_settings section"
        )
    if not quiet:
        logger.warning("behavior %r is not configured; training it with the defaults", name)
    return default_behavior_settings()


def _check_teams_share_specs(
    name: str, ids: list[BehaviorId], behavior_specs: Mapping[BehaviorId, Any]
) -> None:
    """Every team of ``name`` must report the same specs: they share one network."""
    first = _spec_shape(behavior_specs[ids[0]])
    for other in ids[1:]:
        if _spec_shape(behavior_specs[other]) != first:
            raise EnvironmentSpecError(
                f"behavior {name!r}: team {other.team} reports other observations or actions "
                f"than team {ids[0].team}; every team of one behavior name shares one network"
            )


def _with_default_self_play(
    teams: Mapping[str, list[BehaviorId]],
    resolved: Mapping[str, BehaviorSettings],
    all_teams: set[int],
    options: RunOptions,
    *,
    announce: bool = True,
) -> dict[str, BehaviorSettings]:
    """Adversarial behaviors without ``self_play`` get ML-Agents' defaults with ``preset: auto``
    for the game (``ghost.config.auto_preset``; the keys the configuration wrote keep their
    values), announced; with a single team a ``self_play`` section is only warned about
    (``announce``: False says nothing)."""
    settings = dict(resolved)
    game = options.env_settings
    written = all_written(options.origins)
    configured = next((n for n, b in settings.items() if b.self_play is not None), None)
    for name, ids in teams.items():
        adversarial = len(ids) > 1 or len(all_teams) > 1
        if settings[name].self_play is None and adversarial:
            # the behaviors of one game take turns together: one configured section serves all
            if configured is None:
                self_play, source = SelfPlaySettings(), "ML-Agents' default"
            else:
                section = settings[configured]
                self_play = shared_self_play(
                    section, settings[name], _section_written(options, written, configured)
                )
                source = f"behaviors.{configured}'s"
            settings[name] = with_auto_preset(
                attrs.evolve(settings[name], self_play=self_play),
                game,
                _section_written(options, written, name),
            )
            self_play = settings[name].self_play
            if not announce:
                continue
            logger.info(
                "behaviors.%s has no self_play section but the environment has opposing teams "
                "(%s): self-play is on with %s settings and preset auto (save_steps %d, team_change %d, "
                "swap_steps %d, window %d); add a self_play: section to tune it",
                name,
                "teams " + ", ".join(str(i.team) for i in ids) if len(ids) > 1 else "other teams",
                source,
                self_play.save_steps,
                self_play.steps_per_team,
                self_play.swap_steps,
                self_play.window,
            )
    if len(all_teams) == 1 and announce:
        for name, behavior in settings.items():
            if behavior.self_play is not None:
                logger.warning(
                    "behaviors.%s has self_play but the environment has a single team; "
                    "there is no opponent to ghost",
                    name,
                )
    return settings


def _section_written(options: RunOptions, written: Written, name: str) -> Written:
    """The keys written for behavior ``name``, whose settings are ``behaviors.<name>`` or else
    ``default_settings``."""
    return behavior_written(written, name if name in options.behaviors else None)


def shared_self_play(
    configured: BehaviorSettings, taker: BehaviorSettings, configured_written: Written
) -> SelfPlaySettings:
    """The ``self_play`` section of behavior ``configured`` as another behavior without one takes
    it. A taker whose network has memory leaves out what ``configured``'s preset set there that
    memory refuses (``NOT_WITH_MEMORY``); a key ``configured`` wrote (``configured_written``,
    relative to its section) stays, for the start checks to refuse with its origin."""
    self_play = configured.self_play
    assert self_play is not None
    if taker.network_settings.memory is None:
        return self_play
    defaults = SelfPlaySettings()
    for dotted in NOT_WITH_MEMORY:
        section, _, key = dotted.partition(".")
        if section != "self_play" or (configured_written is None or dotted in configured_written):
            continue
        self_play = attrs.evolve(self_play, **{key: getattr(defaults, key)})
    return self_play
