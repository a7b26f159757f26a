"""ghost-trainer as a package: one version, the shipped configs as package data, the extras and
groups in step, ``--version`` on every command, and (slow) what a built wheel carries."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from importlib import resources
from pathlib import Path

import pytest

import ghost
from ghost.config import shipped

ROOT = Path(__file__).resolve().parents[1]
CODE_PACKAGES = ("envs", "trainers", "ghost")
CONFIG_NAMES = sorted(path.name for path in (ROOT / "config").glob("*.yaml"))


def pyproject() -> dict:
    tomllib = pytest.importorskip("tomllib", reason="tomllib is Python 3.11+")
    with open(ROOT / "pyproject.toml", "rb") as file:
        return tomllib.load(file)


# -- the shipped configs -------------------------------------------------------------------------
def test_shipped_configs_are_the_package_data_of_their_package():
    folder = resources.files(shipped.SHIPPED_CONFIGS_PACKAGE)
    assert shipped.shipped_config_dir() == folder
    assert [path.name for path in shipped.shipped_configs()] == CONFIG_NAMES
    assert len(CONFIG_NAMES) >= 10
    assert shipped.shipped_config_for("tennis") == folder / "tennis.yaml"


def test_the_lookup_goes_through_importlib_resources(tmp_path, monkeypatch):
    (tmp_path / "pong.yaml").write_text("env_settings: {env_path: pong}\n", encoding="utf-8")
    asked = []

    def files(package: str) -> Path:
        asked.append(package)
        return tmp_path

    monkeypatch.setattr(shipped.resources, "files", files)
    assert shipped.shipped_configs() == [tmp_path / "pong.yaml"]
    assert shipped.shipped_config_for("pong") == tmp_path / "pong.yaml"
    assert set(asked) == {"ghost.config.shipped_configs"}


def test_a_checkout_that_is_not_installed_reads_its_config_folder(monkeypatch):
    def not_installed(package: str) -> Path:
        raise ModuleNotFoundError(package)

    monkeypatch.setattr(shipped.resources, "files", not_installed)
    assert shipped.shipped_config_dir() == ROOT / "config"


# -- metadata ------------------------------------------------------------------------------------
def test_the_version_is_read_from_the_source_without_importing_it():
    pytest.importorskip("setuptools")
    code = (
        "import sys\n"
        "from setuptools.config.expand import read_attr\n"
        "version = read_attr('ghost.__version__', root_dir='.')\n"
        "assert not {'ghost', 'torch'} & set(sys.modules), 'the build imported the package'\n"
        "print(version)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == ghost.__version__


def test_the_package_list_names_every_package_on_disk():
    on_disk = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for package in CODE_PACKAGES
        for init in (ROOT / package).rglob("__init__.py")
    }
    settings = pyproject()["tool"]["setuptools"]
    assert set(settings["packages"]) == on_disk | {shipped.SHIPPED_CONFIGS_PACKAGE}
    assert settings["package-dir"] == {shipped.SHIPPED_CONFIGS_PACKAGE: "config"}
    assert settings["package-data"][shipped.SHIPPED_CONFIGS_PACKAGE] == ["*.yaml"]
    for package in CODE_PACKAGES:
        assert (ROOT / package / "py.typed").is_file()
        assert settings["package-data"][package] == ["py.typed"]


def test_the_all_extra_names_every_user_extra_and_dev_matches_its_group():
    project = pyproject()
    extras = project["project"]["optional-dependencies"]
    (everything,) = extras["all"]
    named = everything.removeprefix("ghost-trainer[").removesuffix("]").split(",")
    assert sorted(named) == sorted(set(extras) - {"all", "dev"})
    assert extras["onnx"] == ["onnx>=1.17", "onnxruntime>=1.20"]
    # the dev extra stands in for the dev group where pip has no --group (before 25.1)
    assert extras["dev"] == project["dependency-groups"]["dev"]
    assert "ghost-trainer[all]" in extras["dev"]


def test_the_licence_is_apache_2():
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License\n                           Version 2.0, January 2004" in text
    assert "Copyright 2026 ghost-trainer contributors" in text
    assert pyproject()["project"]["license"] == "Apache-2.0"


# -- --version -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "script", ["ghost-learn", "ghost-eval", "ghost-export", "ghost-tune"], ids=str
)
def test_every_command_prints_the_version(script, capsys):
    target = pyproject()["project"]["scripts"][script]
    module, function = target.split(":")
    main = getattr(__import__(module, fromlist=[function]), function)
    with pytest.raises(SystemExit) as stopped:
        main(["--version"])
    assert stopped.value.code == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"ghost-trainer {ghost.__version__}"
    assert [line.split()[0] for line in lines[1:]] == ["python", "torch", "mlagents-envs"]


# -- the wheel -----------------------------------------------------------------------------------
@pytest.mark.slow
def test_the_wheel_carries_configs_licence_markers_and_the_start_up_file(tmp_path):
    """Builds the wheel as a user's pip does (isolated build, so it fetches setuptools), reads
    its file list, then installs it into a folder outside the checkout and finds the configs."""
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(ROOT), "-w", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = tmp_path.glob("ghost_trainer-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    dist_info = f"ghost_trainer-{ghost.__version__}.dist-info"
    assert {f"ghost/config/shipped_configs/{name}" for name in CONFIG_NAMES} <= names
    assert f"{dist_info}/licenses/LICENSE" in names
    assert {f"{package}/py.typed" for package in CODE_PACKAGES} <= names
    assert "ghost_trainer_protobuf.pth" in names
    metadata = zipfile.ZipFile(wheel).read(f"{dist_info}/METADATA").decode()
    assert "License-Expression: Apache-2.0" in metadata

    site = tmp_path / "site"
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), wheel],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert installed.returncode == 0, installed.stderr[-3000:]
    found = subprocess.run(
        [
            sys.executable,
            "-c",
            "from ghost.config.shipped import shipped_configs as s; print(*s(), sep='\\n')",
        ],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(site)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert found.returncode == 0, found.stderr[-3000:]
    paths = [Path(line) for line in found.stdout.splitlines()]
    assert [path.name for path in paths] == CONFIG_NAMES
    assert all(path.parent == site / "ghost/config/shipped_configs" for path in paths)
