"""Shared fixtures: reference configs, YAML files in tmp_path, and a fake trainer registry."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import pytest
import yaml

from trainers import registry
from trainers.hyperparameters import POCASettings, PPOSettings, SACSettings

# The stand-in Unity builds (tests/fake_unity/*.x86_64) start with `#!/usr/bin/env python3`: it
# must be this interpreter, for every process started later (worker processes included).
os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")

#: ML-Agents' reference configs, in the design material beside the checkout (``../shared``)
SHARED_DIR = Path(__file__).resolve().parents[2] / "shared"
REFERENCE_CONFIGS = SHARED_DIR / "reference" / "mlagents-config"

needs_reference_configs = pytest.mark.skipif(
    not REFERENCE_CONFIGS.is_dir(),
    reason=f"ML-Agents' reference configs are not at {REFERENCE_CONFIGS} (the shared design "
    "material beside the checkout)",
)


class FakeTrainer:
    """Stands in for a trainer class; the registry and ``--check`` only look it up, and ask it
    whether it can drop a team's partial trajectories (``learn_from_latest`` needs it)."""

    def forget_partial(self, behavior_id: Any) -> None:
        """It can."""


@attrs.frozen
class FakeEntryPoint:
    """What ``ghost.registry`` reads from an ``importlib.metadata.EntryPoint``."""

    name: str
    function: Callable[[], Any]
    value: str = "tests.fake:plugin"

    def load(self) -> Callable[[], Any]:
        return self.function


def builtin_types() -> tuple[dict[str, Any], dict[str, Any]]:
    trainers = {"ppo": FakeTrainer, "sac": FakeTrainer, "poca": FakeTrainer}
    return trainers, {"ppo": PPOSettings, "sac": SACSettings, "poca": POCASettings}


@pytest.fixture
def use_entry_points(monkeypatch: pytest.MonkeyPatch):
    """``use_entry_points(*FakeEntryPoint)``: the registry sees only these plugins."""

    def install(*entry_points: FakeEntryPoint) -> None:
        monkeypatch.setattr(registry.metadata, "entry_points", lambda group: list(entry_points))
        registry.refresh()

    yield install
    registry.refresh()


@pytest.fixture
def fake_registry(use_entry_points):
    """ppo, sac and poca registered with a fake trainer class (no torch trainers are imported)."""
    use_entry_points(FakeEntryPoint("builtin", builtin_types))


@pytest.fixture
def write_yaml(tmp_path: Path) -> Callable[..., Path]:
    """``write_yaml(data, name="config.yaml")``: a YAML file in tmp_path (text is written as is)."""

    def write(data: Any, name: str = "config.yaml") -> Path:
        path = tmp_path / name
        path.write_text(data if isinstance(data, str) else yaml.safe_dump(data), encoding="utf-8")
        return path

    return write


@pytest.fixture
def one_torch_thread():
    """Torch computes on one thread during the test; the previous thread count is restored after.

    Modules opt in with ``pytestmark = pytest.mark.usefixtures("one_torch_thread")``.
    """
    import torch  # here, not at the top: tests that never use torch need not import it

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


#: ML-Agents 1.1 with ghost-trainer as its plugin (built by .ci/mlagents-venv)
MLAGENTS_VENV = Path(
    os.environ.get("GHOST_MLAGENTS_VENV", Path(__file__).resolve().parent.parent / ".venv-mlagents")
)


@pytest.fixture(scope="session")
def mlagents() -> Path:
    """The ML-Agents environment's bin folder; skipped without it, unless
    ``GHOST_REQUIRE_MLAGENTS`` is set (CI), where its absence fails."""
    if not (MLAGENTS_VENV / "bin" / "mlagents-learn").exists():
        message = f"no ML-Agents environment at {MLAGENTS_VENV}; build it with .ci/mlagents-venv"
        if os.environ.get("GHOST_REQUIRE_MLAGENTS"):
            pytest.fail(message)
        pytest.skip(message)
    return MLAGENTS_VENV / "bin"
