"""The part of ghost-trainer's packaging that needs code: the start-up ``.pth`` file.

Everything else (metadata, dependencies, packages, entry points) is in pyproject.toml.
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

#: run by Python at start-up from site-packages: mlagents-envs' protocol modules then load on
#: protobuf >= 4 in every process, whatever it imports first (see envs/protobuf_hook.py)
PTH_NAME = "ghost_trainer_protobuf.pth"
PTH_LINE = "import envs.protobuf_hook; envs.protobuf_hook.install()\n"


class BuildPyWithHook(build_py):
    """``build_py`` that also places the start-up ``.pth`` file at the root of site-packages."""

    def run(self) -> None:
        super().run()
        for folder in self._pth_folders():
            folder.mkdir(parents=True, exist_ok=True)
            (folder / PTH_NAME).write_text(PTH_LINE, encoding="utf-8")

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        return super().get_outputs(include_bytecode) + [
            str(folder / PTH_NAME) for folder in self._pth_folders()
        ]

    def _pth_folders(self) -> list[Path]:
        if not self.editable_mode:
            return [Path(self.build_lib)]
        # An editable wheel takes nothing from build_lib; what goes to site-packages as it is
        # must be written where the editable build unpacks its wheel (install_lib).
        return [Path(self.get_finalized_command("install").install_lib)]


setup(cmdclass={"build_py": BuildPyWithHook})
