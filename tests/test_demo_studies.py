"""``scripts/demo_studies.py``: the recorded demonstrations, each arm's config (checked by the
config reader), and the final table."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import demo_studies as studies  # noqa: E402

from ghost.config.loader import options_from_dict  # noqa: E402


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("demo_studies")
    args = studies.build_parser().parse_args(["record", "--episodes", "4", "--work", str(work)])
    return studies.record(args)


def behavior(arm: str, demo: Path, budget: int = 400_000) -> dict:
    config = studies.run_config(studies.Run(arm=arm, seed=0, budget=budget), demo)
    options_from_dict(config)  # the config reader takes every arm's config
    return config["behaviors"]["Volley"]


def test_the_demonstrations_are_the_strong_levels_won_points(demo: Path) -> None:
    from envs.demo_files import read_demos

    recorded = read_demos(demo)
    assert recorded.episodes == 4
    assert (recorded.rewards[recorded.done] == 1.0).all()


def test_gail_learns_from_the_demonstrations_alone(demo: Path) -> None:
    signals = behavior("gail", demo)["reward_signals"]
    assert set(signals) == {"gail"}
    assert signals["gail"]["demo_path"] == str(demo)
    assert behavior("no-reward", demo)["reward_signals"]["extrinsic"]["strength"] == 0.0
    assert behavior("extrinsic", demo)["reward_signals"]["extrinsic"]["strength"] == 1.0


def test_the_fixed_arms_play_medium_and_the_self_play_arms_themselves(demo: Path) -> None:
    for arm, mode in [("gail", "fixed"), ("selfplay", "selfplay"), ("selfplay+bc", "selfplay")]:
        config = studies.run_config(studies.Run(arm=arm, seed=0, budget=80_000), demo)
        env_path = config["env_settings"]["env_path"]
        if mode == "fixed":
            assert env_path == "envs.versus_scripted:volley_vs_medium"
            assert "self_play" not in config["behaviors"]["Volley"]
        else:
            assert env_path == "volley"
            assert "self_play" in config["behaviors"]["Volley"]


def test_cloning_is_one_setting_over_a_quarter_of_the_budget(demo: Path) -> None:
    cloning = behavior("selfplay+bc", demo, budget=1_000_000)["behavioral_cloning"]
    assert cloning == {"demo_path": str(demo), "strength": 0.5, "steps": 250_000,
                       "continuous_loss": "sample"}  # fmt: skip
    assert "behavioral_cloning" not in behavior("selfplay", demo)


def test_the_mean_arms_change_only_the_loss(demo: Path) -> None:
    for arm in ("selfplay+bc", "selfplay+bc-long"):
        sampled = behavior(arm, demo, budget=1_000_000)["behavioral_cloning"]
        on_mean = behavior(f"{arm}-mean", demo, budget=1_000_000)["behavioral_cloning"]
        assert on_mean == {**sampled, "continuous_loss": "mean"}


def test_the_final_table_puts_the_demonstrator_beside_each_arm() -> None:
    score = {"kind": "score", "nominal": 100, "budget": 100, "yardstick": "medium", "games": 10}
    rows = [
        {"kind": "reference", "player": "strong", "yardstick": "medium", "wins": 10,
         "losses": 0, "games": 10},
        {**score, "trainer": "gail", "seed": 0, "wins": 4, "losses": 6},
        {**score, "trainer": "gail", "seed": 1, "wins": 6, "losses": 3},
        {**score, "trainer": "gail", "seed": 1, "nominal": 50, "wins": 0, "losses": 10},
    ]  # fmt: skip
    table = studies.final_table(rows).splitlines()
    assert table[2] == "| demonstrator (`strong`) | `medium` | 1.00 | 0.00 |"
    assert table[3] == "| gail | `medium` | 0.50 [0.40, 0.60] | 0.45 [0.60, 0.30] |"


def test_the_training_table_reads_the_value_logged_nearest_each_checkpoint(tmp_path: Path) -> None:
    from torch.utils.tensorboard import SummaryWriter

    for seed, scale in [(0, 1.0), (1, 3.0)]:
        run = studies.Run(arm="selfplay+bc", seed=seed, budget=800)
        writer = SummaryWriter(str(run.folder(tmp_path) / "ours" / "run" / "Volley"))
        for step in range(50, 801, 50):
            writer.add_scalar("Losses/Pretraining Loss", scale * step, step)
        writer.close()
    rows = [{"kind": "run", "trainer": "selfplay+bc", "seed": s, "budget": 800} for s in (0, 1)]
    table = studies.training_table(rows, tmp_path, "take_off").splitlines()
    assert table[0] == "| arm | statistic | 100 | 200 | 300 | 400 | 500 | 600 | 700 | 800 |"
    # seeds log 100 and 300 at step 100: their median
    assert table[2].startswith("| selfplay+bc | Losses/Pretraining Loss | 200 | 400 | 600 |")
    assert len(table) == 3  # no entropy logged, no row
