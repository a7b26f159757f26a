"""A study in its storage, and the worker processes that run its trials.

**Storage.** Every trial lives in an Optuna storage, so any number of processes, on any number of
machines, can work on one study: each asks the storage for the next trial and writes back its
result; there is no scheduler of our own. The default is a SQLite file in the study's folder
(``results/<study>/study.db``); ``--storage`` takes any database URL Optuna takes
(``postgresql://...``, ``mysql://...``, ``sqlite:///...``), or a file path: ``*.db`` is SQLite,
anything else an Optuna journal file (``JournalFileBackend``, which also works on NFS). A
database storage keeps a heartbeat of each running trial: a trial whose process was killed is
marked failed after ``GRACE_PERIOD_S``. A journal file has no heartbeat; such a trial stays
``RUNNING`` (and counts toward ``--trials``).

**How many trials.** ``--trials N`` is the size of the study: workers start trials until it holds
``N`` (finished or running), whoever started them. Running the same command again therefore
continues an interrupted study, and a larger ``N`` adds trials. Workers of one moment may overshoot
by a trial or two.

**Parallel.** ``--jobs J`` starts ``J`` worker processes (spawned, each with its own interpreter)
on this machine, all on the same storage; more machines join by running the same command with the
same ``--storage``.
"""

from __future__ import annotations

import logging
import multiprocessing
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import optuna
from optuna.storages import BaseStorage, JournalStorage, RDBStorage
from optuna.storages.journal import JournalFileBackend
from optuna.trial import FrozenTrial, TrialState

from ghost.exceptions import ConfigError, GhostError
from ghost.tuning.objective import Objective
from ghost.tuning.settings import SETTINGS_ATTR, TuneSettings, check_same_study
from ghost.tuning.yardsticks import SCRIPTED

logger = logging.getLogger(__name__)

DEFAULT_STORAGE_FILE = "study.db"
HEARTBEAT_INTERVAL_S = 30
GRACE_PERIOD_S = 120
#: trials failing one after another in one worker before it gives up
MAX_FAILURES_IN_A_ROW = 3
COUNTED_STATES = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL, TrialState.RUNNING)

#: told of every trial a worker finishes (Optuna's callback signature)
TrialCallback = Callable[[optuna.Study, FrozenTrial], None]


class TuningError(GhostError):
    """A study cannot go on (every trial fails, a worker died)."""


# -- storage -------------------------------------------------------------------------------------
def storage_url(given: str | None, folder: Path) -> str:
    """The storage of a study: ``given`` (a database URL or a file path), else the SQLite file in
    the study's ``folder``. File paths are made absolute, so worker processes find them."""
    if given is None:
        return f"sqlite:///{(folder / DEFAULT_STORAGE_FILE).absolute()}"
    if "://" in given:
        return given
    path = Path(given).expanduser().absolute()
    if path.suffix in (".db", ".sqlite", ".sqlite3"):
        return f"sqlite:///{path}"
    return str(path)


def open_storage(url: str) -> BaseStorage:
    """The Optuna storage of a URL from ``storage_url`` (a plain path: a journal file)."""
    if "://" not in url:
        Path(url).parent.mkdir(parents=True, exist_ok=True)
        return JournalStorage(JournalFileBackend(url))
    engine_kwargs = {}
    if url.startswith("sqlite:///"):
        Path(url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
        # several workers write to one file: wait for its lock instead of failing at once
        engine_kwargs = {"connect_args": {"timeout": 60}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return RDBStorage(url, engine_kwargs=engine_kwargs,
                          heartbeat_interval=HEARTBEAT_INTERVAL_S, grace_period=GRACE_PERIOD_S)  # fmt: skip


def direction_of(yardstick: str) -> Literal["minimize", "maximize"]:
    """``maximize`` for a score against a scripted level, ``minimize`` for the others."""
    return "maximize" if yardstick.startswith(f"{SCRIPTED}:") else "minimize"


def make_pruner(name: str, settings: TuneSettings) -> optuna.pruners.BasePruner:
    """``median``: prune a trial whose value at an evaluation is worse than the median of earlier
    trials there (from the second evaluation on, once 5 trials finished); ``none``: never."""
    if name == "median":
        return optuna.pruners.MedianPruner(
            n_startup_trials=5, n_warmup_steps=2 * settings.report_interval
        )
    if name == "none":
        return optuna.pruners.NopPruner()
    raise ConfigError(f"--pruner {name!r}: choose median or none")


def open_study(
    *,
    name: str,
    url: str,
    settings: TuneSettings | None,
    pruner: optuna.pruners.BasePruner | None = None,
) -> tuple[optuna.Study, TuneSettings]:
    """Load study ``name`` from the storage at ``url``, or create it with ``settings``.

    Raises:
        ConfigError: the study exists with other settings, or does not exist and no settings
            were given (nothing to create it from).
    """
    storage = open_storage(url)
    sampler = optuna.samplers.TPESampler(constant_liar=True)
    if name in optuna.study.get_all_study_names(storage):
        study = optuna.load_study(study_name=name, storage=storage, sampler=sampler, pruner=pruner)
        data = study.user_attrs.get(SETTINGS_ATTR)
        if data is None:
            raise ConfigError(
                f"study {name!r} in {url} was not made by ghost-tune; choose another --study-name"
            )
        stored = TuneSettings.from_dict(data)
        if settings is not None:
            check_same_study(stored, settings, study_name=name)
        return study, stored
    if settings is None:
        raise ConfigError(
            f"there is no study {name!r} in {url}; give CONFIG or --env GAME to start one "
            "(or the --storage that holds it)"
        )
    study = optuna.create_study(
        study_name=name, storage=storage, sampler=sampler, pruner=pruner,
        direction=direction_of(settings.yardstick), load_if_exists=True,
    )  # fmt: skip
    study.set_user_attr(SETTINGS_ATTR, settings.to_dict())
    return study, settings


def counted_trials(study: optuna.Study) -> int:
    """Trials toward ``--trials``: finished or running."""
    return len(study.get_trials(deepcopy=False, states=COUNTED_STATES))


# -- workers -------------------------------------------------------------------------------------
def run_trials(
    study: optuna.Study,
    objective: Callable[[optuna.Trial], float],
    *,
    total: int,
    on_trial: TrialCallback | None = None,
) -> int:
    """Run trials of ``study`` in this process until it holds ``total``; how many ran here.

    Raises:
        TuningError: ``MAX_FAILURES_IN_A_ROW`` trials failed one after another.
    """
    with warnings.catch_warnings():  # before counting: a killed process's trial is not running
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        optuna.storages.fail_stale_trials(study)
    states: list[FrozenTrial] = []

    def finished(study: optuna.Study, trial: FrozenTrial) -> None:
        states.append(trial)
        if on_trial is not None:
            on_trial(study, trial)

    in_a_row = 0
    while counted_trials(study) < total:
        study.optimize(objective, n_trials=1, catch=(Exception,), callbacks=[finished])
        in_a_row = in_a_row + 1 if states and states[-1].state == TrialState.FAIL else 0
        if in_a_row >= MAX_FAILURES_IN_A_ROW:
            last = states[-1]
            raise TuningError(
                f"{in_a_row} trials in a row failed; the last, trial {last.number}: "
                f"{last.user_attrs.get('error', 'see its log')}"
            )
    return len(states)


def _worker(
    *,
    name: str,
    url: str,
    folder: Path,
    total: int,
    pruner: optuna.pruners.BasePruner | None,
    on_trial: TrialCallback | None,
) -> int:
    """One worker: open the study (it exists) and run trials until it holds ``total``."""
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    study, settings = open_study(name=name, url=url, settings=None, pruner=pruner)
    objective = Objective(settings=settings, folder=folder)
    return run_trials(study, objective, total=total, on_trial=on_trial)


def _worker_process(**options: object) -> None:
    """The body of a spawned worker: exit code 0, 2 for a study that cannot go on, 130 for
    Ctrl-C (the terminal sends it to every worker)."""
    try:
        _worker(**options)  # type: ignore[arg-type]
    except KeyboardInterrupt:
        raise SystemExit(130) from None
    except GhostError as error:
        print(f"ghost-tune worker: error: {error}", flush=True)
        raise SystemExit(2) from None


def run_study(
    *,
    name: str,
    url: str,
    folder: Path,
    total: int,
    jobs: int = 1,
    pruner: optuna.pruners.BasePruner | None = None,
    on_trial: TrialCallback | None = None,
) -> None:
    """Run the trials of an existing study until it holds ``total``, in this process
    (``jobs`` 1) or in ``jobs`` worker processes sharing its storage.

    Args:
        on_trial: told of each finished trial, in the process that ran it (a module-level
            function with ``jobs`` > 1: it travels to the workers by name).

    Raises:
        TuningError: trials keep failing, or a worker died.
    """
    options = {"name": name, "url": url, "folder": folder, "total": total,
               "pruner": pruner, "on_trial": on_trial}  # fmt: skip
    if jobs <= 1:
        _worker(**options)  # type: ignore[arg-type]
        return
    context = multiprocessing.get_context("spawn")  # no forked torch or SQLite state
    workers = [
        context.Process(target=_worker_process, kwargs=options, name=f"ghost-tune-{index}")
        for index in range(jobs)
    ]
    for worker in workers:
        worker.start()
    try:
        for worker in workers:
            worker.join()
    except KeyboardInterrupt:
        for worker in workers:
            worker.join(timeout=30)
            if worker.is_alive():
                worker.terminate()
        raise
    failed = [(w.name, w.exitcode) for w in workers if w.exitcode != 0]
    if failed:
        raise TuningError(
            "worker processes ended with errors: "
            + ", ".join(f"{worker_name} (exit code {code})" for worker_name, code in failed)
        )
