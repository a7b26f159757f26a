"""What a study leaves: the table of trials, parameter importance, and the best config.

Written to the study's folder (``results/<study>/``):

- ``summary.txt``: the table (trial, value, state, params; best first) and the importances;
- ``trials.csv``: the same table, one column per key path;
- ``importance.png``: the importances as a bar chart (with matplotlib);
- ``best.yaml``: the base config with the best trial's values, a full trainer config that
  ``ghost-learn best.yaml`` trains as it is.
"""

from __future__ import annotations

import csv
import io
import logging
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import optuna
import yaml
from optuna.trial import FrozenTrial, TrialState

from ghost.config.loader import MAX_STEPS_KEY, options_from_dict
from ghost.tuning.settings import TuneSettings
from ghost.tuning.space import with_values
from trainers.run_files.atomic import atomic_write_text

logger = logging.getLogger(__name__)

SUMMARY_FILE = "summary.txt"
TRIALS_FILE = "trials.csv"
IMPORTANCE_FILE = "importance.png"
BEST_FILE = "best.yaml"
_STATE_ORDER = {TrialState.COMPLETE: 0, TrialState.PRUNED: 1, TrialState.RUNNING: 2,
                TrialState.FAIL: 3, TrialState.WAITING: 4}  # fmt: skip


def best_first(study: optuna.Study) -> list[FrozenTrial]:
    """Every trial: the complete ones best first, then pruned, running and failed ones."""
    sign = -1.0 if study.direction == optuna.study.StudyDirection.MAXIMIZE else 1.0

    def key(trial: FrozenTrial) -> tuple[int, float, int]:
        value = trial.value if trial.value is not None else math.inf
        return (_STATE_ORDER.get(trial.state, 9), sign * value, trial.number)

    return sorted(study.get_trials(deepcopy=False), key=key)


def best_trial(study: optuna.Study) -> FrozenTrial | None:
    """The best complete trial, or None."""
    complete = [t for t in best_first(study) if t.state == TrialState.COMPLETE]
    return complete[0] if complete else None


def _format(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return "-" if value is None else str(value)


def short_names(keys: list[str]) -> dict[str, str]:
    """A column header per key path: its last part, longer where two would read the same."""
    names = {}
    for key in keys:
        parts = key.split(".")
        for length in range(1, len(parts) + 1):
            name = ".".join(parts[-length:])
            if sum(k.split(".")[-length:] == parts[-length:] for k in keys) == 1:
                break
        names[key] = name
    return names


def trial_rows(study: optuna.Study, keys: list[str]) -> list[dict[str, Any]]:
    """One row per trial, best first: ``trial``, ``value``, ``state``, ``note``, then the keys."""
    rows = []
    for trial in best_first(study):
        note = trial.user_attrs.get("invalid") or trial.user_attrs.get("error") or ""
        if trial.state == TrialState.PRUNED and "pruned_at_step" in trial.user_attrs:
            note = f"at step {trial.user_attrs['pruned_at_step']}"
        row = {"trial": trial.number, "value": trial.value, "state": trial.state.name.lower(),
               "note": note.splitlines()[0][:60] if note else ""}  # fmt: skip
        row.update({key: trial.params.get(key) for key in keys})
        rows.append(row)
    return rows


def format_table(study: optuna.Study, settings: TuneSettings) -> str:
    """The trials as a text table, best first."""
    keys = list(settings.space.parameters)
    headers = {"trial": "trial", "value": "value", "state": "state", **short_names(keys),
               "note": "note"}  # fmt: skip
    rows = [{name: _format(row[name]) for name in headers} for row in trial_rows(study, keys)]
    widths = {
        name: max([len(title), *(len(r[name]) for r in rows)]) for name, title in headers.items()
    }
    lines = ["  ".join(title.ljust(widths[name]) for name, title in headers.items()).rstrip()]
    lines += ["  ".join(r[name].ljust(widths[name]) for name in headers).rstrip() for r in rows]
    return "\n".join(lines)


def trials_csv(study: optuna.Study, settings: TuneSettings) -> str:
    """The trials as CSV, one column per key path, best first."""
    keys = list(settings.space.parameters)
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=["trial", "value", "state", *keys, "note"])
    writer.writeheader()
    for row in trial_rows(study, keys):
        writer.writerow({name: "" if value is None else value for name, value in row.items()})
    return out.getvalue()


# -- importance ----------------------------------------------------------------------------------
def importances(study: optuna.Study) -> tuple[dict[str, float], str | None]:
    """``optuna.importance.get_param_importances`` of the complete trials, and why there are
    none when there are none."""
    complete = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    if len(complete) < 2:
        return {}, f"parameter importance needs 2 complete trials ({len(complete)} so far)"
    try:
        return dict(optuna.importance.get_param_importances(study)), None
    except (RuntimeError, ValueError) as error:
        return {}, f"parameter importance could not be computed: {error}"


def format_importances(values: Mapping[str, float], reason: str | None) -> str:
    """One line per key path, most important first."""
    if not values:
        return reason or "no parameter importance"
    width = max(len(key) for key in values)
    lines = ["parameter importance (fANOVA; the share of the value's variance each explains):"]
    for key, value in sorted(values.items(), key=lambda item: -item[1]):
        lines.append(f"  {key.ljust(width)}  {value:.3f}  {'#' * round(value * 40)}")
    return "\n".join(lines)


def plot_importances(values: Mapping[str, float], path: Path, *, title: str) -> bool:
    """Draw the importances as a bar chart in ``path``; False when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    ordered = sorted(values.items(), key=lambda item: item[1])
    figure, axes = plt.subplots(figsize=(7, 0.4 * len(ordered) + 1.2))
    axes.barh([key for key, _ in ordered], [value for _, value in ordered], color="#4c72b0")
    axes.set_xlabel("importance (share of the value's variance)")
    axes.set_title(title)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return True


# -- the best config ----------------------------------------------------------------------------
def best_config(settings: TuneSettings, trial: FrozenTrial) -> dict[str, Any]:
    """The base config with ``trial``'s values and the trials' budget: what ``ghost-learn`` trains
    as it is (checked through the config loader)."""
    values = {key: trial.params[key] for key in settings.space.parameters if key in trial.params}
    config = with_values(settings.base_config, {**values, MAX_STEPS_KEY: settings.steps})
    options_from_dict(config)  # refuses what ghost-learn would refuse
    return config


def best_yaml(study: optuna.Study, settings: TuneSettings, trial: FrozenTrial) -> str:
    """``best_config`` as YAML, its header saying where it comes from."""
    config = best_config(settings, trial)
    seeds = ", ".join(str(seed) for seed in settings.seeds)
    header = (
        f"# ghost-tune study {study.study_name!r}: trial {trial.number}, {settings.yardstick} "
        f"{trial.value:.6g}\n"
        f"# (the mean over seeds {seeds} after {settings.steps} steps); the base config with the\n"
        "# trial's values. Train it: ghost-learn best.yaml --run-id NAME (add --max-steps N for\n"
        "# a longer run than the trials had).\n"
    )
    return header + yaml.safe_dump(config, sort_keys=False, default_flow_style=False)


@attrs.frozen(kw_only=True)
class StudyReport:
    """The text of a study's report and the files written."""

    table: str
    importance: str
    best: FrozenTrial | None
    files: dict[str, Path]
    #: trials per state (``complete``, ``pruned``...)
    counts: dict[str, int]

    def text(self, study_name: str, settings: TuneSettings) -> str:
        """Everything a reader sees at the end of a study."""
        tally = ", ".join(f"{n} {state}" for state, n in self.counts.items()) or "no trials"
        lines = [f"study {study_name}: {tally}; yardstick {settings.yardstick}", "", self.table,
                 "", self.importance]  # fmt: skip
        if self.best is not None:
            lines += ["", f"best: trial {self.best.number}, value {self.best.value:.6g}"]
        lines += [f"{name}: {path}" for name, path in self.files.items()]
        return "\n".join(lines)


def write_report(study: optuna.Study, settings: TuneSettings, folder: Path) -> StudyReport:
    """Write ``summary.txt``, ``trials.csv``, ``importance.png`` and ``best.yaml`` (those that
    apply so far) into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    table = format_table(study, settings)
    values, reason = importances(study)
    importance = format_importances(values, reason)
    files: dict[str, Path] = {}
    atomic_write_text(folder / SUMMARY_FILE, f"{table}\n\n{importance}\n")
    files["table"] = folder / SUMMARY_FILE
    atomic_write_text(folder / TRIALS_FILE, trials_csv(study, settings))
    files["trials"] = folder / TRIALS_FILE
    if values and plot_importances(values, folder / IMPORTANCE_FILE,
                                   title=f"{study.study_name}: {settings.yardstick}"):  # fmt: skip
        files["importance chart"] = folder / IMPORTANCE_FILE
    best = best_trial(study)
    if best is not None:
        atomic_write_text(folder / BEST_FILE, best_yaml(study, settings, best))
        files["best config"] = folder / BEST_FILE
    counts: dict[str, int] = {}
    for trial in best_first(study):
        counts[trial.state.name.lower()] = counts.get(trial.state.name.lower(), 0) + 1
    return StudyReport(table=table, importance=importance, best=best, files=files, counts=counts)


# -- progress ------------------------------------------------------------------------------------
def progress_line(study: optuna.Study, trial: FrozenTrial, *, total: int) -> str:
    """One line for a finished trial: its state and value, the best so far, the count."""
    if trial.state == TrialState.COMPLETE:
        what = f"value {trial.value:.6g}"
    elif trial.state == TrialState.PRUNED:
        reason = trial.user_attrs.get("invalid")
        at = trial.user_attrs.get("pruned_at_step")
        last = trial.last_step
        value = trial.intermediate_values.get(last) if last is not None else None
        what = (f"pruned (invalid: {reason.splitlines()[0]})" if reason
                else f"pruned at step {at} (value {_format(value)})")  # fmt: skip
    else:
        what = f"{trial.state.name.lower()}: {trial.user_attrs.get('error', 'see its log')}"
    best = best_trial(study)
    best_text = (
        f"best {best.value:.6g} (trial {best.number})" if best is not None else "no best yet"
    )
    done = len(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED,
                                                         TrialState.FAIL)))  # fmt: skip
    return f"trial {trial.number} {what} | {best_text} | {done}/{total} trials done"
