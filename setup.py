"""Package definition for ghost-trainer (tool settings live in pyproject.toml)."""

import glob
from pathlib import Path

from setuptools import find_packages, setup
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


setup(
    name="ghost-trainer",
    version="0.1.0",
    description="Self-play training (GhostTrainer) for adversarial games on the ML-Agents BaseEnv API",
    long_description=Path(__file__).with_name("README.md").read_text(encoding="utf-8"),
    long_description_content_type="text/markdown",
    python_requires=">=3.10",
    # the shipped configs: what `ghost-learn --env GAME` trains with when no config is given
    # (ghost/config/shipped.py looks for them here in a regular install)
    data_files=[("share/ghost-trainer/config", sorted(glob.glob("config/*.yaml")))],
    packages=find_packages(
        include=["ghost", "ghost.*", "trainers", "trainers.*", "envs", "envs.*"]
    ),
    install_requires=[
        "torch>=2.1",
        # numpy 1.24-1.26 lack np.bool, which mlagents-envs uses; ML-Agents 1.x pins numpy < 1.24
        "numpy>=1.21,!=1.24.*,!=1.25.*,!=1.26.*",
        # 0.28.0 is the newest release installable on Python 3.11; 3.10 users may take 1.x
        "mlagents-envs>=0.28.0,<2",
        # protobuf >= 4 parses with its compiled upb backend; mlagents-envs' old generated modules
        # load on it through envs/protobuf_hook.py, which uses protobuf's descriptor builder
        # (hence the cap at the next major). 3.20.3 stays allowed for ML-Agents 1.1's own pins
        # (the plugin), where it parses in pure Python on 3.11 and compiled (cpp) on 3.10.
        "protobuf>=3.20.3,<8",
        "tensorboard>=2.10",
        "pyyaml>=5.4",
        "attrs>=22.2",
        "cattrs>=23.1",
        "openskill>=6,<7",
        "pillow>=9",
    ],
    extras_require={
        "dev": [
            "pytest>=7",
            "ruff>=0.4",
            "mypy>=1.8",
            "matplotlib>=3.6",
            "onnx>=1.17",
            "onnxruntime>=1.20",
            "open-spiel>=1.5",
            "pettingzoo>=1.24,<2",
            "pygame-ce>=2.1",
            "rlcard>=1.0",
            "ray[rllib]>=2.60,<3",
            "stable-baselines3>=2.9,<3",
            "sb3-contrib>=2.9,<3",
            "optuna>=4",
        ],
        "plots": ["matplotlib>=3.6"],
        "onnx": ["onnx>=1.17"],
        # --env openspiel:<game>, with exact exploitability
        "openspiel": ["open-spiel>=1.5"],
        # --env pettingzoo:<module>; its classic board games need pygame, its card games rlcard
        "pettingzoo": ["pettingzoo>=1.24,<2", "pygame-ce>=2.1", "rlcard>=1.0"],
        # env_settings.backend: ray
        "ray": ["ray>=2.60,<3"],
        # self-play inside Stable-Baselines3 (ghost.integrations.sb3); MaskablePPO for masked games
        "sb3": ["stable-baselines3>=2.9,<3", "sb3-contrib>=2.9,<3"],
        # self-play inside RLlib's new API stack (ghost.integrations.rllib)
        "rllib": ["ray[rllib]>=2.60,<3"],
        # ghost-tune: hyperparameter search (ghost.tuning); with the plots extra it also draws
        # the parameter importance
        "tune": ["optuna>=4"],
    },
    cmdclass={"build_py": BuildPyWithHook},
    entry_points={
        "console_scripts": [
            "ghost-learn=ghost.running.cli:main",
            "ghost-eval=ghost.evaluation.cli:main",
            "ghost-export=ghost.running.export:main",
            "ghost-tune=ghost.tuning.cli:main",
        ],
        # ghost_ppo, ghost_sac and ghost_poca inside ML-Agents' mlagents-learn
        "mlagents.trainer_type": [
            "ghost=ghost.mlagents_plugin.registration:trainer_types",
        ],
        "ghost.trainer_type": [
            "builtin=trainers.registry:builtin_trainer_types",
        ],
    },
)
