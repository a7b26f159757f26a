"""Checks of the ML-Agents plugin that run inside the ML-Agents environment (``.venv-mlagents``).

``tests/test_mlagents_plugin.py`` runs this file with that environment's Python, which has
ML-Agents 1.1 and this project installed as its plugin but no pytest. Each check goes through
ML-Agents' own code paths (plugin registration, ``RunOptions``, ``TrainerFactory``, its
``Trajectory`` type) and raises on a failure. The script prints one JSON object:
``{check name: "ok" or the failure}``.
"""

from __future__ import annotations

import json
import sys
import tempfile
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from mlagents.plugins.trainer_type import register_trainer_plugins
from mlagents.trainers.action_info import ActionInfo
from mlagents.trainers.agent_processor import AgentManagerQueue, AgentProcessor
from mlagents.trainers.behavior_id_utils import BehaviorIdentifiers
from mlagents.trainers.environment_parameter_manager import EnvironmentParameterManager
from mlagents.trainers.exception import TrainerConfigError
from mlagents.trainers.settings import RunOptions, TrainerSettings
from mlagents.trainers.stats import StatsReporter
from mlagents.trainers.torch_entities.action_log_probs import LogProbsTuple
from mlagents.trainers.trainer import TrainerFactory
from mlagents.trainers.trajectory import AgentExperience, AgentStatus, Trajectory
from mlagents_envs.base_env import (
    ActionSpec,
    ActionTuple,
    BehaviorSpec,
    DecisionSteps,
    DimensionProperty,
    ObservationSpec,
    ObservationType,
    TerminalSteps,
)

CHECKS: dict[str, Callable[[], None]] = {}
PONG_SPEC = BehaviorSpec(
    observation_specs=[
        ObservationSpec((6,), (DimensionProperty.NONE,), ObservationType.DEFAULT, "obs")
    ],
    action_spec=ActionSpec.create_discrete((3,)),
)


def check(function: Callable[[], None]) -> Callable[[], None]:
    CHECKS[function.__name__] = function
    return function


def options(behaviors: dict[str, Any], **sections: Any) -> RunOptions:
    TrainerSettings.default_override = None
    return RunOptions.from_dict({"behaviors": behaviors, **sections})


def config_errors(error: BaseException) -> list[str]:
    """The ``TrainerConfigError`` messages in ``error`` (newer cattrs group them)."""
    if isinstance(error, TrainerConfigError):
        return [str(error)]
    inner = getattr(error, "exceptions", ())
    return [message for sub in inner for message in config_errors(sub)]


def expect_error(behaviors: dict[str, Any], *fragments: str) -> None:
    try:
        options(behaviors)
    except Exception as error:  # a TrainerConfigError, or a cattrs group holding one
        messages = config_errors(error)
        assert len(messages) == 1, f"expected one configuration error, got {error!r}"
        missing = [f for f in fragments if f not in messages[0]]
        assert not missing, f"error {messages[0]!r} lacks {missing}"
        return
    raise AssertionError(f"no error for {behaviors}")


@check
def our_self_play_keys_reach_the_ghost_trainer() -> None:
    parsed = options(
        {
            "Pong": {
                "trainer_type": "ghost_ppo",
                "hyperparameters": {"batch_size": 64, "beta": 0.01},
                "self_play": {
                    "save_steps": 500,
                    "elo_k": 24,
                    "opponents_per_swap": 2,
                    "sampling": {"strategy": "pfsp", "pfsp_weighting": "variance"},
                },
            }
        }
    ).behaviors["Pong"]
    self_play = parsed.hyperparameters.self_play
    assert parsed.self_play is None, "ML-Agents would wrap the trainer in its own ghost"
    assert (self_play.save_steps, self_play.elo_k, self_play.opponents_per_swap) == (500, 24, 2)
    assert self_play.sampling.pfsp_weighting.value == "variance"
    assert (parsed.hyperparameters.batch_size, parsed.hyperparameters.beta) == (64, 0.01)


@check
def unknown_or_bad_self_play_keys_are_errors() -> None:
    ghost = {"trainer_type": "ghost_ppo"}
    expect_error(
        {"Pong": {**ghost, "self_play": {"swap_step": 100}}},
        "behaviors.Pong.self_play.swap_step", "swap_steps",
    )  # fmt: skip
    expect_error(
        {"Pong": {**ghost, "self_play": {"play_against_latest_model_ratio": 1.5}}},
        "behaviors.Pong.self_play.play_against_latest_model_ratio",
    )
    expect_error(
        {"Pong": {**ghost, "self_play": {"sampling": {"strategy": "best"}}}},
        "behaviors.Pong.self_play.sampling.strategy", "pfsp",
    )  # fmt: skip
    expect_error(
        {"Pong": {**ghost, "self_play": {"fixed_opponents": [{"name": "x", "scripted": "easy"}]}}},
        "behaviors.Pong.self_play.fixed_opponents[0].scripted",
    )
    expect_error(
        {"Pong": {**ghost, "self_play": {"league": {"main_exploiters": 1}}}},
        "behaviors.Pong.self_play.league", "ghost-learn",
    )  # fmt: skip
    expect_error(
        {"Pong": {**ghost, "self_play": {"average_policy": {"enabled": True}}}},
        "behaviors.Pong.self_play.average_policy.enabled", "ghost-learn",
    )  # fmt: skip
    expect_error(
        {"Pong": {**ghost, "self_play": {"seats": "shuffled"}}},
        "behaviors.Pong.self_play.seats", "ghost-learn",
    )  # fmt: skip
    expect_error(
        {"Pong": {**ghost, "self_play": {"learn_from_latest": True}}},
        "behaviors.Pong.self_play.learn_from_latest", "ghost-learn",
    )  # fmt: skip


@check
def default_settings_self_play_is_inherited_key_by_key() -> None:
    parsed = options(
        {"Pong": {"self_play": {"window": 3}}},
        default_settings={"trainer_type": "ghost_sac", "self_play": {"save_steps": 700}},
    ).behaviors["Pong"]
    self_play = parsed.hyperparameters.self_play
    assert parsed.trainer_type == "ghost_sac"
    assert (self_play.save_steps, self_play.window) == (700, 3)


@check
def plain_ml_agents_trainers_are_left_alone() -> None:
    parsed = options({"Pong": {"trainer_type": "ppo", "self_play": {"window": 4}}})
    assert type(parsed.behaviors["Pong"].self_play).__module__ == "mlagents.trainers.settings"
    assert parsed.behaviors["Pong"].self_play.window == 4


def ghost_trainer(self_play: dict[str, Any], folder: str) -> Any:
    settings = options({"Pong": {"trainer_type": "ghost_ppo", "self_play": self_play}}).behaviors
    factory = TrainerFactory(
        trainer_config=settings, output_path=folder, train_model=True, load_model=False,
        seed=1, param_manager=EnvironmentParameterManager(),
    )  # fmt: skip
    trainer = factory.generate("Pong")
    for team in (0, 1):
        behavior_id = BehaviorIdentifiers.from_name_behavior_id(f"Pong?team={team}")
        trainer.add_policy(behavior_id, trainer.create_policy(behavior_id, PONG_SPEC))
    trainer.advance()  # the first turn: snapshot and opponents drawn
    return trainer


def finished(agent_id: str, reward: float, group_reward: float = 0.0, mates: int = 0) -> Any:
    experience = AgentExperience(
        obs=[np.zeros(6, np.float32)], reward=reward, done=True,
        action=ActionTuple(discrete=np.zeros((1,), np.int32)),
        action_probs=LogProbsTuple(discrete=np.zeros((1,), np.float32)),
        action_mask=None, prev_action=np.zeros(1, np.float32), interrupted=False,
        memory=None,
        group_status=[AgentStatus([np.zeros(6, np.float32)], 0.0, None, True)] * mates,
        group_reward=group_reward,
    )  # fmt: skip
    return Trajectory(
        steps=[experience], next_obs=[np.zeros(6, np.float32)], next_group_obs=[],
        agent_id=agent_id, behavior_id="Pong?team=0",
    )  # fmt: skip


@check
def factory_builds_our_ghost_not_ml_agents() -> None:
    with tempfile.TemporaryDirectory() as folder:
        trainer = ghost_trainer({}, folder)
        assert type(trainer).__name__ == "MLAgentsGhostTrainer", type(trainer)
        assert type(trainer.trainer).__name__ == "PPOTrainer"
        assert trainer.controller.teams == [0, 1] and trainer.controller.learning_team == 0


def finish_through_ml_agents(
    trainer: Any,
    agent_ids: list[int],
    group_ids: list[int],
    rewards: list[float],
    group_reward: float,
) -> list[Any]:
    """One decision and one terminal step of these agents through ML-Agents' own agent processor
    (worker 0): the trajectories it emits, with the groups noted on the way."""
    policy = trainer.learner
    processor = AgentProcessor(policy, "Pong?team=0", StatsReporter("plugin-checks"))
    queue = AgentManagerQueue("Pong?team=0")
    processor.publish_trajectory_queue(queue)
    n = len(agent_ids)
    obs, ids, groups = [np.zeros((n, 6), np.float32)], np.asarray(agent_ids), np.asarray(group_ids)
    decision = DecisionSteps(obs, np.zeros(n, np.float32), ids, None, groups,
                             np.zeros(n, np.float32))  # fmt: skip
    processor.add_experiences(decision, TerminalSteps.empty(PONG_SPEC), 0, ActionInfo.empty())
    action = policy.get_action(decision, 0)
    terminal = TerminalSteps(obs, np.asarray(rewards, np.float32), np.zeros(n, bool), ids, groups,
                             np.full(n, group_reward, np.float32))  # fmt: skip
    processor.add_experiences(DecisionSteps.empty(PONG_SPEC), terminal, 0, action)
    return [queue.get_nowait() for _ in range(queue.qsize())]


@check
def each_match_moves_elo_by_our_k_once() -> None:
    with tempfile.TemporaryDirectory() as folder:
        trainer = ghost_trainer({"elo_k": 24, "play_against_latest_model_ratio": 1.0}, folder)
        trainer._rate_matches([finished("agent_0-1", 1.0)])
        assert abs(trainer.state.rating - 1212.0) < 1e-9, trainer.state.rating  # K (1 - 1/2)
        # a group of two finishing together is one match, however many trajectories it sends
        rating = trainer.state.rating
        pair = finish_through_ml_agents(trainer, [2, 3], [1, 1], [0.0, 0.0], -1.0)
        assert len(pair) == 2 and all(len(t.steps[-1].group_status) == 1 for t in pair)
        trainer._rate_matches(pair)
        expected = rating + 24 * (0.0 - 1 / (1 + 10 ** ((1188.0 - rating) / 400)))
        assert abs(trainer.state.rating - expected) < 1e-9, (trainer.state.rating, expected)
        # two groups of two finishing in one step are two matches, exactly (not rounded up)
        quartet = finish_through_ml_agents(trainer, [4, 5, 6, 7], [2, 2, 3, 3], [0.0] * 4, 1.0)
        matches = trainer.state.win_rates.games("latest")
        trainer._rate_matches(quartet)
        assert trainer.state.win_rates.games("latest") == matches + 2
        # interrupted episodes are not results
        rating = trainer.state.rating
        interrupted = finished("agent_0-9", 1.0)._replace(
            steps=[finished("agent_0-9", 1.0).steps[0]._replace(interrupted=True)]
        )
        trainer._rate_matches([interrupted])
        assert abs(trainer.state.rating - rating) < 1e-9


@check
def opponents_are_spread_over_workers() -> None:
    with tempfile.TemporaryDirectory() as folder:
        trainer = ghost_trainer({"opponents_per_swap": 2, "window": 5, "save_steps": 1}, folder)
        trainer.state.take_snapshot(trainer.learner.get_weights(), 1)
        trainer._swap()
        opponents = trainer.state.opponents[1]
        assert len(opponents) == 2
        team_policy = trainer.get_policy("Pong?team=1")
        members = {id(team_policy.member_for(worker)) for worker in range(4)}
        assert len(members) == 2, "two opponents in play, one per worker slot"
        # a match in worker w is rated against the opponent worker w faces
        for worker in (0, 1):
            faced = trainer.state.opponent_in(1, worker * (1 << 20))
            assert faced is opponents[team_policy._members.index(team_policy.member_for(worker))]


@check
def self_play_state_round_trips_through_the_files() -> None:
    with tempfile.TemporaryDirectory() as folder:
        trainer = ghost_trainer({"window": 2, "save_steps": 1}, folder)
        for step in (1, 2, 3):
            trainer.state.take_snapshot(trainer.learner.get_weights(), step)
        trainer.state.rating = 1234.5
        trainer.save_self_play()
        files = sorted(p.name for p in (Path(folder) / "Pong" / "self_play").iterdir())
        assert files == ["payoff.csv", "snapshot-2.pt", "snapshot-3.pt", "state.pt"], files
        record = trainer.files.load()
        assert [s["snapshot_id"] for s in record["self_play"]["window"]] == [2, 3]
        assert record["self_play"]["rating"] == 1234.5


def main() -> int:
    register_trainer_plugins()
    wanted = sys.argv[1:] or list(CHECKS)
    results = {}
    for name in wanted:
        try:
            CHECKS[name]()
            results[name] = "ok"
        except Exception:  # every failure is reported, the other checks still run
            results[name] = traceback.format_exc(limit=6)
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
