"""The configs shipped in ``config/``: what ``ghost-learn --env GAME`` trains with when no config
is given.

They are found in the source checkout (``<repo>/config``) or, for a regular install, where
``setup.py`` puts them (``<prefix>/share/ghost-trainer/config``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

#: where an installed copy of ``config/`` lands, relative to ``sys.prefix``
INSTALLED_CONFIG_DIR = Path("share") / "ghost-trainer" / "config"


def shipped_config_dirs() -> list[Path]:
    """The folders that may hold the shipped configs, the checkout first."""
    checkout = Path(__file__).resolve().parents[2] / "config"
    return [
        folder for folder in (checkout, Path(sys.prefix) / INSTALLED_CONFIG_DIR) if folder.is_dir()
    ]


#: libyaml's parser where PyYAML was built with it: the scan reads every shipped config at start-up
_FAST_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _env_path_of(path: Path) -> str | None:
    try:
        document = yaml.load(path.read_text(encoding="utf-8"), Loader=_FAST_SAFE_LOADER)
    except (OSError, yaml.YAMLError):
        return None
    env_settings = document.get("env_settings") if isinstance(document, dict) else None
    env_path = env_settings.get("env_path") if isinstance(env_settings, dict) else None
    return str(env_path) if env_path is not None else None


def shipped_config_for(env_path: str) -> Path | None:
    """The shipped config that trains ``env_path`` (``tennis``, ``openspiel:leduc_poker``...), or
    None. Where several do (``tennis.yaml``, ``tennis_sac.yaml``), the plainest name wins."""
    for folder in shipped_config_dirs():
        matches = [path for path in folder.glob("*.yaml") if _env_path_of(path) == env_path]
        if matches:
            return min(matches, key=lambda path: (len(path.stem), path.stem))
    return None
