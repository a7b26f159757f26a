"""Imitation studies on volley or tennis: GAIL with no extrinsic reward, and take-off with cloning.

**The games.** ``--game`` (default ``volley``) picks a row of ``GAMES``: the game's behavior,
the scripted level that demonstrates, the level it plays (the ``opponent``: the demonstrator is
recorded against it, the learner trains against it in ``gail`` and take-off is measured against
it), the demonstrations' file and each study's yardsticks:

- volley: ``strong`` demonstrates against ``medium``; yardsticks ``weak``, ``medium``,
  ``strong`` (``gail``), ``medium``, ``strong`` (``take_off``), ``medium`` (``clone``). A point
  is won by ending the rally, so GAIL's positive reward per step pays for rallies, not points;
- tennis: ``medium`` demonstrates against ``weak``; yardsticks ``weak``, ``medium``. A point is
  won by outlasting the other player, so a longer rally is the right behaviour there.

**The demonstrations.** ``record`` plays the demonstrator (team 0) against the opponent (team 1)
and records ``--episodes`` of the demonstrator's episodes into ``StudyGame.demo`` (under
``--work``) with ``envs.demo_recorder.record_demo`` (``docs/benchmarks.md`` has volley's figures).

**Study ``gail``** (mode ``fixed``): plain PPO on ``envs.versus_scripted:<game>_vs_<opponent>``
(the scripted opponent plays the other side inside the environment; no self-play), from the
game's shipped config (``config/<game>.yaml``) sized to the budget, in three arms:

- ``gail``: ``reward_signals: {gail: {demo_path}}`` with GAIL's defaults and no ``extrinsic``
  (ML-Agents' pure imitation): no reward from the game at all. Leaving ``extrinsic`` out trains
  exactly as ``extrinsic.strength: 0`` (the same weights for the same seed);
- ``extrinsic``: the game's reward only, as shipped;
- ``no-reward``: ``extrinsic.strength: 0`` and nothing else, the control.

**Study ``take_off``** (mode ``selfplay``): self-play as ``ghost-learn --env <game>`` ships it
(``preset: auto``), and the same plus ``behavioral_cloning: {demo_path, strength: 0.5, steps:
budget / 4}`` (arm ``selfplay+bc``; the other ``selfplay+bc-*`` arms vary the cloning).

**Scoring.** As ``scripts/learning_curves.py``: a checkpoint every eighth of the budget, each
played greedily for ``--games`` games (one per arena) against the study's yardsticks
(evaluation seed 1); rows in its format, in ``WORK/<study>.jsonl`` (both games' rows in one
file, each naming its game), so ``scripts/curve_tables.py`` prints the curves and the take-off
steps (the first checkpoint from which wins outnumber losses against the opponent at every later
checkpoint). ``reference`` rows hold the demonstrator's own score the same way. Volley's run
folders are ``WORK/<study>-<arm>-s<seed>-b<budget>``; another game's carry its name in front.

**Cloning alone** (``clone``): the trainer's own cloning (``trainers.behavioral_cloning``, strength
1, so the step size is the config's learning rate, never falling) trains a fresh policy of the
config's network on the demonstrations alone, no reinforcement learning; after each of
``--updates`` cloning updates (3 passes over the demonstrations each) its greedy policy plays the
yardsticks as the checkpoints do. It tells how much cloning these demonstrations need before the
clone plays like the demonstrator.

Each run trains in a ``ghost-learn`` process of its own (one torch thread), seeds in sequence;
the scoring process also uses one thread. A rerun skips runs and rows already in the study's
file and restarts from scratch (``--force``) a run whose training did not finish. ``summary``
prints one game's tables (``--game``)::

    python scripts/demo_studies.py record
    python scripts/demo_studies.py gail --seeds 0 1 2 --budget 2000000
    python scripts/demo_studies.py take_off --seeds 0 1 2 3 4 --budget 1000000
    python scripts/demo_studies.py clone --seeds 0 1 2 --updates 0 30 100 300 1000
    python scripts/demo_studies.py summary
    python scripts/demo_studies.py gail --game tennis --seeds 0 1 2 --budget 500000
    python scripts/demo_studies.py summary --game tennis
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import learning_curves as curves  # noqa: E402
from curve_tables import summarize, take_off_table  # noqa: E402

#: the one cloning setting tried: half the trainer's step size, falling to 0 over a quarter of
#: the budget
BC_STRENGTH = 0.5
BC_SHARE = 0.25

Edit = Callable[[dict[str, Any], str, int], None]


def _keep(settings: dict[str, Any], demo: str, budget: int) -> None:
    """The config as shipped."""


def _no_reward(settings: dict[str, Any], demo: str, budget: int) -> None:
    settings["reward_signals"]["extrinsic"]["strength"] = 0.0


def _gail_only(settings: dict[str, Any], demo: str, budget: int) -> None:
    settings["reward_signals"] = {"gail": {"gamma": 0.99, "strength": 1.0, "demo_path": demo}}


def _with_cloning(settings: dict[str, Any], demo: str, budget: int) -> None:
    settings["behavioral_cloning"] = {
        "demo_path": demo,
        "strength": BC_STRENGTH,
        "steps": int(budget * BC_SHARE),
        "continuous_loss": "sample",
    }


def _with_long_cloning(settings: dict[str, Any], demo: str, budget: int) -> None:
    """Cloning sized from the ``clone`` study, which needed 300 to 1,000 of its updates (3 passes
    at batch 512) before a clone played like the demonstrator: full step size falling to 0 over
    half the budget, 10 passes at batch 64 per update, about 25 times the first setting's
    gradient steps per update."""
    settings["behavioral_cloning"] = {
        "demo_path": demo, "strength": 1.0, "steps": budget // 2, "batch_size": 64,
        "num_epoch": 10, "continuous_loss": "sample",
    }  # fmt: skip


def _with_cloning_on_mean(settings: dict[str, Any], demo: str, budget: int) -> None:
    """The first cloning setting, its loss on the policy's mean action (the spread left alone)."""
    _with_cloning(settings, demo, budget)
    settings["behavioral_cloning"]["continuous_loss"] = "mean"


def _with_long_cloning_on_mean(settings: dict[str, Any], demo: str, budget: int) -> None:
    """The long cloning setting, its loss on the policy's mean action."""
    _with_long_cloning(settings, demo, budget)
    settings["behavioral_cloning"]["continuous_loss"] = "mean"


@attrs.frozen(kw_only=True)
class Arm:
    """One arm of a study: how its runs train and what its config changes."""

    study: str
    mode: str
    edit: Edit


ARMS: dict[str, Arm] = {
    "gail": Arm(study="gail", mode="fixed", edit=_gail_only),
    "extrinsic": Arm(study="gail", mode="fixed", edit=_keep),
    "no-reward": Arm(study="gail", mode="fixed", edit=_no_reward),
    "selfplay": Arm(study="take_off", mode="selfplay", edit=_keep),
    "selfplay+bc": Arm(study="take_off", mode="selfplay", edit=_with_cloning),
    "selfplay+bc-long": Arm(study="take_off", mode="selfplay", edit=_with_long_cloning),
    "selfplay+bc-mean": Arm(study="take_off", mode="selfplay", edit=_with_cloning_on_mean),
    "selfplay+bc-long-mean": Arm(
        study="take_off", mode="selfplay", edit=_with_long_cloning_on_mean
    ),
}
STUDIES = ("gail", "take_off")
#: what ``summary`` reads of each study's TensorBoard logs, per arm at every checkpoint
TRAINING_TAGS = {
    "gail": ["Environment/Cumulative Reward", "Environment/Episode Length", "Policy/GAIL Reward",
             "Policy/GAIL Expert Estimate", "Policy/GAIL Policy Estimate", "Policy/Entropy"],
    "take_off": ["Policy/Entropy", "Losses/Pretraining Loss"],
}  # fmt: skip


@attrs.frozen(kw_only=True)
class StudyGame:
    """A game the studies run on: who demonstrates, against whom, and the yardsticks.

    Attributes:
        behavior: the game's behavior name (both teams').
        demonstrator: the scripted level recorded as the demonstrations.
        opponent: the scripted level the demonstrator plays while recorded, the learner trains
            against in ``gail`` and take-off is measured against.
        demo: the demonstrations' file name under ``--work``.
        yardsticks: study (``gail``, ``take_off``, ``clone``) → the levels each checkpoint plays.
    """

    behavior: str
    demonstrator: str
    opponent: str
    demo: str
    yardsticks: dict[str, tuple[str, ...]]

    def levels(self) -> set[str]:
        """Every scripted level the studies of this game name."""
        named = {self.demonstrator, self.opponent}
        return named.union(*self.yardsticks.values())


GAMES: dict[str, StudyGame] = {
    "volley": StudyGame(
        behavior="Volley", demonstrator="strong", opponent="medium",
        demo="volley_strong_vs_medium.demo",
        yardsticks={"gail": ("weak", "medium", "strong"), "take_off": ("medium", "strong"),
                    "clone": ("medium",)},
    ),
    # a point is a rally, so a longer rally is the right behaviour: GAIL's per-step reward and
    # the game's agree more than on volley
    "tennis": StudyGame(
        behavior="Tennis", demonstrator="medium", opponent="weak",
        demo="tennis_medium_vs_weak.demo",
        yardsticks={"gail": ("weak", "medium"), "take_off": ("weak", "medium"),
                    "clone": ("weak", "medium")},
    ),
}  # fmt: skip
#: the game whose run folders carry no game name (the studies' first game)
FIRST_GAME = "volley"


@attrs.frozen(kw_only=True)
class Run:
    """One training run of an arm."""

    arm: str
    seed: int
    budget: int
    game: str = FIRST_GAME

    @property
    def mode(self) -> str:
        return ARMS[self.arm].mode

    @property
    def opponent(self) -> str | None:
        """The scripted level trained against (``fixed`` mode), else None."""
        return GAMES[self.game].opponent if self.mode == "fixed" else None

    @property
    def key(self) -> dict[str, Any]:
        """The fields that identify its rows (``learning_curves``' names: the arm is the
        ``trainer``)."""
        return {"game": self.game, "mode": self.mode, "trainer": self.arm, "seed": self.seed,
                "budget": self.budget, "opponent": self.opponent}  # fmt: skip

    @property
    def interval(self) -> int:
        return max(self.budget // curves.CHECKPOINTS, 1)

    def folder(self, work: Path) -> Path:
        """The run's folder under ``work``: the first game's without the game's name, as
        written before there were others."""
        name = f"{ARMS[self.arm].study}-{self.arm}-s{self.seed}-b{self.budget}"
        return work / (name if self.game == FIRST_GAME else f"{self.game}-{name}")


def run_config(run: Run, demo: Path) -> dict[str, Any]:
    """The game's shipped config sized as ``learning_curves`` sizes it, the arm's edit applied."""
    base = curves.Run(game=run.game, mode=run.mode, trainer="ours", seed=run.seed,
                      budget=run.budget, opponent=run.opponent)  # fmt: skip
    config = copy.deepcopy(curves.run_config(base))
    for settings in config["behaviors"].values():
        ARMS[run.arm].edit(settings, str(demo), run.budget)
    return config


# -- recording -----------------------------------------------------------------------------------
def record(args: argparse.Namespace) -> Path:
    """Record the demonstrator's episodes of ``--game`` (kept if they are there already).

    Args:
        args: the parsed flags (``game``, ``work``, ``episodes``, ``record_seed``).

    Returns:
        The demonstrations' file, ``StudyGame.demo`` under ``--work``.
    """
    from envs.demo_files import read_demos
    from envs.demo_recorder import record_demo
    from envs.games import make_game, scripted_policy

    game = GAMES[args.game]
    path = args.work / game.demo
    if not path.is_file():
        args.work.mkdir(parents=True, exist_ok=True)
        env = make_game(args.game, num_arenas=8, seed=args.record_seed)
        seed = args.record_seed
        players = {
            f"{game.behavior}?team=0": scripted_policy(args.game, game.demonstrator, seed=seed + 1),
            f"{game.behavior}?team=1": scripted_policy(args.game, game.opponent, seed=seed + 2),
        }
        try:
            record_demo(env, players, path=path, behavior_name=game.behavior, team=0,
                        episodes=args.episodes)  # fmt: skip
        finally:
            env.close()
    demo = read_demos(path)
    # a point's last reward is +-1; an interrupted rally's can be a small hit bonus
    wins = int((demo.rewards[demo.done] > 0.5).sum())
    curves.log(f"{path}: {demo.episodes} episodes, {demo.steps} steps, {wins} won")
    return path


# -- training and scoring ------------------------------------------------------------------------
def train(run: Run, folder: Path, demo: Path) -> dict[str, Any] | None:
    """Train ``run`` into ``folder`` unless it already was; its record, or None if it failed."""
    record_path = folder / "trained.json"
    if record_path.is_file():
        return json.loads(record_path.read_text())
    folder.mkdir(parents=True, exist_ok=True)
    config_path = folder / "config.yaml"
    config_path.write_text(yaml.safe_dump(run_config(run, demo), sort_keys=False))
    command = [sys.executable, "-c", "from ghost.running.cli import main; main()",
               str(config_path), "--run-id", "run", "--results-dir", str(folder / "ours"),
               "--seed", str(run.seed), "--force"]  # fmt: skip
    curves.log(f"training {describe(run)}")
    start = time.perf_counter()
    with (folder / "train.log").open("w") as output:
        done = subprocess.run(command, cwd=ROOT, stdout=output, stderr=subprocess.STDOUT)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        tail = (folder / "train.log").read_text().splitlines()[-15:]
        curves.log(f"FAILED ({done.returncode}) {describe(run)}:\n  " + "\n  ".join(tail))
        return None
    record = {"wall_s": round(wall, 1), "finished": time.time(), "code": curves.code_version()}
    record_path.write_text(json.dumps(record))
    curves.log(f"trained {describe(run)} in {wall:.0f} s")
    return record


def play(game: str, policy: Any, level: str, games: int, eval_seed: int) -> dict[str, Any]:
    """``policy`` (a policy file, a scripted level or a policy object) greedily against
    ``level`` on ``game``, on team 0's side."""
    from ghost.play.head_to_head import evaluate

    result = evaluate(game=game, policy=policy, opponent=level, episodes=games, seed=eval_seed,
                      deterministic=True, side=GAMES[game].behavior,
                      num_arenas=min(games, curves.MAX_ARENAS))  # fmt: skip
    n = result.episodes
    return {
        "score": round((result.wins + 0.5 * (result.draws + result.interrupted)) / n, 4),
        "win_rate": round(result.wins / n, 4),
        "wins": result.wins, "draws": result.draws, "losses": result.losses,
        "interrupted": result.interrupted, "games": n, "eval_seed": eval_seed,
    }  # fmt: skip


def measure(run: Run, args: argparse.Namespace, demo: Path, done: set[tuple]) -> None:
    """Train ``run``, score each checkpoint against each yardstick not yet in ``--out``, then
    write its run row."""
    if curves.row_key({"kind": "run", **run.key}) in done:
        return
    folder = run.folder(args.work)
    record = train(run, folder, demo)
    if record is None:
        return
    game = GAMES[run.game]
    files = folder / "ours" / "run" / game.behavior / "checkpoints"
    found = {int(p.stem.rsplit("-", 1)[1]): p for p in files.glob(f"{game.behavior}-*.pt")}
    chosen = curves.by_nominal(found, run.interval)
    for nominal, (step, path) in chosen.items():
        for level in game.yardsticks[ARMS[run.arm].study]:
            row = {"kind": "score", **run.key, "nominal": nominal, "step": step,
                   "behavior": game.behavior, "yardstick": level, "games": args.games,
                   "eval_seed": args.eval_seed}  # fmt: skip
            if curves.row_key(row) not in done:
                row.update(play(run.game, str(path), level, args.games, args.eval_seed))
                curves.append_row(args.out, row)
                done.add(curves.row_key(row))
    curves.log(f"scored {describe(run)}: {len(chosen)} checkpoints")
    run_row = {"kind": "run", **run.key, "wall_s": record["wall_s"], "code": record["code"]}
    curves.append_row(args.out, run_row)
    done.add(curves.row_key(run_row))


def measure_reference(args: argparse.Namespace, study: str, rows: list[dict[str, Any]]) -> None:
    """The demonstrator's own score against each yardstick, scored as the checkpoints are."""
    game = GAMES[args.game]
    have = {(r["game"], r["player"], r["yardstick"], r["games"], r["eval_seed"])
            for r in rows if r["kind"] == "reference"}  # fmt: skip
    for level in game.yardsticks[study]:
        if (args.game, game.demonstrator, level, args.games, args.eval_seed) not in have:
            row = {"kind": "reference", "game": args.game, "player": game.demonstrator,
                   "yardstick": level}  # fmt: skip
            row.update(play(args.game, game.demonstrator, level, args.games, args.eval_seed))
            curves.append_row(args.out, row)


def describe(run: Run) -> str:
    return f"{run.game} {run.arm} seed {run.seed} ({run.budget:,} steps)"


def run_study(args: argparse.Namespace) -> None:
    """Record the demonstrations if needed, then train and score every arm × seed asked for."""
    import torch

    torch.set_num_threads(1)
    demo = record(args)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    rows = curves.read_rows(args.out)
    measure_reference(args, args.command, rows)
    done = {curves.row_key(row) for row in rows if row["kind"] != "reference"}
    arms = args.arms or [name for name, arm in ARMS.items() if arm.study == args.command]
    for seed in args.seeds:
        for arm in arms:
            measure(Run(arm=arm, seed=seed, budget=args.budget, game=args.game), args, demo, done)


def _cloning_inputs(args: argparse.Namespace) -> tuple[Path, Any, Any, dict[str, Any]]:
    """What cloning alone starts from on ``--game``.

    Args:
        args: the parsed flags (``game``, ``budget`` and ``record``'s).

    Returns:
        The demonstrations' file, team 0's behavior spec, the demonstrations read against it and
        the shipped config's settings of the behavior.
    """
    from envs.games import make_game
    from trainers.demonstrations import load_demonstration

    game = GAMES[args.game]
    demo_path = record(args)
    env = make_game(args.game, num_arenas=1)
    spec = env.behavior_specs[f"{game.behavior}?team=0"]
    env.close()
    rows = load_demonstration(str(demo_path), spec, where="clone")
    shipped = curves.run_config(curves.Run(game=args.game, mode="selfplay", trainer="ours",
                                           seed=0, budget=args.budget, opponent=None))  # fmt: skip
    return demo_path, spec, rows, shipped["behaviors"][game.behavior]


def clone_offline(args: argparse.Namespace) -> None:
    """Cloning alone (see the module docstring), one row per update count, seed and yardstick."""
    import numpy as np
    import torch

    from trainers.behavioral_cloning import BehavioralCloning
    from trainers.policy import TorchPolicy
    from trainers.settings import BehavioralCloningSettings, CloningLoss, NetworkSettings

    torch.set_num_threads(1)
    demo_path, spec, rows, behavior = _cloning_inputs(args)
    network = {key: behavior["network_settings"][key]
               for key in ("normalize", "hidden_units", "num_layers")}  # fmt: skip
    args.out = args.work / "clone.jsonl"
    for seed in args.seeds:
        torch.manual_seed(seed)
        policy = TorchPolicy(behavior_spec=spec, network_settings=NetworkSettings(**network))
        policy.update_normalizer(rows.obs)
        cloning = BehavioralCloning(
            policy=policy,
            settings=BehavioralCloningSettings(
                demo_path=str(demo_path), continuous_loss=CloningLoss(args.continuous_loss)
            ),
            demo=rows, learning_rate=behavior["hyperparameters"]["learning_rate"],
            batch_size=behavior["hyperparameters"]["batch_size"], rng=np.random.default_rng(seed),
        )  # fmt: skip
        # as the cloning update cuts a pass: whole minibatches only
        per_pass = len(rows) // min(cloning.batch_size, len(rows))
        updates, loss = 0, float("nan")
        for target in sorted(args.updates):
            while updates < target:
                loss = cloning.update(0)["Losses/Pretraining Loss"]
                updates += 1
            policy.weights_changed()
            for level in GAMES[args.game].yardsticks["clone"]:
                row = {"kind": "clone", "game": args.game, "seed": seed, "updates": updates,
                       "continuous_loss": args.continuous_loss,
                       "minibatches": updates * cloning.num_epoch * per_pass,
                       "loss": round(loss, 5) if updates else None, "yardstick": level}  # fmt: skip
                row.update(play(args.game, policy, level, args.games, args.eval_seed))
                curves.append_row(args.out, row)
                curves.log(f"clone seed {seed}, {updates} updates: {row['win_rate']} vs {level}")


# -- report --------------------------------------------------------------------------------------
def of_game(rows: list[dict[str, Any]], game: str) -> list[dict[str, Any]]:
    """The rows of ``game`` (every row the studies write names its game)."""
    return [row for row in rows if row.get("game") == game]


def _one_game(rows: list[dict[str, Any]], table: str) -> None:
    """Raise unless ``rows`` hold at most one game's rows.

    Raises:
        ValueError: rows of several games; the message names them and the fix.
    """
    games = {row.get("game") for row in rows}
    if len(games) > 1:
        raise ValueError(
            f"{table} takes one game's rows, got {sorted(map(str, games))}: select them with "
            "of_game(rows, game) first"
        )


def final_table(rows: list[dict[str, Any]]) -> str:
    """Per arm and yardstick at the last checkpoint: wins / losses over seeds (median and per
    seed), beside the demonstrator's.

    Args:
        rows: one game's rows of a study (``of_game``).

    Returns:
        A markdown table.

    Raises:
        ValueError: ``rows`` hold several games.
    """
    _one_game(rows, "final_table")
    finals: dict[tuple[str, str], dict[int, dict[str, Any]]] = {}
    for row in rows:
        if row["kind"] == "score" and row["nominal"] == row["budget"]:
            finals.setdefault((row["trainer"], row["yardstick"]), {})[row["seed"]] = row
    lines = ["| player | yardstick | wins median [per seed] | losses median [per seed] |",
             "|---|---|---|---|"]  # fmt: skip
    for row in rows:
        if row["kind"] == "reference":
            lines.append(f"| demonstrator (`{row['player']}`) | `{row['yardstick']}` | "
                         f"{row['wins'] / row['games']:.2f} | "
                         f"{row['losses'] / row['games']:.2f} |")  # fmt: skip
    for (arm, level), by_seed in sorted(finals.items()):
        cells = []
        for field in ("wins", "losses"):
            rates = [by_seed[s][field] / by_seed[s]["games"] for s in sorted(by_seed)]
            listed = ", ".join(f"{r:.2f}" for r in rates)
            cells.append(f"{statistics.median(rates):.2f} [{listed}]")
        lines.append(f"| {arm} | `{level}` | {cells[0]} | {cells[1]} |")
    return "\n".join(lines)


def _logged(folder: Path, behavior: str, tags: list[str]) -> dict[str, list[tuple[int, float]]]:
    """``(step, value)`` of each of ``tags`` in ``behavior``'s TensorBoard log of the run in
    ``folder``."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    found: dict[str, list[tuple[int, float]]] = {}
    for events in sorted((folder / "ours" / "run" / behavior).glob("events.out.tfevents.*")):
        log = EventAccumulator(str(events), size_guidance={"scalars": 0})
        log.Reload()
        for tag in set(tags) & set(log.Tags()["scalars"]):
            found.setdefault(tag, []).extend((e.step, e.value) for e in log.Scalars(tag))
    return found


def training_table(
    rows: list[dict[str, Any]], work: Path, study: str, game: str = FIRST_GAME
) -> str:
    """Per arm and tag of ``TRAINING_TAGS``: the value logged nearest to each checkpoint, median
    over seeds (the training runs' own statistics, with sampled actions).

    Args:
        rows: one game's rows of ``study`` (``of_game``).
        work: the folder of the run folders.
        study: the study the rows are of.
        game: the game the rows are of.

    Returns:
        A markdown table, empty when no run finished.

    Raises:
        ValueError: ``rows`` hold several games.
    """
    _one_game(rows, "training_table")
    runs = sorted({(r["trainer"], r["seed"], r["budget"]) for r in rows if r["kind"] == "run"})
    if not runs:
        return ""
    budget = runs[0][2]
    steps = [budget // curves.CHECKPOINTS * k for k in range(1, curves.CHECKPOINTS + 1)]
    values: dict[tuple[str, str, int], list[float]] = {}
    for arm, seed, budget_ in runs:
        folder = Run(arm=arm, seed=seed, budget=budget_, game=game).folder(work)
        logged = _logged(folder, GAMES[game].behavior, TRAINING_TAGS[study])
        for tag, points in logged.items():
            for step in steps:
                if points:
                    nearest = min(points, key=lambda point: (abs(point[0] - step), point[0]))
                    values.setdefault((arm, tag, step), []).append(nearest[1])
    lines = ["| arm | statistic | " + " | ".join(f"{s:,}" for s in steps) + " |",
             "|---|---|" + "---:|" * len(steps)]  # fmt: skip
    for arm in sorted({arm for arm, _, _ in runs}):
        for tag in TRAINING_TAGS[study]:
            cells = [values.get((arm, tag, step)) for step in steps]
            if any(cells):
                shown = [f"{statistics.median(c):.3g}" if c else "–" for c in cells]
                lines.append(f"| {arm} | {tag} | " + " | ".join(shown) + " |")
    return "\n".join(lines)


def report(args: argparse.Namespace) -> None:
    """Print each study's tables of ``--game`` from its ``--out`` file."""
    for study in STUDIES:
        path = args.work / f"{study}.jsonl"
        rows = of_game(curves.read_rows(path), args.game)
        if not rows:
            continue
        print(f"## {study} on {args.game} ({path})\n")
        print(final_table(rows) + "\n")
        print(training_table(rows, args.work, study, args.game) + "\n")
        print(summarize([r for r in rows if r["kind"] != "reference"], metric="win_rate"))
        if study == "take_off":
            print(take_off_table(rows, level=GAMES[args.game].opponent))
    clones = of_game(curves.read_rows(args.work / "clone.jsonl"), args.game)
    if clones:
        print(
            "\n## cloning alone\n\n"
            "| continuous_loss | updates | minibatches | loss | seed | yardstick | wins | losses |"
        )
        print("|---|---:|---:|---:|---:|---|---:|---:|")
        for row in sorted(clones, key=_clone_order):
            loss = row["loss"]
            loss = "–" if loss is None or loss != loss else f"{loss:.4f}"  # none before an update
            print(
                f"| {_clone_loss(row)} | {row['updates']} | {row['minibatches']} | {loss} | {row['seed']} | "
                f"`{row['yardstick']}` | {row['wins'] / row['games']:.2f} | "
                f"{row['losses'] / row['games']:.2f} |"
            )


def _clone_loss(row: dict[str, Any]) -> str:
    """A cloning-alone row's ``continuous_loss`` (rows from before the option: ``sample``)."""
    return row.get("continuous_loss", "sample")


def _clone_order(row: dict[str, Any]) -> tuple:
    return (_clone_loss(row), row["seed"], row["updates"], row["yardstick"])


def build_parser() -> argparse.ArgumentParser:
    """The script's commands and flags."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["record", *STUDIES, "clone", "summary"])
    parser.add_argument("--game", choices=sorted(GAMES), default=FIRST_GAME,
                        help="the game played (summary: the game whose tables are printed)")  # fmt: skip
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--budget", type=int, default=500_000,
                        help="trainer steps per run (8 checkpoints along it)")  # fmt: skip
    parser.add_argument("--arms", nargs="+", choices=sorted(ARMS), default=None,
                        help="default: every arm of the study")  # fmt: skip
    parser.add_argument("--updates", type=int, nargs="+", default=[0, 30, 100, 300, 1000],
                        help="clone: cloning updates after which the clone is scored")  # fmt: skip
    parser.add_argument("--continuous-loss", choices=["mean", "sample"], default="mean",
                        help="clone: behavioral_cloning.continuous_loss")  # fmt: skip
    parser.add_argument("--episodes", type=int, default=50, help="demonstration episodes")
    parser.add_argument("--record-seed", type=int, default=0)
    parser.add_argument("--games", type=int, default=100, help="games per checkpoint and level")
    parser.add_argument("--eval-seed", type=int, default=1)
    parser.add_argument("--work", type=Path, default=Path("results/demo_studies"),
                        help="demonstrations, run folders and the studies' rows")  # fmt: skip
    return parser


def check_levels(game: str) -> None:
    """Exit unless every level ``GAMES[game]`` names is one of the game's scripted levels."""
    from envs.games import scripted_levels

    unknown = sorted(GAMES[game].levels() - set(scripted_levels(game)))
    if unknown:
        raise SystemExit(
            f"GAMES[{game!r}] names levels {unknown} that {game} has not; its levels: "
            + ", ".join(scripted_levels(game))
        )


def main(argv: list[str] | None = None) -> None:
    """Run the command ``argv`` names (``sys.argv`` when None)."""
    args = build_parser().parse_args(argv)
    args.work = args.work.absolute()
    check_levels(args.game)
    if args.command == "record":
        record(args)
    elif args.command == "clone":
        clone_offline(args)
    elif args.command in STUDIES:
        args.out = args.work / f"{args.command}.jsonl"
        if args.arms and any(ARMS[arm].study != args.command for arm in args.arms):
            raise SystemExit(
                f"--arms of study {args.command}: "
                + ", ".join(n for n, a in ARMS.items() if a.study == args.command)
            )
        run_study(args)
    else:
        report(args)


if __name__ == "__main__":
    main()
