"""The self-play strength options: the PPO magnet, the exported average policy, ``preset: robust``."""

from __future__ import annotations

import logging

import numpy as np
import pytest
import torch
from mlagents_envs.base_env import ActionSpec, BehaviorSpec, ObservationSpec, ObservationType

from ghost.config.loader import options_from_dict
from ghost.core.settings import AveragePolicySettings
from ghost.exceptions import ConfigError
from ghost.running.average_policy import ObservationSample, distill_average
from trainers.actor import ActionDistribution
from trainers.magnet import Magnet, kl_divergence
from trainers.policy import TorchPolicy
from trainers.settings import NetworkSettings


def policy(*, discrete: tuple[int, ...] = (), continuous: int = 0, seed: int = 0) -> TorchPolicy:
    torch.manual_seed(seed)
    spec = BehaviorSpec(
        observation_specs=[ObservationSpec((4,), (3,), ObservationType.DEFAULT, "obs")],
        action_spec=ActionSpec(continuous, discrete),
    )
    settings = NetworkSettings(hidden_units=16, num_layers=1, normalize=False)
    return TorchPolicy(behavior_spec=spec, network_settings=settings)


# -- the magnet -----------------------------------------------------------------------------------
def test_kl_divergence_matches_torch_for_branches_and_gaussians():
    logits_p, logits_q = torch.randn(5, 3), torch.randn(5, 3)
    mean_p, mean_q = torch.randn(5, 2), torch.randn(5, 2)
    log_std_p, log_std_q = torch.randn(2) * 0.3, torch.randn(2) * 0.3
    p = ActionDistribution(mean=mean_p, log_std=log_std_p, logits=[logits_p], squash=False)
    q = ActionDistribution(mean=mean_q, log_std=log_std_q, logits=[logits_q], squash=False)
    categorical = torch.distributions.kl_divergence(
        torch.distributions.Categorical(logits=logits_p),
        torch.distributions.Categorical(logits=logits_q),
    )
    gaussian = torch.distributions.kl_divergence(
        torch.distributions.Normal(mean_p, log_std_p.exp()),
        torch.distributions.Normal(mean_q, log_std_q.exp()),
    ).mean(dim=-1)
    expected = (categorical + gaussian) / 2  # averaged over parts, like the entropy bonus
    assert torch.allclose(kl_divergence(p, q), expected, atol=1e-5)
    assert torch.allclose(kl_divergence(p, p), torch.zeros(5), atol=1e-6)


def test_masked_actions_add_nothing_to_the_divergence():
    mask = torch.tensor([[False, True, False]])
    p_logits = torch.tensor([[0.3, 5.0, -0.2]]).masked_fill(mask, -1e8)
    q_logits = torch.tensor([[0.1, -5.0, 0.4]]).masked_fill(mask, -1e8)
    p = ActionDistribution(mean=None, log_std=None, logits=[p_logits], squash=False)
    q = ActionDistribution(mean=None, log_std=None, logits=[q_logits], squash=False)
    free = torch.distributions.kl_divergence(
        torch.distributions.Categorical(logits=torch.tensor([[0.3, -0.2]])),
        torch.distributions.Categorical(logits=torch.tensor([[0.1, 0.4]])),
    )
    assert torch.isfinite(kl_divergence(p, q)).all()
    assert torch.allclose(kl_divergence(p, q), free, atol=1e-6)


def test_the_magnet_moves_rate_of_the_way_toward_the_policy():
    learner = policy(discrete=(3,))
    magnet = Magnet(learner.actor, rate=0.25)
    before = [p.detach().clone() for p in magnet.actor.parameters()]
    with torch.no_grad():
        for parameter in learner.actor.parameters():
            parameter.add_(1.0)
    magnet.follow(learner.actor)
    for old, new in zip(before, magnet.actor.parameters(), strict=True):
        assert torch.allclose(new, old + 0.25, atol=1e-6)
    assert not any(p.requires_grad for p in magnet.actor.parameters())


def rps_config(tmp_path, *, max_steps=6000, hyperparameters=None, **self_play):
    import yaml

    config = {
        "behaviors": {
            "RockPaperScissors": {
                "trainer_type": "ppo",
                "hyperparameters": {
                    "batch_size": 256, "buffer_size": 1024, **(hyperparameters or {})
                },
                "network_settings": {"hidden_units": 16, "num_layers": 1},
                "max_steps": max_steps,
                "summary_freq": 2000,
                "checkpoint_interval": 3000,
                "self_play": {"save_steps": 1000, "team_change": 2000, **self_play},
            }
        },
        "env_settings": {"env_path": "rock_paper_scissors", "seed": 3},
    }  # fmt: skip
    path = tmp_path / "rps.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def checkpointed(run, behavior):
    checkpoint = sorted((run / behavior / "checkpoints").glob("*.pt"))[-1]
    return torch.load(checkpoint, weights_only=False)["trainer"]


def test_a_magnet_run_checkpoints_a_magnet_that_lags_the_policy_and_resumes(tmp_path):
    from ghost.running import cli

    config = rps_config(tmp_path, hyperparameters={"magnet_strength": 0.5})
    assert cli.main([str(config), "--run-id", "m", "--results-dir", str(tmp_path)]) == 0
    state = checkpointed(tmp_path / "m", "RockPaperScissors")
    magnet, weights = state["learner"]["magnet"], state["policy"]["weights"]
    assert magnet.keys() == weights.keys()
    # it followed the policy some of the way: neither the initial weights nor the policy's
    head = "logits_head.weight"
    assert not torch.equal(magnet[head], weights[head])
    config = rps_config(tmp_path, max_steps=9000, hyperparameters={"magnet_strength": 0.5})
    code = cli.main([str(config), "--run-id", "m", "--results-dir", str(tmp_path), "--resume"])
    assert code == 0
    resumed = checkpointed(tmp_path / "m", "RockPaperScissors")
    assert resumed["step"] >= 9000
    assert not torch.equal(resumed["learner"]["magnet"][head], magnet[head])


# -- the average policy ---------------------------------------------------------------------------
def test_distilling_two_opposite_policies_gives_their_average():
    learner = policy(discrete=(3,))
    first, second = policy(discrete=(3,), seed=1), policy(discrete=(3,), seed=2)
    with torch.no_grad():  # one always plays action 0, the other action 2
        for member, favourite in ((first, 0), (second, 2)):
            member.actor.logits_head.weight.zero_()
            member.actor.logits_head.bias.copy_(torch.tensor([-8.0, -8.0, -8.0]))
            member.actor.logits_head.bias[favourite] = 8.0
    sample = ObservationSample(500, keep=1.0, seed=0)
    rng = np.random.default_rng(0)
    obs = rng.normal(size=(400, 4)).astype(np.float32)
    sample.obs = [np.zeros((500, 4), np.float32)]
    sample.obs[0][:400] = obs
    sample.size = 400
    settings = AveragePolicySettings(enabled=True, epochs=60, batch_size=100, learning_rate=1e-2)
    average = distill_average(
        learner, [first.get_weights(), second.get_weights()], sample, settings, seed=0
    )
    probabilities = average.action_probabilities([obs])[0]
    assert probabilities[:, 0].mean() == pytest.approx(0.5, abs=0.05)
    assert probabilities[:, 2].mean() == pytest.approx(0.5, abs=0.05)
    assert probabilities[:, 1].mean() < 0.02


def test_distilling_gaussians_matches_the_mixtures_mean_and_spread():
    learner = policy(continuous=1)
    members = []
    for seed, centre in ((1, -0.5), (2, 0.5)):
        member = policy(continuous=1, seed=seed)
        with torch.no_grad():
            member.actor.mean_head.weight.zero_()
            member.actor.mean_head.bias.fill_(centre)
            member.actor.log_std.fill_(np.log(0.1))
        members.append(member.get_weights())
    obs = np.random.default_rng(1).normal(size=(300, 4)).astype(np.float32)
    sample = ObservationSample(300, keep=1.0, seed=0)
    sample.obs, sample.size = [obs.copy()], 300
    settings = AveragePolicySettings(enabled=True, epochs=80, batch_size=100, learning_rate=1e-2)
    average = distill_average(learner, members, sample, settings, seed=0)
    with torch.no_grad():
        dist = average.actor([torch.as_tensor(obs)])
    assert float(dist.mean.mean()) == pytest.approx(0.0, abs=0.05)
    # mixture variance: 0.1² + 0.5² = 0.26
    assert float(dist.log_std.exp()) == pytest.approx(0.26**0.5, abs=0.05)


def test_the_exported_policy_is_the_average_and_the_final_exploitability_scores_it(
    tmp_path, capsys
):
    pytest.importorskip("pyspiel", reason="OpenSpiel is an optional extra (open-spiel)")
    import json

    from ghost.evaluation.cli import main as ghost_eval
    from ghost.running import cli
    from tests.test_openspiel import leduc_config
    from trainers.policy import load_policy

    config = leduc_config(tmp_path, exploitability_every=4000, average_policy={"enabled": True})
    assert cli.main([str(config), "--run-id", "avg", "--results-dir", str(tmp_path)]) == 0
    run = tmp_path / "avg"
    exported = load_policy(run / "leduc_poker.pt").get_weights()
    checkpoint = sorted((run / "leduc_poker" / "checkpoints").glob("*.pt"))[-1]
    learner = load_policy(checkpoint).get_weights()
    assert any(not torch.equal(exported[k], learner[k]) for k in exported)
    rows = (run / "run_logs" / "exploitability.csv").read_text().splitlines()[1:]
    capsys.readouterr()
    assert ghost_eval([str(run), "--exploitability", "--json"]) == 0
    final = json.loads(capsys.readouterr().out)["exploitability"][0]
    # the run's last score is the exported average's, as ghost-eval scores the final file
    assert final["exploitability"] == pytest.approx(float(rows[-1].split(",")[1]), abs=1e-5)


# -- the preset -----------------------------------------------------------------------------------
def behavior(**section):
    return {"behaviors": {"Tennis": {"trainer_type": "ppo", **section}}}


def test_the_robust_preset_fills_in_what_the_user_did_not_write(caplog):
    with caplog.at_level(logging.INFO, logger="ghost.config.presets"):
        options = options_from_dict(
            behavior(
                self_play={"preset": "robust", "window": 10},
                hyperparameters={"batch_size": 256, "magnet_strength": 0.05},
            )
        )
    settings = options.behaviors["Tennis"]
    assert settings.hyperparameters.magnet_rate > 0
    # written keys keep their values; a difference from the preset's own choice is logged
    assert settings.hyperparameters.magnet_strength == 0.05
    assert settings.hyperparameters.batch_size == 256
    assert settings.self_play.window == 10
    assert "hyperparameters.magnet_strength = 0.05" in caplog.text
    plain = options_from_dict(behavior(self_play={"preset": "robust"})).behaviors["Tennis"]
    assert plain.hyperparameters.magnet_strength > 0


def test_the_preset_adds_no_magnet_to_sac_and_an_unknown_preset_names_the_valid_ones():
    options = options_from_dict(behavior(trainer_type="sac", self_play={"preset": "robust"}))
    assert not hasattr(options.behaviors["Tennis"].hyperparameters, "magnet_strength")
    assert options.behaviors["Tennis"].self_play.preset == "robust"
    with pytest.raises(ConfigError, match=r"behaviors\.Tennis\.self_play\.preset.*robust"):
        options_from_dict(behavior(self_play={"preset": "strongest"}))


def test_the_expanded_preset_round_trips_through_configuration_yaml():
    from ghost.config.loader import options_to_dict

    options = options_from_dict(behavior(self_play={"preset": "robust"}))
    again = options_from_dict(options_to_dict(options))
    assert again.behaviors == options.behaviors
