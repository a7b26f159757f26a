"""One trial: draw values from the space, train with them for each seed, judge the runs.

A trial's runs live in ``<study folder>/trials/trial-<number>/seed-<seed>/`` with their log in
``seed-<seed>.log`` beside them (nothing reaches the console). When a run ends, its checkpoints,
snapshots and exploiters' weights are deleted: the folder keeps the resolved
``configuration.yaml``, the logs, the TensorBoard events and the final policies.

Pruning watches the first seed only: its yardstick, reported at each evaluation (the grid of
``TuneSettings.report_interval`` steps), goes to ``trial.report``; when ``trial.should_prune()``
says so, the run stops after a checkpoint and the trial is pruned. A config the loader refuses
for a combination of values (``batch_size`` above ``buffer_size``) prunes the trial at once,
with the reason in its ``invalid`` attribute.
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import optuna

from ghost.command_line import LOG_FORMAT, PACKAGES, quiet_third_party
from ghost.config.loader import options_from_dict
from ghost.exceptions import ConfigError
from ghost.running.api import train
from ghost.tuning.settings import TuneSettings
from ghost.tuning.space import with_values
from ghost.tuning.yardsticks import OpenSpielExploitability, Yardstick, make_yardstick

logger = logging.getLogger(__name__)

#: checkpoints a trial keeps on disk while it runs (all are deleted when it ends)
KEEP_CHECKPOINTS = 2


def trial_folder(study_folder: Path, number: int) -> Path:
    """Where trial ``number`` of a study keeps its runs."""
    return study_folder / "trials" / f"trial-{number:04d}"


@contextlib.contextmanager
def training_log(path: Path) -> Iterator[None]:
    """Send the log of our packages to ``path`` only, for the duration of the block."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s " + LOG_FORMAT))
    loggers = [logging.getLogger(name) for name in PACKAGES]
    saved = [(lg, lg.level, lg.propagate, list(lg.handlers)) for lg in loggers]
    quiet_third_party(True)
    for package_logger in loggers:
        package_logger.handlers = [handler]
        package_logger.setLevel(logging.INFO)
        package_logger.propagate = False
    try:
        yield
    finally:
        for package_logger, level, propagate, handlers in saved:
            package_logger.handlers = handlers
            package_logger.setLevel(level)
            package_logger.propagate = propagate
        handler.close()


def remove_weights(run_dir: Path) -> None:
    """Delete every ``.pt`` file of a finished run except its final policies
    (``<run>/<Behavior>.pt``): checkpoints, snapshots, league members, exploiters."""
    if not run_dir.is_dir():
        return
    for path in run_dir.rglob("*.pt"):
        if path.parent != run_dir:
            path.unlink(missing_ok=True)


class PruningReporter:
    """Hands the yardstick's values during a run to ``trial.report`` on a grid of ``interval``
    steps (the same steps in every trial, so the pruner compares like with like)."""

    def __init__(self, trial: optuna.Trial, *, interval: int) -> None:
        self.trial = trial
        self.interval = interval
        self.reported: set[int] = set()
        self.pruned_at: tuple[int, float] | None = None

    def __call__(self, step: int, value: float) -> bool:
        """Report ``value`` measured at trainer ``step``; True when the trial should stop."""
        grid_step = (step // self.interval) * self.interval
        if grid_step <= 0 or grid_step in self.reported or math.isnan(value):
            return False
        self.reported.add(grid_step)
        self.trial.report(value, grid_step)
        if self.trial.should_prune():
            self.pruned_at = (grid_step, value)
            return True
        return False


class Objective:
    """What ``study.optimize`` calls: one trial, its value the mean over the seeds.

    Args:
        settings: the study's settings.
        folder: the study's output folder (``results/<study>``).
    """

    def __init__(self, *, settings: TuneSettings, folder: Path) -> None:
        self.settings = settings
        self.folder = folder
        self.yardstick: Yardstick = make_yardstick(
            settings.yardstick, settings.env_path,
            games=settings.games, exploiter_steps=settings.exploiter_steps,
        )  # fmt: skip

    def trial_config(self, values: dict[str, Any]) -> dict[str, Any]:
        """The raw config of a trial's runs: the base, the drawn values, then what the tuner needs
        (a checkpoint at each evaluation; the exploitability scored as often)."""
        interval = self.settings.report_interval
        needs: dict[str, Any] = {
            "checkpoint_interval": interval,
            "keep_checkpoints": KEEP_CHECKPOINTS,
        }
        if isinstance(self.yardstick, OpenSpielExploitability):
            needs["self_play.exploitability_every"] = interval
        return with_values(with_values(self.settings.base_config, values), needs)

    def __call__(self, trial: optuna.Trial) -> float:
        try:
            return self._trial(trial)
        except optuna.TrialPruned:
            raise
        except KeyboardInterrupt:
            trial.set_user_attr("error", "interrupted (Ctrl-C)")
            raise
        except Exception as error:
            trial.set_user_attr("error", str(error))  # optuna keeps no reason of its own
            raise

    def _trial(self, trial: optuna.Trial) -> float:
        values = self.settings.space.suggest(trial)
        config = self.trial_config(values)
        folder = trial_folder(self.folder, trial.number)
        trial.set_user_attr("folder", str(folder))
        try:
            options_from_dict(config)
        except ConfigError as error:
            trial.set_user_attr("invalid", str(error))
            raise optuna.TrialPruned(f"invalid combination: {error}") from None
        results = []
        for index, seed in enumerate(self.settings.seeds):
            reporter = (
                PruningReporter(trial, interval=self.settings.report_interval)
                if index == 0
                else None
            )
            value = self._run(config, folder=folder, seed=seed, reporter=reporter)
            if reporter is not None and reporter.pruned_at is not None:
                step, at = reporter.pruned_at
                trial.set_user_attr("pruned_at_step", step)
                raise optuna.TrialPruned(f"pruned at step {step} ({at:.4g})")
            trial.set_user_attr(f"seed_{seed}", value)
            results.append(value)
        return float(sum(results) / len(results))

    def _run(
        self, config: dict[str, Any], *, folder: Path, seed: int, reporter: PruningReporter | None
    ) -> float:
        """Train one seed in ``folder/seed-<seed>``; its value (NaN when ``reporter`` stopped it).

        Raises:
            RuntimeError: the run or its evaluation failed (the message names its log).
        """
        run_id = f"seed-{seed}"
        run_dir = folder / run_id
        watch = None if reporter is None else self.yardstick.watch(run_dir=run_dir, report=reporter)
        log_path = folder / f"{run_id}.log"
        with training_log(log_path):
            try:
                result = train(config, run_id=run_id, results_dir=folder, force=True, seed=seed,
                               max_steps=self.settings.steps, callbacks=[watch] if watch else [],
                               verbose=0)  # fmt: skip
                if reporter is not None and reporter.pruned_at is not None:
                    return math.nan
                if result.stopped_early:
                    # Ctrl-C: the run stops gracefully; a part-trained run must not count
                    raise KeyboardInterrupt
                value = self.yardstick.final_value(run_dir, seed=seed)
                logger.info("%s of %s: %.6g", self.yardstick.name, run_dir, value)
                return value
            except Exception as error:
                logger.exception("Trial run %s failed", run_dir)
                raise RuntimeError(f"{error} (log: {log_path})") from error
            finally:
                remove_weights(run_dir)
