"""Fixed opponents from ``self_play.fixed_opponents``: scripted levels or other runs' policies."""

from __future__ import annotations

from pathlib import Path

from mlagents_envs.base_env import BehaviorSpec

from ghost.core.opponents import FixedOpponent
from ghost.core.settings import FixedOpponentSettings, SelfPlaySettings
from ghost.exceptions import CheckpointError, ConfigError


def _spec_shape(spec: BehaviorSpec) -> tuple[object, ...]:
    action = spec.action_spec
    return (
        tuple(tuple(o.shape) for o in spec.observation_specs),
        action.continuous_size,
        tuple(action.discrete_branches),
    )


def _scripted(entry: FixedOpponentSettings, behavior_name: str, game: str | None) -> object:
    from envs.games import scripted_policy

    assert entry.scripted is not None
    named_game, _, level = entry.scripted.rpartition(":")
    game = named_game or game
    if game is None:
        raise ConfigError(
            f"fixed opponent {entry.name!r}: `scripted: {entry.scripted}` needs a built-in game; "
            "write `scripted: <game>:<level>` (e.g. tennis:medium)"
        )
    try:
        return scripted_policy(game, level, behavior=behavior_name)
    except ValueError as error:
        raise ConfigError(f"fixed opponent {entry.name!r}: {error}") from None


def _from_file(entry: FixedOpponentSettings, spec: BehaviorSpec) -> object:
    from trainers.policy import load_policy

    assert entry.policy is not None
    path = Path(entry.policy)
    if not path.is_file():
        raise ConfigError(
            f"fixed opponent {entry.name!r}: policy file {path} does not exist; give the path of "
            "a final <Behavior>.pt, a checkpoint or a snapshot of another run"
        )
    try:
        policy = load_policy(path)
    except CheckpointError as error:
        raise ConfigError(f"fixed opponent {entry.name!r}: {error}") from None
    if _spec_shape(policy.behavior_spec) != _spec_shape(spec):
        raise ConfigError(
            f"fixed opponent {entry.name!r}: {path} was trained for observations/actions "
            f"{_spec_shape(policy.behavior_spec)}, this behavior has {_spec_shape(spec)}"
        )
    return policy


def build_fixed_opponents(
    self_play: SelfPlaySettings,
    *,
    behavior_name: str,
    behavior_spec: BehaviorSpec,
    builtin_game: str | None,
) -> list[FixedOpponent]:
    """The fixed opponents of one behavior, loaded and checked (errors name the entry)."""
    opponents = []
    for entry in self_play.fixed_opponents:
        policy = (
            _scripted(entry, behavior_name, builtin_game)
            if entry.scripted is not None
            else _from_file(entry, behavior_spec)
        )
        rating = entry.rating if entry.rating is not None else self_play.initial_elo
        opponents.append(
            FixedOpponent(name=entry.name, policy=policy, rating=rating, pinned=entry.pin_rating)
        )
    return opponents
