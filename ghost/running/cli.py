"""``ghost-learn``: train the behaviors of an environment with self-play, from an ML-Agents config.

The flags are ``mlagents-learn``'s where they make sense; each overrides one key of the YAML
configuration (``--help`` names it). How a run ends (exit codes, errors) is
``ghost.command_line``'s.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from envs.behavior_id import BehaviorId
from envs.stepping import InProcessStepper
from ghost.command_line import EXIT_INTERRUPTED, VersionAction, run_command, setup_logging
from ghost.config.effects import log_effects, preset_line, shortened_by_flag
from ghost.config.environment import env_factory_for
from ghost.config.loader import resolve_options
from ghost.config.settings import BehaviorSettings, RunOptions
from ghost.config.torch_device import check_torch_settings
from ghost.exceptions import EnvironmentSpecError

logger = logging.getLogger(__name__)

PROG = "ghost-learn"

_EPILOG = """\
examples:
  ghost-learn config/tennis.yaml --run-id tennis-01      train a built-in game named in the config
  ghost-learn --env tennis --max-steps 20000             a quick trial with the game's shipped config
  ghost-learn my.yaml --env my_envs:make_env --check     check a config against an environment
  ghost-learn my.yaml --env builds/Tennis --num-envs 4   train a Unity build with 4 copies
  ghost-learn my.yaml --run-id my-run                    train in the Unity Editor: press Play
  ghost-learn config/tennis.yaml --run-id tennis-01 --resume

Results go to <results-dir>/<run-id>/: configuration.yaml (the resolved config), run_logs/
(console.log: what the console showed, every session; training_status.json, timers.json), one
folder per behavior (stats, checkpoints/, snapshots/) and <Behavior>.pt (the final policy).
"""


def _add_flags(parser: argparse.ArgumentParser) -> None:
    """mlagents-learn's flags, in --help's order of groups."""
    _add_run_flags(parser)
    _add_environment_flags(parser)
    _add_engine_flags(parser)
    _add_torch_flags(parser)


# A flag's dest is the config key it overrides, so the parsed flags feed resolve_options as is.
def _flag(group: Any, name: str, key: str, text: str, **options: Any) -> None:
    group.add_argument(name, dest=key, help=f"{text} [{key}]", **options)


# fmt: off
def _add_run_flags(parser: argparse.ArgumentParser) -> None:
    run = parser.add_argument_group("run")
    _flag(run, "--run-id", "checkpoint_settings.run_id",
         "name of the run; results go to <results-dir>/<ID> (default: ppo)", metavar="ID")
    _flag(run, "--resume", "checkpoint_settings.resume",
         "continue the run --run-id from its last checkpoint", action="store_true")
    _flag(run, "--force", "checkpoint_settings.force",
         "delete the earlier results of --run-id and start over", action="store_true")
    _flag(run, "--initialize-from", "checkpoint_settings.initialize_from",
         "start the networks from the policies of an earlier run (same behaviors and specs)",
         metavar="RUN_ID")
    _flag(run, "--max-steps", "max_steps",
         "train every behavior for N steps (a quick trial without editing the YAML)",
         metavar="N")
    _flag(run, "--inference", "checkpoint_settings.inference",
         "only act, do not train (with --resume: watch a trained run)", action="store_true")
    _flag(run, "--results-dir", "checkpoint_settings.results_dir",
         "folder holding every run's results (default: results)", metavar="DIR")
    _flag(run, "--seed", "env_settings.seed",
         "random seed of trainers and environments; -1 draws one and records it (default: -1)",
         metavar="N")
    run.add_argument("--deterministic", action="store_true",
                     help="act with the most likely action instead of sampling "
                     "[network_settings.deterministic of every behavior]")
    _flag(run, "--debug", "debug", "debug-level logging, and tracebacks for user errors",
         action="store_true")


def _add_environment_flags(parser: argparse.ArgumentParser) -> None:
    env = parser.add_argument_group("environment")
    _flag(env, "--env", "env_settings.env_path",
         "a built-in game name, module:callable returning a BaseEnv, or a Unity build path; "
         "with none here or in the config, training waits for the Unity Editor (press Play)",
         metavar="ENV")
    _flag(env, "--num-envs", "env_settings.num_envs",
         "environment copies stepped in parallel (default: 1)", metavar="N")
    _flag(env, "--num-areas", "env_settings.num_areas",
         "training areas inside each Unity build (default: 1)", metavar="N")
    _flag(env, "--base-port", "env_settings.base_port",
         "first port for Unity builds; worker i uses PORT+i (default: 5005); with no --env, "
         "the Unity Editor's port (default: 5004)", metavar="PORT")
    _flag(env, "--timeout-wait", "env_settings.timeout_wait",
         "seconds to wait for a Unity build to start, or for Play in the Editor (default: 60)",
         metavar="S")
    _flag(env, "--max-lifetime-restarts", "env_settings.max_lifetime_restarts",
         "restarts allowed per crashing environment worker, -1: no limit (default: 10)",
         metavar="N")
    _flag(env, "--restarts-rate-limit-n", "env_settings.restarts_rate_limit_n",
         "restarts allowed per period, -1: no rate limit (default: 1)", metavar="N")
    _flag(env, "--restarts-rate-limit-period-s", "env_settings.restarts_rate_limit_period_s",
         "the period of --restarts-rate-limit-n in seconds (default: 60)", metavar="S")
    _flag(env, "--env-backend", "env_settings.backend",
         "where environment workers run: local processes, or actors on a Ray cluster "
         "(default: local)", choices=["local", "ray"])
    _flag(env, "--ray-address", "env_settings.ray_address",
         "run the environments as actors on this Ray cluster: auto (the cluster `ray start` "
         "began on this machine), HOST:6379 or ray://HOST:10001; implies --env-backend ray",
         metavar="ADDRESS")
    _flag(env, "--ray-wait-fraction", "env_settings.ray_wait_fraction",
         "share of the Ray actors a step waits for; below 1 a slow actor joins a later step "
         "(faster, not reproducible) (default: 1.0)", metavar="F")
    _flag(env, "--env-args", "env_settings.env_args",
         "everything after this flag goes to the Unity build's command line (put it last)",
         nargs=argparse.REMAINDER, metavar="ARG")


def _add_engine_flags(parser: argparse.ArgumentParser) -> None:
    engine = parser.add_argument_group("engine (Unity builds only)")
    _flag(engine, "--width", "engine_settings.width", "window width (default: 84)", metavar="PX")
    _flag(engine, "--height", "engine_settings.height", "window height (default: 84)",
         metavar="PX")
    _flag(engine, "--quality-level", "engine_settings.quality_level",
         "Unity quality level (default: 5)", metavar="N")
    _flag(engine, "--time-scale", "engine_settings.time_scale",
         "simulation speed-up, Unity's Time.timeScale (default: 20)", metavar="X")
    _flag(engine, "--target-frame-rate", "engine_settings.target_frame_rate",
         "Unity's Application.targetFrameRate, -1: unlimited (default: -1)", metavar="FPS")
    _flag(engine, "--capture-frame-rate", "engine_settings.capture_frame_rate",
         "Unity's Time.captureFramerate (default: 60)", metavar="FPS")
    _flag(engine, "--no-graphics", "engine_settings.no_graphics",
         "run builds without rendering (only without visual observations)",
         action="store_true")
    _flag(engine, "--no-graphics-monitor", "engine_settings.no_graphics_monitor",
         "render only in worker 0, the others run without graphics", action="store_true")


def _add_torch_flags(parser: argparse.ArgumentParser) -> None:
    torch = parser.add_argument_group("torch")
    _flag(torch, "--torch-device", "torch_settings.device",
         "where the networks train: auto (a GPU for networks of >= 256 hidden units when one is "
         "present, else the CPU), cpu, cuda, cuda:1... (default: auto)",
         metavar="DEVICE")
    _flag(torch, "--torch-acting-device", "torch_settings.acting_device",
         "where policies decide during rollouts (default: cpu)", metavar="DEVICE")
# fmt: on


def build_parser() -> argparse.ArgumentParser:
    """The ``ghost-learn`` argument parser; flags that are not given are absent from the result."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Train the behaviors of an environment with self-play, from an ML-Agents "
        "trainer config.",
        allow_abbrev=False,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        argument_default=argparse.SUPPRESS,
    )
    parser.add_argument(
        "config",
        nargs="?",
        default=None,
        help="trainer configuration YAML (ML-Agents' schema); without it a game that ships a "
        "config (config/<game>.yaml) trains with that one, any other environment with the "
        "defaults (self-play on where teams oppose). Each flag below overrides the key in brackets",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="validate the config, open the environment once and check that its behaviors fit "
        "(teams, self_play, trainer types); print a summary and exit without training",
    )
    parser.add_argument("--version", action=VersionAction)
    _add_flags(parser)
    return parser


def _flag_labels(parser: argparse.ArgumentParser) -> dict[str, str]:
    """``{config key: flag}``, to name the flag in errors about its value."""
    return {
        action.dest: action.option_strings[0] for action in parser._actions if action.option_strings
    }


def load_run_options(
    config_path: str | None,
    flags: Mapping[str, Any],
    *,
    deterministic: bool = False,
    check: bool = False,
) -> RunOptions:
    """The final run configuration: the YAML file (or the defaults) with the flags laid over it,
    resolved once by ``resolve_options`` (resume/initialize-from rule, seed).

    Args:
        config_path: the YAML file, or None for all defaults.
        flags: ``{config key: value}`` of the flags given (``"env_settings.seed": "3"``).
        deterministic: ``--deterministic`` was given.
        check: ``--check``: the seed drawn for seed -1 is for the check only, not recorded.
    """
    return resolve_options(
        config_path or None,
        flags,
        labels=_flag_labels(build_parser()),
        deterministic=deterministic,
        record_seed=not check,
    )


# -- --check -----------------------------------------------------------------------------------
def _read_specs(factory: Any, seed: int) -> dict[BehaviorId, Any]:
    stepper = InProcessStepper.open(factory, seed=seed)
    try:
        stepper.reset()
        return stepper.behavior_specs
    finally:
        stepper.close()


def _describe_behavior(
    name: str, teams: list[int], spec: Any, settings: BehaviorSettings, options: RunOptions
) -> str:
    observations = ", ".join(str(tuple(obs.shape)) for obs in spec.observation_specs) or "none"
    action = spec.action_spec
    actions = [f"continuous {action.continuous_size}"] if action.continuous_size else []
    if action.discrete_branches:
        actions.append(f"discrete branches {tuple(action.discrete_branches)}")
    self_play = settings.self_play
    self_play_text = (
        "off"
        if self_play is None
        else (
            f"on (save_steps {self_play.save_steps}, team_change {self_play.steps_per_team}, "
            f"swap_steps {self_play.swap_steps}, window {self_play.window}, "
            f"latest ratio {self_play.play_against_latest_model_ratio})"
        )
    )
    lines = [
        f"behavior {name}",
        f"  teams:        {', '.join(map(str, teams))}",
        f"  trainer:      {settings.trainer_type} (max_steps {settings.max_steps})",
        f"  self_play:    {self_play_text}",
    ]
    preset = preset_line(name, settings, options.env_settings)
    if preset is not None:  # the line training logs, so the two agree word for word
        lines.append(f"  preset:       {preset.removeprefix(f'behaviors.{name}: ')}")
    lines += [
        f"  observations: {observations}",
        f"  actions:      {'; '.join(actions) or 'none'}",
    ]
    return "\n".join(lines)


def run_check(options: RunOptions, factory: Any) -> int:
    """``--check``: what training refuses before its first step, without training. The torch
    devices and the run folder's flags (``RunDirectory.check``), then the environment opened
    once and its behaviors checked by ``check_start``, which training calls too, and their
    demonstrations read (``check_demonstrations``); prints what each behavior would train with
    (presets filled in) and logs the warnings training would.

    Raises:
        GhostError: what training would refuse at its start, with the same message.
    """
    # loads the trainers' modules (torch)
    from ghost.running.start_checks import check_demonstrations, check_start

    check_torch_settings(options.torch_settings)
    check_run_folder(options)
    specs = _read_specs(factory, options.env_settings.seed)
    if not specs:
        raise EnvironmentSpecError(
            "the environment reports no behaviors after reset; it has nothing to train"
        )
    resolved = check_start(options, specs)
    check_demonstrations(resolved, specs)
    log_effects(
        resolved, specs, training=not options.checkpoint_settings.inference,
        game=options.env_settings, trial=shortened_by_flag(options), presets=False,
    )  # fmt: skip
    describe = getattr(factory, "describe", None)
    print(f"environment: {describe() if describe else repr(factory)}")
    for name, settings in resolved.items():
        ids = sorted(bid for bid in specs if bid.name == name)
        teams = [bid.team for bid in ids]
        print(_describe_behavior(name, teams, specs[ids[0]], settings, options))
    checkpoint = options.checkpoint_settings
    print(
        f"check passed: {len(resolved)} behavior(s), {len({b.team for b in specs})} team(s); "
        f"a run would write to {checkpoint.results_dir}/{checkpoint.run_id}. Nothing was trained."
    )
    return 0


# -- training ----------------------------------------------------------------------------------
def check_run_folder(options: RunOptions) -> None:
    """The run folder's rules, before anything else: ``--resume`` of a run that does not exist
    names the runs that do, ``--initialize-from`` a missing run, a run id taken without
    ``--resume``/``--force``."""
    from ghost.running.run_dir import RunDirectory

    RunDirectory.check(options.checkpoint_settings)


def run_learn(options: RunOptions, factory: Any) -> int:
    """Train through ``ghost.train``'s machinery: prepare the run folder, write configuration.yaml,
    train. A run stopped by Ctrl-C (after its checkpoint) exits with 130, as a shell expects."""
    from ghost.running.api import train_options  # so --help and --check never import torch

    result = train_options(options, factory)
    if result.stopped_early:  # no callbacks on the command line: only Ctrl-C stops a run early
        print(f"{PROG}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``ghost-learn``; returns the process exit code."""
    args = vars(build_parser().parse_args(argv))
    config_path = args.pop("config")
    check = args.pop("check", False)
    deterministic = args.pop("deterministic", False)
    debug = [bool(args.get("debug", False))]
    setup_logging(debug[0])

    def body() -> int:
        options = load_run_options(config_path, args, deterministic=deterministic, check=check)
        debug[0] = options.debug
        setup_logging(options.debug)
        check_run_folder(options)  # before any environment is looked for or waited on
        factory = env_factory_for(options)
        if check:
            return run_check(options, factory)
        return run_learn(options, factory)

    return run_command(PROG, body, debug=lambda: debug[0])


if __name__ == "__main__":
    sys.exit(main())
