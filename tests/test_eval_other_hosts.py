"""``ghost-eval`` on runs of every host of our self-play: ghost-learn, mlagents-learn with our
plugin, Stable-Baselines3 and RLlib (``ghost.play.run_layouts``, ``ghost.play.host_policies``).

Each test trains one tiny run with its host, then runs ``ghost-eval snapshots``, ``league``,
``report`` and ``match`` on what the host wrote, and checks that they list the run's snapshots.
The players rebuilt from SB3's and RLlib's weights are checked against the frameworks' own
forward passes; nothing here unpickles a host's files.
"""

from __future__ import annotations

import base64
import json
import pickle
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from envs.games import make_game
from ghost.evaluation.cli import main
from ghost.exceptions import CheckpointError, RunDirectoryError
from ghost.play.host_policies import load_host_policy
from ghost.play.run_layouts import (
    GHOST_LEARN,
    MLAGENTS,
    RLLIB,
    SB3,
    find_run_root,
    read_run,
)
from ghost.play.run_record import RunRecord

pytestmark = pytest.mark.usefixtures("one_torch_thread")

SELF_PLAY = {"save_steps": 256, "swap_steps": 128, "team_change": 1024, "window": 3}


def ghost_eval(capsys, *argv: object) -> tuple[dict, str]:
    """``ghost-eval ARGV --json --quiet``: its JSON object and its stderr."""
    code = main([str(a) for a in argv] + ["--json", "--quiet"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out), err


def check_every_command(
    capsys, tmp_path: Path, run: Path, *game: str, behavior: str = "Tennis", scripted: bool = True
) -> dict:
    """snapshots, league, report and match on ``run`` succeed and name its snapshots; the
    league's JSON. ``game``: ``--game GAME`` for hosts that record none; ``scripted``: the game
    has scripted levels to play against (else the run's own policies are the opponents)."""
    expected = [s.snapshot_id for s in RunRecord(run).snapshots(behavior)]
    assert expected
    against = ["--against", "random"] if scripted else []
    found, _ = ghost_eval(capsys, "snapshots", run, *game, *against, "--episodes", 4)
    assert [row["snapshot_id"] for row in found["evaluations"]] == expected
    assert all(
        row["step"] is not None and row["rating"] is not None for row in found["evaluations"]
    )
    league, _ = ghost_eval(capsys, "league", run, *game, "--games-per-pair", 2)
    players = {row["player"] for row in league["league"]["players"]}
    assert {f"snapshot-{i}" for i in expected} <= players
    assert Path(league["league_file"]).is_file()
    report, _ = ghost_eval(capsys, "report", run, tmp_path / "report.png")
    assert Path(report["report"]).is_file() and len(report["league_pictures"]) == 2
    opponent = "random" if scripted else str(RunRecord(run).snapshots(behavior)[0].path)
    match, _ = ghost_eval(capsys, "match", run, *game, "--against", opponent, "--episodes", 4)
    assert match["wins"] + match["draws"] + match["losses"] + match["interrupted"] == 4
    return league


# -- ghost-learn ---------------------------------------------------------------------------------
TINY_TENNIS = """\
behaviors:
  Tennis:
    trainer_type: ppo
    hyperparameters: {batch_size: 256, buffer_size: 1024}
    network_settings: {hidden_units: 16, num_layers: 1}
    max_steps: 1500
    summary_freq: 500
    self_play: {save_steps: 500, swap_steps: 500, team_change: 1000, window: 3}
env_settings: {env_path: tennis, num_areas: 4}
"""


def test_a_ghost_learn_run(tmp_path, capsys):
    from ghost.running import cli as learn_cli

    (tmp_path / "tennis.yaml").write_text(TINY_TENNIS)
    argv = [str(tmp_path / "tennis.yaml"), "--run-id", "gl", "--results-dir", str(tmp_path)]
    assert learn_cli.main(argv) == 0
    capsys.readouterr()
    run = tmp_path / "gl"
    assert read_run(run).host == GHOST_LEARN
    assert find_run_root(run / "Tennis" / "snapshots" / "snapshot-1.pt") == run
    league = check_every_command(capsys, tmp_path, run)  # the game is in configuration.yaml
    assert "final" in {row["player"] for row in league["league"]["players"]}
    assert RunRecord(run).payoff_path("Tennis").is_file()


# -- Stable-Baselines3 ---------------------------------------------------------------------------
def train_sb3_tennis(folder: Path) -> tuple[object, Path]:
    """A tiny PPO run on tennis saved by ``GhostCallback``, logged to ``folder/tb``."""
    from stable_baselines3 import PPO

    from ghost.integrations.sb3 import GhostCallback, GhostVecEnv

    env = GhostVecEnv("tennis", num_arenas=4, seed=0, self_play=SELF_PLAY)
    model = PPO(
        "MlpPolicy", env, seed=0, n_steps=64, batch_size=128, n_epochs=1,
        tensorboard_log=str(folder / "tb"), policy_kwargs={"net_arch": [16]},
    )  # fmt: skip
    model.learn(1024, callback=GhostCallback(save_path=folder / "sb3" / "model"))
    return model, folder / "sb3"


def test_an_sb3_run(tmp_path, capsys):
    pytest.importorskip("stable_baselines3", reason="Stable-Baselines3 is an optional extra")
    model, folder = train_sb3_tennis(tmp_path)
    run = read_run(folder)
    assert run.host == SB3 and run.root == folder / "model.self_play"
    snapshots = (folder / "model.self_play").glob("snapshot-*.pt")
    first = min(snapshots, key=lambda p: int(p.stem.split("-")[1]))  # the window's oldest
    for path in (folder, folder / "model.zip", first):
        assert find_run_root(path) == folder / "model.self_play"
    assert run.payoff_path("Tennis").is_file()
    # the model records no game: one line says to name it
    assert main(["snapshots", str(folder), "--against", "random"]) == 2
    assert "Stable-Baselines3 records no game" in capsys.readouterr().err
    league = check_every_command(capsys, tmp_path, folder, "--game", "tennis")
    final = next(row for row in league["league"]["players"] if row["player"] == "final")
    assert final["step"] == model.num_timesteps and final["source"].endswith("model.zip")

    # the policy rebuilt from model.zip without unpickling acts as SB3's own
    player = load_host_policy(folder / "model.zip")
    obs = np.random.default_rng(0).normal(size=(16, 10)).astype(np.float32)
    mine = player.act([obs], deterministic=True).continuous
    theirs, _ = model.predict(obs, deterministic=True)
    np.testing.assert_allclose(mine, theirs, atol=1e-6)
    # and a snapshot is the same policy class with that snapshot's weights
    snapshot = load_host_policy(first)
    weights = torch.load(first, weights_only=True)
    assert all(torch.equal(snapshot.policy.state_dict()[k], v) for k, v in weights.items())


def test_sb3_discrete_policies_and_what_is_refused(tmp_path, capsys):
    pytest.importorskip("stable_baselines3", reason="Stable-Baselines3 is an optional extra")
    from stable_baselines3 import DQN

    from ghost.integrations.sb3 import GhostVecEnv

    env = GhostVecEnv("rock_paper_scissors", num_arenas=2, seed=0)
    model = DQN("MlpPolicy", env, seed=0, policy_kwargs={"activation_fn": torch.nn.ReLU})
    model.save(tmp_path / "dqn")
    player = load_host_policy(tmp_path / "dqn.zip")
    obs = np.random.default_rng(1).normal(size=(8, *env.observation_space.shape))
    mine = player.act([obs.astype(np.float32)], deterministic=True).discrete[:, 0]
    np.testing.assert_array_equal(mine, model.predict(obs, deterministic=True)[0])
    assert isinstance(player.policy.q_net.q_net[1], torch.nn.ReLU)  # read from its name

    # a policy_class whose pickle would run code is refused, and nothing runs
    marker = tmp_path / "ran"
    evil = base64.b64encode(pickle.dumps(_Exploit(marker))).decode()
    unsafe = tmp_path / "evil.zip"
    _rewrite_data(tmp_path / "dqn.zip", unsafe, policy_class={":serialized:": evil})
    with pytest.raises(CheckpointError, match="does not unpickle"):
        load_host_policy(unsafe)
    assert not marker.exists()

    # two models with their self-play folders in one folder: which one is meant
    for name in ("a", "b"):
        shutil.copy(tmp_path / "dqn.zip", tmp_path / f"{name}.zip")
        (tmp_path / f"{name}.self_play").mkdir()
    with pytest.raises(RunDirectoryError, match="several models"):
        read_run(tmp_path)
    assert read_run(tmp_path / "a.zip").root == tmp_path / "a.self_play"


class _Exploit:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def _rewrite_data(source: Path, target: Path, **fields: object) -> None:
    """A copy of SB3's ``source`` zip with ``fields`` replaced in its ``data``."""
    import zipfile

    with zipfile.ZipFile(source) as old, zipfile.ZipFile(target, "w") as new:
        for item in old.infolist():
            raw = old.read(item)
            if item.filename == "data":
                raw = json.dumps({**json.loads(raw), **fields}).encode()
            new.writestr(item, raw)


# -- RLlib ---------------------------------------------------------------------------------------
@pytest.fixture
def ray_session():
    pytest.importorskip("ray.rllib")
    import ray

    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    yield
    if started:
        ray.shutdown()


def test_an_rllib_checkpoint(ray_session, tmp_path, capsys):
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.columns import Columns
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

    from ghost.integrations.rllib import ghost_self_play

    config = (
        PPOConfig()
        .env_runners(num_env_runners=0, num_envs_per_env_runner=2, rollout_fragment_length=64)
        .training(train_batch_size_per_learner=128, minibatch_size=64, num_epochs=1)
        .rl_module(model_config=DefaultModelConfig(fcnet_hiddens=[16]))
    )
    self_play = {"save_steps": 100, "swap_steps": 100, "team_change": 300, "window": 3}
    algorithm = ghost_self_play(config, env="tennis", self_play=self_play, seed=0).build_algo()
    try:
        for _ in range(3):
            algorithm.train()
        checkpoint = Path(algorithm.save_to_path(str(tmp_path / "checkpoint")))
        module = algorithm.get_module("main")
        state = {k: torch.as_tensor(np.array(v)) for k, v in module.get_state().items()}
    finally:
        algorithm.stop()
    run = read_run(checkpoint)
    assert run.host == RLLIB and find_run_root(checkpoint / "ghost_self_play") == checkpoint
    assert run.payoff_path("Tennis").is_file()
    # the game lives in RLlib's pickles: one line says to name it
    assert main(["league", str(checkpoint)]) == 2
    assert "RLlib keeps the game" in capsys.readouterr().err
    league = check_every_command(capsys, tmp_path, checkpoint, "--game", "tennis")
    assert "final" not in {row["player"] for row in league["league"]["players"]}
    _, err = ghost_eval(capsys, "match", checkpoint, "--game", "tennis", "--against", "random",
                        "--episodes", 2)  # fmt: skip
    assert "the newest snapshot" in err and "stands for the final policy" in err

    # a module state played by the rebuilt module acts as RLlib's own module
    folder = tmp_path / "copy" / "ghost_self_play"
    folder.mkdir(parents=True)
    torch.save(state, folder / "snapshot-9.pt")
    spec = make_game("tennis", num_arenas=1).behavior_specs["Tennis?team=0"]
    player = load_host_policy(folder / "snapshot-9.pt", behavior_spec=spec)
    obs = np.random.default_rng(0).normal(size=(8, 10)).astype(np.float32)
    mine = player.act([obs], deterministic=True).continuous
    with torch.no_grad():
        out = module.forward_inference({Columns.OBS: torch.from_numpy(obs)})
    mean = out[Columns.ACTION_DIST_INPUTS].chunk(2, dim=-1)[0].clamp(-1, 1).numpy()
    np.testing.assert_allclose(mine, mean, atol=1e-6)
    with pytest.raises(CheckpointError, match="behavior says whether its actions"):
        load_host_policy(folder / "snapshot-9.pt")


# -- mlagents-learn with our plugin --------------------------------------------------------------
def test_an_mlagents_learn_run(mlagents, tmp_path, capsys):
    from tests.test_mlagents_plugin import learn, pong_config

    config = pong_config(save_steps=200, team_change=600, swap_steps=150)
    config["behaviors"]["Pong"].update(max_steps=800, checkpoint_interval=400)
    done = learn(mlagents, tmp_path, config, "pong")
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    run = tmp_path / "results" / "pong"
    assert read_run(run).host == MLAGENTS
    assert find_run_root(run / "Pong" / "self_play" / "snapshot-1.pt") == run
    assert RunRecord(run).payoff_path("Pong").is_file()
    league = check_every_command(capsys, tmp_path, run, behavior="Pong", scripted=False)
    final = next(row for row in league["league"]["players"] if row["player"] == "final")
    assert final["source"].endswith("checkpoint.pt") and final["step"] >= 800
