"""``environment_parameters``: ML-Agents' schema, the lesson rules, and curricula in real sessions.

The session tests run a ``TeamArenaEnv`` whose match results follow an ``advantage`` parameter
(team 0 wins while it is positive, loses while it is negative), so the learner's Elo moves in a
known direction and a lesson measured on Elo must complete at a known moment.
"""

from __future__ import annotations

import numpy as np
import pytest

from envs.environment_parameters import (
    ConstantValue,
    GaussianSampler,
    MultiRangeUniformSampler,
    UniformSampler,
)
from envs.stepping import InProcessStepper
from ghost.config.curriculum import (
    BehaviorMeasures,
    CompletionCriteria,
    Curriculum,
    EnvironmentParameterSettings,
    Lesson,
    Measure,
    with_seeds,
)
from ghost.config.loader import options_from_dict
from ghost.config.settings import RunOptions
from ghost.config.structuring import converter
from ghost.core.settings import SelfPlaySettings
from ghost.exceptions import ConfigError
from ghost.running.session import SelfPlaySession
from tests.team_envs import TeamArenaEnv
from tests.test_ghost_session import TWO_TEAMS, trainer_settings
from trainers.run_files.layout import RunLayout

pytestmark = pytest.mark.usefixtures("one_torch_thread")

ML_AGENTS_EXAMPLE = {  # the shape of ML-Agents' wall-jump curriculum, with every sampler kind
    "gravity": 9.81,
    "mass": {"sampler_type": "uniform", "sampler_parameters": {"min_value": 0.5, "max_value": 10}},
    "scale": {"sampler_type": "gaussian", "sampler_parameters": {"mean": 2, "st_dev": 0.3}},
    "length": {
        "sampler_type": "multirangeuniform",
        "sampler_parameters": {"intervals": [[7, 10], [15, 20]], "seed": 5},
    },
    "wall_height": {
        "curriculum": [
            {
                "name": "Lesson0",
                "completion_criteria": {
                    "measure": "progress", "behavior": "BigWallJump", "signal_smoothing": True,
                    "min_lesson_length": 100, "threshold": 0.1,
                },
                "value": {
                    "sampler_type": "uniform",
                    "sampler_parameters": {"min_value": 0.0, "max_value": 4.0},
                },
            },
            {
                "name": "Lesson1",
                "completion_criteria": {
                    "measure": "reward", "behavior": "BigWallJump", "threshold": 0.5,
                    "require_reset": True,
                },
                "value": 4.0,
            },
            {"name": "Lesson2", "value": 8.0},
        ]
    },
}  # fmt: skip


def test_ml_agents_schema_loads_and_round_trips():
    options = options_from_dict({"environment_parameters": ML_AGENTS_EXAMPLE})
    parameters = options.environment_parameters
    assert parameters["gravity"].curriculum[0].value == ConstantValue(value=9.81)
    assert parameters["mass"].curriculum[0].value == UniformSampler(min_value=0.5, max_value=10)
    assert parameters["scale"].curriculum[0].value == GaussianSampler(mean=2, st_dev=0.3)
    assert parameters["length"].curriculum[0].value == MultiRangeUniformSampler(
        intervals=((7, 10), (15, 20)), seed=5
    )
    lessons = parameters["wall_height"].curriculum
    assert [lesson.name for lesson in lessons] == ["Lesson0", "Lesson1", "Lesson2"]
    assert lessons[0].completion_criteria.measure is Measure.PROGRESS
    assert lessons[1].completion_criteria.require_reset and lessons[2].completion_criteria is None
    # configuration.yaml is written with the unstructure hooks and read back on --resume
    written = converter.unstructure(options)["environment_parameters"]
    assert written["gravity"] == 9.81
    assert written["length"]["sampler_type"] == "multirangeuniform"
    again = options_from_dict({"environment_parameters": written})
    assert again.environment_parameters == parameters


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"g": "heavy"}, "environment_parameters.g = 'heavy': expected a number or a sampler"),
        ({"g": {"sampler_type": "uniform"}}, "needs sampler_parameters"),
        (
            {"g": {"sampler_type": "unifrom", "sampler_parameters": {}}},
            "environment_parameters.g.sampler_type = 'unifrom': unknown sampler",
        ),
        (
            {"g": {"sampler_type": "uniform", "sampler_parameters": {"min": 1}}},
            "environment_parameters.g.sampler_parameters.min = 1: unknown key; did you mean "
            "'min_value'?",
        ),
        (
            {"g": {"sampler_type": "uniform", "sampler_parameters": {"min_value": 3, "max_value": 1}}},
            "min_value 3.0 is greater than max_value 1.0",
        ),
        ({"g": {"curriculum": []}}, "a curriculum needs at least one lesson"),
        (
            {"g": {"curriculum": [{"name": "a", "value": 1}, {"name": "b", "value": 2}]}},
            "lesson 0 ('a') is not the last one, so it needs completion_criteria",
        ),
        (
            {"g": {"curriculum": [{"value": 1}]}},
            "environment_parameters.g.curriculum[0]: Lesson needs the key(s) name",
        ),
        (
            {"g": {"curriculum": [
                {"name": "a", "value": 1,
                 "completion_criteria": {"behavior": "T", "measure": "win_rate"}},
                {"name": "b", "value": 2}]}},
            "curriculum[0].completion_criteria: measure win_rate needs `opponent`",
        ),
        (
            {"g": {"curriculum": [
                {"name": "a", "value": 1,
                 "completion_criteria": {"behavior": "T", "measure": "progress", "threshold": 2}},
                {"name": "b", "value": 2}]}},
            "threshold must be in [0, 1]",
        ),
        (
            {"g": {"curriculum": [
                {"name": "a", "value": 1, "completion_criteria": {"behavior": "T", "mesure": "elo"}},
                {"name": "b", "value": 2}]}},
            "completion_criteria.mesure = 'elo': unknown key; did you mean 'measure'?",
        ),
    ],
)  # fmt: skip
def test_schema_errors_name_the_path(raw, expected):
    with pytest.raises(ConfigError) as error:
        options_from_dict({"environment_parameters": raw})
    assert expected in str(error.value)


def test_unseeded_samplers_get_the_run_seed_in_order():
    options = options_from_dict({"environment_parameters": ML_AGENTS_EXAMPLE})
    seeded = with_seeds(options.environment_parameters, 100)
    seeds = [
        seeded[name].curriculum[0].value.seed for name in ("gravity", "mass", "scale", "length")
    ]
    assert seeds == [100, 101, 102, 5]  # an explicit seed stays


# -- the lesson rules ---------------------------------------------------------------------------
def two_lessons(criteria: CompletionCriteria) -> Curriculum:
    return Curriculum({
        "p": EnvironmentParameterSettings(curriculum=(
            Lesson(name="first", value=ConstantValue(value=1.0), completion_criteria=criteria),
            Lesson(name="second", value=ConstantValue(value=2.0)),
        ))
    })  # fmt: skip


def measures(**kwargs) -> dict[str, BehaviorMeasures]:
    values = {"progress": 0.0, "episode_returns": [], **kwargs}
    return {"B": BehaviorMeasures(**values)}


def test_progress_completes_past_its_threshold():
    curriculum = two_lessons(
        CompletionCriteria(behavior="B", measure=Measure.PROGRESS, threshold=0.5)
    )
    assert curriculum.update(measures(progress=0.5)) == []
    (change,) = curriculum.update(measures(progress=0.51))
    assert (change.parameter, change.lesson, change.lesson_name) == ("p", 1, "second")
    assert curriculum.values() == {"p": ConstantValue(value=2.0)}
    assert curriculum.update(measures(progress=1.0)) == []  # the last lesson stays


def test_reward_waits_for_min_lesson_length_and_smooths():
    criteria = CompletionCriteria(behavior="B", measure=Measure.REWARD, threshold=0.5,
                                  min_lesson_length=3)  # fmt: skip
    curriculum = two_lessons(criteria)
    assert curriculum.update(measures(episode_returns=[1.0, 1.0])) == []  # too few episodes
    # smoothed: 0.25 * 0 + 0.75 * 1 = 0.75 > 0.5
    assert len(curriculum.update(measures(episode_returns=[1.0, 1.0, 1.0]))) == 1
    unsmoothed = two_lessons(attrs_evolve(criteria, signal_smoothing=False, threshold=0.9))
    assert unsmoothed.update(measures(episode_returns=[0.0, 1.0, 1.0, 1.0])) != []  # last 3 only


def test_elo_completes_on_rating_not_on_reward():
    curriculum = two_lessons(CompletionCriteria(behavior="B", measure=Measure.ELO, threshold=1250,
                                                min_lesson_length=2))  # fmt: skip
    zero_sum = [1.0, -1.0, 1.0, -1.0]  # self-play returns average 0 whoever is stronger
    assert curriculum.update(measures(episode_returns=zero_sum, rating=1249.0)) == []
    assert curriculum.update(measures(episode_returns=[1.0], rating=1300.0)) == []  # too young
    assert len(curriculum.update(measures(episode_returns=zero_sum, rating=1251.0))) == 1


def test_win_rate_counts_only_games_against_the_named_opponent():
    criteria = CompletionCriteria(behavior="B", measure=Measure.WIN_RATE, opponent="medium",
                                  threshold=0.6, min_lesson_length=4, signal_smoothing=False)  # fmt: skip
    curriculum = two_lessons(criteria)
    assert curriculum.update(measures(scores={"easy": [1.0] * 10, "medium": [1.0] * 3})) == []
    assert curriculum.update(measures(scores={"medium": [1.0, 0.0, 0.5, 0.5]})) == []  # 0.5
    assert len(curriculum.update(measures(scores={"medium": [0.0, 1.0, 1.0, 0.5, 1.0]}))) == 1


def test_curriculum_state_round_trips():
    curriculum = two_lessons(CompletionCriteria(behavior="B", measure=Measure.PROGRESS))
    curriculum.update(measures(progress=0.2))
    restored = two_lessons(CompletionCriteria(behavior="B", measure=Measure.PROGRESS))
    restored.load_state_dict(curriculum.state_dict())
    assert restored.lessons == {"p": 1}


def attrs_evolve(instance, **changes):
    import attrs

    return attrs.evolve(instance, **changes)


# -- curricula in a session -------------------------------------------------------------------
class AdvantageArena(TeamArenaEnv):
    """``TeamArenaEnv`` whose final rewards are ``(+advantage, -advantage)``; records every
    parameter set it is given, and the advantage in force at each episode end."""

    def __init__(self) -> None:
        super().__init__(behaviors=TWO_TEAMS, num_arenas=8, episode_length=2, final_rewards=(1, -1))
        self.received: list[dict] = []

    def set_environment_parameters(self, values) -> None:
        self.received.append(dict(values))
        advantage = values["advantage"].sample(np.random.default_rng(0))
        self.final_rewards = np.asarray([advantage, -advantage], np.float32)


def elo_curriculum(threshold: float, *, require_reset: bool = False) -> dict:
    return {
        "advantage": {
            "curriculum": [
                {"name": "TeamZeroWins", "value": 1.0,
                 "completion_criteria": {"measure": "Elo", "behavior": "Arena",
                                         "threshold": threshold, "min_lesson_length": 8,
                                         "require_reset": require_reset}},
                {"name": "TeamZeroLoses", "value": -1.0},
            ]
        }
    }  # fmt: skip


def elo_session(env: AdvantageArena, tmp_path, parameters: dict) -> SelfPlaySession:
    self_play = SelfPlaySettings(save_steps=64, swap_steps=64, team_change=10**6, window=3)
    options = RunOptions(
        behaviors={"Arena": trainer_settings(self_play=self_play, max_steps=3000)},
        environment_parameters=options_from_dict(
            {"environment_parameters": parameters}
        ).environment_parameters,
    )
    return SelfPlaySession(
        options=options, stepper=InProcessStepper(env), layout=RunLayout(tmp_path)
    )


def test_a_lesson_completes_when_the_learner_elo_passes_the_threshold(tmp_path):
    env = AdvantageArena()
    session = elo_session(env, tmp_path / "run", elo_curriculum(1400.0, require_reset=True))
    steps = session.start(resume=False)
    assert env.received == [{"advantage": ConstantValue(value=1.0, seed=0)}]
    ghost = session.ghosts["Arena"]
    ratings, lessons = [], []
    try:
        for _ in range(300):
            steps = session.step_once(steps)
            ratings.append(ghost.rating)
            lessons.append(session.lessons.curriculum.lessons["advantage"])
    finally:
        session.finish()
    changed_at = lessons.index(1)
    # team 0 (the learner) won every match, so its Elo climbed; the lesson waited for 1400
    assert changed_at > 5
    assert ratings[changed_at - 1] <= 1400.0 < ratings[changed_at]
    assert all(lesson == 0 for lesson in lessons[:changed_at])
    assert all(lesson == 1 for lesson in lessons[changed_at:])
    assert env.received[-1] == {"advantage": ConstantValue(value=-1.0, seed=1)}
    assert env.resets >= 2  # require_reset: the environments restarted with the new value
    # in the second lesson team 0 loses every match: its Elo falls back
    assert ratings[-1] < ratings[changed_at] - 20


def test_elo_measure_without_self_play_is_a_config_error(tmp_path):
    env = AdvantageArena()
    env.names = ["Arena"]  # one team: no self-play needed
    env.agent_ids = env.agent_ids[:1]
    options = RunOptions(
        behaviors={"Arena": trainer_settings(self_play=None)},
        environment_parameters=options_from_dict(
            {"environment_parameters": elo_curriculum(1300.0)}
        ).environment_parameters,
    )
    session = SelfPlaySession(options=options, stepper=InProcessStepper(env),
                              layout=RunLayout(tmp_path))  # fmt: skip
    with pytest.raises(ConfigError, match="measure elo needs self-play"):
        session.start(resume=False)


def test_a_resumed_run_continues_its_lesson(tmp_path):
    env = AdvantageArena()
    session = elo_session(env, tmp_path / "run", elo_curriculum(1230.0))
    steps = session.start(resume=False)
    try:
        while session.lessons.curriculum.lessons["advantage"] == 0:
            steps = session.step_once(steps)
    finally:
        session.finish()  # the final checkpoint holds lesson 1
    again = AdvantageArena()
    resumed = elo_session(again, tmp_path / "run", elo_curriculum(1230.0))
    resumed.start(resume=True)
    resumed.finish()
    assert resumed.lessons.curriculum.lessons == {"advantage": 1}
    assert again.received[-1]["advantage"].value == -1.0


def test_check_refuses_what_training_would_refuse_at_start(tmp_path, capsys):
    """``--check`` passed a win-rate lesson against an opponent the behavior does not have, and
    training then stopped with exit 2 at its first step."""
    import yaml

    from ghost.running import cli

    def lesson(measure: str, **criteria) -> dict:
        return {
            "ball_speed": {
                "curriculum": [
                    {"name": "A", "value": 0.6, "completion_criteria": {
                        "measure": measure, "behavior": "Tennis", "threshold": 0.7, **criteria}},
                    {"name": "B", "value": 1.0},
                ]
            }
        }  # fmt: skip

    def check(self_play: dict | None, parameters: dict) -> tuple[int, str]:
        behavior = {} if self_play is None else {"self_play": self_play}
        config = {"behaviors": {"Tennis": behavior}, "environment_parameters": parameters}
        path = tmp_path / "config.yaml"
        path.write_text(yaml.safe_dump(config))
        code = cli.main([str(path), "--env", "tennis", "--check",
                         "--results-dir", str(tmp_path / "results")])  # fmt: skip
        return code, capsys.readouterr().err

    code, err = check({}, lesson("win_rate", opponent="scripted"))
    assert code == 2
    assert "completion_criteria.opponent = 'scripted': 'Tennis' has no fixed opponent" in err
    medium = {"fixed_opponents": [{"name": "scripted", "scripted": "medium"}]}
    assert check(medium, lesson("win_rate", opponent="scripted"))[0] == 0
    assert check({}, lesson("elo"))[0] == 0
