"""The built-in games by name, and their scripted opponents.

``env_settings.env_path`` may name a built-in game instead of a Unity build::

    env_settings:
      env_path: tennis

- ``tennis``: ``Tennis?team=0`` and ``?team=1``, 1 agent each per arena; 2 continuous actions;
  10 observations; one point per episode, interrupted after 300 steps.
- ``soccer``: ``SoccerTwos?team=0/1``, 2 agents each (one group per team); discrete (3, 3);
  16 observations; one goal (group rewards ±1, small individual shaping), interrupted after
  400 steps.
- ``strikers_vs_goalie``: ``Striker?team=0`` (2 agents; discrete (3, 3); 15 observations) and
  ``Goalie?team=1`` (1 agent; discrete (3, 3, 2); 13 observations); goal, save, or after 200
  steps a goalie win (never interrupted).
- ``volley``: ``Volley?team=0`` and ``?team=1``, 1 agent each per arena; 2 continuous actions;
  12 observations; one point per episode, rewarded only when the ball lands (no shaping),
  interrupted after 400 steps.
- ``rock_paper_scissors`` / ``biased_rps``: ``RockPaperScissors`` / ``BiasedRPS?team=0/1``,
  1 agent each; discrete (3,); observation ``[1.0]``; one round per step.

Every game is a ``envs.vector_game.VectorGame`` running ``num_arenas`` (default 32) matches.
"""

from __future__ import annotations

from collections.abc import Callable

from envs import matrix_games, soccer, strikers_vs_goalie, tennis, volley
from envs.behavior_id import BehaviorId
from envs.scripted import ScriptedPolicy
from envs.vector_game import VectorGame

BUILTIN_GAMES: dict[str, Callable[..., VectorGame]] = {
    "tennis": tennis.make_env,
    "soccer": soccer.make_env,
    "strikers_vs_goalie": strikers_vs_goalie.make_env,
    "volley": volley.make_env,
    "rock_paper_scissors": matrix_games.make_rock_paper_scissors,
    "biased_rps": matrix_games.make_biased_rps,
}

_GAME_CLASSES: dict[str, type[VectorGame]] = {
    "tennis": tennis.Tennis,
    "soccer": soccer.SoccerTwos,
    "strikers_vs_goalie": strikers_vs_goalie.StrikersVsGoalie,
    "volley": volley.Volley,
    "rock_paper_scissors": matrix_games.RockPaperScissors,
    "biased_rps": matrix_games.BiasedRPS,
}

#: game → level → policy class, or → behavior name → policy class for asymmetric games
_LEVELS: dict[str, dict] = {
    "tennis": tennis.SCRIPTED_LEVELS,
    "soccer": soccer.SCRIPTED_LEVELS,
    "strikers_vs_goalie": strikers_vs_goalie.SCRIPTED_LEVELS,
    "volley": volley.SCRIPTED_LEVELS,
    **matrix_games.SCRIPTED_LEVELS,
}


def _check_game(name: str) -> None:
    if name not in BUILTIN_GAMES:
        raise ValueError(
            f"unknown built-in game {name!r}; valid names: {', '.join(sorted(BUILTIN_GAMES))}"
        )


def make_game(name: str, *, worker_id: int = 0, seed: int = 0, **kwargs) -> VectorGame:
    """Create the built-in game ``name`` for worker ``worker_id``.

    Args:
        **kwargs (Any): forwarded to the game (``num_arenas``, ``max_episode_steps``, and game
            options such as soccer's ``individual_reward``).

    Raises:
        ValueError: ``name`` is not a built-in game (the message lists the valid names).
    """
    _check_game(name)
    return BUILTIN_GAMES[name](worker_id=worker_id, seed=seed, **kwargs)


def scripted_levels(game: str) -> tuple[str, ...]:
    """The scripted levels of ``game`` (e.g. ``random``, ``weak``, ``medium``, ``strong``)."""
    _check_game(game)
    return tuple(_LEVELS[game])


def scripted_policy(
    game: str, level: str, *, behavior: str | None = None, seed: int | None = 0
) -> ScriptedPolicy:
    """A scripted policy of ``game`` at ``level``, for the agents of one behavior.

    Args:
        behavior: the behavior the policy plays, ``Name`` or ``Name?team=N``; needed only for
            asymmetric games (``strikers_vs_goalie``: ``Striker`` or ``Goalie``).
        seed: seeds the policy's random draws.

    Raises:
        ValueError: unknown game, level or behavior (the message lists the valid ones).
    """
    levels = scripted_levels(game)
    if level not in levels:
        raise ValueError(
            f"unknown level {level!r} for game {game!r}; valid levels: {', '.join(levels)}"
        )
    roles = {role.name: role for role in _GAME_CLASSES[game].ROLES}
    entry = _LEVELS[game][level]
    name = BehaviorId.parse(behavior).name if behavior is not None else ""
    if isinstance(entry, dict):
        if name not in entry:
            raise ValueError(
                f"game {game!r} has different policies per behavior; pass behavior= one of "
                f"{', '.join(sorted(entry))} (got {behavior!r})"
            )
        return entry[name](action_spec=roles[name].action_spec, seed=seed)
    role = next(iter(roles.values()))
    if name and name not in roles:
        raise ValueError(f"game {game!r} has behavior {role.name!r}, not {behavior!r}")
    return entry(action_spec=role.action_spec, seed=seed)
