"""The ``self_play:`` section of a behavior: ML-Agents' keys plus ours, as frozen attrs classes.

The self-play core reads only these; where they sit in a run configuration is
``ghost.config.settings``' business. ``self_play.sampling`` (``SamplingSettings``) lives with the
sampler registry in ``ghost.core.sampling``, since each strategy declares its own keys there; it
and the built-in strategies' option values are importable from here as well.
"""

from __future__ import annotations

import attrs

from envs.validators import positive, unit_interval
from ghost.core.sampling import (  # noqa: F401 - MixtureWeights, PFSPWeighting: re-exported
    MixtureWeights,
    PFSPWeighting,
    SamplingSettings,
)


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

    every_steps: int = attrs.field(default=50000, validator=positive)
    games: int = attrs.field(default=100, validator=positive)
    #: names of fixed opponents to evaluate against (default: all of them)
    opponents: list[str] | None = None


@attrs.frozen(kw_only=True)
class LeagueSettings:
    """``self_play.league``: exploiters trained beside the main learner (AlphaStar's league).

    Exploiters take whole turns of the learning team: after every ``main_turns`` turns of the main
    learner comes one turn of the next exploiter (round-robin), played with its own network and
    its own copy of the wrapped trainer. A main exploiter faces only the main learner's latest
    weights; a league exploiter draws its opponents from the whole pool. An exploiter whose win
    rate over a turn reaches ``promote_win_rate`` is frozen into the pool as a permanent member
    (a main exploiter then restarts from fresh weights); a main exploiter not promoted within
    ``reset_turns`` of its turns restarts too. Exploiter steps do not count toward ``max_steps``.
    """

    main_exploiters: int = attrs.field(default=0, validator=attrs.validators.ge(0))
    league_exploiters: int = attrs.field(default=0, validator=attrs.validators.ge(0))
    main_turns: int = attrs.field(default=2, validator=positive)
    promote_win_rate: float = attrs.field(default=0.7, validator=unit_interval)
    reset_turns: int = attrs.field(default=4, validator=positive)
    #: promoted exploiters kept in the pool (the oldest leaves first)
    max_members: int = attrs.field(default=10, validator=positive)

    @property
    def exploiters(self) -> int:
        return self.main_exploiters + self.league_exploiters


@attrs.frozen(kw_only=True)
class AveragePolicySettings:
    """``self_play.average_policy``: the exported ``<Behavior>.pt`` is the average of the window
    (every snapshot and the final learner, weighted alike) distilled into one network, NFSP-style,
    instead of the last iterate."""

    enabled: bool = False
    #: the learner's most recent observations kept to distil on (a uniform sample of them)
    observations: int = attrs.field(default=20000, validator=positive)
    epochs: int = attrs.field(default=30, validator=positive)
    batch_size: int = attrs.field(default=512, validator=positive)
    learning_rate: float = attrs.field(default=1.0e-3, validator=positive)


@attrs.frozen(kw_only=True)
class CatchUpSettings:
    """``self_play.catch_up``: a learning team that is losing keeps its turn.

    When a learning turn of ``team_change`` steps ends and the learner's mean score over the
    turn's rated matches (win 1, draw 0.5, loss 0) is below ``below``, the same team learns for
    another turn, up to ``max_extra_turns`` times in a row; then learning passes on as usual. In
    an asymmetric game where one side finds its first success late (strikers against a goalie
    that learns to save first), the losing side gets to learn while its opponent stands still.
    Off by default (``below: 0``, ML-Agents' fixed turns).
    """

    below: float = attrs.field(default=0.0, validator=unit_interval)
    max_extra_turns: int = attrs.field(default=3, validator=attrs.validators.ge(0))

    @property
    def enabled(self) -> bool:
        return self.below > 0 and self.max_extra_turns > 0


#: ``self_play.seats``: how a turn-based game's seats are dealt to the teams
SEAT_DEALS = ("fixed", "shuffled")


@attrs.frozen(kw_only=True)
class SelfPlaySettings:
    """The ``self_play:`` section of a behavior (ML-Agents' keys plus ours).

    ``team_change`` defaults to 5 × ``save_steps`` as in ML-Agents; read ``steps_per_team``.
    """

    save_steps: int = attrs.field(default=20000, validator=positive)
    team_change: int | None = attrs.field(default=None, validator=positive)
    swap_steps: int = attrs.field(default=2000, validator=positive)
    window: int = attrs.field(default=10, validator=positive)
    play_against_latest_model_ratio: float = attrs.field(default=0.5, validator=unit_interval)
    initial_elo: float = 1200.0
    #: Elo K-factor: the most one match moves a rating (ML-Agents uses 1, once per agent).
    elo_k: float = attrs.field(default=16.0, validator=positive)
    #: how many different snapshots the ghosted team plays at once, spread over environments and
    #: arenas. 1 is ML-Agents' behaviour (every environment faces the same opponent) and the
    #: default: each extra opponent costs one more batched forward pass per step (measured on
    #: tennis, 4 opponents: ~20% fewer steps per second).
    opponents_per_swap: int = attrs.field(default=1, validator=positive)
    sampling: SamplingSettings = attrs.Factory(SamplingSettings)
    fixed_opponents: list[FixedOpponentSettings] = attrs.Factory(list)
    evaluation: EvaluationSettings | None = None
    #: OpenSpiel two-player zero-sum games: trainer steps between two exact exploitability
    #: scores of the learner (None: every ``summary_freq`` steps; 0: never)
    exploitability_every: int | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.ge(0))
    )
    league: LeagueSettings = attrs.Factory(LeagueSettings)
    #: turn-based symmetric games (OpenSpiel, PettingZoo): ``fixed`` keeps team ``t`` in seat
    #: ``t`` (ML-Agents' semantics: the learner trains one seat per turn); ``shuffled`` deals the
    #: seats to the teams at random every game, so every turn trains every seat
    seats: str = attrs.field(default="fixed", validator=attrs.validators.in_(SEAT_DEALS))
    average_policy: AveragePolicySettings = attrs.Factory(AveragePolicySettings)
    catch_up: CatchUpSettings = attrs.Factory(CatchUpSettings)
    #: symmetric games (one behavior on several teams): while a ghosted team plays the latest
    #: copy of the learner, its experience trains the learner too (without counting as trainer
    #: steps), so each environment step teaches more; ML-Agents drops it (false)
    learn_from_latest: bool = False
    #: a named combination of the keys above (``robust``); keys written beside it keep their
    #: values (``ghost.config.presets``)
    preset: str | None = None

    def __attrs_post_init__(self) -> None:
        names = [fixed.name for fixed in self.fixed_opponents]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ValueError(f"fixed opponent names must be unique; repeated: {duplicates}")
        self.sampling.check(self)
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
