"""The configs shipped in ``config/``: what ``ghost-learn --env GAME`` trains with when no config
is given.

They are the package data of ``ghost.config.shipped_configs``, a package that pyproject.toml maps
onto the checkout's ``config/`` folder, so ``importlib.resources`` finds them in a wheel, a
``pip install --user`` and an editable install alike.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import yaml

#: the package whose data the shipped configs are
SHIPPED_CONFIGS_PACKAGE = "ghost.config.shipped_configs"


def shipped_config_dir() -> Path | None:
    """The folder of the shipped configs, or None when there is none."""
    try:
        folder = resources.files(SHIPPED_CONFIGS_PACKAGE)
    except ModuleNotFoundError:
        folder = None
    # an installed package (regular or editable) is a folder on disk, read in place
    if isinstance(folder, Path) and folder.is_dir():
        return folder
    # A checkout used without installing it, or an editable install made before the configs
    # became package data (its import finder does not know the package): config/ beside ghost/.
    checkout = Path(__file__).resolve().parents[2] / "config"
    return checkout if checkout.is_dir() else None


def shipped_configs() -> list[Path]:
    """Every shipped config (``tennis.yaml``, ``soccer.yaml``...), sorted by name."""
    folder = shipped_config_dir()
    return sorted(folder.glob("*.yaml")) if folder is not None else []


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
    matches = [path for path in shipped_configs() if _env_path_of(path) == env_path]
    return min(matches, key=lambda path: (len(path.stem), path.stem)) if matches else None
