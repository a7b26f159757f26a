"""Head-to-head matches on any ``BaseEnv``: a Unity build, a ``module:callable`` environment.

Built-in games have arenas, seats and scripted levels (``ghost.play.matches``); a general
``BaseEnv`` has only behaviors. Here:

- **team**: the behaviors of one team number (``Pong?team=0``; ``Striker?team=0`` and its
  teammates). Each behavior is driven by one player: the evaluated **policy** plays one team,
  the **opponent** every other team. Without a ``side`` the policy plays each team in turn
  (a self-play behavior's two teams: sides swap) with an equal share of the episodes, skipping
  teams a player has no policy for (a run without ``Goalie.pt``; a file of another behavior).
- **player**: a run folder (its final ``<Behavior>.pt`` for each behavior name), a policy file
  (final, checkpoint or snapshot: it plays every behavior whose observations and actions it
  fits) or any object with ``act(obs, action_mask, deterministic)``.
- **result** of an episode, from the policy's side: the sign of the terminal reward plus group
  reward of an agent of the policy's first behavior (the agents of one multi-agent group count
  once); an episode ended by ``interrupted`` counts apart, as in ``ghost.play.head_to_head``,
  whose counting and ``EvaluationResult`` this module reuses. Results are counted in the order
  episodes end.

``EnvGames`` holds one open environment and plays match after match on it (a tournament does not
start a Unity build for every pair); each match starts from ``env.reset()``. ``EnvGames.of_run``
opens the environment a run trained on::

    with EnvGames.of_run("results/pong") as games:
        result = games.head_to_head(policy="results/pong", opponent="results/pong2", episodes=100)
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np
from mlagents_envs.base_env import BaseEnv, BehaviorSpec

from envs.behavior_id import BehaviorId
from ghost.exceptions import CheckpointError, ConfigError
from ghost.play.demo_recording import DemoRequest, EnvRecording
from ghost.play.head_to_head import (
    EvaluationResult,
    count_results,
    new_counts,
    result_from_counts,
)
from ghost.play.host_policies import load_host_policy
from ghost.play.matches import Seat, describe_spec, spec_fits
from ghost.play.run_environment import EnvOverrides, RunEnvironment
from ghost.play.run_record import RunRecord
from ghost.play.venue import PairCounts, SnapshotsPlay
from trainers.memory import act_on_steps, forget_ended

logger = logging.getLogger(__name__)

#: environment steps within which an episode must end (a guard against one that never does)
DEFAULT_MAX_EPISODE_STEPS = 10_000


# -- players -------------------------------------------------------------------------------------
class EnvPlayer:
    """A player of a ``BaseEnv`` (see the module docstring), its policies loaded when needed.

    Args:
        who: a run folder, a policy file, or an object with ``act``.
        what: ``"policy"`` or ``"opponent"``, to name it in errors.

    Raises:
        CheckpointError: a path that is neither a policy file nor a run folder.
    """

    def __init__(self, who: Any, *, what: str = "policy") -> None:
        self._actor: Any = None
        self._run: RunRecord | None = None
        self._loaded: dict[str, Any] = {}
        if isinstance(who, str | os.PathLike):
            path = Path(who)
            if path.is_dir():
                self._run = RunRecord(path)
            elif path.is_file():
                self._actor = load_host_policy(path)
            else:
                raise CheckpointError(
                    f"{what} {path}: no such policy file or run folder (scripted opponents exist "
                    "only for built-in games)"
                )
            self.label = os.fspath(who)
        elif callable(getattr(who, "act", None)):
            self._actor = who
            self.label = str(getattr(who, "name", type(who).__name__))
        else:
            raise TypeError(
                f"{what} must be a run folder, a policy file or an object with act(); got "
                f"{type(who).__name__}"
            )

    def why_not(self, behavior_name: str, spec: BehaviorSpec) -> str | None:
        """Why this player cannot play ``behavior_name`` (``Name?team=N``), or ``None``."""
        if self._run is None:
            if spec_fits(self._actor, spec):
                return None
            return (
                f"{self.label} has {describe_spec(self._actor.behavior_spec)}, "
                f"{behavior_name} needs {describe_spec(spec)}"
            )
        name = BehaviorId.parse(behavior_name).name
        if name not in self._loaded:
            path = self._run.final_policy_path(name)
            if not path.is_file():
                return f"run {self.label} has no final policy of {name} ({path.name})"
            self._loaded[name] = load_host_policy(path)
        if not spec_fits(self._loaded[name], spec):
            return (
                f"{self._run.final_policy_path(name)} has "
                f"{describe_spec(self._loaded[name].behavior_spec)}, {behavior_name} needs "
                f"{describe_spec(spec)}"
            )
        return None

    def actor(self, behavior_name: str) -> Any:
        """What acts for ``behavior_name`` (after ``why_not`` said it can)."""
        if self._run is None:
            return self._actor
        return self._loaded[BehaviorId.parse(behavior_name).name]


def as_player(who: Any, *, what: str) -> EnvPlayer:
    """``who`` as an ``EnvPlayer`` (one already is kept, with the policies it loaded)."""
    return who if isinstance(who, EnvPlayer) else EnvPlayer(who, what=what)


# -- teams ---------------------------------------------------------------------------------------
def teams_of(behavior_names: Sequence[str]) -> dict[int, tuple[str, ...]]:
    """Team number → its behaviors (``Name?team=N`` as the environment names them), by team."""
    teams: dict[int, list[str]] = {}
    for name in sorted(behavior_names):
        teams.setdefault(BehaviorId.parse(name).team, []).append(name)
    return {team: tuple(teams[team]) for team in sorted(teams)}


def teams_for_side(teams: Mapping[int, Sequence[str]], side: str | None) -> list[int] | None:
    """The teams ``side`` names (``Goalie``: the teams it plays on; ``Pong?team=1``: that one);
    ``None`` for no side (every team the players can play)."""
    if side is None:
        return None
    wanted = BehaviorId.parse(side)
    explicit = "?team=" in side
    chosen = [
        team
        for team, names in teams.items()
        if any(
            BehaviorId.parse(n).name == wanted.name and (not explicit or team == wanted.team)
            for n in names
        )
    ]
    if not chosen:
        choices = sorted({BehaviorId.parse(n).name for ns in teams.values() for n in ns})
        raise ConfigError(
            f"side {side!r} is not a behavior of the environment; choose one of "
            f"{', '.join(choices)} (or Name?team=N)"
        )
    return chosen


# -- one match -----------------------------------------------------------------------------------
@attrs.define(kw_only=True)
class EnvMatch:
    """Players seated on every behavior of an open ``BaseEnv``: a ``head_to_head.Playable``.

    Its results form one stream (``num_arenas`` 1): a general ``BaseEnv`` names no arenas.
    """

    game: str
    env: BaseEnv
    seats: list[Seat]
    scorer: str
    max_episode_steps: int = DEFAULT_MAX_EPISODE_STEPS
    num_arenas: int = 1

    def step(self) -> None:
        """Every seat acts on its behavior's decision steps, then the environment steps."""
        for seat in self.seats:
            decision, terminal = self.env.get_steps(seat.behavior_name)
            if len(decision) == 0:
                forget_ended(seat.actor, terminal)
                continue
            actions = act_on_steps(seat.actor, decision, terminal, deterministic=seat.deterministic)
            self.env.set_actions(seat.behavior_name, actions)
        self.env.step()

    def ended(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Episodes of the scorer's agents that ended in the last step: ``(zeros, result sign,
        interrupted)``; a multi-agent group's agents count once."""
        _, terminal = self.env.get_steps(self.scorer)
        groups = np.asarray(terminal.group_id)
        keep = groups == 0
        _, first = np.unique(groups, return_index=True)
        keep[first[groups[first] != 0]] = True
        rewards = np.asarray(terminal.reward)[keep] + np.asarray(terminal.group_reward)[keep]
        result = np.sign(rewards).astype(np.int64)
        cut = np.asarray(terminal.interrupted, dtype=bool)[keep]
        return np.zeros(len(result), dtype=np.int64), result, cut


# -- matches on one open environment ------------------------------------------------------------
def _sub_seed(seed: int, *keys: int) -> int:
    if seed < 0:
        return -1
    return int(np.random.SeedSequence([seed, *keys]).generate_state(1)[0])


def _shares(episodes: int, parts: int) -> list[int]:
    """``episodes`` split into ``parts`` shares, the first ones larger by one."""
    return [episodes // parts + (1 if index < episodes % parts else 0) for index in range(parts)]


class EnvGames:
    """One open ``BaseEnv`` on which head-to-head matches are played one after the other.

    Args:
        env: the environment (closed by ``close``).
        label: its name in results and messages (``FakePong``, ``my_envs:make_duel``).
        max_episode_steps: environment steps within which an episode ends.
    """

    def __init__(
        self, env: BaseEnv, *, label: str, max_episode_steps: int = DEFAULT_MAX_EPISODE_STEPS
    ) -> None:
        self.env = env
        self.label = label
        #: a tournament's players by policy file, each loaded once
        self._players: dict[Any, EnvPlayer] = {}
        self.max_episode_steps = max_episode_steps
        try:
            env.reset()  # a Unity build names its behaviors with the first agents it sends
            self.specs: dict[str, BehaviorSpec] = dict(env.behavior_specs)
        except BaseException:
            env.close()
            raise
        self.teams = teams_of(list(self.specs))
        if len(self.teams) < 2:
            env.close()
            raise ConfigError(
                f"{label} has one team ({', '.join(self.specs) or 'no behaviors'}): a match needs "
                "behaviors of two teams (Name?team=0 and Name?team=1)"
            )

    @classmethod
    def of_run(
        cls,
        run_dir: str | os.PathLike | None,
        *,
        overrides: EnvOverrides | None = None,
        seed: int = 0,
    ) -> EnvGames:
        """The environment ``run_dir`` trained on, opened (``ghost.play.run_environment``).

        Args:
            run_dir: the run folder; ``None`` when ``overrides.env_path`` names the environment.
            overrides: what replaces the recorded settings (``--env``, ``--base-port``...).
            seed: the environment's seed.
        """
        record = RunRecord(run_dir) if run_dir is not None else None
        environment = RunEnvironment.of_run(record, overrides or EnvOverrides())
        return cls(environment.open(seed=seed), label=environment.label)

    def __enter__(self) -> EnvGames:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the environment (a Unity build's process ends)."""
        self.env.close()

    @property
    def behavior_names(self) -> list[str]:
        """The behavior names (``Name``, no team) of the environment, in team order."""
        names = [BehaviorId.parse(n).name for ns in self.teams.values() for n in ns]
        return list(dict.fromkeys(names))

    def teams_with(self, name: str) -> list[int]:
        """The teams on which behavior ``name`` (no team) plays."""
        return [
            t for t, ns in self.teams.items() if any(BehaviorId.parse(n).name == name for n in ns)
        ]

    @property
    def behaviors(self) -> list[str]:
        """The behavior names (``Name``, no team), in team order (``Venue.behaviors``)."""
        return self.behavior_names

    @property
    def builtin_game(self) -> None:
        """None: no scripted levels play in a general ``BaseEnv``."""
        return None

    def play(
        self,
        *,
        policy: Any,
        opponent: Any,
        episodes: int,
        seed: int = 0,
        side: Any = None,
        deterministic: bool = False,
        opponent_deterministic: bool = False,
        progress: Callable[[int, int], None] | None = None,
        record_demo: DemoRequest | None = None,
    ) -> EvaluationResult:
        """``head_to_head`` as ``ghost.play.venue.Venue.play``.

        Args:
            policy: the evaluated player.
            opponent: the player of every other team.
            episodes: episodes to play.
            seed: seeds the sampling.
            side: a behavior (``Goalie``, ``Pong?team=1``), the teams ``snapshot_sides`` gave,
                or None: each team the players can play, in turn.
            deterministic: the policy takes its most likely action.
            opponent_deterministic: the same for the opponent.
            progress: told ``(episodes played, episodes)`` as they end.
            record_demo: also record one side's steps into a ``.demo`` file.

        Returns:
            The counts with their intervals (and the recorded ``demo``).
        """
        teams = None if side is None or isinstance(side, str) else list(side)
        return self.head_to_head(
            policy=policy, opponent=opponent, episodes=episodes, seed=seed,
            side=side if isinstance(side, str) else None, teams=teams,
            deterministic=deterministic, opponent_deterministic=opponent_deterministic,
            progress=progress, record_demo=record_demo,
        )  # fmt: skip

    def play_pair(
        self,
        a: Any,
        b: Any,
        *,
        a_behavior: str,
        b_behavior: str,
        games: int,
        seed: int,
        pair_index: int,
        deterministic: bool,
    ) -> PairCounts:
        """One tournament pair: with one behavior name ``a`` plays each team in turn, else its
        behavior's teams; each player's policies are loaded once for the whole tournament.

        Args:
            a: the first player (a policy file).
            b: the second player.
            a_behavior: the behavior ``a`` plays.
            b_behavior: the behavior ``b`` plays (``a_behavior`` with one behavior name).
            games: games to play.
            seed: the tournament's seed.
            pair_index: the pair's place in the tournament.
            deterministic: every player takes its most likely action.

        Returns:
            Wins, draws, losses and interrupted games from ``a``'s side.
        """
        players = self._players
        for target in (a, b):
            if target not in players:
                players[target] = EnvPlayer(target)
        result = self.head_to_head(
            policy=players[a], opponent=players[b], episodes=games,
            seed=_sub_seed(seed, pair_index),
            teams=None if a_behavior == b_behavior else self.teams_with(a_behavior),
            deterministic=deterministic, opponent_deterministic=deterministic,
        )  # fmt: skip
        return result.wins, result.draws, result.losses, result.interrupted

    def snapshot_sides(
        self, *, snapshots_play: SnapshotsPlay, side: str | None
    ) -> list[tuple[str, Any]]:
        """Every behavior name whose snapshots can play, with the teams the evaluated player
        plays then (None: each team in turn).

        Args:
            snapshots_play: the part the snapshots play.
            side: the behavior the evaluated player plays (default: the snapshots', or the
                other side's).

        Returns:
            ``(behavior name, teams)`` pairs.
        """
        by_side = teams_for_side(self.teams, side)
        sides: list[tuple[str, Any]] = []
        for behavior in self.behavior_names:
            if len(self.behavior_names) == 1:
                teams = by_side
            else:
                own = self.teams_with(behavior)
                mine = (
                    own if snapshots_play == "policy" else [t for t in self.teams if t not in own]
                )
                teams = [t for t in mine if by_side is None or t in by_side]
            if teams != []:
                sides.append((behavior, teams))
        return sides

    def head_to_head(
        self,
        *,
        policy: Any,
        opponent: Any,
        episodes: int,
        seed: int = 0,
        side: str | None = None,
        teams: Sequence[int] | None = None,
        deterministic: bool = False,
        opponent_deterministic: bool = False,
        progress: Callable[[int, int], None] | None = None,
        record_demo: DemoRequest | None = None,
    ) -> EvaluationResult:
        """Play ``episodes`` episodes of ``policy`` against ``opponent`` and count them from the
        policy's side.

        Args:
            policy: players (a run folder, a policy file, an ``EnvPlayer``...).
            opponent: players (a run folder, a policy file, an ``EnvPlayer``...).
            side: the behavior the policy plays (``Goalie``, ``Pong?team=1``); default each team it
                can play, in turn.
            teams: the policy's teams, instead of ``side``.
            seed: seeds torch's sampling, each team's share its own stream.
            progress: told ``(episodes played, episodes)`` as they end.
            record_demo: also record one side's steps into a ``.demo`` file
                (``ghost.play.demo_recording``); the result's ``demo`` says what it holds.

        Raises:
            ConfigError: ``episodes`` < 1, an unknown side, or no team both can play.
        """
        if episodes < 1:
            raise ConfigError(f"episodes must be >= 1 (got {episodes})")
        mine, theirs = as_player(policy, what="policy"), as_player(opponent, what="opponent")
        chosen = teams if teams is not None else teams_for_side(self.teams, side)
        playing = self._playable(mine, theirs, chosen)
        recording = None
        if record_demo is not None:
            recording = EnvRecording(
                self.env, record_demo, teams=self.teams, playing=playing, game=self.label
            )
        try:
            counts = self._play_shares(
                mine, theirs, playing, episodes=episodes, seed=seed, deterministic=deterministic,
                opponent_deterministic=opponent_deterministic, progress=progress,
                recording=recording,
            )  # fmt: skip
            demo = recording.finish() if recording is not None else None
        finally:
            if recording is not None:
                recording.discard()
        return result_from_counts(
            counts, game=self.label, policy=mine.label, opponent=theirs.label,
            side=tuple(name for team in playing for name in self.teams[team]), seed=seed,
            deterministic=deterministic, demo=demo,
        )  # fmt: skip

    def _play_shares(
        self,
        mine: EnvPlayer,
        theirs: EnvPlayer,
        playing: Sequence[int],
        *,
        episodes: int,
        seed: int,
        deterministic: bool,
        opponent_deterministic: bool,
        progress: Callable[[int, int], None] | None,
        recording: EnvRecording | None,
    ) -> dict[Any, int]:
        """The counts of ``mine`` on each team of ``playing`` in turn (an equal share of
        ``episodes`` each), through ``recording`` when there is one."""
        counts = new_counts()
        shares = _shares(episodes, len(playing))
        for index, team in enumerate(playing):
            if shares[index] == 0:
                continue
            match = self._seat(mine, theirs, team=team, deterministic=deterministic,
                               opponent_deterministic=opponent_deterministic,
                               env=self.env if recording is None else recording.env)  # fmt: skip
            if recording is not None:
                recording.share_starts(team=team, matches=shares[index], scorer=match.scorer)
            done_before = sum(shares[:index])
            share_progress = (
                None if progress is None
                else lambda done, _share, before=done_before: progress(before + done, episodes)
            )  # fmt: skip
            played = count_results(
                match, episodes=shares[index], seed=_sub_seed(seed, index), progress=share_progress
            )
            counts = {key: counts[key] + played[key] for key in counts}
        return counts

    def _playable(
        self, mine: EnvPlayer, theirs: EnvPlayer, chosen: Sequence[int] | None
    ) -> list[int]:
        """The teams of ``chosen`` (every team when ``None``) that both players can play."""
        reasons: dict[int, list[str]] = {}
        for team in self.teams if chosen is None else chosen:
            problems = [self._why_not(mine, name) for name in self.teams[team]]
            problems += [
                self._why_not(theirs, name)
                for other, names in self.teams.items()
                if other != team
                for name in names
            ]
            reasons[team] = [p for p in problems if p is not None]
        playing = [team for team, problems in reasons.items() if not problems]
        refused = {team: problems for team, problems in reasons.items() if problems}
        if refused and (chosen is not None or not playing):
            first = next(iter(refused.values()))[0]
            raise ConfigError(
                f"{mine.label} cannot play {_teams_text(self.teams, refused)} against "
                f"{theirs.label} in {self.label}: {first}"
            )
        for team in refused:
            logger.info("%s does not play team %d: %s", mine.label, team, refused[team][0])
        return playing

    def _why_not(self, player: EnvPlayer, behavior_name: str) -> str | None:
        return player.why_not(behavior_name, self.specs[behavior_name])

    def _seat(
        self,
        mine: EnvPlayer,
        theirs: EnvPlayer,
        *,
        team: int,
        deterministic: bool,
        opponent_deterministic: bool,
        env: BaseEnv,
    ) -> EnvMatch:
        """A match with ``mine`` on ``team`` and ``theirs`` on every other, from a reset of
        ``env`` (the environment, or what records it)."""
        env.reset()
        seats = [
            Seat(
                behavior_name=name,
                actor=(mine if other == team else theirs).actor(name),
                deterministic=deterministic if other == team else opponent_deterministic,
            )
            for other, names in self.teams.items()
            for name in names
        ]
        return EnvMatch(
            game=self.label,
            env=env,
            seats=seats,
            scorer=self.teams[team][0],
            max_episode_steps=self.max_episode_steps,
        )


def _teams_text(teams: Mapping[int, Sequence[str]], chosen: Mapping[int, Any]) -> str:
    return " or ".join(f"team {team} ({', '.join(teams[team])})" for team in chosen)
