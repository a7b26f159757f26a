"""Package definition for ghost-trainer (tool settings live in pyproject.toml)."""

from pathlib import Path

from setuptools import find_packages, setup

setup(
    name="ghost-trainer",
    version="0.1.0",
    description="Self-play training (GhostTrainer) for adversarial games on the ML-Agents BaseEnv API",
    long_description=Path(__file__).with_name("README.md").read_text(encoding="utf-8"),
    long_description_content_type="text/markdown",
    python_requires=">=3.10",
    packages=find_packages(
        include=["ghost", "ghost.*", "trainers", "trainers.*", "envs", "envs.*"]
    ),
    install_requires=[
        "torch>=2.1",
        # numpy 1.24-1.26 lack np.bool, which mlagents-envs uses; ML-Agents 1.x pins numpy < 1.24
        "numpy>=1.21,!=1.24.*,!=1.25.*,!=1.26.*",
        # 0.28.0 is the newest release installable on Python 3.11; 3.10 users may take 1.x
        "mlagents-envs>=0.28.0,<2",
        # mlagents-envs' generated protobuf code fails on protobuf >= 3.21
        "protobuf>=3.6,<3.21",
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
            # newer onnx and onnxruntime need protobuf >= 4, which mlagents-envs cannot load
            "onnx>=1.14,<1.18",
            "onnxruntime>=1.16,<1.21",
            "open-spiel>=1.5",
            "pettingzoo>=1.24,<2",
            "pygame-ce>=2.1",
            "rlcard>=1.0",
            "ray==2.60.0",
        ],
        "plots": ["matplotlib>=3.6"],
        "onnx": ["onnx>=1.14,<1.18"],
        # --env openspiel:<game>, with exact exploitability
        "openspiel": ["open-spiel>=1.5"],
        # --env pettingzoo:<module>; its classic board games need pygame, its card games rlcard
        "pettingzoo": ["pettingzoo>=1.24,<2", "pygame-ce>=2.1", "rlcard>=1.0"],
        # env_settings.backend: ray; 2.60 runs on protobuf 3.20.3, which mlagents-envs can load
        "ray": ["ray==2.60.0"],
    },
    entry_points={
        "console_scripts": [
            "ghost-learn=ghost.running.cli:main",
            "ghost-eval=ghost.evaluation.cli:main",
            "ghost-export=ghost.running.export:main",
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
