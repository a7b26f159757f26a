"""Learning curves: ours against Unity ML-Agents 1.1, step by step, on the same YAML and game.

**What runs.** For each game, mode, trainer and seed, one training run of ``--budget`` trainer
steps per behavior with a checkpoint every ``budget / 8`` steps. Both trainers get the *same* YAML:
the game's shipped config with ``max_steps``, ``checkpoint_interval`` and a large
``keep_checkpoints`` set, written into the run's folder under ``--work``. Ours trains with
``ghost-learn``; ML-Agents with its own trainers (PPO, and its GhostTrainer for self-play) through
``../shared/peers/mlagents_run.py`` in its venv (``PEER_PYTHON``, default
``/tmp/peer-mlagents/bin/python``; without it the ML-Agents runs are skipped, with a message).

Modes:

- ``selfplay``: the YAML's own ``self_play`` section, on the built-in game (ML-Agents runs
  ``envs.<game>:make_env``);
- ``fixed``: ``self_play`` removed, plain PPO for both trainers on
  ``envs.versus_scripted:<game>_vs_<--opponent>``: the scripted level plays the other side inside
  the environment, team 0's behaviors learn.

**The yardsticks.** Every checkpoint's greedy policy plays ``--games-per-yardstick`` games (one per
arena) against each scripted level of ``--yardsticks`` (with its noise), evaluation seed
``--eval-seed``, through
``ghost.play.head_to_head.evaluate``: our checkpoints as policy files, ML-Agents' through
``scripts/mlagents_actor.py`` (its actor's forward pass in numpy, checked against ML-Agents' own
by ``tests/test_learning_curves.py``). ``score`` counts a win 1, a draw or an interrupted game 0.5,
a loss 0, over all games; ``win_rate`` is wins over all games.

**Output.** One JSON line per (game, mode, trainer, seed, checkpoint, behavior, yardstick) appended
to ``--out`` (``kind: score``; ``step`` is the checkpoint's own step, ``nominal`` the multiple of
``budget / 8`` it stands for), and one per finished run (``kind: run``, its wall time). A rerun
skips what ``--out`` already holds, and a run whose training finished (its folder under ``--work``
says so) is only scored. ``--summary`` prints a markdown table per game, mode, behavior and
yardstick: per step, the median of each trainer over seeds and each seed's value, then each run's
wall time; ``--plot FILE.png`` draws the same curves.

    python scripts/learning_curves.py --games tennis volley --mode selfplay --seeds 0 1 2 \
        --budget 200000 --out results/curves.jsonl
    python scripts/learning_curves.py --summary --out results/curves.jsonl --plot curves.png
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import attrs
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from curve_tables import plot_curves, summarize, take_off_table  # noqa: E402

PEER_PYTHON = Path(os.environ.get("PEER_PYTHON", "/tmp/peer-mlagents/bin/python"))
PEER_SCRIPT = ROOT.parent / "shared" / "peers" / "mlagents_run.py"
CHECKPOINTS = 8
MAX_ARENAS = 256
#: ``ours-mlagents-settings``: ours with ``self_play.preset: none`` (ML-Agents' settings, not
#: what ``preset: auto`` picks for the game), to tell the trainer from the preset
TRAINERS = ("ours", "ours-mlagents-settings", "mlagents")
OURS = ("ours", "ours-mlagents-settings")
MODES = ("selfplay", "fixed")


@attrs.frozen(kw_only=True)
class CurveGame:
    """A game the curves cover: its shipped config, and what a reader of its table should know."""

    config: str
    note: str = ""


#: game → its curve settings; a built-in game with a shipped config is one line here
GAMES: dict[str, CurveGame] = {
    "tennis": CurveGame(config="config/tennis.yaml"),
    "soccer": CurveGame(
        config="config/soccer.yaml",
        note="goals are group rewards, which ML-Agents' PPO ignores (it learns from the shaping "
        "alone); ours adds them to the reward",
    ),
    "strikers_vs_goalie": CurveGame(config="config/strikers_vs_goalie.yaml"),
    "volley": CurveGame(config="config/volley.yaml"),
}


@attrs.frozen(kw_only=True)
class Run:
    """One training run: what identifies its rows and its folder."""

    game: str
    mode: str
    trainer: str
    seed: int
    budget: int
    opponent: str | None  # the scripted level trained against in ``fixed`` mode

    @property
    def key(self) -> dict[str, Any]:
        return attrs.asdict(self)

    @property
    def interval(self) -> int:
        return max(self.budget // CHECKPOINTS, 1)

    def folder(self, work: Path) -> Path:
        against = f"-vs-{self.opponent}" if self.opponent else ""
        name = f"{self.game}-{self.mode}{against}-{self.trainer}-s{self.seed}-b{self.budget}"
        return work / name


def env_spec(game: str, mode: str, opponent: str | None) -> str:
    """The ``module:callable`` both trainers run (ours also takes a built-in name: the same)."""
    if mode == "fixed":
        from envs.versus_scripted import factory_name

        assert opponent is not None
        return f"envs.versus_scripted:{factory_name(game, opponent)}"
    from envs.games import BUILTIN_GAMES

    make = BUILTIN_GAMES[game]
    return f"{make.__module__}:{make.__name__}"


def learner_behaviors(game: str, mode: str, config: dict[str, Any]) -> list[str]:
    """The behavior names that learn: all of the config's in self-play, team 0's when fixed."""
    if mode == "selfplay":
        return list(config["behaviors"])
    from envs.games import make_game

    env = make_game(game, num_arenas=1)
    try:
        return sorted({role.name for role in env.ROLES if role.team == 0})
    finally:
        env.close()


def run_config(run: Run) -> dict[str, Any]:
    """The YAML both trainers get: the shipped config sized to the budget, ``self_play`` dropped
    in ``fixed`` mode."""
    with (ROOT / GAMES[run.game].config).open() as file:
        config = copy.deepcopy(yaml.safe_load(file))
    learners = learner_behaviors(run.game, run.mode, config)
    config["behaviors"] = {k: v for k, v in config["behaviors"].items() if k in learners}
    for settings in config["behaviors"].values():
        settings["max_steps"] = run.budget
        settings["checkpoint_interval"] = run.interval
        settings["keep_checkpoints"] = 10 * CHECKPOINTS
        settings["summary_freq"] = min(settings.get("summary_freq", 10000), run.interval)
        if run.mode == "fixed":
            settings.pop("self_play", None)
        elif run.trainer == "ours-mlagents-settings":
            settings.setdefault("self_play", {})["preset"] = "none"
    config.setdefault("env_settings", {})["env_path"] = (
        run.game if run.mode == "selfplay" else env_spec(run.game, run.mode, run.opponent)
    )
    return config


# -- training ------------------------------------------------------------------------------------
def train(run: Run, folder: Path) -> dict[str, Any] | None:
    """Train ``run`` into ``folder`` unless it already was; its record, or None if it failed."""
    record_path = folder / "trained.json"
    if record_path.is_file():
        return json.loads(record_path.read_text())
    folder.mkdir(parents=True, exist_ok=True)
    config_path = folder / "config.yaml"
    config_path.write_text(yaml.safe_dump(run_config(run), sort_keys=False))
    if run.trainer in OURS:
        command = [sys.executable, "-c", "from ghost.running.cli import main; main()",
                   str(config_path), "--run-id", "run", "--results-dir", str(folder / "ours"),
                   "--seed", str(run.seed), "--force"]  # fmt: skip
    else:
        command = [str(PEER_PYTHON), str(PEER_SCRIPT),
                   "--env", env_spec(run.game, run.mode, run.opponent), "--config",
                   str(config_path), "--steps", str(run.budget), "--seed", str(run.seed),
                   "--out", str(folder / "mlagents")]  # fmt: skip
    log(f"training {describe(run)}")
    start = time.perf_counter()
    with (folder / "train.log").open("w") as output:
        done = subprocess.run(command, cwd=ROOT, stdout=output, stderr=subprocess.STDOUT)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        tail = (folder / "train.log").read_text().splitlines()[-15:]
        log(f"FAILED ({done.returncode}) {describe(run)}:\n  " + "\n  ".join(tail))
        return None
    record = {"wall_s": round(wall, 1), "finished": time.time(), "code": code_version()}
    record_path.write_text(json.dumps(record))
    log(f"trained {describe(run)} in {wall:.0f} s")
    return record


def code_version() -> str:
    """The commit the run trained with, plus a digest of uncommitted changes to the code that
    trains (other work in the same checkout can change a trainer between two runs)."""

    def git(*command: str) -> str:
        done = subprocess.run(["git", *command], cwd=ROOT, capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else ""

    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    diff = git("diff", "HEAD", "--", "envs", "trainers", "ghost", "config")
    return f"{commit}+{hashlib.sha1(diff.encode()).hexdigest()[:8]}" if diff else commit


def checkpoint_files(run: Run, folder: Path, behavior: str) -> dict[int, Path]:
    """``{step: file}`` of every checkpoint of ``behavior`` that ``run`` wrote."""
    if run.trainer in OURS:
        where = folder / "ours" / "run" / behavior / "checkpoints"
    else:
        where = folder / "mlagents" / "peer" / behavior
    pattern = re.compile(rf"{re.escape(behavior)}-(\d+)\.pt")
    found = {}
    for path in where.glob("*.pt") if where.is_dir() else ():
        if match := pattern.fullmatch(path.name):
            found[int(match[1])] = path
    return found


def by_nominal(files: dict[int, Path], interval: int) -> dict[int, tuple[int, Path]]:
    """For each of the ``CHECKPOINTS`` multiples of ``interval``, the checkpoint nearest to it,
    if one is within half an interval (trainers stop a few steps past it, and ML-Agents also
    writes one when it ends)."""
    chosen: dict[int, tuple[int, Path]] = {}
    for step, path in files.items():
        nominal = min(max(round(step / interval), 1), CHECKPOINTS) * interval
        if abs(step - nominal) > interval / 2:
            continue
        if nominal not in chosen or abs(step - nominal) < abs(chosen[nominal][0] - nominal):
            chosen[nominal] = (step, path)
    return dict(sorted(chosen.items()))


# -- scoring -------------------------------------------------------------------------------------
def player(run: Run, path: Path, eval_seed: int) -> Any:
    """What ``evaluate`` seats for a checkpoint: our policy file, or ML-Agents' actor."""
    if run.trainer in OURS:
        return str(path)
    from mlagents_actor import MLAgentsActor

    return MLAgentsActor.from_checkpoint(path, seed=eval_seed)


def score(run: Run, behavior: str, path: Path, level: str, args: argparse.Namespace) -> dict:
    """The greedy policy of checkpoint ``path`` against the scripted ``level``."""
    from ghost.play.head_to_head import evaluate

    # one game per arena: no arena waits on a long rally to start its next game
    result = evaluate(game=run.game, policy=player(run, path, args.eval_seed), opponent=level,
                      episodes=args.games, seed=args.eval_seed, deterministic=True,
                      side=behavior, num_arenas=min(args.games, MAX_ARENAS))  # fmt: skip
    n = result.episodes
    return {
        "score": round((result.wins + 0.5 * (result.draws + result.interrupted)) / n, 4),
        "win_rate": round(result.wins / n, 4),
        "wins": result.wins, "draws": result.draws, "losses": result.losses,
        "interrupted": result.interrupted, "games": n, "eval_seed": args.eval_seed,
    }  # fmt: skip


def row_key(row: dict[str, Any]) -> tuple:
    fields = ("kind", "game", "mode", "trainer", "seed", "budget", "opponent")
    extra = (
        ("nominal", "behavior", "yardstick", "games", "eval_seed") if row["kind"] == "score" else ()
    )
    return tuple(row.get(field) for field in fields + extra)


def read_rows(path: Path) -> list[dict[str, Any]]:
    """The rows of the JSON-lines file ``path`` (none when it does not exist)."""
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def append_row(path: Path, row: dict[str, Any]) -> None:
    with path.open("a") as out:
        out.write(json.dumps(row) + "\n")


def measure(run: Run, args: argparse.Namespace, done: set[tuple]) -> None:
    """Train ``run`` (unless trained), score every checkpoint not yet in ``--out``, then write
    its run row."""
    if row_key({"kind": "run", **run.key}) in done:
        return
    folder = run.folder(args.work)
    record = train(run, folder)
    if record is None:
        return
    config = yaml.safe_load((folder / "config.yaml").read_text())
    for behavior in config["behaviors"]:
        chosen = by_nominal(checkpoint_files(run, folder, behavior), run.interval)
        if len(chosen) < CHECKPOINTS:
            log(f"{describe(run)}: {behavior} has checkpoints at {sorted(chosen)} only")
        for nominal, (step, path) in chosen.items():
            for level in args.yardsticks:
                row = {"kind": "score", **run.key, "nominal": nominal, "step": step,
                       "behavior": behavior, "yardstick": level,
                       "games": args.games, "eval_seed": args.eval_seed}  # fmt: skip
                if row_key(row) in done:
                    continue
                row.update(score(run, behavior, path, level, args))
                append_row(args.out, row)
                done.add(row_key(row))
        log(f"scored {describe(run)} {behavior}: {len(chosen)} checkpoints")
    run_row = {"kind": "run", **run.key, "wall_s": record["wall_s"], "code": record.get("code")}
    append_row(args.out, run_row)
    done.add(row_key(run_row))


def describe(run: Run) -> str:
    against = f" vs {run.opponent}" if run.opponent else ""
    return f"{run.game} {run.mode}{against} {run.trainer} seed {run.seed} ({run.budget:,} steps)"


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def runs_of(args: argparse.Namespace) -> Iterable[Run]:
    """Every run asked for: game × mode × seed × trainer (the trainers of a seed side by side)."""
    for game in args.games_:
        for mode in args.modes:
            for seed in args.seeds:
                for trainer in args.trainers:
                    opponent = args.opponent if mode == "fixed" else None
                    yield Run(game=game, mode=mode, trainer=trainer, seed=seed,
                              budget=args.budget, opponent=opponent)  # fmt: skip


def build_parser() -> argparse.ArgumentParser:
    """The script's flags: what to run, how to score it, where it goes, how to report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", dest="games_", nargs="+", default=["tennis", "volley"],
                        choices=sorted(GAMES))  # fmt: skip
    parser.add_argument("--mode", dest="modes", nargs="+", default=["selfplay"], choices=MODES)
    parser.add_argument("--trainers", nargs="+", default=list(TRAINERS), choices=TRAINERS)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--budget", type=int, default=200_000,
                        help="trainer steps per behavior (8 checkpoints along it)")  # fmt: skip
    parser.add_argument("--opponent", default="medium",
                        help="the scripted level trained against in --mode fixed")  # fmt: skip
    parser.add_argument("--yardsticks", nargs="+", default=["medium", "strong"])
    parser.add_argument("--games-per-yardstick", dest="games", type=int, default=100)
    parser.add_argument("--eval-seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("results/learning_curves.jsonl"))
    parser.add_argument("--work", type=Path, default=None,
                        help="run folders (configs, checkpoints, logs); default: beside --out")  # fmt: skip
    parser.add_argument("--summary", action="store_true", help="only print the tables of --out")
    parser.add_argument(
        "--take-off",
        dest="take_off",
        default=None,
        metavar="LEVEL",
        help="with --summary: also each run's take-off step against LEVEL (the "
        "first checkpoint from which wins outnumber losses to the end)",
    )
    parser.add_argument("--metric", default="score", choices=["score", "win_rate"])
    parser.add_argument("--plot", type=Path, default=None, help="also draw the curves (PNG)")
    return parser


def available_trainers(trainers: list[str]) -> list[str]:
    """``trainers`` without ``mlagents`` where its venv or its script is missing (said on
    stderr)."""
    if "mlagents" in trainers and not PEER_PYTHON.exists():
        log(f"no ML-Agents venv at {PEER_PYTHON} (PEER_PYTHON): its runs are skipped; build "
            "it with ../shared/peers/setup-mlagents.sh")  # fmt: skip
        trainers = [t for t in trainers if t != "mlagents"]
    if "mlagents" in trainers and not PEER_SCRIPT.exists():
        log(f"no {PEER_SCRIPT} (the shared folder beside the checkout): ML-Agents' runs are "
            "skipped")  # fmt: skip
        trainers = [t for t in trainers if t != "mlagents"]
    return trainers


def measure_all(args: argparse.Namespace) -> None:
    """Train and score every run asked for that ``--out`` does not hold yet."""
    args.out.parent.mkdir(parents=True, exist_ok=True)
    import torch

    # a batch of a hundred observations through a small network: extra threads only wait on
    # each other (on a busy 2-core machine they made scoring 16x slower)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        done = {row_key(row) for row in read_rows(args.out)}
        for run in runs_of(args):
            measure(run, args, done)
    finally:
        torch.set_num_threads(threads)


def report(args: argparse.Namespace) -> None:
    """Print the tables of ``--out`` (and the take-off steps); draw the curves with ``--plot``."""
    rows = read_rows(args.out)
    notes = {game: entry.note for game, entry in GAMES.items() if entry.note}
    print(summarize(rows, metric=args.metric, notes=notes))
    if args.take_off is not None:
        print(take_off_table(rows, level=args.take_off))
    if args.plot is not None:
        plot_curves(rows, args.plot, metric=args.metric)
        log(f"plot written to {args.plot}")


def main(argv: list[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.budget < CHECKPOINTS:
        parser.error(f"--budget must be at least {CHECKPOINTS} (one step per checkpoint)")
    args.out = args.out.absolute()
    args.work = (args.work or args.out.parent / f"{args.out.stem}-runs").absolute()
    if not args.summary:
        args.trainers = available_trainers(args.trainers)
        measure_all(args)
    report(args)


if __name__ == "__main__":
    main()
