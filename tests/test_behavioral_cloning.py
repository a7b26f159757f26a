"""Behavioral cloning (``behavioral_cloning``): ML-Agents' keys and defaults, the loss it lowers,
a policy drawn toward the demonstrator's actions with PPO, SAC and POCA (with memory too), its
annealing, its checkpoints, and a learning run on tennis from a scripted level's play."""

from __future__ import annotations

from pathlib import Path

import attrs
import numpy as np
import pytest
import torch
from mlagents_envs.base_env import ActionSpec, BehaviorSpec

from envs.demo_files import Demonstration
from envs.exceptions import DemoFileError
from envs.games import make_game
from envs.specs import vector_observation_spec
from envs.stepping import InProcessStepper
from ghost.config.loader import options_from_dict, options_to_dict
from ghost.exceptions import UnsupportedFeatureError
from tests.conftest import FakeEntryPoint, FakeTrainer, builtin_types
from tests.demo_fixtures import Recording, record_scripted
from trainers.behavioral_cloning import PRETRAINING_LOSS, BehavioralCloning
from trainers.demonstrations import DemoRows
from trainers.exceptions import ConfigError
from trainers.hyperparameters import POCASettings, PPOSettings, SACSettings
from trainers.policy import TorchPolicy, load_policy, to_tensors
from trainers.run_files.layout import RunLayout
from trainers.run_files.safe_load import load_pt
from trainers.settings import (
    BehavioralCloningSettings,
    CloningLoss,
    MemorySettings,
    NetworkSettings,
    RewardSignalSettings,
    TrainerSettings,
)
from trainers.training_loop import TrainingLoop

pytestmark = pytest.mark.usefixtures("one_torch_thread")

SMALL = NetworkSettings(hidden_units=32, num_layers=2)


@pytest.fixture(scope="module")
def tennis_demo(tmp_path_factory):
    folder = tmp_path_factory.mktemp("demos")
    return record_scripted(folder / "Tennis.demo", "tennis", "medium", episodes=20)


@pytest.fixture(scope="module")
def soccer_demo(tmp_path_factory):
    folder = tmp_path_factory.mktemp("demos")
    return record_scripted(folder / "Soccer.demo", "soccer", "medium", episodes=10)


def tennis_behavior(**section) -> dict:
    return {"behaviors": {"Tennis": section}}


# -- configuration -------------------------------------------------------------------------------
def test_the_section_takes_ml_agents_keys_and_defaults_and_reads_back():
    options = options_from_dict(
        tennis_behavior(behavioral_cloning={"demo_path": "demos/Tennis.demo", "steps": 5000})
    )
    cloning = options.behaviors["Tennis"].behavioral_cloning
    assert cloning == BehavioralCloningSettings(demo_path="demos/Tennis.demo", steps=5000)
    assert (cloning.strength, cloning.samples_per_update) == (1.0, 0)
    assert (cloning.num_epoch, cloning.batch_size) == (None, None)
    written = options_to_dict(options)["behaviors"]["Tennis"]["behavioral_cloning"]
    assert written == {
        "demo_path": "demos/Tennis.demo", "steps": 5000, "strength": 1.0,
        "samples_per_update": 0, "num_epoch": None, "batch_size": None,
        "continuous_loss": "sample",
    }  # fmt: skip
    assert options_from_dict(options_to_dict(options)) == options


@pytest.mark.parametrize(
    ("section", "words"),
    [
        ({}, "behavioral_cloning: BehavioralCloningSettings needs the key(s) demo_path"),
        ({"demo_path": " "}, "behavioral_cloning.demo_path = ' ': must name a .demo file"),
        ({"demo_path": "a.demo", "stength": 2}, "did you mean 'strength'?"),
        ({"demo_path": "a.demo", "steps": -1}, "behavioral_cloning.steps = -1: must be >= 0"),
        ({"demo_path": "a.demo", "batch_size": 0}, "behavioral_cloning.batch_size = 0"),
        ({"demo_path": "a.demo", "continuous_loss": "mode"}, "expected one of mean, sample"),
    ],
)
def test_a_wrong_section_is_named_by_its_key(section, words):
    with pytest.raises(ConfigError) as caught:
        options_from_dict(tennis_behavior(behavioral_cloning=section))
    assert "behaviors.Tennis." in str(caught.value) and words in str(caught.value)


def test_a_plugin_trainer_type_is_refused_cloning(use_entry_points):
    use_entry_points(
        FakeEntryPoint("builtin", builtin_types),
        FakeEntryPoint("mine", lambda: ({"mine": FakeTrainer}, {"mine": PPOSettings})),
    )
    raw = tennis_behavior(trainer_type="mine", behavioral_cloning={"demo_path": "a.demo"})
    with pytest.raises(UnsupportedFeatureError, match="only with ppo, sac, poca") as caught:
        options_from_dict(raw)
    assert "behaviors.Tennis.behavioral_cloning" in str(caught.value)


def test_a_demo_path_that_names_nothing_is_named_when_training_starts(tmp_path):
    settings = bc_settings("ppo", str(tmp_path / "missing.demo"))
    with pytest.raises(DemoFileError) as caught:
        train_tennis(tmp_path / "run", settings)
    message = str(caught.value)
    assert message.startswith("behaviors.Tennis.behavioral_cloning.demo_path: no .demo file")
    assert "missing.demo" in message


def test_demonstrations_of_another_behavior_or_no_demonstration_are_named_by_the_key(
    tmp_path, soccer_demo
):
    with pytest.raises(DemoFileError) as caught:
        train_tennis(tmp_path / "run", bc_settings("sac", soccer_demo.path))
    assert str(caught.value).startswith(
        "behaviors.Tennis.behavioral_cloning.demo_path: the demonstration of 'SoccerTwos' does "
        "not fit the behavior"
    )
    garbage = tmp_path / "garbage.demo"
    garbage.write_bytes(b"not a demonstration at all")
    with pytest.raises(DemoFileError) as caught:
        train_tennis(tmp_path / "run2", bc_settings("ppo", str(garbage)))
    message = str(caught.value)
    assert message.startswith("behaviors.Tennis.behavioral_cloning.demo_path: ")
    assert "garbage.demo" in message


# -- the update ----------------------------------------------------------------------------------
def cloning(demo, *, squash=False, memory=None, **settings) -> BehavioralCloning:
    torch.manual_seed(0)
    policy = TorchPolicy(
        behavior_spec=demo.spec,
        network_settings=attrs.evolve(SMALL, memory=memory),
        squash=squash,
        conditional_std=squash,
    )
    return BehavioralCloning(
        policy=policy,
        settings=BehavioralCloningSettings(demo_path="unused", **settings),
        demo=DemoRows.of(demo.demo),
        learning_rate=3e-4,
        batch_size=64,
        rng=np.random.default_rng(0),
    )


@pytest.mark.parametrize(
    ("game", "squash"), [("tennis", False), ("tennis", True), ("soccer", False)],
    ids=["continuous-clipped", "continuous-squashed", "discrete"],
)  # fmt: skip
def test_an_update_lowers_the_loss_on_the_demonstrations(game, squash, tennis_demo, soccer_demo):
    demo = tennis_demo if game == "tennis" else soccer_demo
    bc = cloning(demo, squash=squash, strength=10.0, num_epoch=1)
    every_row = np.arange(len(DemoRows.of(demo.demo)))
    with torch.no_grad():
        torch.manual_seed(1)
        before = bc.loss(every_row).item()
    first = bc.update(step=0)[PRETRAINING_LOSS]
    for _ in range(4):
        last = bc.update(step=0)[PRETRAINING_LOSS]
    with torch.no_grad():
        torch.manual_seed(1)
        after = bc.loss(every_row).item()
    assert after < 0.7 * before and last < first


@pytest.mark.parametrize(("loss", "spread_kept"), [("mean", True), ("sample", False)])
def test_cloning_on_the_mean_leaves_the_spread_to_the_learner(tennis_demo, loss, spread_kept):
    bc = cloning(tennis_demo, strength=10.0, continuous_loss=CloningLoss(loss))
    log_std = bc.actor.log_std.detach().clone()
    for _ in range(3):
        bc.update(step=0)
    narrowed = bool((bc.actor.log_std < log_std - 0.01).all())
    assert torch.equal(bc.actor.log_std, log_std) == spread_kept and narrowed != spread_kept


def test_the_step_size_falls_to_zero_over_steps_and_cloning_then_stops(tennis_demo):
    bc = cloning(tennis_demo, strength=2.0, steps=1000)
    assert bc.learning_rate(0) == pytest.approx(6e-4)
    assert bc.learning_rate(250) == pytest.approx(4.5e-4)
    assert bc.learning_rate(1000) == 0.0 and bc.learning_rate(5000) == 0.0
    weights = {k: v.clone() for k, v in bc.actor.state_dict().items()}
    assert bc.update(step=1000) == {PRETRAINING_LOSS: 0.0}
    torch.testing.assert_close(bc.actor.state_dict(), weights)
    assert cloning(tennis_demo, strength=2.0).learning_rate(10**9) == pytest.approx(6e-4)


def test_minibatches_follow_batch_size_num_epoch_and_samples_per_update(tennis_demo):
    rows = len(DemoRows.of(tennis_demo.demo))
    assert cloning(tennis_demo)._minibatches() == (64, rows // 64)
    assert cloning(tennis_demo, batch_size=100)._minibatches() == (100, rows // 100)
    assert cloning(tennis_demo, samples_per_update=200)._minibatches() == (64, 3)
    assert cloning(tennis_demo).num_epoch == 3
    memory = MemorySettings(memory_size=16, sequence_length=8)
    with_memory = cloning(tennis_demo, memory=memory)
    assert with_memory._minibatches()[0] == 8  # sequences of 8 steps: 64 steps a minibatch


def test_sequences_keep_to_one_episode_and_padding_counts_in_no_loss(tennis_demo):
    memory = MemorySettings(memory_size=16, sequence_length=8)
    bc = cloning(tennis_demo, memory=memory)
    demo = DemoRows.of(tennis_demo.demo)
    assert bc.sequences is not None
    real = bc.sequences.rows[bc.sequences.valid]
    assert sorted(real) == list(range(len(demo)))
    for sequence in bc.sequences.rows[:50]:
        assert len(set(demo.episode[sequence[sequence >= 0]])) == 1
    padded = np.flatnonzero((~bc.sequences.valid).any(axis=1))[:4]
    torch.manual_seed(2)
    loss = bc.loss(padded)
    assert torch.isfinite(loss) and loss.item() > 0


def demonstration(done, *, episode_start=None, masks=None) -> Demonstration:
    """Rows of one 4-float observation each (the row's number) and one 3-way branch, action 0."""
    done = np.asarray(done, bool)
    n = len(done)
    keys = {} if episode_start is None else {"episode_start": np.asarray(episode_start, bool)}
    return Demonstration(
        behavior_name="Rows",
        spec=BehaviorSpec([vector_observation_spec(4)], ActionSpec.create_discrete((3,))),
        observations=[np.repeat(np.arange(n, dtype=np.float32)[:, None], 4, axis=1)],
        continuous_actions=np.zeros((n, 0), np.float32),
        discrete_actions=np.zeros((n, 1), np.int64),
        rewards=np.zeros(n, np.float32), done=done, max_step_reached=np.zeros(n, bool),
        action_masks=masks, episodes=int(done.sum()), **keys,
    )  # fmt: skip


def test_the_acting_rows_leave_out_terminal_rows_and_link_only_within_an_episode():
    # two files: an episode ended at row 2, one cut short by the first file's end, then one more
    demo = demonstration(
        [False, False, True, False, False, False, True],
        episode_start=[True, False, False, True, False, True, False],
    )
    rows = DemoRows.of(demo)
    assert rows.obs[0][:, 0].tolist() == [0, 1, 3, 4, 5]
    assert rows.next_index.tolist() == [1, -1, 3, -1, -1]
    assert rows.ended.tolist() == [False, True, False, False, True]
    assert rows.episode.tolist() == [0, 0, 1, 1, 2]


def test_discrete_cloning_reads_the_recorded_action_masks():
    masks = np.zeros((4, 3), bool)
    masks[:, 2] = True  # the third action was never allowed
    bc = cloning(
        Recording("unused", demonstration([False, False, False, True], masks=masks)),
        strength=0.0,
    )
    # an untrained policy spreads nearly evenly over the allowed actions: two, not three
    assert bc.loss(np.arange(3)).item() == pytest.approx(np.log(2), abs=0.05)


# -- in the trainers -----------------------------------------------------------------------------
HYPERPARAMETERS = {
    "ppo": PPOSettings(batch_size=64, buffer_size=128),
    "poca": POCASettings(batch_size=64, buffer_size=128),
    "sac": SACSettings(batch_size=64, buffer_size=2000, steps_per_update=20),
}


def bc_settings(trainer_type: str, demo_path: str, *, max_steps: int = 600, memory=None,
                **cloning_keys) -> TrainerSettings:  # fmt: skip
    """Cloning alone: the environment's reward weighs nothing."""
    keys = {"strength": 10.0, **cloning_keys}
    if trainer_type == "sac":
        keys.setdefault("samples_per_update", 64)
    return TrainerSettings(
        trainer_type=trainer_type,
        hyperparameters=HYPERPARAMETERS[trainer_type],
        network_settings=attrs.evolve(SMALL, memory=memory),
        reward_signals={"extrinsic": RewardSignalSettings(strength=0.0)},
        behavioral_cloning=BehavioralCloningSettings(demo_path=demo_path, **keys),
        max_steps=max_steps, summary_freq=max_steps, checkpoint_interval=max_steps,
    )  # fmt: skip


def train_tennis(path: Path, settings: TrainerSettings, *, resume: bool = False) -> TrainingLoop:
    torch.manual_seed(0)
    loop = TrainingLoop(
        behaviors={"Tennis": settings},
        stepper=InProcessStepper(make_game("tennis", num_arenas=4)),
        layout=RunLayout(path),
        seed=0,
    )
    loop.run(resume=resume)
    return loop


def action_error(policy: TorchPolicy, demo) -> float:
    """Mean distance of the policy's most likely action from the demonstrator's."""
    rows = DemoRows.of(demo.demo)
    with torch.no_grad():
        dist = policy.actor(to_tensors(rows.obs))
        return float(
            (dist.env_continuous(dist.mean) - torch.as_tensor(rows.continuous)).abs().mean()
        )


@pytest.mark.parametrize("trainer_type", ["ppo", "sac", "poca"])
def test_cloning_alone_draws_the_policy_to_the_demonstrators_actions(
    tmp_path, tennis_demo, trainer_type
):
    path = tennis_demo.path
    settings = bc_settings(trainer_type, path)
    untrained = TorchPolicy(
        behavior_spec=tennis_demo.spec, network_settings=SMALL, squash=trainer_type == "sac"
    )
    trainer = train_tennis(tmp_path / "run", settings).trainers["Tennis"]
    assert trainer.stats.latest[PRETRAINING_LOSS] > 0
    assert action_error(trainer.policy, tennis_demo) < 0.6 * action_error(untrained, tennis_demo)


@pytest.mark.parametrize("trainer_type", ["ppo", "sac", "poca"])
def test_a_policy_with_memory_clones_too(tmp_path, tennis_demo, trainer_type):
    path = tennis_demo.path
    memory = MemorySettings(memory_size=16, sequence_length=8)
    settings = bc_settings(trainer_type, path, max_steps=300, memory=memory)
    trainer = train_tennis(tmp_path / "run", settings).trainers["Tennis"]
    assert trainer.cloning.sequences is not None
    assert 0 < trainer.stats.latest[PRETRAINING_LOSS] < 10


def test_a_checkpoint_carries_the_cloning_optimizer_and_the_policy_file_has_no_part_of_it(
    tmp_path, tennis_demo
):
    path = tennis_demo.path
    settings = bc_settings("ppo", path, max_steps=300)
    trainer = train_tennis(tmp_path / "run", settings).trainers["Tennis"]
    saved = trainer.state_dict()["cloning"]
    checkpoint = load_pt(next((tmp_path / "run" / "Tennis" / "checkpoints").glob("*.pt")))
    assert set(checkpoint["cloning"]) == {"optimizer"}
    longer = attrs.evolve(settings, max_steps=600)
    again = train_tennis(tmp_path / "run", longer, resume=True).trainers["Tennis"]
    assert again.cloning is not None
    first_moments = [m for m in again.cloning.optimizer.state_dict()["state"].values()]
    assert len(first_moments) == len(saved["optimizer"]["state"])
    assert all(m["step"] > s["step"] for m, s in zip(first_moments,
               saved["optimizer"]["state"].values(), strict=True))  # fmt: skip
    resumed = train_tennis(tmp_path / "copy", settings).trainers["Tennis"]
    resumed.load_state_dict(trainer.state_dict())
    torch.testing.assert_close(resumed.cloning.optimizer.state_dict(), saved["optimizer"])
    plain = TorchPolicy(behavior_spec=tennis_demo.spec, network_settings=SMALL)
    assert load_policy(tmp_path / "run" / "Tennis.pt").actor.state_dict().keys() == (
        plain.actor.state_dict().keys()
    )


# -- learning ------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("record_seed", [0, 1, 2])
def test_cloning_a_scripted_level_on_tennis_nearly_matches_its_score(tmp_path, record_seed):
    """Cloning alone (the environment's reward weighs nothing), from 50 episodes of the scripted
    ``medium`` player recorded at ``record_seed``, scored against ``weak`` and ``medium`` as
    ``medium`` itself is: within 10% of its score against ``weak``, within 20% against ``medium``
    (docs/benchmarks.md, "Demonstrations", has the figures)."""
    from ghost.evaluation import evaluate

    demo = tmp_path / "Tennis.demo"
    path = record_scripted(demo, "tennis", "medium", episodes=50, seed=record_seed).path
    settings = attrs.evolve(
        bc_settings("ppo", path, max_steps=30_000),
        hyperparameters=PPOSettings(batch_size=256, buffer_size=2048, beta=1e-4),
        network_settings=NetworkSettings(hidden_units=128, num_layers=2),
    )
    trainer = train_tennis(tmp_path / "run", settings).trainers["Tennis"]
    for opponent in ("weak", "medium"):
        level = evaluate(game="tennis", policy="medium", opponent=opponent, episodes=200)
        cloned = evaluate(game="tennis", policy=trainer.policy, opponent=opponent, episodes=200)
        print(f"against {opponent}: medium {level.score:.3f}, the clone {cloned.score:.3f}")
        assert cloned.score >= WITHIN[opponent] * level.score, opponent


#: the share of the scripted level's score its clone reaches at least, by opponent
WITHIN = {"weak": 0.9, "medium": 0.8}
