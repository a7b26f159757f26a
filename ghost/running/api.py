"""``ghost.train``: the Python API of a training run, and what ``ghost-learn`` calls.

``train(config, env=..., run_id=...)`` does everything the command line does, in one direction:
the config (a YAML path, a parsed dict or ``RunOptions``) and the keyword arguments go to
``resolve_options``, which builds the final ``RunOptions`` once; ``train_options`` then prepares
and locks ``<results_dir>/<run_id>`` (``resume``/``force`` rules, ``configuration.yaml``), trains,
releases the folder and returns a ``TrainingResult``. Callbacks see summaries, checkpoints,
snapshots and team changes, and can stop the run.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs
import torch
from mlagents_envs.base_env import BaseEnv

from envs.game_kind import declared_kind
from envs.mlagents_protobuf import describe_protobuf
from envs.openspiel import OpenSpielSource
from envs.pettingzoo import PettingZooSource
from envs.settings import EnvironmentSettings
from envs.sources import EnvFunction, EnvInstance, with_shuffled_seats
from envs.stepping import EnvStepper, InProcessStepper
from envs.unity_build import UnityBuild
from ghost.command_line import console_logging
from ghost.config.environment import env_factory_for
from ghost.config.loader import MAX_STEPS_KEY, ConfigSource, resolve_options
from ghost.config.settings import RunOptions
from ghost.config.torch_device import check_torch_settings
from ghost.exceptions import ConfigError
from ghost.running.callbacks import (
    Checkpoint,
    SelfPlayCallback,
    SnapshotTaken,
    Summary,
    TeamChanged,
)
from ghost.running.run_dir import RunDirectory
from ghost.running.session import SelfPlaySession
from trainers.callbacks import TrainingCallback
from trainers.devices import AUTO
from trainers.exceptions import results_write_errors
from trainers.fast_acting import limit_blas_threads
from trainers.run_files.layout import RunLayout
from trainers.run_files.lock import RunLock

logger = logging.getLogger(__name__)

EnvFactory = Callable[..., BaseEnv]


@attrs.frozen(kw_only=True)
class TrainingResult:
    """What a finished (or stopped) run left behind.

    Attributes:
        run_dir: the run's results folder.
        policies: final policy file per behavior name (``<run>/<Behavior>.pt``; empty with
            ``inference``).
        ratings: Elo per self-play behavior name.
        steps: trainer steps per behavior name.
        wall_time_s: seconds the run took.
        stopped_early: a callback or Ctrl-C stopped the run before ``max_steps``.
    """

    run_dir: Path
    policies: dict[str, Path]
    ratings: dict[str, float]
    steps: dict[str, int]
    wall_time_s: float
    stopped_early: bool


def training_games(options: RunOptions, factory: EnvFactory) -> EnvFactory:
    """The factory training steps: with ``self_play.seats: shuffled`` its games deal the seats at
    random every game (evaluations keep ``factory``'s fixed seats, to score each seat)."""
    shuffled = [
        name
        for name, settings in options.behaviors.items()
        if settings.self_play is not None and settings.self_play.seats == "shuffled"
    ]
    if not shuffled:
        return factory
    logger.info("Self-play: %s plays every seat (self_play.seats: shuffled)", ", ".join(shuffled))
    return with_shuffled_seats(factory)


def make_stepper(settings: EnvironmentSettings, factory: EnvFactory, seed: int) -> EnvStepper:
    """``num_envs`` Ray actors with the ``ray`` backend; otherwise one environment in-process, or
    ``num_envs`` worker processes (always worker processes for a factory with
    ``runs_in_worker``, e.g. a Unity build: a worker restarts a crash)."""
    pool_options = {
        "factory": factory,
        "num_envs": settings.num_envs,
        "seed": seed,
        "max_lifetime_restarts": settings.max_lifetime_restarts,
        "restarts_rate_limit_n": settings.restarts_rate_limit_n,
        "restarts_rate_limit_period_s": settings.restarts_rate_limit_period_s,
    }
    if settings.uses_ray:
        from envs.ray_workers import RayStepper  # the optional extra: only when asked for

        return RayStepper(
            address=settings.ray_address,
            wait_fraction=settings.ray_wait_fraction,
            cpus_per_env=settings.ray_cpus_per_env,
            **pool_options,
        )
    if settings.num_envs == 1 and not getattr(factory, "runs_in_worker", False):
        return InProcessStepper.open(factory, seed=seed)
    from envs.workers import SubprocessStepper  # starts processes: only when asked for

    return SubprocessStepper(**pool_options)


class LockHeartbeat(SelfPlayCallback):
    """Tells other hosts that the run holding ``lock`` is alive, at every event of the run (the
    lock writes at most every ``HEARTBEAT_INTERVAL_S``)."""

    def __init__(self, lock: RunLock) -> None:
        self.lock = lock

    def on_summary(self, summary: Summary) -> None:
        self.lock.heartbeat()

    def on_checkpoint(self, checkpoint: Checkpoint) -> None:
        self.lock.heartbeat()

    def on_snapshot(self, snapshot: SnapshotTaken) -> None:
        self.lock.heartbeat()

    def on_team_change(self, change: TeamChanged) -> None:
        self.lock.heartbeat()


def initial_policy_files(options: RunOptions, run_dir: RunDirectory) -> dict[str, Path]:
    """Per behavior, the policy file to start from: ``init_path`` or ``--initialize-from``."""
    files: dict[str, Path] = {}
    for name, settings in options.behaviors.items():
        if settings.init_path:
            path = Path(settings.init_path)
            files[name] = RunLayout(path).final_policy_path(name) if path.is_dir() else path
        elif run_dir.initialize_from is not None:
            files[name] = RunLayout(run_dir.initialize_from).final_policy_path(name)
    return files


def train_options(
    options: RunOptions, env_factory: EnvFactory, *, callbacks: Iterable[TrainingCallback] = ()
) -> TrainingResult:
    """Prepare the run folder of ``options`` (writing ``configuration.yaml``) and train.

    ``options`` are final, as ``resolve_options`` returns them: recorded and trained as given.
    The run folder stays locked until training ends, however it ends.
    """
    check_torch_settings(options.torch_settings)
    run_dir = RunDirectory.prepare(options.checkpoint_settings)
    try:
        with results_write_errors():
            run_dir.write_configuration(options)
        if isinstance(env_factory, UnityBuild):
            logger.info("Unity build messages: %s", describe_protobuf())
        if isinstance(env_factory, UnityBuild) and env_factory.log_folder is None:
            log_folder = str(run_dir.layout.run_logs_dir.absolute())
            env_factory = attrs.evolve(env_factory, log_folder=log_folder)
        return run_training(options, env_factory=env_factory, run_dir=run_dir, callbacks=callbacks)
    except BaseException:
        run_dir.discard_if_unused()
        raise
    finally:
        run_dir.release()


def run_training(
    options: RunOptions,
    *,
    env_factory: EnvFactory,
    run_dir: RunDirectory,
    callbacks: Iterable[TrainingCallback] = (),
) -> TrainingResult:
    """Train every behavior of the environment in a prepared run folder until ``max_steps``
    (refreshing the heartbeat of its lock, if it holds one)."""
    # small networks run fastest on one thread; the environment wants the other core
    torch.set_num_threads(max(1, (os.cpu_count() or 2) // 2) if torch.cuda.is_available() else 1)
    limit_blas_threads()  # numpy's too: it acts (trainers.fast_acting)
    seed = max(options.env_settings.seed, 0)
    torch.manual_seed(seed)
    training = not options.checkpoint_settings.inference
    if run_dir.lock is not None:
        callbacks = [*callbacks, LockHeartbeat(run_dir.lock)]
    session = SelfPlaySession(
        options=options,
        stepper=make_stepper(options.env_settings, training_games(options, env_factory), seed),
        layout=run_dir.layout,
        seed=seed,
        device=options.torch_settings.device or AUTO,
        acting_device=options.torch_settings.acting_device,
        training=training,
        initialize_from=initial_policy_files(options, run_dir),
        callbacks=callbacks,
        env_source=env_factory,
    )
    started = time.perf_counter()
    session.run(resume=run_dir.resumed)
    stopped_early = session.interrupted or session.callbacks.stop_requested
    if stopped_early:
        logger.info("Stopped early; continue with --resume --run-id %s", run_dir.root.name)
    policies = {name: run_dir.layout.final_policy_path(name) for name in session.trainers}
    return TrainingResult(
        run_dir=run_dir.root,
        policies={name: path for name, path in policies.items() if training and path.is_file()},
        ratings={name: ghost.rating for name, ghost in session.ghosts.items()},
        steps={name: trainer.step for name, trainer in session.trainers.items()},
        wall_time_s=time.perf_counter() - started,
        stopped_early=stopped_early,
    )


def _importable_name(function: Any) -> str | None:
    """``module:qualname`` of a module-level function or class (to record in the config)."""
    module = getattr(function, "__module__", None)
    qualname = getattr(function, "__qualname__", "")
    if not module or module == "__main__" or "<" in qualname:
        return None
    return f"{module}:{qualname}"


def _recorded_env_path(env: Any) -> str | None:
    """What ``env_settings.env_path`` records for ``env`` (so a resume finds it), if anything."""
    if isinstance(env, str | os.PathLike):
        return os.fspath(env)
    if isinstance(env, OpenSpielSource | PettingZooSource):
        return env.env_path
    if callable(env) and not isinstance(env, BaseEnv):
        return _importable_name(env)
    return None


def _config_keys(
    keywords: Mapping[str, Any], overrides: Mapping[str, Any] | None, env: Any
) -> dict[str, Any]:
    """The keys ``train`` lays over the config: its keyword arguments that were given, then
    ``overrides``, then what the config records of ``env`` so that a resume finds it."""
    keys = {key: value for key, value in keywords.items() if value is not None}
    keys.update(overrides or {})
    env_path = _recorded_env_path(env)
    if env_path is not None:
        keys["env_settings.env_path"] = env_path
    kind = None if env is None or isinstance(env, str | os.PathLike) else declared_kind(env)
    if kind is not None:  # an environment object that says what it is (envs.game_kind)
        keys["env_settings.game_kind"] = kind
    return keys


def _env_factory(env: Any, options: RunOptions) -> EnvFactory:
    """The factory of ``env`` (name, callable or BaseEnv) under the final ``options``."""
    if env is None or isinstance(env, str | os.PathLike):
        return env_factory_for(options)
    if isinstance(env, BaseEnv):
        if options.env_settings.num_envs != 1:
            raise ConfigError(
                "env is one BaseEnv instance, so num_envs must be 1; pass a function that "
                "builds an environment to run several"
            )
        return EnvInstance(env)
    if isinstance(env, OpenSpielSource | PettingZooSource):
        return env
    if callable(env):
        return EnvFunction(env)
    raise ConfigError(
        "env must be a game name, 'module:callable', a Unity build path, a function returning a "
        f"BaseEnv or a BaseEnv; got {type(env).__name__}"
    )


def train(
    config: ConfigSource = None,
    *,
    env: Any = None,
    run_id: str | None = None,
    results_dir: str | os.PathLike | None = None,
    resume: bool = False,
    force: bool = False,
    initialize_from: str | None = None,
    seed: int | None = None,
    num_envs: int | None = None,
    max_steps: int | None = None,
    inference: bool = False,
    overrides: Mapping[str, Any] | None = None,
    callbacks: Iterable[TrainingCallback] = (),
    verbose: int = 1,
) -> TrainingResult:
    """Train the behaviors of an environment with self-play; write a results folder like the CLI.

    Args:
        config: a trainer YAML file (ML-Agents' schema), a dict or ``RunOptions``; None: the game's
            shipped config if it has one (``config/tennis.yaml``), else the defaults.
        env: a built-in game name, ``"module:callable"``, a Unity build path, a function
            returning a BaseEnv (called with ``worker_id``/``seed`` if it takes them), or one
            BaseEnv instance. Default: the config's ``env_settings.env_path``.
        run_id: the run's name: results go to ``<results_dir>/<run_id>`` (default ``ppo``).
        results_dir: the folder of run folders (default ``results``).
        resume: continue the run from its last checkpoint (config None: its ``configuration.yaml``).
        force: delete the run's folder and start over.
        initialize_from: the run id whose final policies start this run.
        seed: random seed (-1 draws one and records it).
        num_envs: environment copies in worker processes.
        max_steps: steps every behavior trains for (overrides each behavior's ``max_steps``).
        inference: only act, do not train.
        overrides: any other keys, ``{"env_settings.num_areas": 4, "debug": True}``.
        callbacks: ``SelfPlayCallback``/``TrainingCallback`` objects; one returning False from
            an event stops the run after a checkpoint.
        verbose: 1 prints the run's log on stderr (2 with debug lines, 0 nothing) unless the
            application set up logging itself (``ghost.command_line.console_logging``).

    Returns:
        The final policies, ratings, steps and wall time (``TrainingResult``).

    Raises:
        GhostError: a bad config, environment or run folder (the message says what to fix).
    """
    console_logging(verbose)
    keywords = {
        "checkpoint_settings.run_id": run_id,
        "checkpoint_settings.results_dir": None if results_dir is None else os.fspath(results_dir),
        "checkpoint_settings.resume": resume or None,
        "checkpoint_settings.force": force or None,
        "checkpoint_settings.initialize_from": initialize_from,
        "checkpoint_settings.inference": inference or None,
        "env_settings.seed": seed,
        "env_settings.num_envs": num_envs,
        MAX_STEPS_KEY: max_steps,
    }
    options = resolve_options(config, _config_keys(keywords, overrides, env))
    return train_options(options, _env_factory(env, options), callbacks=callbacks)
