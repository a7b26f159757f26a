"""``scripts/learning_curves.py``: configs, checkpoint choice, rows, resuming, tables; and the
numpy ML-Agents actor against ML-Agents' own forward pass (when its venv is there)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import learning_curves as curves  # noqa: E402
from curve_tables import summarize, take_off_steps  # noqa: E402
from mlagents_actor import MLAgentsActor  # noqa: E402

#: the ML-Agents 1.1 venv that ``../shared/peers/setup-mlagents.sh`` builds (``PEER_VENV``)
PEER_PYTHON = Path(os.environ.get("PEER_VENV", "/tmp/peer-mlagents")) / "bin" / "python"
needs_peer = pytest.mark.skipif(
    not (PEER_PYTHON.exists() and curves.PEER_SCRIPT.exists()),
    reason=f"no ML-Agents 1.1 venv at {PEER_PYTHON} or no {curves.PEER_SCRIPT} (the shared "
    "folder beside the checkout): build it with ../shared/peers/setup-mlagents.sh (or set "
    "PEER_VENV)",
)


def run(**fields) -> curves.Run:
    values = {"game": "tennis", "mode": "selfplay", "trainer": "ours", "seed": 0,
              "budget": 80_000, "opponent": None, **fields}  # fmt: skip
    return curves.Run(**values)


def test_both_trainers_get_one_config_sized_to_the_budget() -> None:
    config = curves.run_config(run())
    tennis = config["behaviors"]["Tennis"]
    assert (tennis["max_steps"], tennis["checkpoint_interval"]) == (80_000, 10_000)
    assert tennis["keep_checkpoints"] >= 8 and "self_play" in tennis
    assert config["env_settings"]["env_path"] == "tennis"
    assert curves.env_spec("tennis", "selfplay", None) == "envs.tennis:make_env"
    fixed = curves.run_config(run(game="strikers_vs_goalie", mode="fixed", opponent="weak"))
    assert list(fixed["behaviors"]) == ["Striker"]  # team 0 learns; the goalie is scripted
    assert "self_play" not in fixed["behaviors"]["Striker"]
    assert fixed["env_settings"]["env_path"] == "envs.versus_scripted:strikers_vs_goalie_vs_weak"


def test_each_nominal_step_takes_the_nearest_checkpoint() -> None:
    files = {s: Path(f"T-{s}.pt") for s in (9988, 19978, 29943, 30003, 40016, 3000, 80990, 95000)}
    chosen = curves.by_nominal(files, 10_000)  # 8 checkpoints: 10,000 to 80,000
    assert {n: s for n, (s, _) in chosen.items()} == {
        10_000: 9988,
        20_000: 19978,
        30_000: 30003,
        40_000: 40016,
        80_000: 80990,
    }


def test_summary_table_lists_medians_and_seeds() -> None:
    rows = [
        {"kind": "score", "game": "volley", "mode": "selfplay", "opponent": None,
         "budget": 800, "behavior": "Volley", "yardstick": "medium", "games": 10,
         "eval_seed": 1, "trainer": trainer, "seed": seed, "nominal": 100, "step": 100,
         "score": value, "win_rate": value / 2}
        for trainer, seed, value in (("ours", 0, 0.2), ("ours", 1, 0.6), ("ours", 2, 0.3),
                                     ("mlagents", 0, 0.1))
    ] + [{"kind": "run", "game": "volley", "mode": "selfplay", "opponent": None, "budget": 800,
          "trainer": "ours", "seed": 0, "wall_s": 12.0}]  # fmt: skip
    table = summarize(rows)
    assert "| 100 | 0.30 [0.20, 0.60, 0.30] | 0.10 [0.10, –, –] |" in table
    assert "ours 12 [12]" in table
    assert "0.15 [0.10, 0.30, 0.15]" in summarize(rows, metric="win_rate")


def test_actor_math_on_a_hand_made_state() -> None:
    state = {
        "memory_size_vector": np.zeros(1),
        "continuous_act_size_vector": np.array([1.0]),
        "network_body.observation_encoder.processors.0.normalizer.normalization_steps": np.array(4.0),
        "network_body.observation_encoder.processors.0.normalizer.running_mean": np.array([1.0, 0.0]),
        "network_body.observation_encoder.processors.0.normalizer.running_variance": np.array([16.0, 4.0]),
        "network_body._body_endoder.seq_layers.0.weight": np.eye(2),
        "network_body._body_endoder.seq_layers.0.bias": np.zeros(2),
        "action_model._continuous_distribution.mu.weight": np.array([[6.0, 0.0]]),
        "action_model._continuous_distribution.mu.bias": np.zeros(1),
        "action_model._continuous_distribution.log_sigma": np.zeros((1, 1)),
        "action_model._discrete_distribution.branches.0.weight": np.array([[1.0, 0], [0, 1], [0, 0]]),
        "action_model._discrete_distribution.branches.0.bias": np.array([0.0, 0.0, 0.1]),
    }  # fmt: skip
    actor = MLAgentsActor(state)
    obs = np.array([[3.0, 100.0], [-1.0, 0.0]], dtype=np.float32)
    # normalized: ((3-1)/2, clip(100/1)) = (1, 5); ((-1-1)/2, 0) = (-1, 0); then swish
    hidden = actor.encode([obs])
    swish = lambda x: x / (1 + np.exp(-x))  # noqa: E731
    np.testing.assert_allclose(hidden, swish(np.array([[1.0, 5.0], [-1.0, 0.0]])), rtol=1e-6)
    action = actor.act([obs], deterministic=True)
    np.testing.assert_allclose(
        action.continuous[:, 0], np.clip(6 * hidden[:, 0], -3, 3) / 3, rtol=1e-6
    )
    assert action.discrete[:, 0].tolist() == [1, 2]
    masked = actor.act([obs], [np.array([[False, True, False]] * 2)], deterministic=True)
    assert masked.discrete[:, 0].tolist() == [0, 2]  # action 1 blocked: the next best
    with pytest.raises(ValueError, match="recurrent"):
        MLAgentsActor({**state, "memory_size_vector": np.array([8.0])})


@needs_peer
@pytest.mark.parametrize(
    "case",
    # every head at once (one ML-Agents start costs seconds): continuous and discrete actions,
    # the normalizer, three layers
    [["--continuous", "2", "--branches", "3", "2", "--obs-size", "10", "--normalize",
      "--layers", "3", "--hidden", "32"]],
)  # fmt: skip
def test_actor_matches_mlagents_forward_pass(tmp_path: Path, case: list[str]) -> None:
    rng = np.random.default_rng(0)
    size = int(case[case.index("--obs-size") + 1])
    branches = []
    if "--branches" in case:
        for value in case[case.index("--branches") + 1 :]:
            if value.startswith("--"):
                break
            branches.append(int(value))
    obs = (rng.normal(size=(300, size)) * 4).astype(np.float32)
    blocked = rng.random((300, sum(branches))) < 0.3
    if branches:
        blocked[:, np.cumsum([0, *branches[:-1]])] = False  # one action of a branch is allowed
    np.savez(tmp_path / "obs.npz", obs=obs, mask=blocked)
    checkpoint, out = tmp_path / "actor.pt", tmp_path / "ref.npz"
    subprocess.run(
        [str(PEER_PYTHON), str(ROOT / "scripts" / "mlagents_actor_reference.py"), "--create",
         "--checkpoint", str(checkpoint), "--obs", str(tmp_path / "obs.npz"), "--out", str(out),
         *case],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    reference = np.load(out)
    actor = MLAgentsActor.from_checkpoint(checkpoint)
    np.testing.assert_allclose(actor.encode([obs]), reference["encoding"], atol=1e-5)
    masks = np.split(blocked, np.cumsum(branches)[:-1], axis=1) if branches else None
    action = actor.act([obs], masks, deterministic=True)
    if "continuous" in reference:
        assert (np.abs(reference["continuous"]) >= 1.0).any()  # clipping is exercised
        np.testing.assert_allclose(action.continuous, reference["continuous"], atol=1e-5)
    if "discrete" in reference:
        np.testing.assert_array_equal(action.discrete, reference["discrete"])


def read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_smoke_our_side_end_to_end_and_resume(tmp_path: Path, capsys) -> None:
    out = tmp_path / "curves.jsonl"
    argv = ["--games", "volley", "--mode", "selfplay", "fixed", "--trainers", "ours",
            "--seeds", "0", "--budget", "800", "--yardsticks", "medium",
            "--games-per-yardstick", "4", "--out", str(out), "--plot", str(tmp_path / "c.png")]  # fmt: skip
    curves.main(argv)
    rows = read(out)
    scores = [r for r in rows if r["kind"] == "score"]
    assert {(r["mode"], r["opponent"]) for r in scores} == {("selfplay", None), ("fixed", "medium")}
    for mode in ("selfplay", "fixed"):
        mine = [r for r in scores if r["mode"] == mode]
        assert sorted(r["nominal"] for r in mine) == [100 * k for k in range(1, 9)]
        assert all(r["games"] == 4 and 0 <= r["score"] <= 1 and r["trainer"] == "ours"
                   for r in mine)  # fmt: skip
        assert all(abs(r["step"] - r["nominal"]) <= 50 for r in mine)
    assert sorted(r["mode"] for r in rows if r["kind"] == "run") == ["fixed", "selfplay"]
    assert (tmp_path / "c.png").stat().st_size > 0
    assert "### volley, fixed (trained against medium): Volley against `medium`" in (
        capsys.readouterr().out
    )
    curves.main(argv)  # resumed: everything is there already
    assert len(read(out)) == len(rows)


@needs_peer
def test_smoke_mlagents_side_reads_its_checkpoints(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(curves, "PEER_PYTHON", PEER_PYTHON)
    out = tmp_path / "curves.jsonl"
    curves.main(["--games", "volley", "--mode", "fixed", "--trainers", "mlagents", "--seeds", "0",
                 "--budget", "800", "--yardsticks", "strong", "--games-per-yardstick", "4",
                 "--out", str(out)])  # fmt: skip
    scores = [r for r in read(out) if r["kind"] == "score"]
    # ML-Agents checkpoints where a trajectory ends: a tiny budget may miss a checkpoint or two
    nominal = [r["nominal"] for r in scores]
    assert len(nominal) >= 6 and len(set(nominal)) == len(nominal)
    assert set(nominal) <= {100 * k for k in range(1, 9)}
    assert {r["trainer"] for r in scores} == {"mlagents"} and all(r["games"] == 4 for r in scores)


def test_take_off_is_the_first_checkpoint_from_which_the_score_stays_positive():
    def row(seed: int, nominal: int, wins: int, losses: int) -> dict:
        return {"kind": "score", "game": "volley", "mode": "selfplay", "behavior": "Volley",
                "trainer": "ours", "seed": seed, "budget": 400, "nominal": nominal,
                "yardstick": "medium", "wins": wins, "losses": losses}  # fmt: skip

    rows = [
        *(
            row(0, step, won, lost)
            for step, won, lost in [(100, 1, 9), (200, 6, 4), (300, 4, 5), (400, 7, 2)]
        ),
        *(
            row(1, step, won, lost)
            for step, won, lost in [(100, 6, 4), (200, 7, 3), (300, 8, 2), (400, 9, 1)]
        ),
        *(
            row(2, step, won, lost)
            for step, won, lost in [(100, 1, 9), (200, 2, 8), (300, 6, 4), (400, 4, 6)]
        ),
    ]
    found = take_off_steps(rows, level="medium")
    assert found[("volley", "selfplay", "Volley", "ours", 0)]["take_off"] == 400  # dipped at 300
    assert found[("volley", "selfplay", "Volley", "ours", 1)]["take_off"] == 100
    assert found[("volley", "selfplay", "Volley", "ours", 2)]["take_off"] is None
