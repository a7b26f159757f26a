"""ML-Agents' own record of a run's settings (``configuration.yaml``), checked against the YAML.

Runs in the ML-Agents environment's Python (``.ci/mlagents-venv`` runs it after building that
environment; ``tests/test_mlagents_record.py`` runs it too)::

    .venv-mlagents/bin/python tests/mlagents_record_check.py [--without-hooks] [CONFIG.yaml ...]

Each ML-Agents trainer config (by default: ``tests/fixtures/mlagents_configs/``, the checkout's
``config/`` and, when it is beside the checkout, ``../shared/reference/mlagents-config/``) is parsed
the way ``mlagents-learn`` parses it, with ghost-trainer registered as its plugin, and written
back the way ML-Agents writes ``configuration.yaml``: ``RunOptions.from_dict(d).as_dict()``.
Every key written must come back with its value (ML-Agents may add defaults; a behavior is
expected to hold ``default_settings`` under its own keys), the record must be plain YAML, and it
must read back to itself. Each config is checked twice: with its trainer types as written, and
with ``ghost_`` trainer types and a ``self_play`` section holding ghost-trainer's own keys too.

A failure prints the config, the variant and each key path lost or changed; the exit status is
then 1. ``--without-hooks`` leaves out the plugin's unstructure hooks
(``ghost.mlagents_plugin.unstructure``) to show what ML-Agents writes without them.
"""

from __future__ import annotations

import argparse
import copy
import math
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import attr
import yaml

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "mlagents_configs"
SHARED_REFERENCE = ROOT.parent / "shared" / "reference" / "mlagents-config"
#: ghost-trainer's own ``self_play`` keys added in the ``ghost_`` variant
OUR_SELF_PLAY = {"elo_k": 24.0, "sampling": {"strategy": "pfsp"}}
NEW_SELF_PLAY = {"save_steps": 20000, "window": 5}


def default_configs() -> list[Path]:
    """The configs checked when none is named."""
    paths = sorted(FIXTURES.glob("*.yaml")) + sorted((ROOT / "config").glob("*.yaml"))
    if SHARED_REFERENCE.is_dir():
        paths += sorted(SHARED_REFERENCE.glob("*.yaml"))
    return paths


def sections(config: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """The behavior sections of ``config``, ``default_settings`` included."""
    if isinstance(config.get("default_settings"), dict):
        yield config["default_settings"]
    yield from (config.get("behaviors") or {}).values()


def ghost_variant(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` with ``ghost_`` trainer types, each typed section holding ``self_play`` with
    ghost-trainer's keys beside the written ones (untyped sections inherit theirs)."""
    config = copy.deepcopy(dict(config))
    for section in sections(config):
        if "trainer_type" in section:
            if not section["trainer_type"].startswith("ghost_"):
                section["trainer_type"] = "ghost_" + section["trainer_type"]
            written = section.get("self_play") or dict(NEW_SELF_PLAY)
            section["self_play"] = {**OUR_SELF_PLAY, **written}
    return config


def deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    merged = copy.deepcopy(dict(base))
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def expected(config: Mapping[str, Any], plain_self_play_keys: set[str]) -> dict[str, Any]:
    """What the record must hold: each behavior laid over ``default_settings`` (ML-Agents'
    semantics); under ML-Agents' own trainer types, ``self_play`` keys ML-Agents does not know
    are dropped by ML-Agents itself (a documented difference), so they are not expected."""
    wanted = copy.deepcopy(dict(config))
    default = wanted.get("default_settings")
    if isinstance(default, dict):
        wanted["behaviors"] = {
            name: deep_merge(default, section or {})
            for name, section in (wanted.get("behaviors") or {}).items()
        }
    for section in sections(wanted):
        self_play = section.get("self_play")
        if isinstance(self_play, dict) and not _is_ghost(section, wanted):
            section["self_play"] = {k: v for k, v in self_play.items() if k in plain_self_play_keys}
    return wanted


def _is_ghost(section: Mapping[str, Any], config: Mapping[str, Any]) -> bool:
    default = config.get("default_settings") or {}
    return str(section.get("trainer_type", default.get("trainer_type", "ppo"))).startswith("ghost_")


def differences(written: Any, recorded: Any, path: str = "") -> list[str]:
    """Key paths of ``written`` that ``recorded`` lacks or holds with another value."""
    if isinstance(written, Mapping):
        if not isinstance(recorded, Mapping):
            return [f"{path}: written a section, recorded {recorded!r}"]
        problems = []
        for key, value in written.items():
            where = f"{path}.{key}" if path else str(key)
            if key not in recorded:
                problems.append(f"{where}: lost (written {value!r})")
            else:
                problems += differences(value, recorded[key], where)
        return problems
    if isinstance(written, list) and isinstance(recorded, list) and len(written) == len(recorded):
        return [p for i, (w, r) in enumerate(zip(written, recorded, strict=True)) for p in
                differences(w, r, f"{path}[{i}]")]  # fmt: skip
    if same_value(written, recorded):
        return []
    return [f"{path}: written {written!r}, recorded {recorded!r}"]


def same_value(written: Any, recorded: Any) -> bool:
    """Equal, or the same number (YAML 1.1 reads ``5e6`` as a string; ML-Agents converts it)."""
    if isinstance(written, bool) or isinstance(recorded, bool):
        return written is recorded
    if written == recorded:
        return True
    try:
        return math.isclose(float(written), float(recorded), rel_tol=1e-12)
    except (TypeError, ValueError):
        return False


def record_of(config: Mapping[str, Any]) -> dict[str, Any]:
    """ML-Agents' ``configuration.yaml`` content for ``config``."""
    from mlagents.trainers.settings import RunOptions, TrainerSettings

    TrainerSettings.default_override = None  # from_dict leaves it set from the last config
    try:
        return RunOptions.from_dict(copy.deepcopy(dict(config))).as_dict()
    finally:
        TrainerSettings.default_override = None


def check(config: Mapping[str, Any], plain_self_play_keys: set[str]) -> list[str]:
    """Every problem of ``config``'s record (empty: it keeps every key and reads back)."""
    try:
        record = record_of(config)
    except Exception as error:  # ML-Agents' own parse error, or a cattrs group of them
        return [f"ML-Agents cannot parse it: {error!r}"]
    problems = differences(expected(config, plain_self_play_keys), record)
    try:
        yaml.safe_dump(record)
    except yaml.YAMLError as error:
        problems.append(f"the record is not plain YAML: {error}")
    try:
        again = record_of(record)
    except Exception as error:
        return [*problems, f"the record does not read back: {error!r}"]
    if again != record:
        problems += [f"read back: {p}" for p in differences(record, again)]
    return problems


def same_training(config: Mapping[str, Any], ghost: Mapping[str, Any]) -> list[str]:
    """The ``ghost_`` variant's trainers get the hyperparameters the config as written gives
    ML-Agents' own trainers (a ``ghost_*`` type wraps the one it names)."""
    try:
        plain = record_of(config)["behaviors"]
    except Exception as error:
        return [f"ML-Agents cannot parse the config as written: {error!r}"]
    ghosted = record_of(ghost)["behaviors"]
    return [
        f"trains otherwise than as written: {problem}"
        for name in plain
        for problem in differences(
            plain[name]["hyperparameters"],
            ghosted[name]["hyperparameters"],
            f"behaviors.{name}.hyperparameters",
        )
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("configs", nargs="*", type=Path, help="ML-Agents trainer YAML files")
    parser.add_argument(
        "--without-hooks", action="store_true", help="leave out the plugin's unstructure hooks"
    )
    args = parser.parse_args(argv)
    if args.without_hooks:
        from ghost.mlagents_plugin import unstructure

        unstructure.install_unstructure_hooks = lambda: None
    from mlagents.plugins.trainer_type import register_trainer_plugins
    from mlagents.trainers.settings import SelfPlaySettings

    register_trainer_plugins()
    plain_keys = set(attr.fields_dict(SelfPlaySettings))
    paths = args.configs or default_configs()
    failed = 0
    for path in paths:
        config = yaml.safe_load(path.read_text(encoding="utf-8"))
        for variant, data in (("as written", config), ("ghost_ types", ghost_variant(config))):
            problems = check(data, plain_keys)
            if variant == "ghost_ types" and not problems:
                problems = same_training(config, data)
            name = f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path} ({variant})"
            if problems:
                failed += 1
                print(f"FAIL {name}: {len(problems)} keys lost or changed")
                print("\n".join(f"    {problem}" for problem in problems))
            else:
                print(f"ok   {name}")
    print(f"{len(paths) * 2 - failed} of {len(paths) * 2} ML-Agents records keep every key")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
