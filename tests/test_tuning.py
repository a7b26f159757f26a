"""``ghost-tune``: search spaces checked through the config loader, yardsticks by game, pruning,
and tiny studies that run, resume and leave a ``best.yaml`` that trains as it is.

The studies train ``rock_paper_scissors`` (a trial of 1,000 steps takes about a second) and one
trial of ``openspiel:kuhn_poker`` for the run's own exploitability scores.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import optuna
import pytest
import yaml
from optuna.trial import TrialState

from ghost.config.game_kinds import CONTROL, IMPERFECT_INFORMATION, MATRIX
from ghost.config.loader import options_from_dict
from ghost.exceptions import ConfigError
from ghost.tuning import cli
from ghost.tuning.defaults import batch_and_buffer_choices, default_space
from ghost.tuning.objective import PruningReporter
from ghost.tuning.settings import TuneSettings
from ghost.tuning.space import (
    Choice,
    Range,
    SearchSpace,
    check_space,
    load_space_file,
    with_values,
)
from ghost.tuning.study import TuningError, open_study, run_study, run_trials, storage_url
from ghost.tuning.yardsticks import resolve_yardstick

ROOT = Path(__file__).resolve().parents[1]
RPS = ["--env", "rock_paper_scissors", "--steps", "1000", "--games", "8"]


def load(tmp_path: Path, name: str) -> optuna.Study:
    return optuna.load_study(study_name=name, storage=storage_url(None, tmp_path / name))


# -- the search space --------------------------------------------------------------------------
def test_a_space_file_reads_ranges_choices_and_dropped_keys(tmp_path):
    path = tmp_path / "space.yaml"
    path.write_text(
        "hyperparameters.learning_rate: {low: 1e-5, high: 1.0e-3, log: true}\n"
        "self_play.window: {low: 3, high: 30}\n"
        "hyperparameters.num_epoch: {low: 1, high: 9, step: 2}\n"
        "network_settings.hidden_units: {choices: [32, 64]}\n"
        "hyperparameters.magnet_strength: null\n"
    )
    space, dropped = load_space_file(path)
    assert space.parameters == {
        "hyperparameters.learning_rate": Range(low=1e-5, high=1e-3, log=True),
        "self_play.window": Range(low=3, high=30, integer=True),
        "hyperparameters.num_epoch": Range(low=1, high=9, step=2, integer=True),
        "network_settings.hidden_units": Choice(choices=(32, 64)),
    }
    assert dropped == ["hyperparameters.magnet_strength"]
    base = SearchSpace({"hyperparameters.magnet_strength": Range(low=0.0, high=0.3),
                        "self_play.window": Range(low=1, high=2, integer=True)})  # fmt: skip
    merged = space.laid_over(base, dropped)
    assert "hyperparameters.magnet_strength" not in merged.parameters
    assert merged.parameters["self_play.window"] == Range(low=3, high=30, integer=True)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("self_play.window: 3\n", "write {low: ..., high: ...}"),
        ("self_play.window: {low: 30, high: 3}\n", "low (30) must be below high (3)"),
        ("hyperparameters.beta: {low: 0, high: 1, log: true}\n", "a log scale needs low > 0"),
        ("self_play.window: {low: 3, hi: 9}\n", "unknown: hi"),
        ("network_settings.hidden_units: {choices: []}\n", "non-empty list"),
    ],
)
def test_a_malformed_parameter_names_the_key_and_the_fix(tmp_path, text, message):
    path = tmp_path / "space.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match="search space") as raised:
        load_space_file(path)
    assert message in str(raised.value)


def test_values_go_into_every_behavior_and_full_paths_into_their_one_key():
    config = {"behaviors": {"Striker": {"self_play": {"window": 5}}, "Goalie": None},
              "env_settings": {"env_path": "strikers_vs_goalie"}}  # fmt: skip
    result = with_values(config, {"self_play.window": 12, "env_settings.num_areas": 4,
                                  "behaviors.Goalie.hyperparameters.beta": 0.02})  # fmt: skip
    assert result["behaviors"]["Striker"]["self_play"] == {"window": 12}
    assert result["behaviors"]["Goalie"] == {"self_play": {"window": 12},
                                             "hyperparameters": {"beta": 0.02}}  # fmt: skip
    assert result["env_settings"] == {"env_path": "strikers_vs_goalie", "num_areas": 4}
    assert "default_settings" not in result
    assert config["behaviors"]["Striker"]["self_play"] == {"window": 5}  # a copy
    only_defaults = with_values({"env_settings": {"env_path": "tennis"}}, {"self_play.window": 7})
    assert only_defaults["default_settings"] == {"self_play": {"window": 7}}


def test_an_unknown_key_path_is_the_loaders_error_with_the_keys_that_can_be_searched():
    config = {"behaviors": {"Tennis": {"trainer_type": "ppo"}}}
    space = SearchSpace({"hyperparameters.learning_rat": Range(low=1e-4, high=1e-3)})
    with pytest.raises(ConfigError) as raised:
        check_space(space, config, source="space.yaml")
    message = str(raised.value)
    assert "search space space.yaml: hyperparameters.learning_rat" in message
    assert "behaviors.Tennis.hyperparameters.learning_rat" in message
    assert "did you mean 'learning_rate'" in message
    assert "Key paths under hyperparameters" in message
    assert "hyperparameters.learning_rate," in message and "self_play.window" not in message
    misspelled_section = SearchSpace({"self_plya.window": Range(low=3, high=9, integer=True)})
    with pytest.raises(ConfigError, match="self_plya") as raised:
        check_space(misspelled_section, config, source="space.yaml")
    assert "self_play.window" in str(raised.value) and "reward_signals.extrinsic.gamma" in str(
        raised.value
    )


def test_a_bound_out_of_range_is_an_error_a_clash_of_two_keys_is_not():
    config = {"behaviors": {"Tennis": {"hyperparameters": {"batch_size": 64, "buffer_size": 256}}}}
    with pytest.raises(ConfigError, match=r"epsilon = 1.5: must be in \(0, 1\)"):
        check_space(SearchSpace({"hyperparameters.epsilon": Range(low=0.1, high=1.5)}), config,
                    source="f")  # fmt: skip
    # 512 > buffer_size 256 only together with the base buffer: such trials are pruned instead
    check_space(SearchSpace({"hyperparameters.batch_size": Choice(choices=(32, 512))}), config,
                source="f")  # fmt: skip


def test_the_bad_space_key_stops_ghost_tune_before_any_training(tmp_path, capsys):
    space = tmp_path / "space.yaml"
    space.write_text("self_play.windows: {low: 3, high: 9}\n")
    code = cli.main([*RPS, "--space", str(space), "--results-dir", str(tmp_path)])
    assert code == 2
    error = capsys.readouterr().err
    assert "self_play.windows" in error and "did you mean 'window'" in error
    assert not (tmp_path / "rock_paper_scissors" / "trials").exists()


def test_the_built_in_space_follows_the_game_kind_and_the_config():
    def space(kind: str, config: dict, steps: int = 100_000) -> dict:
        return default_space(kind=kind, options=options_from_dict(config), steps=steps).parameters

    ppo = {"behaviors": {"B": {"self_play": {}}}}
    poker = space(IMPERFECT_INFORMATION, ppo)
    assert "hyperparameters.magnet_strength" in poker and "hyperparameters.lambd" in poker
    assert poker["self_play.save_steps"] == Range(low=1000, high=10000, log=True, integer=True)
    control = space(CONTROL, ppo)
    assert "hyperparameters.magnet_strength" not in control
    assert control["reward_signals.extrinsic.gamma"] == Range(low=0.95, high=0.999)
    matrix = space(MATRIX, ppo)
    assert "reward_signals.extrinsic.gamma" not in matrix and "hyperparameters.lambd" not in matrix
    sac = space(CONTROL, {"behaviors": {"B": {"trainer_type": "sac", "self_play": {}}}})
    assert "hyperparameters.learning_rate" in sac and "hyperparameters.beta" not in sac
    uniform = space(
        MATRIX, {"behaviors": {"B": {"self_play": {"sampling": {"strategy": "uniform"}}}}}
    )
    assert "self_play.play_against_latest_model_ratio" not in uniform


@pytest.mark.parametrize(("batch", "buffer", "steps"),
                         [(1024, 10240, 2000), (128, 512, 1000), (64, 2048, 10**6), (512, 512, 10**5)])  # fmt: skip
def test_every_batch_drawn_fits_every_buffer_and_the_budget(batch, buffer, steps):
    batches, buffers = batch_and_buffer_choices(batch=batch, buffer=buffer, steps=steps)
    assert max(batches) <= min(buffers) and max(buffers) <= max(1, steps // 4)
    assert len(buffers) >= 2 and len(batches) >= 2


# -- yardsticks --------------------------------------------------------------------------------
def test_auto_picks_the_yardstick_of_the_game():
    assert resolve_yardstick("auto", "openspiel:kuhn_poker") == "exploitability"
    assert resolve_yardstick("auto", "rock_paper_scissors") == "exploitability"
    assert resolve_yardstick("auto", "tennis") == "scripted:medium"
    assert resolve_yardstick("auto", "my_envs:make_env") == "exploiter"
    assert resolve_yardstick("scripted:weak", "strikers_vs_goalie") == "scripted:weak"


@pytest.mark.parametrize(
    ("spec", "env_path", "message"),
    [
        ("exploitability", "tennis", "use --yardstick exploiter"),
        ("scripted:weak", "openspiel:kuhn_poker", "scripted levels exist for the built-in games"),
        ("scripted:hard", "tennis", "valid: scripted:random, scripted:weak"),
        ("elo", "tennis", "choose auto, exploitability, scripted:LEVEL or exploiter"),
    ],
)
def test_a_yardstick_that_does_not_fit_the_game_says_which_does(spec, env_path, message):
    with pytest.raises(ConfigError, match=message):
        resolve_yardstick(spec, env_path)


# -- pruning -----------------------------------------------------------------------------------
class RecordingTrial:
    """Stands in for ``optuna.Trial``: records reports; prunes from the ``prune_from``-th."""

    def __init__(self, prune_from: int) -> None:
        self.reports: list[tuple[int, float]] = []
        self.prune_from = prune_from

    def report(self, value: float, step: int) -> None:
        self.reports.append((step, value))

    def should_prune(self) -> bool:
        return len(self.reports) >= self.prune_from


def test_the_reporter_puts_values_on_the_grid_and_stops_when_the_pruner_says_so():
    trial = RecordingTrial(prune_from=3)
    reporter = PruningReporter(trial, interval=500)  # type: ignore[arg-type]
    assert reporter(12, 0.9) is False  # before the first grid step
    assert reporter(515, 0.5) is False
    assert reporter(530, 0.4) is False  # the same grid step again
    assert reporter(1004, float("nan")) is False
    assert reporter(1020, 0.3) is False
    assert reporter(1519, 0.2) is True
    assert trial.reports == [(500, 0.5), (1000, 0.3), (1500, 0.2)]
    assert reporter.pruned_at == (1500, 0.2)


class AlwaysPrune(optuna.pruners.BasePruner):
    def prune(self, study: optuna.Study, trial: optuna.trial.FrozenTrial) -> bool:
        return True


def rps_settings(steps: int = 2000) -> TuneSettings:
    config = yaml.safe_load((ROOT / "config" / "rock_paper_scissors.yaml").read_text())
    return TuneSettings(
        base_config=config,
        space=SearchSpace({"hyperparameters.learning_rate": Range(low=1e-4, high=1e-2, log=True)}),
        yardstick="exploitability", steps=steps, seeds=(0,), games=8,
    )  # fmt: skip


def test_a_pruned_trial_stops_its_run_at_the_first_evaluation(tmp_path):
    folder = tmp_path / "pruned"
    url = storage_url(None, folder)
    open_study(name="pruned", url=url, settings=rps_settings())
    run_study(name="pruned", url=url, folder=folder, total=1, pruner=AlwaysPrune())

    (trial,) = load(tmp_path, "pruned").trials
    assert trial.state == TrialState.PRUNED
    assert list(trial.intermediate_values) == [500] and trial.user_attrs["pruned_at_step"] == 500
    status = yaml.safe_load(
        (folder / "trials/trial-0000/seed-0/run_logs/training_status.json").read_text()
    )
    assert status["RockPaperScissors"]["steps"] < 2000


def test_a_worker_gives_up_after_three_failures_in_a_row():
    study = optuna.create_study()
    calls = []

    def failing(trial: optuna.Trial) -> float:
        calls.append(trial.number)
        trial.set_user_attr("error", f"broken {trial.number}")
        raise RuntimeError("broken")

    with pytest.raises(TuningError, match="3 trials in a row failed; the last, trial 2: broken 2"):
        run_trials(study, failing, total=10)  # type: ignore[arg-type]
    assert calls == [0, 1, 2]
    assert [t.state for t in study.trials] == [TrialState.FAIL] * 3


# -- whole studies -----------------------------------------------------------------------------
def test_a_tiny_study_runs_resumes_and_leaves_a_best_yaml_that_trains(tmp_path, capsys):
    import ghost

    where = ["--results-dir", str(tmp_path), "--study-name", "rps"]
    assert cli.main([*RPS, "--trials", "2", *where]) == 0
    first = capsys.readouterr().out
    assert "trial 0 value" in first and "trial 1 value" in first and "2/2 trials done" in first
    assert "best:" in first and "parameter importance (fANOVA" in first

    assert cli.main([*RPS, "--trials", "3", *where]) == 0  # the same study, one trial more
    assert "2 of 3 trials so far" in capsys.readouterr().out
    study = load(tmp_path, "rps")
    assert [t.number for t in study.trials] == [0, 1, 2]
    assert all(t.state == TrialState.COMPLETE for t in study.trials)

    folder = tmp_path / "rps"
    table = (folder / "summary.txt").read_text().splitlines()
    assert table[0].split()[:3] == ["trial", "value", "state"]
    assert int(table[1].split()[0]) == study.best_trial.number  # best first
    assert (folder / "importance.png").stat().st_size > 1000
    assert len((folder / "trials.csv").read_text().splitlines()) == 4
    assert not [p for p in (folder / "trials").rglob("*.pt") if p.parent.name == "checkpoints"]

    best = yaml.safe_load((folder / "best.yaml").read_text())
    settings = best["behaviors"]["RockPaperScissors"]
    for key, value in study.best_trial.params.items():
        holder = settings
        for part in key.split(".")[:-1]:
            holder = holder[part]
        assert holder[key.split(".")[-1]] == value, key
    assert best["env_settings"]["env_path"] == "rock_paper_scissors"
    result = ghost.train(folder / "best.yaml", run_id="best", results_dir=tmp_path,
                         max_steps=300, verbose=0)  # fmt: skip
    assert result.steps["RockPaperScissors"] >= 300 and result.policies

    assert cli.main(["--summary", *where]) == 0  # the report only
    assert "3 complete" in capsys.readouterr().out and len(load(tmp_path, "rps").trials) == 3
    assert cli.main([*RPS[:-4], "--steps", "2000", "--trials", "4", *where]) == 2
    assert "--steps" in capsys.readouterr().err and len(load(tmp_path, "rps").trials) == 3


def test_an_openspiel_trial_reports_the_runs_own_exploitability(tmp_path, capsys):
    where = ["--results-dir", str(tmp_path), "--study-name", "kuhn"]
    assert (
        cli.main(["--env", "openspiel:kuhn_poker", "--steps", "1000", "--trials", "1", *where]) == 0
    )
    (trial,) = load(tmp_path, "kuhn").trials
    rows = (tmp_path / "kuhn/trials/trial-0000/seed-0/run_logs/exploitability.csv").read_text()
    final = float(rows.splitlines()[-1].split(",")[1])
    assert trial.state == TrialState.COMPLETE and trial.value == pytest.approx(final)
    assert trial.intermediate_values and set(trial.intermediate_values) <= {250, 500, 750, 1000}
    out = capsys.readouterr().out
    assert "exploitability (lower is better)" in out and "best config:" in out


def test_an_exploiter_judges_a_game_configured_by_default_settings_only(tmp_path, capsys):
    """``--env GAME`` alone names no behavior; its exploiter still trains --exploiter-steps steps
    against the trial's final policy."""
    where = ["--results-dir", str(tmp_path), "--study-name", "kuhn"]
    flags = ["--yardstick", "exploiter", "--exploiter-steps", "300", "--games", "8"]
    game = ["--env", "openspiel:kuhn_poker", "--steps", "1000", "--trials", "1"]
    assert cli.main([*game, *flags, *where]) == 0, capsys.readouterr().err
    (trial,) = load(tmp_path, "kuhn").trials
    assert trial.state == TrialState.COMPLETE and trial.value is not None
    exploiter = tmp_path / "kuhn/trials/trial-0000/seed-0/exploiters/exploiter-300-seed0"
    config = yaml.safe_load((exploiter / "configuration.yaml").read_text())
    (fixed,) = config["behaviors"]["kuhn_poker"]["self_play"]["fixed_opponents"]
    assert fixed["policy"].endswith("seed-0/kuhn_poker.pt")
    index = yaml.safe_load((exploiter / "checkpoint.json").read_text())
    assert 300 <= index["behaviors"]["kuhn_poker"]["step"] < 300 + 512


def test_study_flags_without_a_config_are_refused(tmp_path, capsys):
    assert cli.main(["--study-name", "x", "--steps", "100", "--results-dir", str(tmp_path)]) == 2
    assert "--steps describe(s) a study" in capsys.readouterr().err
    assert cli.main(["--summary", "--study-name", "nothing", "--results-dir", str(tmp_path)]) == 2
    assert "there is no study 'nothing'" in capsys.readouterr().err


def test_without_optuna_ghost_tune_names_the_extra():
    script = textwrap.dedent(
        """
        import sys
        sys.modules["optuna"] = None  # as if not installed
        from ghost.tuning import cli
        sys.exit(cli.main(["--env", "tennis"]))
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, check=False)  # fmt: skip
    assert done.returncode == 2
    assert "pip install 'ghost-trainer[tune]'" in done.stderr


@pytest.mark.slow
def test_parallel_workers_share_one_study(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "ghost.tuning.cli", *RPS, "--trials", "4", "--jobs", "2",
         "--results-dir", str(tmp_path), "--study-name", "par"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    study = load(tmp_path, "par")
    assert len(study.trials) >= 4 and all(t.state == TrialState.COMPLETE for t in study.trials)
    assert done.stdout.count(" value ") >= 4
