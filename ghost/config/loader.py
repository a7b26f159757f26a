"""Reading and writing a run configuration: YAML files, flag overrides, ``configuration.yaml``.

``resolve_options`` is the one place a run's final ``RunOptions`` is built, for ``ghost.train``
and ``ghost-learn`` alike: config, overrides, the resume/initialize-from rule and the seed, in
that order. The strict conversion itself (error paths, ML-Agents' ``default_settings``
semantics) lives in ``ghost.config.structuring``; every function here goes through it.
"""

from __future__ import annotations

import logging
import os
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import yaml

from ghost.config.auto_preset import with_auto_presets, written_paths
from ghost.config.settings import (
    BehaviorSettings,
    CheckpointSettings,
    KeyOrigins,
    RunOptions,
    default_behavior_settings,
)
from ghost.config.shipped import shipped_config_for
from ghost.config.structuring import ConfigProblem, converter, fields_of, structure_field
from ghost.config.summary_freq import with_summary_freq_defaults
from ghost.exceptions import ConfigError
from trainers.run_files.atomic import atomic_write_text
from trainers.run_files.layout import RunLayout

logger = logging.getLogger(__name__)

#: what ``resolve_options`` reads: a YAML path, a parsed YAML dict, ``RunOptions``, or None (the
#: defaults)
ConfigSource = str | os.PathLike[str] | Mapping[str, Any] | RunOptions | None

#: the override that sets ``max_steps`` of every behavior (``--max-steps``, ``max_steps=``)
MAX_STEPS_KEY = "max_steps"


class _StrictLoader(yaml.SafeLoader):
    """PyYAML's safe loader, except that a key repeated in one mapping is an error: plain YAML
    loading keeps the last one silently, so a behavior written twice would lose its first
    settings without a word."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, yaml.Node] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.setdefault(key, key_node)
            except TypeError:
                continue  # an unhashable key: the base class reports it
            if first is not key_node:
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"duplicate key {key!r} (first written at line {first.start_mark.line + 1}); "
                    "YAML would keep only the last one, so merge the two or rename one",
                    key_node.start_mark,
                )
        return super().construct_mapping(node, deep=deep)


# -- public API --------------------------------------------------------------------------------
def options_from_dict(raw: Mapping[str, Any] | None) -> RunOptions:
    """Structure a parsed YAML document (``None`` = empty file) into ``RunOptions``.

    Raises:
        ConfigError: an unknown key, a wrong type or an out-of-range value (the message names
            the key path, the value and the fix); ``UnsupportedFeatureError`` and
            ``TrainerTypeError`` are ConfigErrors too.
    """
    try:
        return converter.structure(raw if raw is not None else {}, RunOptions)
    except ConfigProblem as problem:
        raise problem.to_error() from None


def read_yaml(path: str | os.PathLike[str]) -> Any:
    """Parse a YAML file, turning I/O and syntax problems, and an empty file, into
    ``ConfigError``."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(
            f"config file {str(path)!r} not found (looked at {path.absolute()})"
        ) from None
    except IsADirectoryError:
        raise ConfigError(f"config file {str(path)!r} is a folder; give a .yaml file") from None
    except UnicodeDecodeError:
        if b"\0" in path.read_bytes()[:4096]:  # a policy, checkpoint or archive, not text
            raise ConfigError(
                f"config file {str(path)!r} is a binary file, not a YAML config (a policy or "
                "checkpoint? ghost-eval and ghost-export take those); give a trainer YAML"
            ) from None
        raise ConfigError(
            f"config file {str(path)!r} is not UTF-8 text; save it as UTF-8"
        ) from None
    try:
        document = yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise ConfigError(
            f"config file {str(path)!r} is not valid YAML{where}: {problem}"
        ) from None
    if document is None:  # nothing but blanks and comments: no setting was meant to be left out
        raise ConfigError(
            f"config file {str(path)!r} is empty; write its sections (behaviors:, env_settings:; "
            "see config/tennis.yaml), or leave the file out to train --env GAME with its "
            "shipped config"
        )
    return document


def load_options(path: str | os.PathLike[str]) -> RunOptions:
    """Read a trainer config YAML file (ML-Agents' schema) into ``RunOptions``."""
    raw = read_yaml(path)
    try:
        return options_from_dict(raw)
    except ConfigError as error:
        raise type(error)(f"{path}: {error}") from None


def apply_overrides(
    options: RunOptions,
    overrides: Mapping[str, Any],
    *,
    labels: Mapping[str, str] | None = None,
) -> RunOptions:
    """``options`` with some keys replaced, checked exactly like YAML values.

    Every value is checked first, then each section changed is rebuilt once, with all its new
    values (so two keys checked against each other, such as ``batch_size`` and ``buffer_size``,
    can change together).

    Args:
        options: the configuration to start from.
        overrides: ``{"env_settings.seed": 3, "debug": True}``: a top-level key or
            ``section.key`` of one ``RunOptions`` section.
        labels: how to name a key in errors (``{"env_settings.seed": "--seed"}``).
    """
    labels = labels or {}
    nested = {key: value for key, value in overrides.items() if _is_nested_key(options, key)}
    if nested:
        options = _apply_nested_overrides(options, nested)
    changes: dict[str, dict[str, Any]] = {}  # section ("" = top level) -> {field: new value}
    for key, value in overrides.items():
        if key in nested:
            continue
        section, _, name = key.rpartition(".")
        holder: Any = getattr(options, section) if section else options
        field = fields_of(holder.__class__).get(name)
        if field is None:
            raise ConfigError(f"{key}: not a configuration key that can be overridden")
        try:
            changes.setdefault(section, {})[name] = structure_field(value, field)
        except ConfigProblem as problem:
            raise problem.to_error(prefix=(labels.get(key, key),)) from None
    if not changes:
        return options
    top = changes.pop("", {})
    for section, change in changes.items():
        top[section] = attrs.evolve(top.get(section, getattr(options, section)), **change)
    return attrs.evolve(options, **top)


#: sections keyed by behavior name (``behaviors.Tennis.self_play.window``)
NESTED_SECTIONS = ("behaviors", "default_settings", "environment_parameters")


def _is_nested_key(options: RunOptions, key: str) -> bool:
    """A key deeper than ``section.key``, or inside a section keyed by name."""
    parts = key.split(".")
    return len(parts) > 2 or (len(parts) == 2 and parts[0] in NESTED_SECTIONS)


def _apply_nested_overrides(options: RunOptions, nested: Mapping[str, Any]) -> RunOptions:
    """Sets each dotted key in the plain-data form and reads it back with every YAML check, so
    an unknown key or a bad value is the same error a config file would give."""
    raw = options_to_dict(options)
    for key, value in nested.items():
        *path, name = key.split(".")
        holder = raw
        for part in path:
            if not isinstance(holder.get(part), dict):
                holder[part] = {}  # an absent section (self_play: None) is started empty
            holder = holder[part]
        holder[name] = value
    return options_from_dict(raw)


def with_deterministic_actions(options: RunOptions) -> RunOptions:
    """``options`` with ``network_settings.deterministic`` on for every behavior and the defaults."""
    return attrs.evolve(options, **_deterministic_behaviors(options))


def _deterministic_behaviors(options: RunOptions) -> dict[str, Any]:
    """The ``behaviors`` and ``default_settings`` of ``with_deterministic_actions``."""

    def deterministic(settings: BehaviorSettings) -> BehaviorSettings:
        network = attrs.evolve(settings.network_settings, deterministic=True)
        return attrs.evolve(settings, network_settings=network)

    return {
        "behaviors": {name: deterministic(s) for name, s in options.behaviors.items()},
        "default_settings": (
            deterministic(options.default_settings) if options.default_settings else None
        ),
    }


def options_to_dict(options: RunOptions) -> dict[str, Any]:
    """Plain data (dicts, lists, numbers, strings) that ``options_from_dict`` turns back into it."""
    return converter.unstructure(options)


def dump_options(options: RunOptions) -> str:
    """The resolved configuration as YAML (every key, defaults included)."""
    return yaml.safe_dump(options_to_dict(options), sort_keys=False, default_flow_style=False)


def write_options(options: RunOptions, path: str | Path) -> None:
    """Write ``dump_options(options)`` to ``path`` (the run's ``configuration.yaml``)."""
    header = (
        "# Resolved configuration of this run (flags applied); ghost-learn reads it back as is.\n"
    )
    atomic_write_text(path, header + dump_options(options))


def resolve_options(
    config: ConfigSource,
    overrides: Mapping[str, Any] | None = None,
    *,
    labels: Mapping[str, str] | None = None,
    deterministic: bool = False,
    record_seed: bool = True,
) -> RunOptions:
    """The final configuration of a run, built in one pass; what ``configuration.yaml`` records.
    Its ``origins`` say which keys ``config`` and ``overrides`` wrote (a written key keeps its
    value wherever a preset fills keys in, now or once the environment is known).

    1. ``config`` read (a YAML path, a parsed dict, ``RunOptions`` as is); None: with ``resume``
       the run's own ``configuration.yaml``, else the shipped config of the ``env_path`` given,
       else the defaults;
    2. ``overrides`` laid over it, each checked like a YAML value; ``MAX_STEPS_KEY`` sets every
       behavior's ``max_steps``;
    3. ``deterministic``: every behavior acts with its most likely action;
    4. ``resume`` and ``initialize_from`` both set (ML-Agents' rule): an override beats the
       config, and between two equals resuming wins;
    5. seed -1: a resumed run keeps the seed its ``configuration.yaml`` recorded, any other run
       draws one;
    6. each behavior whose ``summary_freq`` no one wrote gets one that scales with its
       ``max_steps`` (``ghost.config.summary_freq``);
    7. each self-play behavior without a preset (or with ``auto``) gets the one picked for the
       game's kind (``ghost.config.auto_preset``).

    Args:
        config: where the configuration comes from.
        overrides: ``{config key: value}`` of flags or keyword arguments given (see
            ``apply_overrides``); only these count as given in step 4.
        labels: how to name an override in errors and warnings (``{"env_settings.seed":
            "--seed"}``).
        deterministic: step 3.
        record_seed: the caller writes the result to ``configuration.yaml``; False (``--check``)
            draws a seed for the caller only and says so.

    Raises:
        ConfigError: a bad config, override or earlier ``configuration.yaml`` (the message names
            the key and the fix).
    """
    overrides = dict(overrides or {})
    max_steps = overrides.pop(MAX_STEPS_KEY, None)
    config, own_record = _config_source(config, overrides)
    options = apply_overrides(_read_config(config), overrides, labels=labels)
    if max_steps is not None:
        options = with_max_steps(options, max_steps, label=(labels or {}).get(MAX_STEPS_KEY))
    changes = _resume_and_seed_changes(
        options, overrides, labels=labels or {}, record_seed=record_seed
    )
    if deterministic:
        changes.update(_deterministic_behaviors(options))
    origins = _origins(config, overrides, max_steps_given=max_steps is not None)
    options = attrs.evolve(options, **changes, origins=origins)
    if own_record:
        return options  # the run's own record already holds what its preset set
    written = _written(config, overrides)
    return with_auto_presets(with_summary_freq_defaults(options, written), written)


def _written(config: ConfigSource, overrides: Mapping[str, Any]) -> frozenset[str] | None:
    """The key paths ``config`` and ``overrides`` write (None for settings given structured)."""
    if isinstance(config, RunOptions):
        return None
    raw = read_yaml(config) if isinstance(config, str | os.PathLike) else config or {}
    paths = set(written_paths(raw))
    for key in overrides:
        parts = key.split(".")
        paths.update(".".join(parts[: i + 1]) for i in range(len(parts)))
    return frozenset(paths)


def _origins(
    config: ConfigSource, overrides: Mapping[str, Any], *, max_steps_given: bool
) -> KeyOrigins:
    """The key paths ``config`` and ``overrides`` write (``max_steps`` for ``MAX_STEPS_KEY``);
    the file's are unknown for settings given as ``RunOptions``, unless they say."""
    paths: set[str] = {MAX_STEPS_KEY} if max_steps_given else set()
    for key in overrides:
        parts = key.split(".")
        paths.update(".".join(parts[: i + 1]) for i in range(len(parts)))
    if isinstance(config, RunOptions):
        return KeyOrigins(config=config.origins.config, overrides=frozenset(paths))
    raw = read_yaml(config) if isinstance(config, str | os.PathLike) else config or {}
    return KeyOrigins(config=written_paths(raw), overrides=frozenset(paths))


def _config_source(config: ConfigSource, overrides: Mapping[str, Any]) -> tuple[ConfigSource, bool]:
    """Step 1: ``config``, or with None where the run's configuration comes from; and whether
    that is the run's own ``configuration.yaml`` (a resume)."""
    if config is not None:
        return config, False
    if overrides.get("checkpoint_settings.resume"):
        recorded = _run_own_configuration(overrides)
        if recorded is not None:
            return recorded, True
    if overrides.get("env_settings.env_path"):
        return _shipped_configuration(str(overrides["env_settings.env_path"])), False
    return None, False


def _run_own_configuration(overrides: Mapping[str, Any]) -> ConfigSource:
    """A resume with no config given continues with the run's own ``configuration.yaml`` (its
    session flags cleared: the overrides given now decide how this session starts)."""
    defaults = CheckpointSettings()
    results_dir = overrides.get("checkpoint_settings.results_dir", defaults.results_dir)
    run_id = overrides.get("checkpoint_settings.run_id", defaults.run_id)
    path = RunLayout(Path(str(results_dir)) / str(run_id)).configuration_path
    if not path.is_file():
        return None  # the run folder's own checks say what is missing
    recorded = load_options(path)
    logger.info("Resuming with the run's own configuration %s", path)
    session = attrs.evolve(
        recorded.checkpoint_settings, resume=False, force=False, initialize_from=None
    )
    return attrs.evolve(recorded, checkpoint_settings=session)


def _shipped_configuration(env_path: str) -> ConfigSource:
    """With no config, a game that ships one (``config/tennis.yaml`` for ``tennis``) trains with
    it: the settings it was tuned with, self-play included."""
    path = shipped_config_for(env_path)
    if path is not None:
        logger.info("No config given: training %s with the shipped config %s", env_path, path)
    return path


def with_max_steps(options: RunOptions, max_steps: Any, *, label: str | None = None) -> RunOptions:
    """``options`` with ``max_steps`` set for every behavior (and ``default_settings``; a config
    that names no behavior gets a ``default_settings`` section holding it).

    Raises:
        ConfigError: ``max_steps`` is not a positive whole number.
    """
    try:
        steps = int(str(max_steps))
    except ValueError:
        steps = 0
    if steps <= 0:
        raise ConfigError(f"{label or 'max_steps'} = {max_steps!r}: must be a whole number > 0")
    default = options.default_settings
    if default is None and not options.behaviors:
        default = default_behavior_settings()
    return attrs.evolve(
        options,
        behaviors={n: attrs.evolve(b, max_steps=steps) for n, b in options.behaviors.items()},
        default_settings=attrs.evolve(default, max_steps=steps) if default else None,
    )


def _read_config(config: ConfigSource) -> RunOptions:
    if config is None:
        return RunOptions()
    if isinstance(config, RunOptions):
        return config
    if isinstance(config, Mapping):
        return options_from_dict(config)
    if isinstance(config, str | os.PathLike):
        return load_options(config)
    raise ConfigError(
        f"config must be a YAML file path, a dict or RunOptions, not {type(config).__name__}"
    )


def _resume_and_seed_changes(
    options: RunOptions,
    overrides: Mapping[str, Any],
    *,
    labels: Mapping[str, str],
    record_seed: bool,
) -> dict[str, Any]:
    """Steps 4 and 5: the ``checkpoint_settings`` with resume and initialize_from reconciled, and
    the ``env_settings`` with seed -1 resolved (where the seed changes)."""
    checkpoint = _reconcile_resume_and_init(options.checkpoint_settings, overrides, labels)
    changes: dict[str, Any] = {"checkpoint_settings": checkpoint}
    seed = _resolved_seed(options.env_settings.seed, checkpoint, record_seed)
    if seed != options.env_settings.seed:
        changes["env_settings"] = attrs.evolve(options.env_settings, seed=seed)
    return changes


def _reconcile_resume_and_init(
    checkpoint: CheckpointSettings, given: Mapping[str, Any], labels: Mapping[str, str]
) -> CheckpointSettings:
    """ML-Agents' rule when both ``resume`` and ``initialize_from`` are set: an override beats
    the config, and between two equals resuming wins."""
    if not (checkpoint.resume and checkpoint.initialize_from is not None):
        return checkpoint
    init_key, resume_key = "checkpoint_settings.initialize_from", "checkpoint_settings.resume"
    if init_key in given and resume_key not in given:
        label = labels.get(init_key, "initialize_from")
        logger.warning("%s given: ignoring resume from the configuration", label)
        return attrs.evolve(checkpoint, resume=False)
    logger.warning(
        "both resume and initialize_from=%r are set: resuming, ignoring initialize_from",
        checkpoint.initialize_from,
    )
    return attrs.evolve(checkpoint, initialize_from=None)


def _resolved_seed(seed: int, checkpoint: CheckpointSettings, record: bool) -> int:
    """``seed``, or for -1 the seed an earlier session of a resumed run recorded, or a new one.

    Only a run that records its seed looks for an earlier one (``--check`` draws its own).
    """
    if seed != -1:
        return seed
    if record and checkpoint.resume:
        layout = RunLayout(Path(checkpoint.results_dir) / checkpoint.run_id)
        if layout.configuration_path.is_file():
            seed = load_options(layout.configuration_path).env_settings.seed
    if seed == -1:
        seed = secrets.randbelow(10_000)
        where = "recorded in configuration.yaml" if record else "for this check only"
        logger.info("seed -1: drew seed %d (%s)", seed, where)
    return seed
