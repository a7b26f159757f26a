"""Seating players in a built-in game: what evaluations and replays play.

Vocabulary:

- **player**: what plays one side of a match. A policy file (final ``<Behavior>.pt``, checkpoint
  or snapshot), a run folder (``results/<run-id>``: its final policy of each behavior it plays), a
  scripted level of the game (``"medium"``, see ``envs.games.scripted_levels``), or any object with
  ``act(obs, action_mask=None, deterministic=False) -> ActionTuple``.
- **side**: the team whose behaviors the evaluated policy plays: team 0 unless ``side`` names a
  behavior (``"Goalie"``, or ``"Tennis?team=1"``); the opponent plays every other behavior.
- **match**: one episode in one arena. Its result, from the evaluated policy's side, is the sign of
  the final reward plus group reward of that side's first agent; an episode cut by the step limit
  is *interrupted*.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np
from mlagents_envs.base_env import BaseEnv

from envs.behavior_id import BehaviorId
from envs.exceptions import did_you_mean
from envs.games import BUILTIN_GAMES, make_game, scripted_levels, scripted_policy
from envs.matrix_games import MatrixGame
from envs.vector_game import Role, VectorGame
from ghost.exceptions import CheckpointError, ConfigError, EnvironmentSourceError
from ghost.play.host_policies import load_host_policy
from ghost.play.run_record import RunRecord
from trainers.memory import act_on_steps


@attrs.frozen(kw_only=True)
class Seat:
    """Who acts for one behavior of a match, and whether it takes its most likely action."""

    behavior_name: str
    actor: Any
    deterministic: bool


def check_game(game: str) -> None:
    """Raise ``EnvironmentSourceError`` unless ``game`` is a built-in game."""
    if game not in BUILTIN_GAMES:
        hint = did_you_mean(game, BUILTIN_GAMES)
        hint = f"; {hint}" if hint else ""
        raise EnvironmentSourceError(
            f"unknown game {game!r}; built-in games: {', '.join(sorted(BUILTIN_GAMES))}{hint}"
        )


def split_sides(
    game: str, roles: Sequence[Role], side: str | None
) -> tuple[list[Role], list[Role]]:
    """The roles the evaluated policy plays (one team's) and the roles the opponent plays."""
    if side is None:
        team = min(role.team for role in roles)
    else:
        wanted = BehaviorId.parse(side)
        explicit = "?team=" in side
        matching = [
            role
            for role in roles
            if role.name == wanted.name and (not explicit or role.team == wanted.team)
        ]
        if not matching:
            choices = sorted({role.name for role in roles} | {r.behavior_name for r in roles})
            raise ConfigError(
                f"side {side!r} is not a behavior of {game}; choose one of {', '.join(choices)}"
            )
        team = min(role.team for role in matching)
    return [r for r in roles if r.team == team], [r for r in roles if r.team != team]


def describe_spec(spec: Any) -> str:
    """A behavior spec in words: its observation shapes and actions."""
    shapes = ", ".join(str(tuple(o.shape)) for o in spec.observation_specs)
    action = spec.action_spec
    parts = [f"{action.continuous_size} continuous"] if action.continuous_size else []
    if action.discrete_branches:
        parts.append(f"discrete {tuple(action.discrete_branches)}")
    return f"observations {shapes}, actions {' + '.join(parts) or 'none'}"


def spec_fits(policy: Any, wanted: Any) -> bool:
    """Whether ``policy`` (its ``behavior_spec``; one without any fits all) observes and acts as
    the behavior spec ``wanted`` does."""
    spec = getattr(policy, "behavior_spec", None)
    if spec is None:
        return True
    return [tuple(o.shape) for o in spec.observation_specs] == [
        tuple(o.shape) for o in wanted.observation_specs
    ] and (spec.action_spec.continuous_size, tuple(spec.action_spec.discrete_branches)) == (
        wanted.action_spec.continuous_size,
        tuple(wanted.action_spec.discrete_branches),
    )


def _checked(policy: Any, role: Role, *, game: str, source: Path) -> Any:
    """``policy`` if its behavior spec fits ``role``; a clear error otherwise."""
    if not spec_fits(policy, role.behavior_spec):
        raise CheckpointError(
            f"{source} does not fit {role.behavior_name} of {game}: the policy has "
            f"{describe_spec(policy.behavior_spec)}, the behavior needs "
            f"{describe_spec(role.behavior_spec)}; pass a policy trained on this game and "
            "behavior (or choose the side with --side)"
        )
    return policy


def looks_like_path(text: str) -> bool:
    """Whether ``text`` reads as a file path rather than a level name (a separator or suffix)."""
    return os.sep in text or "/" in text or Path(text).suffix != ""


def _sub_seed(seed: int, *keys: int) -> int | None:
    if seed < 0:
        return None
    return int(np.random.SeedSequence([seed, *keys]).generate_state(1)[0])


def resolve_player(
    who: Any, *, game: str, roles: Sequence[Role], seed: int, what: str = "policy"
) -> tuple[str, dict[str, Any]]:
    """A label for ``who`` and its actor for each of ``roles`` (behavior name → actor).

    Args:
        who: a policy file, run folder, scripted level name, or object with ``act``.
        what: ``"policy"`` or ``"opponent"``, to name it in errors.

    Raises:
        CheckpointError: a missing or unreadable file, or a policy for another behavior.
        ConfigError: a name that is neither a file nor a scripted level of ``game``.
    """
    if isinstance(who, str | os.PathLike):
        text = os.fspath(who)
        path = Path(text)
        levels = scripted_levels(game)
        if text in levels and not looks_like_path(text):
            key = 1 if what == "opponent" else 0
            return f"{text} (scripted)", {
                role.behavior_name: scripted_policy(
                    game, text, behavior=role.name, seed=_sub_seed(seed, key, index)
                )
                for index, role in enumerate(roles)
            }
        if path.is_dir():
            actors = {}
            run = RunRecord(path)
            for role in roles:
                final = run.final_policy_path(role.name)
                if not final.is_file():
                    raise CheckpointError(
                        f"run folder {path} has no final policy of {role.name} ({final} is "
                        "missing); pass one of its checkpoints or snapshots instead"
                    )
                policy = load_host_policy(final, behavior_spec=role.behavior_spec)
                actors[role.behavior_name] = _checked(policy, role, game=game, source=final)
            return str(path), actors
        if path.is_file():
            policy = load_host_policy(path, behavior_spec=roles[0].behavior_spec if roles else None)
            return text, {
                role.behavior_name: _checked(policy, role, game=game, source=path) for role in roles
            }
        if looks_like_path(text):
            raise CheckpointError(f"{what} {text}: no such policy file or run folder")
        hint = did_you_mean(text, levels)
        hint = f"; {hint}" if hint else ""
        raise ConfigError(
            f"{what} {text!r} is neither a policy file nor a scripted level of {game} "
            f"(levels: {', '.join(levels)}){hint}"
        )
    if callable(getattr(who, "act", None)):
        label = str(getattr(who, "name", type(who).__name__))
        return label, {role.behavior_name: who for role in roles}
    raise TypeError(
        f"{what} must be a policy file, a scripted level name or an object with act(); "
        f"got {type(who).__name__}"
    )


# -- matches -----------------------------------------------------------------------------------
@attrs.define(kw_only=True)
class Match:
    """A built-in game with an actor on every behavior: what evaluations and replays play.

    ``team`` is the evaluated policy's team and ``scorer_slot`` the arena slot whose final reward
    decides a match from that team's side.
    """

    game: str
    env: VectorGame
    seats: list[Seat]
    team: int
    scorer_slot: int
    side: tuple[str, ...]
    policy_label: str
    opponent_label: str

    @property
    def scorer_behavior(self) -> str:
        """The behavior name of the agent in ``scorer_slot``."""
        return self.side[0]

    @property
    def num_arenas(self) -> int:
        """Matches played at once."""
        return self.env.num_arenas

    @property
    def max_episode_steps(self) -> int:
        """The game's step limit: every match ends within it."""
        return self.env.max_episode_steps

    def step(self, through: BaseEnv | None = None) -> None:
        """Every seat acts on its decision steps, then the game advances one step.

        Args:
            through: what wraps the game and is stepped in its place (a ``DemoRecorder``);
                None: the game itself.
        """
        env = self.env if through is None else through
        for seat in self.seats:
            decision, terminal = env.get_steps(seat.behavior_name)
            actions = act_on_steps(seat.actor, decision, terminal, deterministic=seat.deterministic)
            env.set_actions(seat.behavior_name, actions)
        env.step()

    def ended(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Matches that ended in the last step: ``(arenas, result sign, interrupted)``."""
        _, terminal = self.env.get_steps(self.scorer_behavior)
        mine = terminal.agent_id % self.env.agents_per_arena == self.scorer_slot
        arenas = self.env.arena_of(self.scorer_behavior, terminal.agent_id[mine])
        result = np.sign(terminal.reward[mine] + terminal.group_reward[mine]).astype(np.int64)
        return arenas, result, np.asarray(terminal.interrupted[mine], dtype=bool)

    def strategy(self, seat: Seat) -> np.ndarray | None:
        """A matrix game seat's mixed strategy (one-hot when deterministic), else ``None``."""
        if not isinstance(self.env, MatrixGame):
            return None
        actor = seat.actor
        probs: np.ndarray | None = None
        if getattr(actor, "memory_size", 0):
            return None  # its answer depends on its memory, not on the game's one state
        if callable(getattr(actor, "action_probabilities", None)):
            decision, _ = self.env.get_steps(seat.behavior_name)
            probs = np.asarray(actor.action_probabilities([o[:1] for o in decision.obs])[0][0])
        elif isinstance(getattr(actor, "probs", None), np.ndarray):
            probs = actor.probs
        if probs is None:
            return None
        probs = np.asarray(probs, dtype=np.float64)
        if seat.deterministic:
            probs = np.eye(len(probs))[int(np.argmax(probs))]
        return probs / probs.sum()

    def close(self) -> None:
        """Close the environment."""
        self.env.close()


@attrs.frozen(kw_only=True)
class MatchSetup:
    """Who plays whom in a built-in game: what every evaluation, replay and tournament game opens.

    Attributes:
        game: a built-in game name.
        policy, opponent: players (see the module docstring).
        side: the behavior ``policy`` plays (default: team 0's).
        seed: seeds the game and scripted players (-1: unseeded).
        num_arenas: matches played at once.
        deterministic, opponent_deterministic: take the most likely action instead of sampling.
    """

    game: str
    policy: Any
    opponent: Any
    side: str | None = None
    seed: int = 0
    num_arenas: int = 1
    deterministic: bool = False
    opponent_deterministic: bool = False


def open_match(setup: MatchSetup) -> Match:
    """Create ``setup.game`` with ``num_arenas`` arenas and seat ``policy`` on ``side``,
    ``opponent`` on the other behaviors (see the module docstring for what each may be)."""
    game, seed = setup.game, setup.seed
    check_game(game)
    if setup.num_arenas < 1:
        raise ConfigError(f"num_arenas must be >= 1 (got {setup.num_arenas})")
    env = make_game(game, seed=seed, num_arenas=setup.num_arenas)
    try:
        mine, theirs = split_sides(game, env.ROLES, setup.side)
        policy_label, policy_actors = resolve_player(
            setup.policy, game=game, roles=mine, seed=seed, what="policy"
        )
        opponent_label, opponent_actors = resolve_player(
            setup.opponent, game=game, roles=theirs, seed=seed, what="opponent"
        )
    except BaseException:
        env.close()
        raise
    seats = [
        Seat(behavior_name=name, actor=actor, deterministic=setup.deterministic)
        for name, actor in policy_actors.items()
    ] + [
        Seat(behavior_name=name, actor=actor, deterministic=setup.opponent_deterministic)
        for name, actor in opponent_actors.items()
    ]
    first_slot = 0
    for role in env.ROLES:
        if role is mine[0]:
            break
        first_slot += role.slots
    return Match(
        game=game,
        env=env,
        seats=seats,
        team=mine[0].team,
        scorer_slot=first_slot,
        side=tuple(role.behavior_name for role in mine),
        policy_label=policy_label,
        opponent_label=opponent_label,
    )


def _side_names(game: str, side: str | None) -> tuple[list[str], list[str]]:
    check_game(game)
    env = make_game(game, num_arenas=1)
    try:
        mine, theirs = split_sides(game, env.ROLES, side)
    finally:
        env.close()
    return sorted({role.name for role in mine}), sorted({role.name for role in theirs})


def _one(names: list[str], game: str, what: str) -> str:
    if len(names) != 1:
        raise ConfigError(f"the {what} side of {game} has behaviors {names}; expected one")
    return names[0]


def policy_behavior(game: str, side: str | None) -> str:
    """The behavior name (``Name``) the policy plays on ``side`` of ``game`` (default team 0)."""
    return _one(_side_names(game, side)[0], game, "policy")


def opponent_behavior(game: str, side: str | None) -> str:
    """The behavior name (``Name``) the opponent plays when the policy plays ``side``."""
    return _one(_side_names(game, side)[1], game, "opponent")
