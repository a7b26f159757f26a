"""What ``ghost-tune`` does once its flags are read: build the study's settings, create or continue
the study, run its trials, print and write the report.

Kept apart from ``ghost.tuning.cli`` so that the command line can say which extra to install
when Optuna is missing, instead of failing on an import.
"""

from __future__ import annotations

import argparse
import functools
import re
from pathlib import Path
from typing import Any

import optuna
from optuna.trial import FrozenTrial

from envs.sources import resolve_env
from ghost.command_line import setup_logging
from ghost.config.game_kinds import kind_of
from ghost.config.loader import options_from_dict, read_yaml
from ghost.config.settings import is_valid_run_id
from ghost.config.shipped import shipped_config_for
from ghost.exceptions import ConfigError
from ghost.tuning import PROG
from ghost.tuning.defaults import default_space, first_behavior
from ghost.tuning.report import progress_line, write_report
from ghost.tuning.settings import TuneSettings
from ghost.tuning.space import SearchSpace, check_space, load_space_file
from ghost.tuning.study import counted_trials, make_pruner, open_study, run_study, storage_url
from ghost.tuning.yardsticks import make_yardstick, resolve_yardstick


# -- building the study's settings ---------------------------------------------------------------
def base_config(config: str | None, env: str | None) -> dict[str, Any]:
    """The raw config trials start from: ``config``, else the shipped config of ``env``; with
    ``env`` its ``env_settings.env_path``."""
    if config is not None:
        raw = read_yaml(config)
    else:
        shipped = shipped_config_for(env) if env else None
        raw = read_yaml(shipped) if shipped else {}
    label = config if config is not None else f"--env {env}"
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(
            f"{label}: a trainer config is a mapping of sections, not a list or value"
        )
    if env:
        if not isinstance(raw.get("env_settings"), dict):
            raw["env_settings"] = {}
        raw["env_settings"]["env_path"] = env
    if not (raw.get("env_settings") or {}).get("env_path"):
        raise ConfigError(
            f"{label}: no game to tune; set env_settings.env_path in the config or give --env GAME"
        )
    return raw


def default_study_name(config: str | None, env: str | None) -> str | None:
    """The config file's name, else the game's (``openspiel_kuhn_poker``), else None."""
    name = Path(config).stem if config is not None else env
    return re.sub(r"[^\w.-]", "_", name) if name else None


def study_settings(args: argparse.Namespace) -> TuneSettings:
    """The settings the flags describe."""
    raw = base_config(args.config, args.env)
    try:
        options = options_from_dict(raw)
    except ConfigError as error:
        raise type(error)(f"{args.config or args.env}: {error}") from None
    env_path = str(raw["env_settings"]["env_path"])
    # a game that does not exist fails here, in one line, not once per trial
    resolve_env(env_path, env_settings=options.env_settings)
    steps = args.steps if args.steps is not None else first_behavior(options).max_steps
    for flag, value, least in (("--steps", steps, 1), ("--trials", args.trials, 1),
                               ("--seeds-per-trial", args.seeds_per_trial, 1),
                               ("--reports", args.reports, 1), ("--games", args.games, 1),
                               ("--jobs", args.jobs, 1)):  # fmt: skip
        if value < least:
            raise ConfigError(f"{flag} {value}: must be >= {least}")
    first_seed = max(options.env_settings.seed, 0)
    space = SearchSpace()
    if not args.space_only:
        space = default_space(kind=kind_of(options.env_settings).kind, options=options, steps=steps)
    if args.space is not None:
        given, dropped = load_space_file(args.space)
        space = given.laid_over(space, dropped)
    elif args.space_only:
        raise ConfigError("--space-only needs --space FILE")
    check_space(space, raw, source=args.space or "(built-in)")
    if not space.parameters:
        raise ConfigError("the search space is empty; give --space FILE with at least one key path")
    return TuneSettings(
        base_config=raw,
        space=space,
        yardstick=resolve_yardstick(args.yardstick, env_path),
        steps=steps,
        seeds=tuple(first_seed + index for index in range(args.seeds_per_trial)),
        reports=args.reports,
        games=args.games,
        exploiter_steps=args.exploiter_steps or max(1, steps // 2),
    )


# -- the command ---------------------------------------------------------------------------------
def announce_trial(study: optuna.Study, trial: FrozenTrial, *, total: int) -> None:
    """Print the progress line of a finished trial (in the worker that ran it)."""
    print(f"{PROG}: {progress_line(study, trial, total=total)}", flush=True)


def run(args: argparse.Namespace) -> int:
    """``ghost-tune`` with parsed flags; the exit code."""
    setup_logging(args.debug)
    optuna.logging.set_verbosity(optuna.logging.INFO if args.debug else optuna.logging.ERROR)
    given = args.config is not None or args.env is not None
    settings = study_settings(args) if given and not args.summary else None
    name = args.study_name or default_study_name(args.config, args.env)
    if name is None:
        raise ConfigError("give --study-name NAME (or CONFIG / --env GAME to name the study)")
    if not is_valid_run_id(name):
        raise ConfigError(f"--study-name {name!r}: letters, digits, '-', '_' and '.' only")
    folder = Path(args.results_dir) / name
    url = storage_url(args.storage, folder)
    study, settings = open_study(name=name, url=url, settings=settings)
    if not args.summary:
        yardstick = make_yardstick(settings.yardstick, settings.env_path, games=settings.games,
                                   exploiter_steps=settings.exploiter_steps)  # fmt: skip
        so_far = counted_trials(study)
        print(
            f"{PROG}: study {name} ({url}): {settings.env_path}, {settings.steps} steps x "
            f"{len(settings.seeds)} seed(s) per trial, {len(settings.space.parameters)} key paths, "
            f"{settings.yardstick} ({yardstick.better} is better); {so_far} of {args.trials} "
            f"trials so far, {args.jobs} worker(s)",
            flush=True,
        )
        if so_far < args.trials:
            run_study(name=name, url=url, folder=folder, total=args.trials, jobs=args.jobs,
                      pruner=make_pruner(args.pruner, settings),
                      on_trial=functools.partial(announce_trial, total=args.trials))  # fmt: skip
    report = write_report(study, settings, folder)
    print(report.text(name, settings), flush=True)
    return 0
