"""``GhostCallback``: ghost-trainer's self-play cycle driven from inside SB3's ``learn``.

It runs the same ``GhostCycle`` as ``ghost-learn`` and ``mlagents-learn`` on the
``GhostVecEnv`` being trained: SB3's model is the learner (its trainer step is
``model.num_timesteps``), each rollout followed by ``train()`` is one update. At each step the
learner's finished matches are rated (one Elo result per match) and the ghosted teams' steps
counted; after each update a snapshot, a team change or a swap happens when due. Opponents act
with frozen copies of the learner's policy (same class) loaded with snapshot weights, or with
fixed opponents. ``Self-play/ELO`` and the win rates go to SB3's logger beside its own values.
"""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path
from typing import Any

import torch
from stable_baselines3.common.callbacks import BaseCallback

from ghost.core.ghost_cycle import GhostCycle
from ghost.core.opponents import Opponent
from ghost.core.self_play_host import SelfPlayHost
from ghost.exceptions import ConfigError, GhostError
from ghost.integrations.sb3.actors import Actor, PlayerActor, PolicyActor
from ghost.integrations.sb3.state_files import read_record, state_folder
from ghost.integrations.sb3.vec_env import GhostVecEnv, SB3Weights

ELO = "Self-play/ELO"


class GhostCallback(BaseCallback):
    """Self-play for the ``GhostVecEnv`` an SB3 model trains on (see the module docstring).

    Args:
        resume_from: a model path saved by ``save`` (``run/model``): continue its self-play
            state (window, ratings, learning team, opponents); load the model itself with
            SB3's ``load`` and train with ``reset_num_timesteps=False``.
        save_path: where ``save`` writes every ``save_every`` steps and when training ends.
        save_every: steps between two saves to ``save_path`` (None: only at the end).
        verbose: SB3's verbosity.
    """

    def __init__(
        self,
        *,
        resume_from: str | Path | None = None,
        save_path: str | Path | None = None,
        save_every: int | None = None,
        verbose: int = 0,
    ) -> None:
        super().__init__(verbose)
        if save_every is not None and (save_path is None or save_every < 1):
            raise ConfigError("save_every needs a save_path and must be >= 1")
        self.resume_from = resume_from
        self.save_path = save_path
        self.save_every = save_every
        self.kit: SelfPlayHost | None = None
        self.cycle: GhostCycle | None = None
        self.ghost_env: GhostVecEnv | None = None
        self._copies: _FrozenCopies | None = None
        self._total_steps = 0
        self._last_save = 0
        self._updated = False

    # -- SB3's hooks -------------------------------------------------------------------------
    def _init_callback(self) -> None:
        env = _find_ghost_env(self.training_env)
        if self.cycle is not None and env is self.ghost_env:
            return
        self.ghost_env = env
        # every opponent in play keeps its copy: room for two swaps' worth of them
        in_play = len(env.teams) * env.state.settings.opponents_per_swap
        self._copies = _FrozenCopies(capacity=2 * in_play + len(env.state.fixed_opponents) + 4)
        self.kit = SelfPlayHost(controller=env.controller)
        self.cycle = self.kit.add_behavior(
            state=env.state, learner=_SB3Learner(self), report=self._report
        )
        name = env.state.behavior_name
        self.kit.subscribe(name, env.teams)  # before a restored rotation, as every host does
        if self.resume_from is not None:
            folder = state_folder(self.resume_from)
            record = read_record(folder)
            self.kit.restore(name, folder, record, step=self.model.num_timesteps)
        self.kit.connect(name, env.teams)

    def _on_training_start(self) -> None:
        self._total_steps = int(self.locals.get("total_timesteps", 0))
        self._last_save = self.model.num_timesteps
        self._updated = False
        self._cycle.begin()

    def _on_rollout_start(self) -> None:
        if self._updated:  # SB3 trained since the last rollout: one update of the learner
            self._after_update()
        self._updated = False

    def _on_step(self) -> bool:
        env = self._env
        results, ghost_steps = env.take_results()
        for team, steps in ghost_steps.items():
            self._cycle.route(team=team, agent_steps=steps)
        if env.opponent_mode == "ghost":
            self._cycle.book(results)
        if (
            self.save_every is not None
            and self.model.num_timesteps - self._last_save >= self.save_every
        ):
            self.save(self.save_path)  # type: ignore[arg-type]
        return True

    def _on_rollout_end(self) -> None:
        self._updated = True
        self.logger.record(ELO, self._env.state.rating)

    def _on_training_end(self) -> None:
        if self._updated:  # learn() ends with an update: its snapshot, swap or change is due now
            self._after_update()
            self._updated = False
        if self.save_path is not None:
            self.save(self.save_path)

    # -- the cycle ---------------------------------------------------------------------------
    def _after_update(self) -> None:
        change = self._kit.update_done(self._env.state.behavior_name)
        if change is not None and self.verbose:  # SB3's own console, as its callbacks print
            print(f"Self-play: team {change.learning_team} learns now (change {change.count})")

    def _report(self, key: str, score: float) -> None:
        self.logger.record_mean(key, score)

    def actor_for(self, opponent: Opponent) -> Actor:
        """What a ghosted team acts with when it fields ``opponent``."""
        env = self._env
        spec = env.behavior_spec.action_spec
        deterministic = env.deterministic_opponents
        assert self._copies is not None, "set up by _init_callback"
        if env.opponent_mode == "latest":
            return PolicyActor(self.model.policy, spec, deterministic=deterministic)
        if opponent.fixed is not None:
            policy = opponent.fixed.policy
            if not isinstance(policy, SB3Weights):
                return PlayerActor(policy, spec, deterministic=deterministic)
            frozen = self._copies.get(self.model.policy, policy.state_dict, opponent.fixed.name)
            return PolicyActor(frozen, spec, deterministic=deterministic)
        assert opponent.snapshot is not None
        frozen = self._copies.get(self.model.policy, opponent.snapshot.weights, opponent.key)
        return PolicyActor(frozen, spec, deterministic=deterministic)

    # -- saving ------------------------------------------------------------------------------
    def save(self, path: str | Path) -> None:
        """``model.save(path)``, then the self-play state into ``<path>.self_play/``."""
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self.model.save(path)
        self._kit.save(
            self._env.state.behavior_name, state_folder(path), step=self.model.num_timesteps
        )
        self._last_save = self.model.num_timesteps

    @property
    def _env(self) -> GhostVecEnv:
        if self.ghost_env is None:
            raise GhostError("GhostCallback is used before SB3 started training with it")
        return self.ghost_env

    @property
    def _cycle(self) -> GhostCycle:
        assert self.cycle is not None, "set up by _init_callback"
        return self.cycle

    @property
    def _kit(self) -> SelfPlayHost:
        assert self.kit is not None, "set up by _init_callback"
        return self.kit


class _SB3Learner:
    """The ``LearnerHandle`` of a ``GhostCallback``: SB3's model and the env's teams."""

    def __init__(self, callback: GhostCallback) -> None:
        self.callback = callback

    @property
    def step(self) -> int:
        return int(self.callback.model.num_timesteps)

    @property
    def still_training(self) -> bool:
        return self.step < self.callback._total_steps

    def weights(self) -> dict[str, torch.Tensor]:
        return {
            key: value.detach().to("cpu", copy=True)
            for key, value in self.callback.model.policy.state_dict().items()
        }

    def field(self, team: int, opponents: list[Opponent]) -> None:
        self.callback._env.field(team, [self.callback.actor_for(o) for o in opponents])

    def act_as_learner(self, team: int) -> None:
        self.callback._env.set_learning_team(team)

    def publish(self) -> None:
        """Actors act in-process; nothing to hand over."""


class _FrozenCopies:
    """Frozen copies of the learner's policy, one per set of weights in play (the oldest
    unused ones are reloaded for new weights rather than copied again)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._copies: OrderedDict[int, tuple[Any, Any]] = OrderedDict()

    def get(self, learner: Any, weights: Any, name: str) -> Any:
        key = id(weights)
        if key in self._copies:
            self._copies.move_to_end(key)
            return self._copies[key][1]
        if len(self._copies) >= self.capacity:
            _, (_, policy) = self._copies.popitem(last=False)
        else:
            policy = _new_like(learner)
            policy.requires_grad_(False)
        try:
            policy.load_state_dict(weights)
        except RuntimeError as error:
            raise ConfigError(
                f"opponent {name!r} does not fit the learner's policy "
                f"({type(learner).__name__}, same network sizes needed): {error}"
            ) from None
        # the weights are kept so their id() names them as long as the copy exists
        self._copies[key] = (weights, policy)
        return policy


def _new_like(learner: Any) -> Any:
    """A new, frozen policy of the learner's class and sizes (what SB3 itself re-creates a
    saved policy from), on the learner's device."""
    policy = type(learner)(**learner._get_constructor_parameters()).to(learner.device)
    policy.set_training_mode(False)
    # predict() sets the mode again on every call, walking every submodule (~10% of a tennis
    # step with 4 opponents); a frozen copy never trains, so once is enough
    policy.set_training_mode = _stays_in_eval_mode
    return policy


def _stays_in_eval_mode(mode: bool) -> None:
    """A frozen copy's ``set_training_mode``: it stays in evaluation mode."""


def _find_ghost_env(env: Any) -> GhostVecEnv:
    base = getattr(env, "unwrapped", env)
    if not isinstance(base, GhostVecEnv):
        raise GhostError(
            f"GhostCallback trains on a GhostVecEnv; this model's env is a {type(base).__name__}"
        )
    return base
