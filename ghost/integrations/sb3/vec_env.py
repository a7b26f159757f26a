"""``GhostVecEnv``: the learning team's agents of a multi-agent game as one SB3 ``VecEnv``.

SB3 sees one index per learning-team agent (real-time games) or per table (turn-based games,
where SB3 always acts for the side to move); the other teams act inside ``step`` with the
opponents ``GhostCallback`` fields from the self-play window (``drivers``). The env also holds
the game's self-play bookkeeping (``SelfPlayState``, ``GhostController``), which the callback's
cycle reads and changes.

When learning passes to another team, every running episode is cut off at the next step (done,
``TimeLimit.truncated``, its last observation as ``terminal_observation``) and the learner plays
the new team's agents from the next episode on: no transition mixes two sides.
"""

from __future__ import annotations

import io
import time
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

import attrs
import numpy as np
import torch
from mlagents_envs.base_env import BaseEnv
from stable_baselines3.common.vec_env import VecEnv

from envs.games import BUILTIN_GAMES, make_game
from envs.seated_game import SeatedGame
from envs.sources import EnvFunction, resolve_env
from ghost.core.controller import GhostController
from ghost.core.ghost_cycle import MatchResult
from ghost.core.opponents import FixedOpponent
from ghost.core.self_play import SelfPlayState
from ghost.core.settings import FixedOpponentSettings, SelfPlaySettings
from ghost.exceptions import ConfigError, GhostError
from ghost.integrations.sb3.actors import Actor
from ghost.integrations.sb3.drivers import RealTimeDriver, TurnDriver
from ghost.integrations.sb3.settings import SelfPlayArgument, self_play_settings
from ghost.integrations.sb3.spaces import action_space, observation_size, observation_space
from ghost.running.fixed_opponents import build_fixed_opponents

OpponentMode = Literal["ghost", "latest"]
_MASKS = "action_masks"


@attrs.frozen
class SB3Weights:
    """A fixed opponent saved by SB3 (``model.zip``): its policy's weights, played by a frozen
    copy of the learner's policy."""

    path: Path
    state_dict: dict[str, Any] = attrs.field(repr=False)


class GhostVecEnv(VecEnv):
    """The learning team of ``env`` as a VecEnv (see the module docstring).

    Args:
        env: a built-in game name (``tennis``), any ``--env`` text (``pettingzoo:<module>``,
            ``openspiel:<game>``, ``module:callable``), a ``BaseEnv``, or a factory called with
            ``worker_id``/``seed`` when it takes them.
        self_play: the ``self_play`` settings: a dict, a ``SelfPlaySettings`` or a trainer YAML
            (its section for this game's behavior); None for the defaults.
        seed: seeds the game, the opponent draws and the moves made before any opponent is
            fielded (random legal moves).
        num_arenas: arenas of a built-in game, or tables of a PettingZoo/OpenSpiel game (default:
            the game's own default).
        opponent: ``"ghost"`` (opponents from the window, ML-Agents' ghost) or ``"latest"``
            (naive self-play: the opponents always act with the learner's current policy).
        deterministic_opponents: opponents play their most likely action instead of sampling.
    """

    def __init__(
        self,
        env: str | BaseEnv | Callable[..., BaseEnv],
        *,
        self_play: SelfPlayArgument = None,
        seed: int = 0,
        num_arenas: int | None = None,
        opponent: OpponentMode = "ghost",
        deterministic_opponents: bool = False,
    ) -> None:
        if opponent not in ("ghost", "latest"):
            raise ConfigError(f"opponent={opponent!r}: use 'ghost' or 'latest' (naive self-play)")
        game, builtin = _open(env, seed=seed, num_arenas=num_arenas)
        try:
            self.driver = (
                TurnDriver(game, seed=seed)
                if isinstance(game, SeatedGame)
                else RealTimeDriver(game, seed=seed)
            )
            if isinstance(self.driver, RealTimeDriver):
                self.driver.reset()  # a real-time game's agents are known once it is reset
            settings = self_play_settings(self_play, behavior=self.driver.behavior_name)
            fixed = _fixed_opponents(settings, self.driver.spec, self.driver.behavior_name, builtin)
        except Exception:
            game.close()  # a Unity build would run on
            raise
        self.behavior_name = self.driver.behavior_name
        self.behavior_spec = self.driver.spec
        self.opponent_mode: OpponentMode = opponent
        self.deterministic_opponents = deterministic_opponents
        self.state = SelfPlayState(
            behavior_name=self.behavior_name, settings=settings, seed=seed, fixed_opponents=fixed
        )
        self.controller = GhostController()
        self.render_mode = None
        super().__init__(
            num_envs=self.driver.num_envs,
            observation_space=observation_space(self.behavior_spec),
            action_space=action_space(self.behavior_name, self.behavior_spec.action_spec),
        )
        self._actions: np.ndarray | None = None
        size = observation_size(self.behavior_spec)
        self._obs = np.zeros((self.num_envs, size), dtype=np.float32)
        self._pending_team: int | None = None
        self._results: list[MatchResult] = []
        self._returns = np.zeros(self.num_envs, dtype=np.float64)
        self._lengths = np.zeros(self.num_envs, dtype=np.int64)
        self._started = time.time()

    # -- what the callback uses --------------------------------------------------------------
    @property
    def teams(self) -> list[int]:
        return list(self.driver.teams)

    @property
    def learning_team(self) -> int:
        """The team whose agents SB3 plays now."""
        return self.driver.learning_team

    def field(self, team: int, actors: list[Actor]) -> None:
        """``team`` acts with ``actors`` while ghosted, spread over arenas like ghost-learn."""
        self.driver.actors[team] = list(actors)

    def set_learning_team(self, team: int) -> None:
        """SB3 plays ``team`` from the next episode (the running ones are cut off next step)."""
        if team not in self.driver.teams:
            raise GhostError(f"team {team} is not a team of {self.behavior_name}: {self.teams}")
        self._pending_team = None if team == self.driver.learning_team else team

    def take_results(self) -> tuple[list[MatchResult], dict[int, int]]:
        """The learner's finished matches and each ghosted team's agent steps since last call."""
        results, self._results = self._results, []
        return results, self.driver.take_ghost_steps()

    def action_masks(self) -> np.ndarray:
        """``(num_envs, actions)``: True where an action is allowed (sb3-contrib's convention)."""
        return self.driver.allowed()

    # -- VecEnv ------------------------------------------------------------------------------
    def reset(self) -> np.ndarray:
        if self._pending_team is not None:  # nothing runs yet to cut off
            self.driver.learning_team, self._pending_team = self._pending_team, None
        self._obs = self.driver.reset()
        self._returns[:] = 0.0
        self._lengths[:] = 0
        return self._obs.copy()

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions)

    def step_wait(self) -> Any:
        if self._pending_team is not None:
            return self._change_team()
        assert self._actions is not None, "step_async comes first"
        outcome = self.driver.step(self._actions)
        self._results.extend(outcome.results)
        self._returns += outcome.rewards
        self._lengths += 1
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        for index in np.flatnonzero(outcome.dones).tolist():
            infos[index] = self._episode_end(
                index, outcome.final_obs[index], truncated=bool(outcome.truncated[index])
            )
        self._obs = outcome.obs
        return self._obs.copy(), outcome.rewards.astype(np.float32), outcome.dones.copy(), infos

    def _change_team(self) -> Any:
        """Cut off every episode at the learner's last observation; the new team plays next."""
        assert self._pending_team is not None
        infos = [self._episode_end(i, self._obs[i], truncated=True) for i in range(self.num_envs)]
        self.driver.learning_team, self._pending_team = self._pending_team, None
        self._obs = self.driver.reset()
        dones = np.ones(self.num_envs, dtype=bool)
        return self._obs.copy(), np.zeros(self.num_envs, dtype=np.float32), dones, infos

    def _episode_end(self, index: int, final_obs: np.ndarray, *, truncated: bool) -> dict[str, Any]:
        episode = {
            "r": float(self._returns[index]),
            "l": int(self._lengths[index]),
            "t": round(time.time() - self._started, 6),
        }
        self._returns[index] = 0.0
        self._lengths[index] = 0
        return {
            "terminal_observation": np.asarray(final_obs, dtype=np.float32),
            "TimeLimit.truncated": truncated,
            "episode": episode,
        }

    def close(self) -> None:
        self.driver.close()

    def seed(self, seed: int | None = None) -> Sequence[None]:
        """The game is seeded once, by ``GhostVecEnv(seed=...)``; SB3's later seeds change
        nothing here."""
        return [None] * self.num_envs

    def has_attr(self, attr_name: str) -> bool:
        if attr_name == _MASKS:
            return not self.behavior_spec.action_spec.continuous_size
        return hasattr(self, attr_name)

    def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
        return [getattr(self, attr_name) for _ in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        setattr(self, attr_name, value)

    def env_method(self, method_name: str, *args: Any, indices: Any = None, **kwargs: Any) -> list:
        rows = list(self._get_indices(indices))
        if method_name == _MASKS:
            masks = self.action_masks()
            return [masks[i] for i in rows]
        result = getattr(self, method_name)(*args, **kwargs)
        return [result for _ in rows]

    def env_is_wrapped(self, wrapper_class: type, indices: Any = None) -> list[bool]:
        return [False for _ in self._get_indices(indices)]


def _open(env: Any, *, seed: int, num_arenas: int | None) -> tuple[BaseEnv, str | None]:
    """The game ``env`` names, and its built-in game name (None for other games)."""
    if isinstance(env, BaseEnv):
        return env, None
    if isinstance(env, str):
        if env in BUILTIN_GAMES:
            arenas = {} if num_arenas is None else {"num_arenas": num_arenas}
            return make_game(env, seed=seed, **arenas), env
        source = resolve_env(env)
        if num_arenas is not None:
            if not attrs.has(type(source)) or "copies" not in attrs.fields_dict(type(source)):
                raise ConfigError(
                    f"num_arenas= applies to built-in, PettingZoo and OpenSpiel games, not {env!r}"
                )
            source = attrs.evolve(source, copies=num_arenas)
        return source(worker_id=0, seed=seed), None
    if callable(env):
        return EnvFunction(env)(worker_id=0, seed=seed), None
    raise GhostError(
        f"GhostVecEnv(env=...) takes a game name, an --env text, a BaseEnv or a factory; got a "
        f"{type(env).__name__}"
    )


def _fixed_opponents(
    settings: SelfPlaySettings, spec: Any, behavior: str, builtin: str | None
) -> list[FixedOpponent]:
    """Fixed opponents: SB3 ``.zip`` models here, everything else as ghost-learn loads it."""
    saved = [entry for entry in settings.fixed_opponents if _is_sb3_model(entry)]
    others = attrs.evolve(
        settings, fixed_opponents=[e for e in settings.fixed_opponents if e not in saved]
    )
    loaded = build_fixed_opponents(
        others, behavior_name=behavior, behavior_spec=spec, builtin_game=builtin
    )
    for entry in saved:
        rating = entry.rating if entry.rating is not None else settings.initial_elo
        loaded.append(
            FixedOpponent(name=entry.name, policy=read_sb3_policy(entry), rating=rating,
                          pinned=entry.pin_rating)
        )  # fmt: skip
    order = [entry.name for entry in settings.fixed_opponents]
    return sorted(loaded, key=lambda fixed: order.index(fixed.name))


def _is_sb3_model(entry: FixedOpponentSettings) -> bool:
    return entry.policy is not None and entry.policy.endswith(".zip")


def read_sb3_policy(entry: FixedOpponentSettings) -> SB3Weights:
    """The policy weights of an SB3 ``model.zip``, read without unpickling code (weights only).

    Raises:
        ConfigError: the file is missing or holds no ``policy.pth``.
    """
    assert entry.policy is not None
    path = Path(entry.policy)
    try:
        with zipfile.ZipFile(path) as archive:
            data = archive.read("policy.pth")
    except (OSError, KeyError, zipfile.BadZipFile) as error:
        raise ConfigError(
            f"fixed opponent {entry.name!r}: {path} is not a model saved by SB3's model.save "
            f"({error})"
        ) from None
    weights = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    return SB3Weights(path=path, state_dict=weights)
