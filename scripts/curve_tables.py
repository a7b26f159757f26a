"""Tables and plots of ``scripts/learning_curves.py``'s rows: per step, each trainer's median
over seeds beside each seed's value, and each run's wall time."""

from __future__ import annotations

import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any


def _order(trainer: str) -> int:
    """Ours first, ours with ML-Agents' settings next, ML-Agents last."""
    return list(LABELS).index(trainer) if trainer in LABELS else len(LABELS)


LABELS = {
    "ours": "ours",
    "ours-mlagents-settings": "ours, ML-Agents' settings",
    "mlagents": "ML-Agents",
}
_GROUP = ("game", "mode", "opponent", "budget", "behavior", "yardstick", "games", "eval_seed")


def _cell(values: dict[int, float], seeds: list[int], digits: int = 2) -> str:
    if not values:
        return "–"
    listed = ", ".join(f"{values[s]:.{digits}f}" if s in values else "–" for s in seeds)
    return f"{statistics.median(values.values()):.{digits}f} [{listed}]"


def _groups(rows: list[dict[str, Any]]) -> dict[tuple, list[dict[str, Any]]]:
    groups: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        if row.get("kind") == "score":
            groups[tuple(row.get(field) for field in _GROUP)].append(row)
    return dict(sorted(groups.items(), key=lambda item: tuple(str(v) for v in item[0])))


def _walls(rows: list[dict[str, Any]], game: str, mode: str, opponent: Any, budget: int) -> str:
    walls: dict[str, dict[int, float]] = defaultdict(dict)
    codes = set()
    for row in rows:
        if row.get("kind") == "run" and (row["game"], row["mode"], row.get("opponent"),
                                         row["budget"]) == (game, mode, opponent, budget):  # fmt: skip
            walls[row["trainer"]][row["seed"]] = row["wall_s"]
            codes.add(row.get("code") or "not recorded")
    parts = [
        f"{LABELS.get(trainer, trainer)} {_cell(by_seed, sorted(by_seed), digits=0)}"
        for trainer, by_seed in sorted(walls.items(), key=lambda item: _order(item[0]))
    ]
    code = f"; code: {', '.join(sorted(codes))}" if codes else ""
    return (
        "wall time per run (s, median [per seed]): " + ("; ".join(parts) or "none recorded") + code
    )


def summarize(
    rows: list[dict[str, Any]], *, metric: str = "score", notes: dict[str, str] | None = None
) -> str:
    """A markdown table per game, mode, behavior and yardstick: step × trainer, ``metric``'s
    median over seeds and each seed's value."""
    lines: list[str] = []
    for key, group in _groups(rows).items():
        game, mode, opponent, budget, behavior, yardstick, games, eval_seed = key
        trainers = sorted({r["trainer"] for r in group}, key=_order)
        seeds = sorted({r["seed"] for r in group})
        values: dict[tuple[int, str], dict[int, float]] = defaultdict(dict)
        for row in group:
            values[(row["nominal"], row["trainer"])][row["seed"]] = row[metric]
        against = f" (trained against {opponent})" if opponent else ""
        lines += [
            f"### {game}, {mode}{against}: {behavior} against `{yardstick}`",
            "",
            f"{metric} of the greedy policy, {games} games, evaluation seed {eval_seed}; budget "
            f"{budget:,} steps; seeds {', '.join(map(str, seeds))}"
            + (f". Note: {notes[game]}" if notes and notes.get(game) else ""),
            "",
            "| step | "
            + " | ".join(f"{LABELS.get(t, t)} median [per seed]" for t in trainers)
            + " |",
            "|---:|" + "---|" * len(trainers),
        ]
        for nominal in sorted({r["nominal"] for r in group}):
            cells = [_cell(values.get((nominal, t), {}), seeds) for t in trainers]
            lines.append(f"| {nominal:,} | " + " | ".join(cells) + " |")
        lines += ["", _walls(rows, game, mode, opponent, budget), ""]
    return "\n".join(lines) if lines else "no score rows yet"


def plot_curves(rows: list[dict[str, Any]], path: Path, *, metric: str = "score") -> None:
    """One panel per table of ``summarize``: each trainer's median (thick) and seeds (thin)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = _groups(rows)
    if not groups:
        return
    columns = min(len(groups), 2)
    count = (len(groups) + columns - 1) // columns
    figure, axes = plt.subplots(count, columns, figsize=(6 * columns, 3.6 * count), squeeze=False)
    colors = {"ours": "tab:blue", "ours-mlagents-settings": "tab:green", "mlagents": "tab:orange"}
    for axis, (key, group) in zip(axes.flat, groups.items(), strict=False):
        game, mode, opponent, _, behavior, yardstick, _, _ = key
        for trainer in sorted({r["trainer"] for r in group}):
            mine = [r for r in group if r["trainer"] == trainer]
            steps = sorted({r["nominal"] for r in mine})
            for seed in sorted({r["seed"] for r in mine}):
                points = sorted((r["nominal"], r[metric]) for r in mine if r["seed"] == seed)
                axis.plot(*zip(*points, strict=True), color=colors.get(trainer), alpha=0.25, lw=1)
            medians = [
                statistics.median(r[metric] for r in mine if r["nominal"] == s) for s in steps
            ]
            axis.plot(
                steps,
                medians,
                color=colors.get(trainer),
                lw=2.5,
                label=LABELS.get(trainer, trainer),
            )
        against = f" vs {opponent}" if opponent else ""
        axis.set_title(f"{game} {mode}{against}: {behavior} against {yardstick}", fontsize=9)
        axis.set_xlabel("trainer steps")
        axis.set_ylabel(metric)
        axis.set_ylim(-0.02, 1.02)
        axis.legend(fontsize=8)
    for axis in list(axes.flat)[len(groups) :]:
        axis.set_visible(False)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def take_off_steps(rows: list[dict[str, Any]], *, level: str) -> dict[tuple, dict[str, Any]]:
    """Per run (game, mode, behavior, trainer, seed): its **take-off step**, the first checkpoint
    from which the score against ``level`` stays positive (more wins than losses at it and at
    every later checkpoint), or None when it never does within the budget."""
    curves: dict[tuple, dict[int, int]] = defaultdict(dict)
    budgets: dict[tuple, int] = {}
    for row in rows:
        if row.get("kind") != "score" or row["yardstick"] != level:
            continue
        run = (row["game"], row["mode"], row["behavior"], row["trainer"], row["seed"])
        curves[run][row["nominal"]] = row["wins"] - row["losses"]
        budgets[run] = row["budget"]
    found: dict[tuple, dict[str, Any]] = {}
    for run, curve in curves.items():
        steps = sorted(curve)
        take_off = None
        for index, step in enumerate(steps):
            if all(curve[later] > 0 for later in steps[index:]):
                take_off = step
                break
        found[run] = {"take_off": take_off, "budget": budgets[run]}
    return found


def take_off_table(rows: list[dict[str, Any]], *, level: str) -> str:
    """A markdown table: per game, behavior and trainer, each seed's take-off step and the median
    (a run that never took off counts as its budget, marked ``>``)."""
    found = take_off_steps(rows, level=level)
    by_trainer: dict[tuple, dict[int, dict[str, Any]]] = defaultdict(dict)
    for (game, mode, behavior, trainer, seed), value in found.items():
        by_trainer[(game, mode, behavior, trainer)][seed] = value
    lines = [
        f"take-off against `{level}`: the first checkpoint from which wins outnumber losses at "
        "every later checkpoint",
        "",
        "| game | behavior | trainer | take-off per seed | median | never took off |",
        "|---|---|---|---|---|---|",
    ]
    for (game, mode, behavior, trainer), seeds in sorted(
        by_trainer.items(), key=lambda item: (item[0][:3], _order(item[0][3]))
    ):
        counted = [
            v["take_off"] if v["take_off"] is not None else v["budget"] for v in seeds.values()
        ]
        cells = ", ".join(
            f"{seed}: {v['take_off']:,}"
            if v["take_off"] is not None
            else f"{seed}: >{v['budget']:,}"
            for seed, v in sorted(seeds.items())
        )
        never = sum(v["take_off"] is None for v in seeds.values())
        lines.append(
            f"| {game} ({mode}) | {behavior} | {LABELS.get(trainer, trainer)} | {cells} | "
            f"{statistics.median(counted):,.0f} | {never} of {len(seeds)} |"
        )
    return "\n".join(lines)
