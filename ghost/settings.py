"""The run configuration: ML-Agents' trainer YAML schema as frozen attrs classes.

Every class here mirrors a section of an ML-Agents trainer config, with the same key names and
defaults, so an existing ``config/ppo/Tennis.yaml`` loads unchanged. Reading YAML into these classes
(strict keys, helpful errors, CLI overrides) is ``ghost.config_loader``'s job; this module only
defines the schema and its value ranges.

Hyperparameters differ per trainer type: each registered trainer type brings its own
``HyperparamSettings`` subclass (see ``ghost.registry``).
"""

from __future__ import annotations

import enum
from typing import Any

import attrs
from attrs import validators as v


def _positive(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    if value is not None and value <= 0:
        raise ValueError(f"{attribute.name} must be > 0 (got {value!r})")


def _non_negative(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    if value is not None and value < 0:
        raise ValueError(f"{attribute.name} must be >= 0 (got {value!r})")


def _unit_interval(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{attribute.name} must be in [0, 1] (got {value!r})")


def _open_unit_interval(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    if not 0.0 < value <= 1.0:
        raise ValueError(f"{attribute.name} must be in (0, 1] (got {value!r})")


class ScheduleType(str, enum.Enum):
    """How a hyperparameter moves over ``max_steps``."""

    CONSTANT = "constant"
    LINEAR = "linear"


class EncoderType(str, enum.Enum):
    """Visual observation encoders (ML-Agents' ``vis_encode_type``)."""

    SIMPLE = "simple"
    NATURE_CNN = "nature_cnn"
    RESNET = "resnet"
    MATCH3 = "match3"
    FULLY_CONNECTED = "fully_connected"


SUPPORTED_ENCODERS = (EncoderType.SIMPLE, EncoderType.NATURE_CNN, EncoderType.FULLY_CONNECTED)


@attrs.frozen(kw_only=True)
class MemorySettings:
    """Recurrent memory (accepted by the schema, rejected by the loader until it exists)."""

    sequence_length: int = attrs.field(default=64, validator=_positive)
    memory_size: int = attrs.field(default=128, validator=_positive)


@attrs.frozen(kw_only=True)
class NetworkSettings:
    """Network shape: ``hidden_units`` × ``num_layers`` MLP after the observation encoders."""

    normalize: bool = False
    hidden_units: int = attrs.field(default=128, validator=_positive)
    num_layers: int = attrs.field(default=2, validator=_positive)
    vis_encode_type: EncoderType = EncoderType.SIMPLE
    memory: MemorySettings | None = None
    goal_conditioning_type: str = "hyper"
    deterministic: bool = False


@attrs.frozen(kw_only=True)
class RewardSignalSettings:
    """One reward signal; only ``extrinsic`` exists today."""

    gamma: float = attrs.field(default=0.99, validator=_open_unit_interval)
    strength: float = 1.0
    network_settings: NetworkSettings = attrs.Factory(NetworkSettings)


@attrs.frozen(kw_only=True)
class HyperparamSettings:
    """Base of every trainer type's ``hyperparameters`` section."""

    batch_size: int = attrs.field(default=1024, validator=_positive)
    buffer_size: int = attrs.field(default=10240, validator=_positive)
    learning_rate: float = attrs.field(default=3.0e-4, validator=_positive)
    learning_rate_schedule: ScheduleType = ScheduleType.CONSTANT


class PFSPWeighting(str, enum.Enum):
    """AlphaStar's prioritised fictitious self-play weightings of the learner's win rate ``p``."""

    HARD = "hard"  # (1 - p) ** pfsp_exponent: focus on opponents the learner loses to
    VARIANCE = "variance"  # p (1 - p): focus on even matches


def _known_strategy(instance: Any, attribute: attrs.Attribute, value: str) -> None:
    from ghost.sampling import sampler_names

    if value not in sampler_names():
        raise ValueError(
            f"unknown opponent sampling strategy {value!r}; valid strategies: "
            f"{', '.join(sampler_names())}"
        )


@attrs.frozen(kw_only=True)
class MixtureWeights:
    """``strategy: mixture``: fixed probabilities of drawing the latest policy, a window
    snapshot, or a fixed opponent; they must sum to 1."""

    latest: float = attrs.field(default=0.5, validator=_unit_interval)
    window: float = attrs.field(default=0.5, validator=_unit_interval)
    fixed: float = attrs.field(default=0.0, validator=_unit_interval)

    def __attrs_post_init__(self) -> None:
        total = self.latest + self.window + self.fixed
        if abs(total - 1.0) > 1e-6:
            raise ValueError(
                f"mixture weights latest + window + fixed must sum to 1 (got {self.latest} + "
                f"{self.window} + {self.fixed} = {total:g})"
            )


@attrs.frozen(kw_only=True)
class SamplingSettings:
    """``self_play.sampling``: how a ghosted team's opponents are drawn from the pool."""

    #: latest_ratio (ML-Agents' rule, default), uniform, pfsp, mixture, or a plugin's name
    strategy: str = attrs.field(default="latest_ratio", validator=_known_strategy)
    pfsp_weighting: PFSPWeighting = PFSPWeighting.HARD
    pfsp_exponent: float = attrs.field(default=2.0, validator=_positive)
    mixture: MixtureWeights = attrs.Factory(MixtureWeights)
    #: how many recent matches against each opponent the rolling win rate remembers
    win_rate_window: int = attrs.field(default=200, validator=_positive)


@attrs.frozen(kw_only=True)
class FixedOpponentSettings:
    """A permanent pool member: a scripted policy or another run's policy file (never evicted)."""

    name: str
    #: a scripted level of the built-in game being trained (``medium``) or ``<game>:<level>``
    scripted: str | None = None
    #: a policy file: a final ``<Behavior>.pt``, a checkpoint or a snapshot of another run
    policy: str | None = None
    #: its rating (default: ``initial_elo``)
    rating: float | None = None
    #: keep ``rating`` fixed instead of updating it after each match
    pin_rating: bool = True

    def __attrs_post_init__(self) -> None:
        if (self.scripted is None) == (self.policy is None):
            raise ValueError(
                f"fixed opponent {self.name!r} needs exactly one of `scripted:` (a scripted "
                "level) or `policy:` (a policy file)"
            )


@attrs.frozen(kw_only=True)
class EvaluationSettings:
    """``self_play.evaluation``: games against fixed opponents, apart from training games."""

    every_steps: int = attrs.field(default=50000, validator=_positive)
    games: int = attrs.field(default=100, validator=_positive)
    #: names of fixed opponents to evaluate against (default: all of them)
    opponents: list[str] | None = None


@attrs.frozen(kw_only=True)
class SelfPlaySettings:
    """The ``self_play:`` section of a behavior (ML-Agents' keys plus ours).

    ``team_change`` defaults to 5 × ``save_steps`` as in ML-Agents; read ``steps_per_team``.
    """

    save_steps: int = attrs.field(default=20000, validator=_positive)
    team_change: int | None = attrs.field(default=None, validator=_positive)
    swap_steps: int = attrs.field(default=2000, validator=_positive)
    window: int = attrs.field(default=10, validator=_positive)
    play_against_latest_model_ratio: float = attrs.field(default=0.5, validator=_unit_interval)
    initial_elo: float = 1200.0
    #: Elo K-factor: the most one match moves a rating (ML-Agents uses 1, once per agent).
    elo_k: float = attrs.field(default=16.0, validator=_positive)
    #: how many different snapshots the ghosted team plays at once, spread over environments and
    #: arenas. 1 is ML-Agents' behaviour (every environment faces the same opponent) and the
    #: default: each extra opponent costs one more batched forward pass per step (measured on
    #: tennis, 4 opponents: ~20% fewer steps per second).
    opponents_per_swap: int = attrs.field(default=1, validator=_positive)
    sampling: SamplingSettings = attrs.Factory(SamplingSettings)
    fixed_opponents: list[FixedOpponentSettings] = attrs.Factory(list)
    evaluation: EvaluationSettings | None = None

    def __attrs_post_init__(self) -> None:
        names = [fixed.name for fixed in self.fixed_opponents]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ValueError(f"fixed opponent names must be unique; repeated: {duplicates}")
        if self.sampling.strategy == "mixture" and self.sampling.mixture.fixed > 0 and not names:
            raise ValueError("sampling.mixture.fixed > 0 needs at least one fixed_opponents entry")
        wanted = self.evaluation.opponents if self.evaluation is not None else None
        unknown = sorted(set(wanted or ()) - set(names))
        if unknown:
            raise ValueError(
                f"evaluation.opponents {unknown} are not fixed opponents; defined: {names or 'none'}"
            )

    @property
    def steps_per_team(self) -> int:
        """Trainer steps a team learns before the next team takes over."""
        return self.team_change if self.team_change is not None else 5 * self.save_steps


def _default_reward_signals() -> dict[str, RewardSignalSettings]:
    return {"extrinsic": RewardSignalSettings()}


@attrs.frozen(kw_only=True)
class TrainerSettings:
    """One behavior's section under ``behaviors:`` (or ``default_settings:``)."""

    trainer_type: str = "ppo"
    hyperparameters: HyperparamSettings = attrs.Factory(HyperparamSettings)
    network_settings: NetworkSettings = attrs.Factory(NetworkSettings)
    reward_signals: dict[str, RewardSignalSettings] = attrs.Factory(_default_reward_signals)
    init_path: str | None = None
    keep_checkpoints: int = attrs.field(default=5, validator=_positive)
    checkpoint_interval: int = attrs.field(default=500000, validator=_positive)
    max_steps: int = attrs.field(default=500000, validator=_non_negative)
    time_horizon: int = attrs.field(default=64, validator=_positive)
    summary_freq: int = attrs.field(default=50000, validator=_positive)
    #: accepted for ML-Agents compatibility; it has no effect here
    threaded: bool = False
    self_play: SelfPlaySettings | None = None
    behavioral_cloning: dict[str, Any] | None = None

    @property
    def gamma(self) -> float:
        """Discount of the extrinsic reward signal."""
        return self.reward_signals["extrinsic"].gamma

    @property
    def reward_strength(self) -> float:
        """Scale of the extrinsic reward signal."""
        return self.reward_signals["extrinsic"].strength


@attrs.frozen(kw_only=True)
class EnvironmentSettings:
    """``env_settings``: which environment to run and how many copies."""

    env_path: str | None = None
    env_args: list[str] | None = None
    base_port: int = attrs.field(default=5005, validator=v.and_(v.ge(1024), v.le(65535)))
    num_envs: int = attrs.field(default=1, validator=_positive)
    num_areas: int = attrs.field(default=1, validator=_positive)
    seed: int = -1
    max_lifetime_restarts: int = attrs.field(default=10, validator=v.ge(-1))
    restarts_rate_limit_n: int = attrs.field(default=1, validator=v.ge(-1))
    restarts_rate_limit_period_s: int = attrs.field(default=60, validator=_positive)
    #: seconds to wait for a Unity build to start before giving up (ignored by in-process games)
    timeout_wait: int = attrs.field(default=60, validator=_positive)


@attrs.frozen(kw_only=True)
class EngineSettings:
    """``engine_settings``: forwarded to Unity builds, ignored by in-process games."""

    width: int = attrs.field(default=84, validator=_positive)
    height: int = attrs.field(default=84, validator=_positive)
    quality_level: int = 5
    time_scale: float = attrs.field(default=20.0, validator=_positive)
    target_frame_rate: int = -1
    capture_frame_rate: int = 60
    no_graphics: bool = False
    #: Unity builds: worker 0 renders, every other worker runs without graphics
    no_graphics_monitor: bool = False


@attrs.frozen(kw_only=True)
class CheckpointSettings:
    """``checkpoint_settings``: where the run lives and how it starts."""

    run_id: str = "ppo"
    initialize_from: str | None = None
    load_model: bool = False
    resume: bool = False
    force: bool = False
    train_model: bool = False
    inference: bool = False
    results_dir: str = "results"


@attrs.frozen(kw_only=True)
class TorchSettings:
    """``torch_settings``: the device networks run on (``cpu``, ``cuda``, ``cuda:1``...)."""

    device: str | None = None


@attrs.frozen(kw_only=True)
class RunOptions:
    """The whole resolved configuration of one run."""

    behaviors: dict[str, TrainerSettings] = attrs.Factory(dict)
    default_settings: TrainerSettings | None = None
    env_settings: EnvironmentSettings = attrs.Factory(EnvironmentSettings)
    engine_settings: EngineSettings = attrs.Factory(EngineSettings)
    checkpoint_settings: CheckpointSettings = attrs.Factory(CheckpointSettings)
    torch_settings: TorchSettings = attrs.Factory(TorchSettings)
    environment_parameters: dict[str, Any] | None = None
    debug: bool = False

    def settings_for(self, behavior_name: str) -> TrainerSettings:
        """The settings of a behavior, falling back to ``default_settings`` then the defaults."""
        if behavior_name in self.behaviors:
            return self.behaviors[behavior_name]
        if self.default_settings is not None:
            return self.default_settings
        # imported here: the loader builds on this module
        from ghost.config_loader import default_trainer_settings

        return default_trainer_settings()
