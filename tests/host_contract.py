"""The host contract, as one scenario run against every host of the self-play cycle.

Each host (``ghost-learn``, the ``mlagents-learn`` plugin, Stable-Baselines3, RLlib) trains the
same short self-play run of a symmetric two-team game through its public entry points only, in
three sessions:

1. **first leg**: ``SCENARIO.first_leg_steps`` trainer steps with settings that make everything
   happen at once (a snapshot every 200 steps, a swap every 100 ghost steps, a team change every
   600 steps, a window of 3); the run is saved and every object or process dropped (the "kill");
2. **restore**: a session that restores the save and writes it again without training a step,
   so that what the host holds right after a restore is on disk, readable like any save;
3. **second leg**: a session that resumes the first leg's save and trains on to
   ``SCENARIO.total_steps``.

After each session the run is read with ``ghost.play.run_layouts.read_run`` into an
``Observation`` (one reader for the four layouts), and the checks of ``CHECKS`` hold every host to
the same expectations: ``check_first_leg``, ``check_restore``, ``check_second_leg`` and
``check_saved_after_update``. A host that cannot observe a thing names that check in
``Legs.unobservable`` with the reason; only that check is skipped for it.

The plugin trains FakePong, the stand-in Unity build of ``tests/fake_unity`` (``mlagents-learn``
steps Unity builds only); the other hosts train the built-in Tennis. Every host updates its
learner once per ``SCENARIO.rollout`` learning-team steps. ghost-learn and the plugin ask the
cycle what is due after every step they process, SB3 and RLlib after each update, so the steps
snapshots are taken at differ from host to host; the expectations hold for all of them.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import os
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import torch
import yaml

from ghost.play.run_layouts import STATE_FILE, GhostLearnRun, HostRun, read_run
from trainers.callbacks import Checkpoint, TrainingCallback
from trainers.run_files.safe_load import load_pt

ROOT = Path(__file__).resolve().parents[1]
FAKE_PONG = ROOT / "tests" / "fake_unity" / "FakePong.x86_64"
GHOST_LEARN = "ghost-learn"
MLAGENTS = "mlagents-learn"
SB3 = "stable-baselines3"
RLLIB = "rllib"


@attrs.frozen(kw_only=True)
class Scenario:
    """The one run every host trains: its self-play settings, budget and sizes."""

    self_play: Mapping[str, Any] = attrs.field(
        factory=lambda: {
            "save_steps": 200,
            "swap_steps": 100,
            "team_change": 600,
            "window": 3,
            "initial_elo": 1200.0,
        }
    )
    first_leg_steps: int = 2000
    total_steps: int = 3200
    arenas: int = 4
    #: learning-team steps per update: under save_steps, so no snapshot is an update late
    rollout: int = 128
    minibatch: int = 64
    hidden_units: int = 16
    seed: int = 0

    @property
    def window(self) -> int:
        return int(self.self_play["window"])

    @property
    def initial_elo(self) -> float:
        return float(self.self_play["initial_elo"])


SCENARIO = Scenario()


# -- one reader for every host's files ----------------------------------------------------------
@attrs.frozen(kw_only=True)
class Observation:
    """A host's saved self-play state, as read from its run folder.

    Attributes:
        window: ``(snapshot id, step, rating)`` of each snapshot file, oldest first.
        window_ids: the snapshot ids the saved state names as its window.
        weights: snapshot id → a digest of the weights in its file.
        payoff: ``(learner version, opponent)`` → ``(wins, draws, losses)`` of ``payoff.csv``.
    """

    host: str
    step: int
    window: tuple[tuple[int, int | None, float | None], ...]
    window_ids: tuple[int, ...]
    weights: Mapping[int, str]
    elo: float
    swaps: int
    next_snapshot_id: int
    last_save_step: int
    ghost_step: int
    last_swap_ghost_step: int
    known_learning_team: int | None
    learning_team: int
    teams: tuple[int, ...]
    team_changes: int
    payoff: Mapping[tuple[str, str], tuple[int, int, int]]

    @property
    def matches(self) -> int:
        """Rated matches in the payoff table."""
        return sum(sum(cell) for cell in self.payoff.values())

    def figures(self) -> str:
        ids = [snapshot_id for snapshot_id, _, _ in self.window]
        return (
            f"step {self.step}, team changes {self.team_changes} (team {self.learning_team} "
            f"learns), swaps {self.swaps}, window {ids}, Elo {self.elo:.1f}, "
            f"{self.matches} matches"
        )


def observe(root: Path, behavior: str) -> Observation:
    """Read the self-play state a host left at ``root`` (any host's layout)."""
    run = read_run(root)
    state = run.self_play_state(behavior)
    assert state is not None, f"{run.label}: no self-play state of {behavior}"
    snapshots = run.snapshots(behavior)
    record = _host_record(run, behavior)
    controller = record["controller"]
    return Observation(
        host=run.host,
        step=int(record["step"]),
        window=tuple((s.snapshot_id, s.step, s.rating) for s in snapshots),
        window_ids=tuple(int(entry["snapshot_id"]) for entry in state["window"]),
        weights={s.snapshot_id: _digest(load_pt(s.path)) for s in snapshots},
        elo=float(state["rating"]),
        swaps=int(state["swaps"]),
        next_snapshot_id=int(state["next_snapshot_id"]),
        last_save_step=int(state["last_save_step"]),
        ghost_step=int(state["ghost_step"]),
        last_swap_ghost_step=int(state["last_swap_ghost_step"]),
        known_learning_team=state["known_learning_team"],
        learning_team=int(controller["learning_team"]),
        teams=tuple(int(team) for team in controller["teams"]),
        team_changes=int(controller["team_changes"]),
        payoff=_payoff(run.payoff_path(behavior)),
    )


def _host_record(run: HostRun, behavior: str) -> Mapping[str, Any]:
    """``step`` and ``controller`` of the save: ``HostRun`` reads neither (the learning team,
    the team changes), so they come from where each layout keeps them: ghost-learn's checkpoint
    index, the other hosts' ``state.pt``."""
    if isinstance(run, GhostLearnRun):
        index = json.loads(run.layout.checkpoint_index_path.read_text(encoding="utf-8"))
        return {
            "step": index["behaviors"][behavior]["step"],
            "controller": index["run_state"]["controller"],
        }
    return load_pt(run.snapshot_folder(behavior) / STATE_FILE)


def _digest(value: Any) -> str:
    """A hash of every tensor and number in ``value`` (a snapshot file's contents)."""
    digest = hashlib.sha256()

    def feed(item: Any) -> None:
        if isinstance(item, Mapping):
            for key in sorted(item, key=str):
                digest.update(str(key).encode())
                feed(item[key])
        elif isinstance(item, list | tuple):
            for element in item:
                feed(element)
        elif isinstance(item, torch.Tensor):
            digest.update(item.detach().cpu().contiguous().numpy().tobytes())
        elif isinstance(item, np.ndarray):
            digest.update(np.ascontiguousarray(item).tobytes())
        else:
            digest.update(repr(item).encode())

    feed(value)
    return digest.hexdigest()


def _payoff(path: Path) -> dict[tuple[str, str], tuple[int, int, int]]:
    """The non-empty ``wins/draws/losses (rate)`` cells of a ``payoff.csv``."""
    rows = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"))))
    if not rows:
        return {}
    opponents = rows[0][1:]
    cells = {}
    for row in rows[1:]:
        for opponent, cell in zip(opponents, row[1:], strict=True):
            if cell:
                wins, draws, losses = cell.split(" ")[0].split("/")
                cells[(row[0], opponent)] = (int(wins), int(draws), int(losses))
    return cells


# -- the expectations ---------------------------------------------------------------------------
@attrs.frozen(kw_only=True)
class Legs:
    """What one host's three sessions left, and how long each took (seconds).

    Attributes:
        unobservable: check name → why this host cannot show it (that check is skipped).
    """

    host: str
    first: Observation
    restored: Observation
    second: Observation
    timings: Mapping[str, float]
    unobservable: Mapping[str, str] = attrs.field(factory=dict)

    def figures(self) -> str:
        times = ", ".join(f"{leg} {seconds:.1f}s" for leg, seconds in self.timings.items())
        return (
            f"{self.host} ({times})\n  first leg: {self.first.figures()}\n"
            f"  restored:  {self.restored.figures()}\n  second leg: {self.second.figures()}"
        )


class _Checks:
    """Runs the named checks of one host, skipping those it cannot observe."""

    def __init__(self, legs: Legs) -> None:
        self.legs = legs

    def __call__(self, name: str, passed: bool, message: str) -> None:
        if name in self.legs.unobservable:
            return
        assert passed, f"{self.legs.host}: {name}: {message}"


def check_first_leg(legs: Legs, scenario: Scenario = SCENARIO) -> None:
    """Several turns, swaps and snapshots happened, the matches were rated and saved."""
    check, first = _Checks(legs), legs.first
    check("team changes", first.team_changes >= 2, f"{first.team_changes} in the first leg")
    _check_turn_order(check, first)
    check("swaps", first.swaps >= 3, f"{first.swaps} swaps")
    full = min(scenario.window, first.next_snapshot_id)
    check("full window", len(first.window) == full, f"{len(first.window)} snapshots kept")
    check("window evicted", first.next_snapshot_id > scenario.window, "no snapshot evicted")
    _check_files_are_the_window(check, first)
    check("Elo moved", first.elo != scenario.initial_elo, f"Elo still {first.elo}")
    check("payoff table", first.matches > 0, "payoff.csv holds no rated match")


#: what a restore must give back exactly: ``Observation`` fields
RESTORED = ("step", "window", "weights", "elo", "learning_team", "team_changes", "swaps",
            "next_snapshot_id", "payoff")  # fmt: skip


def check_restore(legs: Legs) -> None:
    """Right after a restore the host holds exactly what it saved."""
    check = _Checks(legs)
    for field in RESTORED:
        saved, restored = getattr(legs.first, field), getattr(legs.restored, field)
        check(f"{field} restored", restored == saved, f"saved {saved}, restored {restored}")


def check_second_leg(legs: Legs) -> None:
    """The resumed run goes on from the save: turns, swaps, snapshot ids and results count on."""
    check, saved, after = _Checks(legs), legs.first, legs.second
    for field in ("step", "team_changes", "swaps", "next_snapshot_id", "matches"):
        before, now = getattr(saved, field), getattr(after, field)
        check(f"{field} count on", now > before, f"{before} at the save, {now} after")
    _check_turn_order(check, after)
    taken = {snapshot_id: step for snapshot_id, step, _ in saved.window}
    for snapshot_id, step, _ in after.window:
        if snapshot_id < saved.next_snapshot_id:  # an id of the first leg: that same snapshot
            message = f"snapshot {snapshot_id} is of step {step}, saved of {taken.get(snapshot_id)}"
            check("no id reused", taken.get(snapshot_id) == step, message)
        else:
            message = f"snapshot {snapshot_id} is of step {step}, the save of step {saved.step}"
            check("new snapshots after the save", step is not None and step > saved.step, message)
    _check_files_are_the_window(check, after)
    kept = all(after.payoff.get(key, (0, 0, 0)) >= cell for key, cell in saved.payoff.items())
    check("payoff carried", kept, "a cell of payoff.csv lost results of the first leg")


def check_saved_after_update(legs: Legs, scenario: Scenario = SCENARIO) -> None:
    """Each save follows the last update's ``after_update``: no snapshot or swap is overdue in it.

    After ``after_update`` (and the hand-over) a snapshot was taken if due and a swap made if due
    (or a turn started, which swaps), so a state saved after it has neither left to do.
    """
    check = _Checks(legs)
    save_steps, swap_steps = scenario.self_play["save_steps"], scenario.self_play["swap_steps"]
    for leg, seen in (("first", legs.first), ("second", legs.second)):
        since = seen.step - seen.last_save_step
        message = f"{leg} leg saved {since} steps after its last snapshot (save_steps {save_steps})"
        check("no snapshot overdue at the save", since < save_steps, message)
        since = seen.ghost_step - seen.last_swap_ghost_step
        message = (
            f"{leg} leg saved {since} ghost steps after its last swap (swap_steps {swap_steps})"
        )
        check("no swap overdue at the save", since < swap_steps, message)


def _check_turn_order(check: _Checks, seen: Observation) -> None:
    """Learning passes round the rotation (after n changes team ``teams[n % len]`` learns), and
    the self-play state knows the controller's learning team."""
    expected = seen.teams[seen.team_changes % len(seen.teams)]
    check("turn order", seen.learning_team == expected, f"team {seen.learning_team} learns "
          f"after {seen.team_changes} changes in the rotation {seen.teams}")  # fmt: skip
    known = seen.known_learning_team
    check("learning team in the state", known == seen.learning_team,
          f"the state says team {known} learns, the controller {seen.learning_team}")  # fmt: skip


def _check_files_are_the_window(check: _Checks, seen: Observation) -> None:
    ids = tuple(snapshot_id for snapshot_id, _, _ in seen.window)
    message = f"snapshot files {ids}, window {seen.window_ids}"
    check("snapshot files are the window", ids == tuple(sorted(seen.window_ids)), message)
    known = all(step is not None and rating is not None for _, step, rating in seen.window)
    check("window metadata", known, f"a snapshot without its step or rating: {seen.window}")


# -- the drivers: one per host ------------------------------------------------------------------
@contextlib.contextmanager
def _one_thread() -> Iterator[None]:
    """Small batches on 2 cores: one torch thread, as every host's own tests train."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


class _Clock:
    def __init__(self) -> None:
        self.timings: dict[str, float] = {}

    @contextlib.contextmanager
    def leg(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        yield
        self.timings[name] = time.perf_counter() - started


#: a restoring session of ghost-learn or mlagents-learn saves into the run's own folder, where the
#: snapshot files it restored from already lie and are kept as they are
SAME_FOLDER = {
    "weights restored": "the restoring session keeps the snapshot files it read, so "
    "they cannot show the weights it restored"
}


def ghost_learn_config(scenario: Scenario = SCENARIO) -> dict[str, Any]:
    """The scenario as a ghost-learn trainer config on built-in Tennis."""
    return {
        "behaviors": {
            "Tennis": {
                "trainer_type": "ppo",
                "hyperparameters": {
                    "batch_size": scenario.minibatch,
                    "buffer_size": scenario.rollout,
                    "num_epoch": 1,
                },
                "network_settings": {"hidden_units": scenario.hidden_units, "num_layers": 1},
                "time_horizon": 32,
                "summary_freq": 1000,
                "checkpoint_interval": 100_000,
                "self_play": dict(scenario.self_play),
            }
        },
        "env_settings": {"env_path": "tennis", "seed": scenario.seed, "num_areas": scenario.arenas},
    }


class _CheckpointEvents(TrainingCallback):
    """A ghost-learn callback that notes the steps of each checkpoint written."""

    def __init__(self) -> None:
        self.steps: list[dict[str, int]] = []

    def on_checkpoint(self, checkpoint: Checkpoint) -> None:
        self.steps.append(dict(checkpoint.steps))


def ghost_learn_legs(folder: Path, scenario: Scenario = SCENARIO) -> Legs:
    """ghost-learn through ``ghost.running.api.train``: the run, ``resume=True`` with no steps
    left (the final checkpoint is written from the restored state), ``resume=True`` on."""
    from ghost.running.api import train

    config, clock, run = ghost_learn_config(scenario), _Clock(), folder / "contract"
    common = {"run_id": "contract", "results_dir": folder, "verbose": 0}
    with _one_thread():
        with clock.leg("first"):
            train(config, max_steps=scenario.first_leg_steps, **common)
        first = observe(run, "Tennis")
        written = _CheckpointEvents()
        with clock.leg("restore"):
            train(config, max_steps=scenario.first_leg_steps, resume=True, callbacks=[written],
                  **common)  # fmt: skip
        # the session trained no step, so its one checkpoint is the restored state
        assert written.steps == [{"Tennis": first.step}], written.steps
        restored = observe(run, "Tennis")
        with clock.leg("second"):
            train(config, max_steps=scenario.total_steps, resume=True, **common)
        second = observe(run, "Tennis")
    return Legs(host=GHOST_LEARN, first=first, restored=restored, second=second,
                timings=clock.timings, unobservable=SAME_FOLDER)  # fmt: skip


def sb3_legs(folder: Path, scenario: Scenario = SCENARIO) -> Legs:
    """Stable-Baselines3's PPO on a ``GhostVecEnv`` with ``GhostCallback``; a restore is
    ``PPO.load`` and ``GhostCallback(resume_from=...)``, learning no step to save it again."""
    from stable_baselines3 import PPO

    from ghost.integrations.sb3 import GhostCallback, GhostVecEnv

    def env() -> GhostVecEnv:
        return GhostVecEnv("tennis", num_arenas=scenario.arenas, seed=scenario.seed,
                           self_play=dict(scenario.self_play))  # fmt: skip

    def resumed(steps: int, save_path: Path) -> None:
        model = PPO.load(folder / "first", env=env())
        callback = GhostCallback(resume_from=folder / "first", save_path=save_path)
        model.learn(steps, callback=callback, reset_num_timesteps=False)

    clock = _Clock()
    with _one_thread():
        with clock.leg("first"):
            model = PPO(
                "MlpPolicy", env(), seed=scenario.seed, n_steps=scenario.rollout // scenario.arenas,
                batch_size=scenario.minibatch, n_epochs=1,
                policy_kwargs={"net_arch": [scenario.hidden_units]},
            )  # fmt: skip
            model.learn(
                scenario.first_leg_steps, callback=GhostCallback(save_path=folder / "first")
            )
            del model  # the kill: only the files go on
        first = observe(folder / "first.zip", "Tennis")
        with clock.leg("restore"):
            resumed(0, folder / "restored")
        restored = observe(folder / "restored.zip", "Tennis")
        with clock.leg("second"):
            resumed(scenario.total_steps - first.step, folder / "second")
        second = observe(folder / "second.zip", "Tennis")
    return Legs(host=SB3, first=first, restored=restored, second=second, timings=clock.timings)


def rllib_legs(folder: Path, scenario: Scenario = SCENARIO) -> Legs:
    """RLlib's PPO configured by ``ghost_self_play``: ``save_checkpoint``, the algorithm stopped,
    a new one built and ``restore_checkpoint``-ed, saved again at once, then trained on."""
    import ray
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

    from ghost.integrations.rllib import (
        ghost_self_play,
        restore_checkpoint,
        save_checkpoint,
        self_play_of,
    )

    def build() -> Any:
        config = (
            PPOConfig()
            .env_runners(num_env_runners=0, num_envs_per_env_runner=scenario.arenas,
                         rollout_fragment_length=scenario.rollout // scenario.arenas)
            .training(train_batch_size_per_learner=scenario.rollout,
                      minibatch_size=scenario.minibatch, num_epochs=1)
            .rl_module(model_config=DefaultModelConfig(fcnet_hiddens=[scenario.hidden_units]))
        )  # fmt: skip
        return ghost_self_play(
            config, env="tennis", self_play=dict(scenario.self_play), seed=scenario.seed
        ).build_algo()

    def train_until(algorithm: Any, steps: int) -> None:
        while self_play_of(algorithm).learner_steps < steps:
            algorithm.train()

    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    clock = _Clock()
    try:
        with _one_thread():
            with clock.leg("first"):
                algorithm = build()
                train_until(algorithm, scenario.first_leg_steps)
                save_checkpoint(algorithm, folder / "first")
                algorithm.stop()  # the kill: only the checkpoint goes on
            first = observe(folder / "first", "Tennis")
            with clock.leg("restore"):
                algorithm = build()
                restore_checkpoint(algorithm, folder / "first")
                save_checkpoint(algorithm, folder / "restored")
            restored = observe(folder / "restored", "Tennis")
            with clock.leg("second"):
                train_until(algorithm, scenario.total_steps)
                save_checkpoint(algorithm, folder / "second")
                algorithm.stop()
            second = observe(folder / "second", "Tennis")
    finally:
        if started:
            ray.shutdown()
    return Legs(host=RLLIB, first=first, restored=restored, second=second, timings=clock.timings)


def mlagents_config(max_steps: int, scenario: Scenario = SCENARIO) -> dict[str, Any]:
    """The scenario as an ``mlagents-learn`` config of ``ghost_ppo`` on FakePong."""
    return {
        "behaviors": {
            "Pong": {
                "trainer_type": "ghost_ppo",
                "hyperparameters": {
                    "batch_size": scenario.minibatch,
                    "buffer_size": scenario.rollout,
                    "num_epoch": 1,
                },
                "network_settings": {"hidden_units": scenario.hidden_units, "num_layers": 1},
                "max_steps": max_steps,
                "time_horizon": 32,
                "summary_freq": 1000,
                "checkpoint_interval": 100_000,
                "self_play": dict(scenario.self_play),
            }
        }
    }


def mlagents_legs(bin_dir: Path, folder: Path, scenario: Scenario = SCENARIO) -> Legs:
    """The plugin in ML-Agents' own ``mlagents-learn``: the run, ``--resume`` with no steps left
    (ML-Agents saves its models, and the plugin the restored state, on the way out), ``--resume``
    on. Each session is a process of its own."""
    from tests.test_unity_build import free_ports

    run = folder / "results" / "contract"

    def learn(max_steps: int, *flags: str) -> str:
        config = folder / f"contract-{max_steps}{''.join(flags)}.yaml"
        config.write_text(yaml.safe_dump(mlagents_config(max_steps, scenario)), encoding="utf-8")
        command = [
            str(bin_dir / "mlagents-learn"), str(config), "--env", str(FAKE_PONG),
            "--run-id", "contract", "--results-dir", str(folder / "results"), "--no-graphics",
            "--num-areas", str(scenario.arenas), "--seed", str(scenario.seed),
            "--base-port", str(free_ports(1)), *flags,
        ]  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True, timeout=240, cwd=folder,
                              env=dict(os.environ, OMP_NUM_THREADS="1"))  # fmt: skip
        output = done.stdout + done.stderr
        assert done.returncode == 0, output[-4000:]
        return output

    clock = _Clock()
    with clock.leg("first"):
        learn(scenario.first_leg_steps)
    first = observe(run, "Pong")
    state = run / "Pong" / "self_play" / STATE_FILE
    written = state.stat().st_mtime_ns
    with clock.leg("restore"):
        output = learn(scenario.first_leg_steps, "--resume")
    assert "Pong: resumed self-play at step" in output, output[-4000:]
    assert state.stat().st_mtime_ns != written, "the restoring session wrote no self-play state"
    restored = observe(run, "Pong")
    with clock.leg("second"):
        learn(scenario.total_steps, "--resume")
    second = observe(run, "Pong")
    return Legs(host=MLAGENTS, first=first, restored=restored, second=second,
                timings=clock.timings, unobservable=SAME_FOLDER)  # fmt: skip


#: check name → the function holding a host's ``Legs`` to it
CHECKS: dict[str, Callable[[Legs], None]] = {
    "first_leg": check_first_leg,
    "restore": check_restore,
    "second_leg": check_second_leg,
    "saved_after_update": check_saved_after_update,
}
