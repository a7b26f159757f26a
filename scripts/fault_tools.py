"""What the fault campaign's parts share: the run config, process helpers, checkpoint checks."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import attrs

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CONFIG = """\
behaviors:
  Tennis:
    hyperparameters: {{batch_size: 512, buffer_size: 4096}}
    network_settings: {{hidden_units: 256, num_layers: 2}}
    max_steps: {max_steps}
    summary_freq: 5000
    checkpoint_interval: 10000
    keep_checkpoints: 3
    self_play: {{save_steps: 5000, team_change: 20000, swap_steps: 2000, window: 6}}
env_settings: {{env_path: tennis, seed: 7, num_envs: 2}}
"""


@attrs.define
class Outcome:
    """One row of the report."""

    fault: str
    count: int = 0
    survived: int = 0
    data_lost: int = 0
    details: list[str] = attrs.Factory(list)

    def record(self, survived: bool, lost: bool, detail: str) -> None:
        self.count += 1
        self.survived += int(survived)
        self.data_lost += int(lost)
        self.details.append(detail)
        print(f"  [{self.fault}] {'ok' if survived and not lost else 'FAILED'}: {detail}")


# -- processes ---------------------------------------------------------------------------------
def learn_command(config: Path, results: Path, run_id: str, *flags: str) -> list[str]:
    return [sys.executable, "-m", "ghost.running.cli", str(config), "--run-id", run_id,
            "--results-dir", str(results), *flags]  # fmt: skip


def start(command: list[str], log: Path) -> subprocess.Popen:
    """A ``ghost-learn`` in its own process group (so kill -9 reaches its workers too)."""
    handle = log.open("w")
    return subprocess.Popen(command, cwd=ROOT, stdout=handle, stderr=subprocess.STDOUT,
                            start_new_session=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})  # fmt: skip


def run(command: list[str], timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def kill_group(process: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def wait_for_line(log: Path, needle: str, timeout: float, process: subprocess.Popen) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        if log.exists() and needle in log.read_text(errors="replace"):
            return True
        time.sleep(0.1)
    return False


def wait_for_count(
    log: Path, needle: str, count: int, timeout: float, process: subprocess.Popen
) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        if log.exists() and log.read_text(errors="replace").count(needle) >= count:
            return True
        time.sleep(0.1)
    return False


def wait_for_temp_file(
    folder: Path, pattern: str, timeout: float, process: subprocess.Popen
) -> bool:
    """Poll until a temporary file of an atomic write matching ``pattern`` exists."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        with contextlib.suppress(FileNotFoundError):
            for entry in os.scandir(folder):
                if entry.name.endswith(".tmp") and pattern in entry.name:
                    return True
        time.sleep(0.0002)
    return False


def descendants(pid: int) -> dict[int, list[int]]:
    """``{parent: [children]}`` below ``pid``, read from /proc."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                children.setdefault(parent, []).append(int(entry.name))
    tree: dict[int, list[int]] = {}
    stack = [pid]
    while stack:
        current = stack.pop()
        tree[current] = children.get(current, [])
        stack.extend(tree[current])
    return tree


def environment_workers(pid: int) -> list[int]:
    """The environment worker processes of ``ghost-learn`` ``pid`` (children of its forkserver)."""
    tree = descendants(pid)
    workers = []
    for child in tree[pid]:
        with contextlib.suppress(OSError):
            if b"forkserver" in Path(f"/proc/{child}/cmdline").read_bytes():
                workers.extend(tree.get(child, []))
    return workers


# -- checking a checkpoint ---------------------------------------------------------------------
def differences(left: Any, right: Any, where: str = "") -> list[str]:
    """Key paths where two nested states differ (tensors and arrays compared exactly)."""
    import numpy as np
    import torch

    if isinstance(left, dict) and isinstance(right, dict):
        keys = sorted(set(left) | set(right), key=str)
        return [d for k in keys for d in differences(left.get(k), right.get(k), f"{where}.{k}")]
    if isinstance(left, list | tuple) and isinstance(right, list | tuple):
        if len(left) != len(right):
            return [f"{where}: length {len(left)} != {len(right)}"]
        return [
            d
            for i, (a, b) in enumerate(zip(left, right, strict=False))
            for d in differences(a, b, f"{where}[{i}]")
        ]
    if isinstance(left, torch.Tensor) and isinstance(right, torch.Tensor):
        return [] if torch.equal(left, right) else [where]
    if isinstance(left, np.ndarray) or isinstance(right, np.ndarray):
        return [] if np.array_equal(left, right) else [where]
    return [] if left == right else [f"{where}: {left!r} != {right!r}"[:200]]


def verify_checkpoint(run_root: Path) -> list[str]:
    """Problems found when the last checkpoint of ``run_root`` is loaded into a new session."""
    import numpy as np
    import torch

    from envs.stepping import InProcessStepper
    from ghost.config.environment import env_factory_for
    from ghost.config.loader import load_options
    from ghost.running.session import SelfPlaySession
    from trainers.run_files.layout import RunLayout
    from trainers.run_files.safe_load import load_pt

    layout = RunLayout(run_root)
    if not layout.checkpoint_index_path.exists():
        return []  # killed before the first checkpoint: nothing to restore
    problems = []
    try:
        index = json.loads(layout.checkpoint_index_path.read_text())
        saved = {name: load_pt(run_root / entry["file"])
                 for name, entry in index["behaviors"].items()}  # fmt: skip
    except Exception as error:  # the campaign reports, whatever broke
        return [f"checkpoint unreadable: {error!r}"]
    options = load_options(layout.configuration_path)
    env = env_factory_for(options)(worker_id=0, seed=0)
    session = SelfPlaySession(options=options, stepper=InProcessStepper(env), layout=layout)
    try:
        session.start(resume=True)
        controller = json.loads(json.dumps(session.controller.state_dict()))
        problems += differences(controller, index["run_state"]["controller"], "controller")
        for name, state in saved.items():
            ghost = session.ghosts[name]
            problems += differences(ghost.state.state_dict(), state["ghost"], f"{name}.ghost")
            inner = ghost.trainer
            if inner.step != state["trainer"]["step"]:
                problems.append(f"{name}: step {inner.step} != {state['trainer']['step']}")
            problems += differences(
                inner.rng.bit_generator.state, state["trainer"]["rng"]["numpy"], f"{name}.rng"
            )
            if not torch.equal(torch.get_rng_state(), state["trainer"]["rng"]["torch"]):
                problems.append(f"{name}: torch RNG differs")
            weights = ghost.trainer.policy.get_weights()
            for key, value in state["trainer"]["policy"]["weights"].items():
                if not np.array_equal(weights[key].numpy(), value.numpy()):
                    problems.append(f"{name}: weight {key} differs")
                    break
            for snapshot in state["ghost"]["window"]:
                path = snapshot.get("path")
                if path and not Path(path).is_file():
                    problems.append(f"{name}: snapshot {path} missing")
    finally:
        session.stepper.close()
    return problems


def saved_step(run_root: Path) -> int:
    index = run_root / "checkpoint.json"
    if not index.exists():
        return 0
    return json.loads(index.read_text())["behaviors"]["Tennis"]["step"]
