"""ML-Agents' own imitation configs (``reward_signals.gail``, ``behavioral_cloning``) as its users
hold them: ``config/imitation/{Crawler,Hallway,PushBlock,Pyramids}.yaml`` and
``config/sac/Pyramids.yaml``, kept unmodified in ``tests/fixtures/mlagents_configs/``.

Each names its demonstrations where ML-Agents' example project keeps them
(``Project/Assets/ML-Agents/Examples/<game>/Demos/Expert*.demo``), relative to the working
directory. The tests run ``ghost-learn`` in a folder where a ``.demo`` file fitting the behavior
is written at that path, against a stand-in for the Unity game (``tests.imitation_envs``): the
config passes ``--check`` unchanged, and trains; with no file there, or one recorded from another
behavior, ``--check`` and training refuse in one line that starts with the key path. ML-Agents
1.1 itself (``.venv-mlagents``) reads each config back with every key.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from ghost.running import cli
from tests.imitation_envs import write_demo
from trainers.run_files.safe_load import load_pt

pytestmark = pytest.mark.usefixtures("one_torch_thread")

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "mlagents_configs"
RECORD_CHECK = ROOT / "tests" / "mlagents_record_check.py"
ERROR = "ghost-learn: error: "
#: fixture: the behavior it trains and the stand-in factory (``tests.imitation_envs``)
CONFIGS = {
    "Crawler-imitation": ("Crawler", "crawler"),
    "Hallway-imitation": ("Hallway", "hallway"),
    "PushBlock-imitation": ("PushBlock", "push_block"),
    "Pyramids-imitation": ("Pyramids", "pyramids"),
    "Pyramids-sac": ("Pyramids", "pyramids"),
}


def configs() -> list[Any]:
    return list(CONFIGS)


def load(name: str) -> dict[str, Any]:
    return yaml.safe_load((FIXTURES / f"{name}.yaml").read_text(encoding="utf-8"))


def demo_keys(config: dict[str, Any]) -> dict[str, str]:
    """Each ``demo_path`` of the config's one behavior, by the key path that names it."""
    ((behavior, section),) = config["behaviors"].items()
    paths = {
        f"behaviors.{behavior}.reward_signals.{key}.demo_path": signal["demo_path"]
        for key, signal in section["reward_signals"].items()
        if "demo_path" in signal
    }
    cloning = section.get("behavioral_cloning")
    if cloning is not None:
        paths[f"behaviors.{behavior}.behavioral_cloning.demo_path"] = cloning["demo_path"]
    return paths


def learn(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def error_of(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith(ERROR)]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0].removeprefix(ERROR)


def write_demos(name: str, recorded_from: str | None = None) -> None:
    """The config's demonstrations, written where it names them (relative to the working
    folder), recorded from the stand-in of ``recorded_from`` (the config's own behavior)."""
    for path in set(demo_keys(load(name)).values()):
        write_demo(path, recorded_from or CONFIGS[name][0])


def check_args(name: str) -> list[object]:
    return [FIXTURES / f"{name}.yaml", "--env", f"tests.imitation_envs:{CONFIGS[name][1]}",
            "--check", "--run-id", "check"]  # fmt: skip


# -- the fixtures --------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(CONFIGS))
def test_each_config_imitates_demonstrations_where_the_example_project_keeps_them(name):
    behavior, _ = CONFIGS[name]
    paths = demo_keys(load(name))
    assert paths, "no gail signal and no behavioral_cloning"
    for path in paths.values():
        assert path.startswith(f"Project/Assets/ML-Agents/Examples/{behavior}/Demos/Expert")
        assert path.endswith(".demo")


# -- --check -------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", configs())
def test_check_passes_with_a_demonstration_that_fits(tmp_path, monkeypatch, capsys, name):
    monkeypatch.chdir(tmp_path)
    write_demos(name)
    code, out, err = learn(capsys, *check_args(name))
    assert code == 0, err
    assert f"behavior {CONFIGS[name][0]}" in out and "check passed" in out


@pytest.mark.parametrize("name", configs())
def test_check_names_the_missing_demonstration_in_one_line(tmp_path, monkeypatch, capsys, name):
    monkeypatch.chdir(tmp_path)
    code, _, err = learn(capsys, *check_args(name))
    assert code == 2
    key, path = next(iter(demo_keys(load(name)).items()))  # training reads gail's first
    assert error_of(err) == (
        f"{key}: no .demo file or folder at {path!r} (from {tmp_path}); record demonstrations "
        "there or fix the path"
    )


def test_check_and_training_refuse_another_behaviors_demonstration_in_the_same_words(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    write_demos("Pyramids-imitation", recorded_from="Hallway")
    code, _, err = learn(capsys, *check_args("Pyramids-imitation"))
    assert code == 2
    checked = error_of(err)
    assert checked == (
        "behaviors.Pyramids.reward_signals.gail.demo_path: the demonstration of 'Hallway' does "
        "not fit the behavior: its observation 0 has shape (30,), the behavior's (148,); use a "
        "demonstration recorded from this behavior"
    )
    args = check_args("Pyramids-imitation")[:-3]
    code, _, err = learn(capsys, *args, "--max-steps", 50, "--run-id", "train")
    assert code == 2 and error_of(err) == checked


# -- training ------------------------------------------------------------------------------------
def small_buffers(name: str, folder: Path) -> Path:
    """The config with buffers small enough for updates within a few hundred steps (everything
    else, the gail and behavioral_cloning sections included, as ML-Agents wrote it)."""
    config = load(name)
    (section,) = config["behaviors"].values()
    hyperparameters = section["hyperparameters"]
    hyperparameters.update(batch_size=64, buffer_size=128)
    if section["trainer_type"] == "sac":
        hyperparameters.update(buffer_size=1000, buffer_init_steps=64)
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


@pytest.mark.parametrize("name", configs())
def test_each_config_trains_its_policy_discriminator_and_cloning(
    tmp_path, monkeypatch, capsys, name
):
    monkeypatch.chdir(tmp_path)
    write_demos(name)
    behavior, factory = CONFIGS[name]
    config = small_buffers(name, tmp_path)
    code, _, err = learn(capsys, config, "--env", f"tests.imitation_envs:{factory}",
                         "--max-steps", 400, "--run-id", "run", "--seed", 0)  # fmt: skip
    assert code == 0, err
    run = tmp_path / "results" / "run"
    assert (run / f"{behavior}.pt").exists()
    (checkpoint,) = (run / behavior / "checkpoints").glob("*.pt")
    saved = load_pt(checkpoint)
    assert saved["step"] >= 400
    keys = demo_keys(load(name))
    updated = {key: bool(state["optimizer"]["state"])
               for key, state in saved["learner"]["reward_signals"].items()}  # fmt: skip
    assert updated.get("gail") == any(".gail." in key for key in keys), updated
    if any(key.endswith("behavioral_cloning.demo_path") for key in keys):
        assert saved["cloning"]["optimizer"]["state"], "behavioral cloning never updated"


# -- ML-Agents' reader -----------------------------------------------------------------------------
def test_mlagents_records_every_key_of_each_config(mlagents):
    """ML-Agents 1.1 with the plugin reads each config, as written and with ``ghost_`` types, and
    writes it back (``configuration.yaml``) with every key (``tests/mlagents_record_check.py``)."""
    paths = [FIXTURES / f"{name}.yaml" for name in CONFIGS]
    done = subprocess.run(
        [str(mlagents / "python"), str(RECORD_CHECK), *map(str, paths)],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    for name in CONFIGS:
        for variant in ("as written", "ghost_ types"):
            assert f"ok   tests/fixtures/mlagents_configs/{name}.yaml ({variant})" in done.stdout
