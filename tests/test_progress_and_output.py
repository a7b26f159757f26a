"""What a run and ``ghost-eval`` say: progress of long work, ``ghost.train``'s console, the preset
and the settings that cannot take effect, payoff tables in natural order, summaries in step
order, third-party noise held back."""

from __future__ import annotations

import io
import itertools
import logging
import os
import re
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest
import torch
import yaml

import ghost
from envs.behavior_id import BehaviorId
from envs.games import make_game
from ghost import command_line
from ghost.config.effects import ineffective_settings, log_effects, preset_line
from ghost.config.loader import options_from_dict
from ghost.core.win_rates import WinRates, natural_key
from ghost.evaluation import cli_commands
from ghost.evaluation.cli import main as ghost_eval
from ghost.evaluation.progress import ProgressLine, format_duration
from ghost.evaluation.tournament import build_table
from ghost.evaluation.tournament_players import TournamentPlayer
from ghost.evaluation.tournament_ratings import PairResult
from trainers.policy import TorchPolicy
from trainers.settings import NetworkSettings
from trainers.stats import SummaryConsole

pytestmark = pytest.mark.usefixtures("one_torch_thread")

ROOT = Path(__file__).resolve().parent.parent
TINY = {
    "hyperparameters": {"batch_size": 64, "buffer_size": 256},
    "network_settings": {"hidden_units": 16},
    "max_steps": 600,
    "summary_freq": 300,
    "checkpoint_interval": 300,
    "self_play": {"save_steps": 200, "team_change": 400, "swap_steps": 100},
}


# -- the progress line ---------------------------------------------------------------------------
class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_off_a_terminal_a_line_every_tenth_of_the_work_and_the_last():
    clock, stream = Clock(), io.StringIO()
    line = ProgressLine("league", unit="pairs", stream=stream, clock=clock, interval_s=1000)
    for done in range(1, 41):
        clock.now = done * 0.5
        line.update(done, 40)
    lines = stream.getvalue().splitlines()
    assert [entry.split()[1] for entry in lines] == [f"{d}/40" for d in range(4, 41, 4)]
    assert lines[0] == "league: 4/40 pairs (10%), 2.00 pairs/s, ETA 18s"
    assert lines[-1] == "league: 40/40 pairs (100%), in 20s"


def test_off_a_terminal_a_line_at_least_every_interval():
    clock, stream = Clock(), io.StringIO()
    line = ProgressLine("exploiter", unit="steps", stream=stream, clock=clock, interval_s=10)
    for done, now in [(10, 5.0), (20, 11.0), (30, 15.0), (40, 22.0)]:
        clock.now = now
        line.update(done, 1000)
    assert [entry.split()[1] for entry in stream.getvalue().splitlines()] == ["20/1000", "40/1000"]


def test_on_a_terminal_one_line_rewritten_in_place():
    clock, stream = Clock(), Terminal()
    with ProgressLine("snapshots", unit="snapshots", stream=stream, clock=clock) as line:
        for done in (1, 2, 3):
            clock.now = done
            line.update(done, 3, f"snapshot-{done}")
        line.update(3, 3)  # said once only
    text = stream.getvalue()
    assert text.count("\r") == 3 and text.endswith("(snapshot-3)\x1b[K\n")
    assert "\rsnapshots: 2/3 snapshots (67%), 1.00 snapshots/s, ETA 1s (snapshot-2)" in text


def test_an_interrupted_terminal_line_gets_its_newline_and_quiet_says_nothing():
    stream = Terminal()
    with ProgressLine("league", unit="pairs", stream=stream, clock=Clock()) as line:
        line.update(1, 3)
    assert stream.getvalue().endswith("\n")
    quiet = io.StringIO()
    with ProgressLine("league", unit="pairs", stream=quiet, quiet=True) as line:
        line.update(1, 1)
    assert quiet.getvalue() == ""


def test_durations_read_as_a_person_says_them():
    assert [format_duration(s) for s in (0, 42.4, 185, 7620)] == ["0s", "42s", "3m05s", "2h07m"]


# -- progress of ghost-eval's long commands ------------------------------------------------------
def _policy_file(path: Path, seed: int) -> None:
    spec = make_game("tennis", num_arenas=1).behavior_specs["Tennis?team=0"]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        policy = TorchPolicy(
            behavior_spec=spec, network_settings=NetworkSettings(hidden_units=8, num_layers=1)
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    policy.save(path)


@pytest.fixture
def untrained_run(tmp_path) -> Path:
    """A tennis run folder with two (untrained) snapshots and a final policy."""
    run = tmp_path / "tennis"
    for i in range(2):
        _policy_file(run / "Tennis" / "snapshots" / f"snapshot-{i}.pt", seed=i)
    _policy_file(run / "Tennis.pt", seed=2)
    config = {"behaviors": {"Tennis": {"self_play": {}}}, "env_settings": {"env_path": "tennis"}}
    (run / "configuration.yaml").write_text(yaml.safe_dump(config))
    return run


def test_league_and_snapshots_show_progress_off_a_terminal_and_quiet_silences_it(
    untrained_run, capsys
):
    league = ["league", str(untrained_run), "--games-per-pair", "2", "--include-levels", "weak"]
    assert ghost_eval(league) == 0
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("tournament: ")]
    assert [line.split()[1] for line in lines] == [f"{d}/6" for d in range(1, 7)]
    assert lines[-1].startswith("tournament: 6/6 pairs (100%), in ") and "pairs/s, ETA" in lines[0]
    assert ghost_eval([*league, "--quiet"]) == 0
    assert "tournament:" not in capsys.readouterr().err

    snapshots = ["snapshots", str(untrained_run), "--against", "weak", "--episodes", "2"]
    assert ghost_eval(snapshots) == 0
    assert "snapshots: 2/2 snapshots (100%)" in capsys.readouterr().err
    assert ghost_eval([*snapshots, "--quiet"]) == 0
    assert "snapshots:" not in capsys.readouterr().err


def test_nothing_is_written_before_quiet_for_s_and_then_every_line_is():
    stream, clock = io.StringIO(), Clock()
    line = ProgressLine("match", unit="episodes", stream=stream, quiet_for_s=2.0, clock=clock)
    clock.now = 1.0
    line(50, 100)
    assert stream.getvalue() == ""  # a match that ends here leaves nothing
    clock.now = 2.5
    line(60, 100)
    line(100, 100)
    assert [row.split(",")[0] for row in stream.getvalue().splitlines()] == [
        "match: 60/100 episodes (60%)",
        "match: 100/100 episodes (100%)",
    ]


def test_a_long_match_shows_its_episodes(untrained_run, capsys, monkeypatch):
    monkeypatch.setattr(cli_commands, "MATCH_QUIET_FOR_S", 0.0)  # every match counts as long
    match = ["match", str(untrained_run), "--against", "weak", "--episodes", "40"]
    assert ghost_eval(match) == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("match: ")]
    assert lines and lines[-1].startswith("match: 40/40 episodes (100%), in ")
    done = [int(line.split()[1].split("/")[0]) for line in lines]
    assert done == sorted(done)
    assert ghost_eval([*match, "--quiet"]) == 0
    assert "match:" not in capsys.readouterr().err


def test_the_old_flag_form_takes_quiet_too(untrained_run, capsys):
    assert ghost_eval([str(untrained_run), "--league", "--games-per-pair", "1", "--quiet"]) == 0
    assert "tournament:" not in capsys.readouterr().err


def test_an_exploiter_shows_its_training_steps(tmp_path, capsys):
    config = {"behaviors": {"Tennis": TINY}, "env_settings": {"env_path": "tennis", "seed": 1}}
    run = ghost.train(config, run_id="tennis", results_dir=tmp_path).run_dir
    capsys.readouterr()
    assert ghost_eval(["exploit", str(run), "--steps", "600", "--episodes", "4"]) == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if "exploiter:" in line]
    assert lines[0].startswith("exploiter: ") and "/600 steps (" in lines[0]
    assert lines[-1].startswith("exploiter: 600/600 steps (100%), in ")
    assert len(lines) >= 2 and len(set(lines)) == len(lines)
    assert ghost_eval(["exploit", str(run), "--steps", "300", "--episodes", "2", "--quiet"]) == 0
    assert "exploiter:" not in capsys.readouterr().err


# -- ghost.train's console -----------------------------------------------------------------------
def _script_output(body: str, tmp_path: Path) -> str:
    """stderr of a fresh interpreter running ``body`` (``CONFIG``: a tiny tennis run)."""
    config = {"behaviors": {"Tennis": TINY}, "env_settings": {"env_path": "tennis", "seed": 1}}
    script = f"import ghost, logging, sys\nCONFIG = {config!r}\nRESULTS = {str(tmp_path)!r}\n"
    script += textwrap.dedent(body)
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stderr


def test_train_prints_its_summaries_by_default_and_nothing_with_verbose_0(tmp_path):
    err = _script_output(
        """
        ghost.train(CONFIG, run_id="quiet", results_dir=RESULTS, verbose=0)
        print("MARK", file=sys.stderr)
        ghost.train(CONFIG, run_id="loud", results_dir=RESULTS)
        """,
        tmp_path,
    )
    quiet, loud = err.split("MARK\n")
    assert quiet == ""
    assert "[INFO] trainers.stats: Tennis. Step: " in loud
    assert "[INFO] trainers.training_loop: Exported " in loud


def test_train_leaves_an_application_s_own_logging_alone(tmp_path):
    err = _script_output(
        """
        logging.basicConfig(format="APP %(levelname)s %(message)s", level=logging.WARNING)
        logging.getLogger("trainers").setLevel(logging.INFO)
        ghost.train(CONFIG, run_id="app", results_dir=RESULTS)
        """,
        tmp_path,
    )
    assert "APP INFO Tennis. Step: " in err and "[INFO]" not in err


# -- what is active, said at start ---------------------------------------------------------------
def _settings(self_play: dict, **extra) -> object:
    options = options_from_dict({"behaviors": {"B": {**extra, "self_play": self_play}}})
    return options.behaviors["B"]


def test_the_preset_line_names_every_key_it_sets_and_the_ones_you_wrote():
    settings = _settings({"preset": "robust"}, hyperparameters={"magnet_rate": 0.1})
    assert preset_line("B", settings) == (
        "behaviors.B: self_play.preset 'robust' sets self_play.learn_from_latest = True, "
        "hyperparameters.magnet_strength = 0.3, hyperparameters.magnet_rate = 0.1 (yours; the "
        "preset's: 0.05)"
    )
    sac = _settings({"preset": "robust"}, trainer_type="sac")
    # SAC has no magnet: only the self-play key applies
    assert preset_line("B", sac) == (
        "behaviors.B: self_play.preset 'robust' sets self_play.learn_from_latest = True"
    )
    assert preset_line("B", _settings({})) is None


@pytest.mark.parametrize(
    ("self_play", "max_steps", "teams", "expected"),
    [
        (
            {"team_change": 1000, "league": {"main_exploiters": 1, "main_turns": 2}},
            2000, [0, 1],
            "league cannot start: the first exploiter turn comes after main_turns (2) turns of "
            "team_change (1000) steps = 2000 main-learner steps, and max_steps is 2000",
        ),
        (
            {"team_change": 1000, "league": {"main_exploiters": 2, "league_exploiters": 1}},
            4000, [0, 1],
            "league: only 1 of its 3 exploiters get a turn before max_steps (4000)",
        ),
        (
            {"league": {"main_exploiters": 1}}, 10**6, [0],
            "league has 1 exploiter(s), but the environment has a single team",
        ),
        (
            {"team_change": 1000, "fixed_opponents": [{"name": "m", "scripted": "medium"}],
             "evaluation": {"every_steps": 5000}},
            3000, [0, 1],
            "evaluation.every_steps (5000) is more than max_steps (3000)",
        ),
        (
            {"team_change": 1000, "evaluation": {}}, 10**6, [0, 1],
            "evaluation has no fixed opponent to play",
        ),
        (
            {"team_change": 1000, "play_against_latest_model_ratio": 1.0,
             "fixed_opponents": [{"name": "m", "scripted": "medium"}]},
            10**6, [0, 1],
            "fixed_opponents (m) are never played: play_against_latest_model_ratio is 1",
        ),
        (
            {"team_change": 5000}, 5000, [0, 1],
            "team_change (5000) is not below max_steps (5000)",
        ),
    ],
)  # fmt: skip
def test_settings_that_cannot_take_effect_are_named_with_why(self_play, max_steps, teams, expected):
    settings = _settings(self_play, max_steps=max_steps)
    [problem] = ineffective_settings("B", settings, teams=teams, single_team=len(teams) == 1)
    assert problem.startswith("behaviors.B.self_play.") and expected in problem


def test_settings_that_work_say_nothing_and_neither_does_inference(caplog):
    settings = _settings(
        {"team_change": 1000, "league": {"main_exploiters": 1, "main_turns": 2}}, max_steps=3001
    )
    assert ineffective_settings("B", settings, teams=[0, 1], single_team=False) == []
    ids = [BehaviorId("B", 0), BehaviorId("B", 1)]
    short = _settings({"team_change": 5000, "preset": "robust"}, max_steps=100)
    with caplog.at_level(logging.INFO, logger="ghost"):
        log_effects({"B": short}, ids, training=False)
    assert caplog.records == []


# -- a two-behavior run: the start-up lines and summaries in order -------------------------------
def test_strikers_vs_goalie_says_what_is_active_and_its_summaries_keep_time_order(tmp_path, caplog):
    behavior = {
        **TINY, "max_steps": 1200,
        "self_play": {**TINY["self_play"], "preset": "robust",
                      "league": {"main_exploiters": 1, "main_turns": 3}},
    }  # fmt: skip
    config = {
        "behaviors": {"Striker": behavior, "Goalie": behavior},
        "env_settings": {"env_path": "strikers_vs_goalie", "seed": 1},
    }
    for name in ("ghost", "trainers"):
        caplog.set_level(logging.INFO, logger=name)
    ghost.train(config, run_id="svg", results_dir=tmp_path)
    messages = [record.getMessage() for record in caplog.records]
    for name in ("Goalie", "Striker"):
        assert (
            f"behaviors.{name}: self_play.preset 'robust' sets self_play.learn_from_latest = "
            "True, hyperparameters.magnet_strength = 0.3, hyperparameters.magnet_rate = 0.05"
            in messages
        )
        assert any(
            m.startswith(f"behaviors.{name}.self_play.league cannot start") for m in messages
        )
    summaries = [
        re.match(r"(\w+)\. Step: (\d+)\. Time Elapsed: ([\d.]+) s\.", message)
        for message in messages
    ]
    rows = [(m[1], int(m[2]), float(m[3])) for m in summaries if m is not None]
    assert {name for name, _, _ in rows} == {"Goalie", "Striker"}
    times = [elapsed for _, _, elapsed in rows]
    assert times == sorted(times)  # one clock for every behavior
    for name in ("Goalie", "Striker"):
        steps = [step for who, step, _ in rows if who == name]
        assert steps == sorted(steps) and steps[-1] >= 1200


def test_summaries_due_in_one_round_are_logged_in_step_order(caplog):
    console = SummaryConsole()
    for step, line in [(4000, "Goalie 4000"), (2000, "Striker 2000"), (4000, "Striker 4000")]:
        console.add(step, line)
    with caplog.at_level(logging.INFO, logger="trainers.stats"):
        assert caplog.records == []
        console.flush()
        console.flush()  # nothing twice
    assert [r.getMessage() for r in caplog.records] == [
        "Striker 2000", "Goalie 4000", "Striker 4000"
    ]  # fmt: skip


# -- tables in natural order ---------------------------------------------------------------------
def test_payoff_columns_and_league_ties_in_natural_order():
    rates = WinRates(window=10)
    for opponent in ("snapshot-10", "snapshot-2", "latest", "snapshot-1"):
        rates.record(opponent, learner_version=0, score=1.0)
    header = rates.payoff_csv().splitlines()[0]
    assert header == "learner version,latest,snapshot-1,snapshot-2,snapshot-10"
    assert sorted(["a-10", "a-9", "b-1"], key=natural_key) == ["a-9", "a-10", "b-1"]
    names = ("snapshot-10", "snapshot-2", "snapshot-1")
    players = [TournamentPlayer(name=name, kind="snapshot", behavior="Tennis") for name in names]
    draws = [PairResult(a, b, 0, 2, 0, 0) for a, b in itertools.combinations(names, 2)]
    table = build_table(
        players, draws, game="tennis", run_dir="r", symmetric=True, games_per_pair=2
    )
    assert len({row.elo for row in table.rows}) == 1  # a tie: names decide
    assert [row.player.name for row in table.rows] == ["snapshot-1", "snapshot-2", "snapshot-10"]


# -- third-party noise ---------------------------------------------------------------------------
@pytest.fixture
def restore_noise_settings(monkeypatch):
    monkeypatch.delenv("TF_CPP_MIN_LOG_LEVEL", raising=False)
    monkeypatch.setattr(command_line, "_tf_level_set_here", False)


def test_third_party_noise_is_held_back_unless_debugging(restore_noise_settings):
    token = logging.getLogger("ray._private.authentication.authentication_token_setup")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        command_line.quiet_third_party(True)
        warnings.warn_explicit("chatter", UserWarning, "x.py", 1, module="torch.nn.modules")
        warnings.warn_explicit("ours", UserWarning, "x.py", 1, module="trainers.ppo")
        assert [str(w.message) for w in caught] == ["ours"]
        assert token.level == logging.ERROR and os.environ["TF_CPP_MIN_LOG_LEVEL"] == "2"
        command_line.quiet_third_party(False)  # debug: true found in the YAML afterwards
        warnings.warn_explicit("chatter", UserWarning, "x.py", 1, module="torch.nn.modules")
        assert [str(w.message) for w in caught] == ["ours", "chatter"]
    assert token.level == logging.NOTSET and "TF_CPP_MIN_LOG_LEVEL" not in os.environ
