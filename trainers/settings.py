"""The trainer stack's settings: ML-Agents' behavior section without ``self_play``.

Every class mirrors a section of an ML-Agents trainer config, with the same key names and defaults.
``TrainerSettings`` is one behavior's section as a trainer sees it; the self-play layer adds its
``self_play`` key in a subclass (``ghost.config.settings.BehaviorSettings``). Hyperparameters differ
per trainer type: each registered type brings its own ``HyperparamSettings`` subclass
(``trainers.registry``).
"""

from __future__ import annotations

import enum

import attrs

from envs.validators import non_negative, open_unit_interval, positive


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


class ConditioningType(str, enum.Enum):
    """How goal-signal observations condition the network (ML-Agents' ``goal_conditioning_type``):
    ``hyper`` through a hypernetwork (not supported yet), ``none`` as ordinary inputs."""

    HYPER = "hyper"
    NONE = "none"


@attrs.frozen(kw_only=True)
class MemorySettings:
    """Recurrent memory: an LSTM whose state (``memory_size`` floats, hidden then cell) each
    agent carries between decisions, trained on sequences of ``sequence_length`` steps
    (``trainers.memory``, ``trainers.sequences``; PPO, SAC and POCA)."""

    sequence_length: int = attrs.field(default=64, validator=positive)
    memory_size: int = attrs.field(default=128, validator=positive)


@attrs.frozen(kw_only=True)
class NetworkSettings:
    """Network shape: ``hidden_units`` × ``num_layers`` MLP after the observation encoders."""

    normalize: bool = False
    hidden_units: int = attrs.field(default=128, validator=positive)
    num_layers: int = attrs.field(default=2, validator=positive)
    vis_encode_type: EncoderType = EncoderType.SIMPLE
    memory: MemorySettings | None = None
    #: only matters with goal-signal observations, where ``hyper`` is refused (``networks``)
    goal_conditioning_type: ConditioningType = ConditioningType.HYPER
    deterministic: bool = False


@attrs.frozen(kw_only=True)
class RewardSignalSettings:
    """One reward signal: ``extrinsic`` (the environment's reward) has only these keys."""

    gamma: float = attrs.field(default=0.99, validator=open_unit_interval)
    strength: float = 1.0
    network_settings: NetworkSettings = attrs.Factory(NetworkSettings)


@attrs.frozen(kw_only=True)
class CuriositySettings(RewardSignalSettings):
    """``reward_signals.curiosity`` (``trainers.intrinsic_rewards.Curiosity``)."""

    learning_rate: float = attrs.field(default=3.0e-4, validator=positive)
    #: the width of the state encoding; overrides ``network_settings.hidden_units`` when set
    encoding_size: int | None = attrs.field(default=None, validator=positive)


@attrs.frozen(kw_only=True)
class RNDSettings(RewardSignalSettings):
    """``reward_signals.rnd`` (``trainers.intrinsic_rewards.RandomNetworkDistillation``)."""

    learning_rate: float = attrs.field(default=1.0e-4, validator=positive)
    encoding_size: int | None = attrs.field(default=None, validator=positive)


def _demo_path(instance: object, attribute: attrs.Attribute, value: str) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(
            f"{attribute.name} must name a .demo file or a folder of them (got {value!r})"
        )


@attrs.frozen(kw_only=True)
class GAILSettings(RewardSignalSettings):
    """``reward_signals.gail`` (``trainers.gail.GAIL``): a discriminator between the agent's
    steps and the demonstrations at ``demo_path`` (a ``.demo`` file or a folder of them)."""

    learning_rate: float = attrs.field(default=3.0e-4, validator=positive)
    encoding_size: int | None = attrs.field(default=None, validator=positive)
    #: the discriminator also reads the action taken (and whether the episode ended after it)
    use_actions: bool = False
    #: a variational information bottleneck between the discriminator's encoder and its output
    use_vail: bool = False
    demo_path: str = attrs.field(validator=_demo_path)


class CloningLoss(str, enum.Enum):
    """What behavioral cloning compares with a demonstrated continuous action
    (``behavioral_cloning.continuous_loss``, ours): ``sample`` an action sampled from the policy
    (ML-Agents' loss, the default), which also narrows the policy's spread towards none, so that a
    clone alone acts as surely as its demonstrator; ``mean`` the policy's mean action, which leaves
    the spread to the reinforcement learner: the one to bootstrap self-play with."""

    MEAN = "mean"
    SAMPLE = "sample"


@attrs.frozen(kw_only=True)
class BehavioralCloningSettings:
    """``behavioral_cloning`` (``trainers.behavioral_cloning``): after every policy update, the
    policy learns to take the actions of the demonstrations at ``demo_path``.

    ``strength`` scales the learning rate of the cloning optimizer (the trainer's
    ``learning_rate`` times ``strength``), which falls linearly to 0 over ``steps`` trainer steps
    (0: it never falls). ``batch_size`` defaults to the trainer's, ``num_epoch`` to 3 (as
    ML-Agents), and ``samples_per_update`` > 0 caps the demonstration steps of each epoch.
    ``continuous_loss`` (ours) says what is compared with a demonstrated continuous action: the
    policy's mean, or a sampled action as ML-Agents does (the default; ``CloningLoss``).
    """

    demo_path: str = attrs.field(validator=_demo_path)
    steps: int = attrs.field(default=0, validator=non_negative)
    strength: float = attrs.field(default=1.0, validator=non_negative)
    samples_per_update: int = attrs.field(default=0, validator=non_negative)
    num_epoch: int | None = attrs.field(default=None, validator=positive)
    batch_size: int | None = attrs.field(default=None, validator=positive)
    continuous_loss: CloningLoss = CloningLoss.SAMPLE


#: the trainer types that learn ``curiosity``, ``rnd`` and ``gail`` and honour
#: ``behavioral_cloning`` (``trainers.reward_signals``, ``trainers.behavioral_cloning``)
INTRINSIC_REWARD_TRAINERS = ("ppo", "sac", "poca")

#: the reward signal keys and their settings classes
REWARD_SIGNAL_TYPES: dict[str, type[RewardSignalSettings]] = {
    "extrinsic": RewardSignalSettings,
    "curiosity": CuriositySettings,
    "rnd": RNDSettings,
    "gail": GAILSettings,
}


@attrs.frozen(kw_only=True)
class HyperparamSettings:
    """Base of every trainer type's ``hyperparameters`` section."""

    batch_size: int = attrs.field(default=1024, validator=positive)
    buffer_size: int = attrs.field(default=10240, validator=positive)
    learning_rate: float = attrs.field(default=3.0e-4, validator=positive)
    learning_rate_schedule: ScheduleType = ScheduleType.CONSTANT


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
    keep_checkpoints: int = attrs.field(default=5, validator=positive)
    checkpoint_interval: int = attrs.field(default=500000, validator=positive)
    max_steps: int = attrs.field(default=500000, validator=non_negative)
    time_horizon: int = attrs.field(default=64, validator=positive)
    summary_freq: int = attrs.field(default=50000, validator=positive)
    #: ML-Agents' trainer-in-its-own-thread switch; trainers here always update in the main loop,
    #: so ``true`` only draws a warning from the config loader
    threaded: bool = False
    behavioral_cloning: BehavioralCloningSettings | None = None

    @property
    def gamma(self) -> float:
        """Discount of the extrinsic reward signal."""
        extrinsic = self.reward_signals.get("extrinsic")
        return RewardSignalSettings().gamma if extrinsic is None else extrinsic.gamma

    @property
    def reward_strength(self) -> float:
        """Scale of the extrinsic reward signal (0 when a config leaves it out, as in ML-Agents:
        the environment's reward is then not learned from)."""
        extrinsic = self.reward_signals.get("extrinsic")
        return 0.0 if extrinsic is None else extrinsic.strength
