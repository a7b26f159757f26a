"""``hyperparameters`` sections of the built-in trainer types, with ML-Agents' names and defaults."""

from __future__ import annotations

import attrs

from envs.validators import non_negative, positive, unit_interval
from trainers.settings import HyperparamSettings, ScheduleType

#: why ``shared_critic: true`` is refused, by the config loader (naming the key path) and by
#: ``PPOTrainer`` (for settings built in code)
SHARED_CRITIC_UNSUPPORTED = (
    "a critic sharing the actor's network body is not supported yet; remove `shared_critic` "
    "(the critic gets its own network of the same shape)"
)


def _fraction(instance: object, attribute: attrs.Attribute, value: float) -> None:
    if not 0.0 < value < 1.0:
        raise ValueError(f"{attribute.name} must be in (0, 1) (got {value!r})")


def _check_batch_fits(batch_size: int, buffer_size: int, holds: str) -> None:
    if batch_size > buffer_size:
        raise ValueError(
            f"batch_size ({batch_size}) is larger than buffer_size ({buffer_size}), which "
            f"{holds}, so no update could ever run; raise buffer_size or lower batch_size"
        )


@attrs.frozen(kw_only=True)
class OnPolicySettings(HyperparamSettings):
    """What PPO and POCA share: ``buffer_size`` agent steps per update, ``num_epoch`` passes of
    ``batch_size`` minibatches, a clipped surrogate with entropy bonus ``beta``.

    Read the schedules of ``beta`` and ``epsilon`` from the ``*_schedule_resolved`` properties
    (an unset one follows ``learning_rate_schedule``).
    """

    batch_size: int = attrs.field(default=1024, validator=positive)
    buffer_size: int = attrs.field(default=10240, validator=positive)
    learning_rate_schedule: ScheduleType = ScheduleType.LINEAR
    beta: float = attrs.field(default=5.0e-3, validator=non_negative)
    epsilon: float = attrs.field(default=0.2, validator=_fraction)
    lambd: float = attrs.field(default=0.95, validator=unit_interval)
    num_epoch: int = attrs.field(default=3, validator=positive)
    beta_schedule: ScheduleType | None = None
    epsilon_schedule: ScheduleType | None = None
    #: weight of ``KL(policy ‖ magnet)`` in the loss (0: no magnet); see ``trainers.magnet``
    magnet_strength: float = attrs.field(default=0.0, validator=non_negative)
    #: how far the magnet moves toward the policy after each update
    magnet_rate: float = attrs.field(default=0.05, validator=unit_interval)

    def __attrs_post_init__(self) -> None:
        _check_batch_fits(self.batch_size, self.buffer_size, "holds the experience of one update")

    @property
    def beta_schedule_resolved(self) -> ScheduleType:
        return self.beta_schedule or self.learning_rate_schedule

    @property
    def epsilon_schedule_resolved(self) -> ScheduleType:
        return self.epsilon_schedule or self.learning_rate_schedule


@attrs.frozen(kw_only=True)
class PPOSettings(OnPolicySettings):
    """PPO (see ``OnPolicySettings``); ``beta``/``epsilon`` schedules follow the learning rate's."""

    #: ML-Agents' critic as a value head on the actor's body: ``true`` is refused, see
    #: ``SHARED_CRITIC_UNSUPPORTED``
    shared_critic: bool = False


@attrs.frozen(kw_only=True)
class POCASettings(OnPolicySettings):
    """MA-POCA (see ``OnPolicySettings``); as in ML-Agents, ``beta``/``epsilon`` schedules follow
    the learning rate's as PPO's do."""


@attrs.frozen(kw_only=True)
class SACSettings(HyperparamSettings):
    """SAC: off-policy updates from a replay buffer of ``buffer_size`` transitions."""

    batch_size: int = attrs.field(default=128, validator=positive)
    buffer_size: int = attrs.field(default=50000, validator=positive)
    buffer_init_steps: int = attrs.field(default=0, validator=non_negative)
    tau: float = attrs.field(default=0.005, validator=unit_interval)
    steps_per_update: float = attrs.field(default=1.0, validator=positive)
    save_replay_buffer: bool = False
    init_entcoef: float = attrs.field(default=1.0, validator=positive)
    #: agent steps per reward-signal update (ML-Agents); no effect yet: the only reward signal,
    #: extrinsic, has no network to update
    reward_signal_steps_per_update: float | None = attrs.field(default=None, validator=positive)

    def __attrs_post_init__(self) -> None:
        _check_batch_fits(self.batch_size, self.buffer_size, "is the replay buffer's capacity")
