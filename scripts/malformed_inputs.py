"""Malformed inputs a user can hand ``ghost-learn``: each must end in one clear message (exit
code 2, no traceback) and leave nothing behind that stops the same run id from starting or
resuming once the input is fixed. ``scripts/fault_campaign.py`` runs them all as subprocesses;
``tests/test_malformed_inputs.py`` runs them in-process (importing this module from ``scripts/``).
The environments the cases name (``tests.contract_envs:healthy``) are ``--env`` strings that
``ghost-learn`` imports when run from the repository root, not imports of this module.

Each case is a config text (or the good config, or none at all), flags, and a piece of the
expected message. A case with ``--check`` is one that training refuses at its start too, with the
same message (``tests/test_first_hour_traps.py`` compares the two).
"""

from __future__ import annotations

from pathlib import Path

import attrs

GOOD = None  # the case uses the good config

#: a small self-play run of ``tests.contract_envs:healthy``: what each case breaks one part of,
#: and what starts or resumes the run once the input is fixed
GOOD_CONFIG = {
    "default_settings": {
        "hyperparameters": {"batch_size": 32, "buffer_size": 128},
        "network_settings": {"hidden_units": 8},
        "max_steps": 600,
        "summary_freq": 200,
        "checkpoint_interval": 200,
        "self_play": {"save_steps": 100, "team_change": 200, "swap_steps": 50},
    },
    "env_settings": {"env_path": "tests.contract_envs:healthy", "seed": 1},
}


@attrs.frozen
class MalformedInput:
    label: str
    expect: str
    yaml: str | None = GOOD
    flags: tuple[str, ...] = ()
    config_path: str | None = None  # a path given as is (missing file, a folder)
    without_config: bool = False  # the command names no config at all

    def argv(self, work: Path, good: Path) -> list[str]:
        """``[config, *flags]`` for this case (``flags`` alone without a config), writing its
        config into ``work``."""
        if self.without_config:
            return list(self.flags)
        if self.config_path is not None:
            config = Path(self.config_path.format(work=work))
        elif self.yaml is None:
            config = good
        else:
            config = work / f"{abs(hash(self.label))}.yaml"
            config.write_text(self.yaml)
        return [str(config), *self.flags]


ENV = "env_settings: {env_path: 'tests.contract_envs:healthy'}\n"
SELF_PLAY = "    self_play: {save_steps: 100}\n"


def behavior(lines: str) -> str:
    """A config with behavior Duel set by ``lines`` (indented under it)."""
    return "behaviors:\n  Duel:\n" + lines + SELF_PLAY + ENV


MALFORMED_INPUTS = [
    # -- configs
    MalformedInput("unknown top-level key", "unknown key", "behaviours: {}\n" + ENV),
    MalformedInput("misspelt key", "did you mean 'max_steps'", behavior("    max_step: 100\n")),
    MalformedInput("wrong type", "max_steps", behavior("    max_steps: lots\n")),
    MalformedInput(
        "gamma out of range", "gamma", behavior("    reward_signals: {extrinsic: {gamma: 1.5}}\n")
    ),
    MalformedInput(
        "negative batch", "batch_size", behavior("    hyperparameters: {batch_size: -4}\n")
    ),
    MalformedInput(
        "batch above buffer",
        "is larger than buffer_size",
        behavior("    hyperparameters: {batch_size: 512, buffer_size: 256}\n"),
    ),
    MalformedInput(
        "duplicate behavior key",
        "duplicate key 'Duel'",
        "behaviors:\n  Duel: {max_steps: 10}\n  Duel: {max_steps: 20}\n" + ENV,
    ),
    MalformedInput("YAML syntax", "not valid YAML", "behaviors: [\n"),
    MalformedInput("config is a list", "expected", "- behaviors\n"),
    MalformedInput("missing config file", "not found", config_path="{work}/nope.yaml"),
    MalformedInput("config is a folder", "is a folder", config_path="{work}"),
    MalformedInput("unknown trainer_type", "trainer_type", behavior("    trainer_type: dqn\n")),
    MalformedInput(
        "unknown self_play key",
        "unknown key",
        "behaviors:\n  Duel:\n    self_play: {windw: 3}\n" + ENV,
    ),
    MalformedInput(
        "unknown sampling strategy",
        "sampling strategy",
        "behaviors:\n  Duel:\n    self_play: {sampling: {strategy: best}}\n" + ENV,
    ),
    MalformedInput(
        "PPO-only key under poca",
        "shared_critic",
        behavior("    trainer_type: poca\n    hyperparameters: {shared_critic: true}\n"),
    ),
    MalformedInput(
        "recurrent memory with the magnet",
        "hyperparameters.magnet_strength = 0.3 (written) is not supported with a network with "
        "memory yet; write hyperparameters.magnet_strength: 0, or remove the memory section",
        behavior(
            "    hyperparameters: {magnet_strength: 0.3}\n"
            "    network_settings: {memory: {memory_size: 64}}\n"
        ),
    ),
    MalformedInput(
        "memory with learn_from_latest",
        "self_play.learn_from_latest = True (written) is not supported with a network with memory",
        "behaviors:\n  Duel:\n    network_settings: {memory: {memory_size: 64}}\n"
        "    self_play: {learn_from_latest: true}\n" + ENV,
    ),
    # -- what training refuses at its start: --check refuses it too
    MalformedInput(
        "--check: scripted opponent outside a built-in game",
        "needs a built-in game",
        "behaviors:\n  Duel:\n    self_play: {fixed_opponents: [{name: m, scripted: medium}]}\n"
        + ENV,
        flags=("--check",),
    ),
    MalformedInput(
        "scripted opponent outside a built-in game",
        "needs a built-in game",
        "behaviors:\n  Duel:\n    self_play: {fixed_opponents: [{name: m, scripted: medium}]}\n"
        + ENV,
    ),
    MalformedInput(
        "--check: evaluation outside a built-in game",
        "plays a built-in game",
        "behaviors:\n  Duel:\n    self_play: {evaluation: {}}\n" + ENV,
        flags=("--check",),
    ),
    MalformedInput(
        "--check: missing opponent policy file",
        "does not exist",
        "behaviors:\n  Duel:\n    self_play: {fixed_opponents: [{name: p, policy: no/Duel.pt}]}\n"
        + ENV,
        flags=("--check",),
    ),
    MalformedInput(
        "odd memory_size",
        "memory_size must be even",
        behavior("    network_settings: {memory: {memory_size: 63}}\n"),
    ),
    MalformedInput(
        "unknown schedule",
        "learning_rate_schedule",
        behavior("    hyperparameters: {learning_rate_schedule: sometimes}\n"),
    ),
    # -- flags
    MalformedInput("--num-envs 0", "--num-envs", flags=("--num-envs", "0")),
    MalformedInput("--num-envs abc", "--num-envs", flags=("--num-envs", "abc")),
    MalformedInput("--seed x", "--seed", flags=("--seed", "x")),
    MalformedInput("--time-scale -1", "--time-scale", flags=("--time-scale", "-1")),
    MalformedInput("--torch-device gpu", "not a torch device", flags=("--torch-device", "gpu")),
    MalformedInput("--resume --force", "contradict", flags=("--resume", "--force")),
    MalformedInput("--run-id ../x", "must name one folder", flags=("--run-id", "../x")),
    MalformedInput(
        "--initialize-from a missing run",
        "cannot initialize from",
        flags=("--initialize-from", "no-such-run"),
    ),
    MalformedInput(
        "--check: --initialize-from a missing run",
        "cannot initialize from",
        flags=("--initialize-from", "no-such-run", "--check"),
    ),
    MalformedInput(
        "--resume of a missing run",
        "cannot resume run 'no-such-run': it does not exist under",
        flags=("--resume", "--run-id", "no-such-run"),
    ),
    MalformedInput(
        "--resume of a missing run, no config",
        "cannot resume run 'no-such-run': it does not exist under",
        flags=("--resume", "--run-id", "no-such-run"),
        without_config=True,
    ),
    # -- environments
    MalformedInput("no such module", "no_such_module", flags=("--env", "no_such_module:make")),
    MalformedInput("not a game, module or build", "nosuchgame", flags=("--env", "nosuchgame")),
    MalformedInput(
        "callable returns a dict",
        "not an mlagents_envs",
        flags=("--env", "tests.fake_envs:not_an_env"),
    ),
    MalformedInput("not callable", "NOT_CALLABLE", flags=("--env", "tests.fake_envs:NOT_CALLABLE")),
    MalformedInput(
        "constructor raises",
        "could not be created",
        flags=("--env", "tests.worker_envs:raise_on_create"),
    ),
    MalformedInput(
        "teams with different specs", "Duel", flags=("--env", "tests.fake_envs:make_mismatched")
    ),
    MalformedInput("no behaviors", "no behaviors", flags=("--env", "tests.fake_envs:make_empty")),
    # -- what the environment returns while training
    *[
        MalformedInput(
            f"env step: {fault}", expect, flags=("--env", f"tests.contract_envs:{fault}")
        )
        for fault, expect in [
            ("nan_obs", "holds NaN or infinite values"),
            ("inf_reward", "reward holds NaN or infinite values"),
            ("wrong_obs_shape", "observation 0 has shape"),
            ("wrong_mask_shape", "action masks for 2 discrete branches"),
            ("spec_change", "changed between steps"),
            ("wrong_types", "a BaseEnv returns (DecisionSteps, TerminalSteps)"),
            ("raises", "raised during step"),
            ("refilled_ids", "changed the DecisionSteps.agent_id array it returned"),
        ]
    ],
]
