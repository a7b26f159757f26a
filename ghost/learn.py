"""``run_training``: what ``ghost-learn`` does once the configuration and run folder are ready."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path

import torch
from mlagents_envs.base_env import BaseEnv

from envs.stepping import EnvStepper, InProcessStepper
from ghost.run_dir import RunDirectory, safe_name
from ghost.session import TrainingSession
from ghost.settings import EnvironmentSettings, RunOptions

logger = logging.getLogger("ghost.learn")

EnvFactory = Callable[..., BaseEnv]


def make_stepper(settings: EnvironmentSettings, factory: EnvFactory, seed: int) -> EnvStepper:
    """One environment in-process, or ``num_envs`` worker processes."""
    if settings.num_envs == 1:
        return InProcessStepper(factory(worker_id=0, seed=seed))
    from envs.workers import SubprocessStepper

    return SubprocessStepper(
        factory=factory,
        num_envs=settings.num_envs,
        seed=seed,
        max_lifetime_restarts=settings.max_lifetime_restarts,
        restarts_rate_limit_n=settings.restarts_rate_limit_n,
        restarts_rate_limit_period_s=settings.restarts_rate_limit_period_s,
    )


def initial_policy_files(options: RunOptions, run_dir: RunDirectory) -> dict[str, Path]:
    """Per behavior, the policy file to start from: ``init_path`` or ``--initialize-from``."""
    files: dict[str, Path] = {}
    for name, settings in options.behaviors.items():
        if settings.init_path:
            path = Path(settings.init_path)
            files[name] = path / f"{safe_name(name)}.pt" if path.is_dir() else path
        elif run_dir.initialize_from is not None:
            files[name] = run_dir.initialize_from / f"{safe_name(name)}.pt"
    return files


def run_training(options: RunOptions, *, env_factory: EnvFactory, run_dir: RunDirectory) -> None:
    """Train every behavior of the environment until ``max_steps`` (Ctrl-C checkpoints and stops)."""
    # small networks run fastest on one thread; the environment wants the other core
    torch.set_num_threads(max(1, (os.cpu_count() or 2) // 2) if torch.cuda.is_available() else 1)
    seed = max(options.env_settings.seed, 0)
    torch.manual_seed(seed)
    device = options.torch_settings.device or "cpu"
    stepper = make_stepper(options.env_settings, env_factory, seed)
    session = TrainingSession(
        options=options,
        stepper=stepper,
        run_path=run_dir.root,
        seed=seed,
        device=device,
        training=not options.checkpoint_settings.inference,
        initialize_from=initial_policy_files(options, run_dir),
    )
    session.run(resume=run_dir.resumed)
    if session.interrupted:
        logger.info("Stopped early; continue with --resume --run-id %s", run_dir.root.name)
