"""The league's pictures: the payoff heatmap and the ratings with their intervals
(``ghost.evaluation.pictures``, ``ghost-eval league --plots``, ``ghost-eval report``)."""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from matplotlib.container import ErrorbarContainer
from PIL import Image

from ghost.core.ratings import elo_expected
from ghost.evaluation import pictures
from ghost.evaluation.cli import main
from ghost.evaluation.pictures import (
    TournamentView,
    draw_payoffs,
    draw_ratings,
    missing_matplotlib,
    write_tournament_pictures_into,
)
from ghost.evaluation.report import read_tournament_result, tournament_result_path
from ghost.evaluation.tournament import TournamentTable, build_table
from ghost.evaluation.tournament_players import FINAL, SCRIPTED, SNAPSHOT, TournamentPlayer
from ghost.evaluation.tournament_ratings import PairResult
from ghost.exceptions import GhostError
from tests.test_league import tennis_run  # noqa: F401  (the fixture: a tiny tennis run)
from tests.test_replay import write_fake_run

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def synthetic_table(snapshots: int = 3, games: int = 20, seed: int = 0) -> TournamentTable:
    """A symmetric league of ``snapshots`` snapshots, a final policy and two scripted levels,
    every pair's games drawn from the Elo model (draws and interrupted games included)."""
    rng = np.random.default_rng(seed)
    players = [
        TournamentPlayer(name=f"snapshot-{i}", kind=SNAPSHOT, behavior="Tennis", step=1000 * i)
        for i in range(snapshots)
    ]
    players.append(
        TournamentPlayer(name="final", kind=FINAL, behavior="Tennis", step=1000 * snapshots)
    )
    players += [
        TournamentPlayer(name=level, kind=SCRIPTED, behavior="Tennis", level=level)
        for level in ("medium", "strong")
    ]
    strength = {p.name: 1100.0 + 30.0 * i for i, p in enumerate(players)}
    strength.update(medium=1150.0, strong=1400.0)
    results = []
    for i, a in enumerate(players):
        for b in players[i + 1 :]:
            draws = int(rng.integers(0, 3))
            wins = min(
                games - draws,
                int(rng.binomial(games, elo_expected(strength[a.name], strength[b.name]))),
            )
            results.append(PairResult(a.name, b.name, wins, draws, games - wins - draws, i % 2))
    return build_table(
        players, results, game="tennis", run_dir="results/synthetic", symmetric=True,
        games_per_pair=games,
    )  # fmt: skip


def assert_png(path: Path) -> tuple[int, int]:
    with Image.open(path) as image:
        assert image.format == "PNG"
        colours = image.convert("RGB").getcolors(maxcolors=1 << 20)
        assert colours is not None and len(colours) > 10  # something was drawn
        return image.size


def intervals_drawn(axis) -> list[tuple[float, float, float, float]]:
    """``(x, value, low, high)`` of every point with an error bar on ``axis``."""
    points = []
    for container in axis.containers:
        assert isinstance(container, ErrorbarContainer)
        line, _, (bars,) = container.lines
        for x, y, segment in zip(*line.get_data(), bars.get_segments(), strict=True):
            (_, low), (_, high) = segment
            points.append((float(x), float(y), float(low), float(high)))
    return sorted(points)


# -- the data the pictures show ----------------------------------------------------------------
def test_the_heatmap_shows_the_computed_payoffs_best_elo_first():
    table = synthetic_table()
    figure = draw_payoffs(TournamentView.from_table(table))
    axis = figure.axes[0]
    shown = axis.images[0].get_array()
    expected = table.score_matrix()
    assert shown.shape == expected.shape == (6, 6)
    np.testing.assert_array_equal(np.ma.getmaskarray(shown), np.isnan(expected))
    np.testing.assert_allclose(shown.filled(np.nan), expected)
    # one cell by hand, counted from the row player's side, interrupted games left out
    rows = [row.player.name for row in table.rows]
    r = table.results[0]
    i, j = rows.index(r.player), rows.index(r.opponent)
    assert shown[i, j] == pytest.approx((r.wins + 0.5 * r.draws) / r.decided)
    assert shown[j, i] == pytest.approx((r.losses + 0.5 * r.draws) / r.decided)
    assert [t.get_text().split(" (")[0] for t in axis.get_yticklabels()] == rows
    assert [t.get_text() for t in axis.get_xticklabels()] == rows
    # centred at 0.5 on a diverging scale, with a colour bar
    norm = axis.images[0].norm
    assert (norm.vmin, norm.vcenter, norm.vmax) == (0.0, 0.5, 1.0)
    assert len(figure.axes) == 2
    # every pair that met is annotated with its score and games
    texts = [t.get_text() for t in axis.texts]
    assert len(texts) == np.isfinite(expected).sum()
    assert f"{shown[i, j]:.2f}\n{r.decided}" in texts


def test_annotations_thin_out_and_stop_in_a_big_league():
    medium = draw_payoffs(TournamentView.from_table(synthetic_table(snapshots=10)))  # 13 players
    texts = [t.get_text() for t in medium.axes[0].texts]
    assert len(texts) == 13 * 12 and all("\n" not in text for text in texts)  # scores only
    big = TournamentView.from_table(synthetic_table(snapshots=37, games=4))  # 40 players
    figure = draw_payoffs(big)
    assert figure.axes[0].images[0].get_array().shape == (40, 40)
    assert len(figure.axes[0].texts) == 0


def test_an_asymmetric_heatmap_is_one_side_against_the_other():
    players = [
        TournamentPlayer(name=f"{side}/{level}", kind=SCRIPTED, behavior=side, level=level)
        for side in ("Striker", "Goalie")
        for level in ("medium", "strong", "weak")
    ]
    results = [
        PairResult(a.name, b.name, 3 + k, 1, 6 - k)
        for k, (a, b) in enumerate((a, b) for a in players[:3] for b in players[3:])
    ]
    table = build_table(
        players, results, game="strikers_vs_goalie", run_dir="svg", symmetric=False,
        games_per_pair=10,
    )  # fmt: skip
    view = TournamentView.from_table(table)
    rows, cols, score, games = view.payoffs()
    assert {name.split("/")[0] for name in rows} == {"Striker"}
    assert {name.split("/")[0] for name in cols} == {"Goalie"}
    assert score.shape == (3, 3) and np.all(games == 10)
    full = table.score_matrix()
    names = [row.player.name for row in table.rows]
    for i, a in enumerate(rows):
        for j, b in enumerate(cols):
            assert score[i, j] == full[names.index(a), names.index(b)]
    shown = draw_payoffs(view).axes[0].images[0].get_array()
    np.testing.assert_allclose(shown, score)


def test_the_ratings_picture_has_every_player_inside_its_intervals():
    table = synthetic_table()
    view = TournamentView.from_table(table)
    groups = view.rating_order()
    # the run's players by training step, then the scripted levels best Elo first
    assert [[p.name for p in group] for group in groups] == [
        ["snapshot-0", "snapshot-1", "snapshot-2", "final"],
        ["strong", "medium"],
    ]
    order = [p.name for group in groups for p in group]
    figure = draw_ratings(view)
    elo_axis, skill_axis = figure.axes
    elo_points = intervals_drawn(elo_axis)
    skill_points = intervals_drawn(skill_axis)
    assert len(elo_points) == len(skill_points) == len(order)
    for (x, elo, low, high), (_, mu, s_low, s_high) in zip(elo_points, skill_points, strict=True):
        row = table.row(order[int(x)])
        assert low < elo < high and s_low < mu < s_high
        assert elo == pytest.approx(row.elo)
        assert high - elo == pytest.approx(row.elo_ci95)
        assert mu == pytest.approx(row.openskill.mu)
        assert s_high - mu == pytest.approx(2 * row.openskill.sigma)
    labels = [t.get_text() for t in skill_axis.get_xticklabels()]
    assert labels[:4] == ["snapshot-0 @0", "snapshot-1 @1,000", "snapshot-2 @2,000", "final @3,000"]
    assert labels[4:] == ["strong", "medium"]


def test_a_player_without_games_has_no_interval():
    table = synthetic_table()
    data = table.to_dict()
    data["players"].append({**data["players"][0], "player": "idle", "elo_ci95": None, "step": None})
    figure = draw_ratings(TournamentView.from_dict(data))
    assert len(intervals_drawn(figure.axes[0])) == len(table.rows)  # idle: a hollow marker only
    with pytest.raises(GhostError, match="not a tournament result"):
        TournamentView.from_dict({"players": []})


def test_the_pictures_are_pngs_and_read_from_the_json_form(tmp_path):
    table = synthetic_table()
    written = write_tournament_pictures_into(
        json.loads(json.dumps(table.to_dict())), tmp_path / "p"
    )
    assert [path.name for path in written] == [pictures.PAYOFFS_FILE, pictures.RATINGS_FILE]
    for path in written:
        width, height = assert_png(path)
        assert 500 <= width <= 2000 and 400 <= height <= 2000


def test_pictures_import_no_torch():
    source = Path(pictures.__file__).read_text(encoding="utf-8")
    imported = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module or "")
    assert not any(name.split(".")[0] in ("torch", "trainers") for name in imported)
    assert "matplotlib.pyplot" not in imported  # the Agg canvas, never pyplot's backend


# -- the commands ------------------------------------------------------------------------------
def test_cli_league_draws_both_pictures_and_keeps_the_result(
    tennis_run,  # noqa: F811
    tmp_path,
    capsys,
):
    plots = tmp_path / "plots"
    argv = ["league", str(tennis_run), "--games-per-pair", "4", "--quiet", "--plots", str(plots)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "tennis tournament of" in out and "score of the row player" in out  # the tables
    assert f"pictures: {plots / pictures.PAYOFFS_FILE}" in out
    for name in (pictures.PAYOFFS_FILE, pictures.RATINGS_FILE):
        assert_png(plots / name)
    kept = json.loads(tournament_result_path(tennis_run).read_text())
    view = TournamentView.from_dict(kept)
    assert len(view.players) == 5  # two snapshots, the final policy, two fixed opponents
    # the matrix shown is the one the league computed, from the kept result as from a fresh one
    shown = draw_payoffs(view).axes[0].images[0].get_array()
    names = [p.name for p in view.players]
    results = [PairResult(**r) for r in kept["results"]]
    for r in results:
        i, j = names.index(r.player), names.index(r.opponent)
        assert shown[i, j] == pytest.approx((r.wins + 0.5 * r.draws) / r.decided)
    for _, elo, low, high in intervals_drawn(draw_ratings(view).axes[0]):
        assert low < elo < high
    # the run's report draws them beside its curves
    write_fake_run(tennis_run)  # TensorBoard curves for the report
    assert main(["report", str(tennis_run), str(tmp_path / "run.png"), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["league_pictures"] == [
        str(tmp_path / "run-tournament-payoffs.png"),
        str(tmp_path / "run-tournament-ratings.png"),
    ]
    for path in [data["report"], *data["league_pictures"]]:
        assert_png(Path(path))


def test_a_report_without_a_league_draws_only_the_curves(tmp_path, capsys):
    write_fake_run(tmp_path / "run")
    assert main(["report", str(tmp_path / "run"), str(tmp_path / "run.png")]) == 0
    assert capsys.readouterr().out.strip() == f"report: {tmp_path / 'run.png'}"
    assert sorted(p.name for p in tmp_path.glob("*.png")) == ["run.png"]


def test_without_matplotlib_the_league_says_how_and_still_prints_tables(
    tennis_run,  # noqa: F811
    tmp_path,
    monkeypatch,
    capsys,
):
    for module in ("matplotlib", "matplotlib.figure", "matplotlib.backends.backend_agg"):
        monkeypatch.setitem(sys.modules, module, None)  # import fails as if not installed
    assert ".[plots]" in missing_matplotlib()
    with pytest.raises(GhostError, match=r"needs matplotlib: pip install matplotlib"):
        write_tournament_pictures_into(synthetic_table().to_dict(), tmp_path / "p")
    plots = tmp_path / "plots"
    argv = ["league", str(tennis_run), "--games-per-pair", "2", "--quiet", "--plots", str(plots)]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert "tennis tournament of" in out and "pictures:" not in out
    notes = [line for line in err.splitlines() if "matplotlib" in line]
    assert len(notes) == 1 and 'pip install ".[plots]"' in notes[0]
    assert not plots.exists()


def test_an_unreadable_kept_league_is_one_line(tmp_path, capsys):
    write_fake_run(tmp_path / "run")
    path = tournament_result_path(tmp_path / "run")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{not json")
    assert main(["report", str(tmp_path / "run"), str(tmp_path / "run.png")]) == 2
    err = capsys.readouterr().err
    assert "is not a tournament result" in err and "Traceback" not in err


def test_a_plots_folder_that_cannot_be_made_is_said_before_the_games(
    tennis_run,  # noqa: F811
    tmp_path,
    capsys,
):
    (tmp_path / "taken").write_text("a file, not a folder")
    argv = ["league", str(tennis_run), "--plots", str(tmp_path / "taken"), "--quiet"]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert "--plots" in err and "cannot make that folder" in err and "Traceback" not in err
    assert out == ""  # no games were played


def test_a_run_with_only_the_former_league_file_is_still_read(tmp_path):
    write_fake_run(tmp_path / "run")
    legacy = tournament_result_path(tmp_path / "run").with_name("league.json")
    legacy.parent.mkdir(parents=True, exist_ok=True)
    legacy.write_text(json.dumps(synthetic_table().to_dict()))
    assert read_tournament_result(tmp_path / "run") == json.loads(legacy.read_text())
