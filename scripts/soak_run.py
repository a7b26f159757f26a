"""Soak run: does memory stay flat over a long self-play run?

Starts ``ghost-learn`` as a subprocess on a built-in game (tennis by default) with 2 environment
workers, a snapshot window that fills and turns over many times, a scripted fixed opponent and
scheduled evaluation against it, and ``max_steps`` far beyond what the run can reach. Every
``--sample-every`` seconds it reads, from ``/proc`` (no extra dependency), the resident memory
(``VmRSS``) and the number of open file descriptors of the trainer process and of every process
below it (the multiprocessing fork server, the resource tracker, the environment workers), and the
trainer step from the run's console log. After ``--duration-min`` minutes it stops the run with
SIGINT, waits for it to write its last checkpoint, and prints a markdown table: RSS of each process
at 1/6, 1/2 and the end of the run (5, 15 and 30 min for the default 30 minutes), the growth from
the warm-up mark to the end (target: below 5 %), the least-squares trend after warm-up, and the
open files at start, warm-up and end. It exits 0 whether or not the target is met (it measures)
and says MET or NOT MET.

Everything goes to ``--out``: ``soak.yaml`` (the configuration trained), ``ghost-learn.log``,
``samples.csv`` (one row per process per sample), ``table.md`` and ``results/`` (the run).

usage: .venv/bin/python scripts/soak_run.py [--duration-min 30] [--warmup-min 5]
       [--sample-every 60] [--out /tmp/soak/run] [--game tennis] [--num-envs 2]
"""

from __future__ import annotations

import argparse
import csv
import itertools
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
TARGET_GROWTH = 0.05
STEP_LINE = re.compile(r"\. Step: (\d+)\.")


@dataclass
class Sample:
    """One process at one moment."""

    elapsed_s: float
    step: int | None
    role: str
    pid: int
    rss_kib: int
    fds: int


@dataclass
class ProcessTree:
    """Names the processes under the trainer once, at first sight, so a name stays with a pid."""

    root: int
    roles: dict[int, str] = field(default_factory=dict)
    workers: int = 0

    def walk(self) -> dict[int, str]:
        """``{pid: role}`` of the trainer and every living descendant."""
        children = _children_by_parent()
        alive = {self.root: "trainer"}
        pending = [self.root]
        while pending:
            parent = pending.pop()
            for pid in sorted(children.get(parent, ()), key=_start_time):
                alive[pid] = self.roles.get(pid) or self._name(pid, parent)
                self.roles[pid] = alive[pid]
                pending.append(pid)
        return alive

    def _name(self, pid: int, parent: int) -> str:
        command = _cmdline(pid)
        if "resource_tracker" in command:
            return "resource-tracker"
        if "multiprocessing.forkserver" in command and parent == self.root:
            return "forkserver"
        role = f"worker-{self.workers}"
        self.workers += 1
        return role


def _children_by_parent() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        # the command name (field 2) may hold spaces and parentheses: split after its last ')'
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    return children


def _start_time(pid: int) -> int:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0
    return int(stat[stat.rindex(")") + 2 :].split()[19])


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _rss_kib(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def _open_files(pid: int) -> int | None:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None


class StepReader:
    """The last ``Step: N`` the trainer wrote to its console log (read incrementally)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.step: int | None = None

    def read(self) -> int | None:
        try:
            with self.path.open("rb") as log:
                log.seek(self.offset)
                text = log.read().decode(errors="replace")
                self.offset = log.tell()
        except OSError:
            return self.step
        for match in STEP_LINE.finditer(text):
            self.step = int(match.group(1))
        return self.step


def write_config(args: argparse.Namespace, path: Path) -> None:
    """The game's shipped config with the soak's settings laid over it."""
    base = yaml.safe_load((REPO / "config" / f"{args.game}.yaml").read_text())
    for behavior in base["behaviors"].values():
        behavior["max_steps"] = 10**12
        behavior["checkpoint_interval"] = args.checkpoint_interval
        behavior["keep_checkpoints"] = 5
        behavior["summary_freq"] = args.summary_freq
        self_play = behavior.setdefault("self_play", {})
        self_play.update(
            save_steps=args.save_steps,
            team_change=4 * args.save_steps,
            swap_steps=args.swap_steps,
            window=args.window,
            fixed_opponents=[{"name": args.opponent, "scripted": args.opponent}],
            evaluation={"every_steps": args.eval_every, "games": args.eval_games},
        )
    base["env_settings"].update(env_path=args.game, num_envs=args.num_envs, seed=0)
    path.write_text(yaml.safe_dump(base, sort_keys=False))


def sample(tree: ProcessTree, elapsed_s: float, step: int | None) -> list[Sample]:
    rows = []
    for pid, role in tree.walk().items():
        rss, fds = _rss_kib(pid), _open_files(pid)
        if rss is not None and fds is not None:
            rows.append(Sample(elapsed_s, step, role, pid, rss, fds))
    return rows


def stop(process: subprocess.Popen, timeout_s: float) -> int:
    """SIGINT (the run writes a checkpoint and exports), then SIGTERM, then SIGKILL."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
        if process.poll() is not None:
            break
        process.send_signal(sig)
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            print(f"ghost-learn still running {timeout_s:.0f} s after {sig.name}", flush=True)
    return process.wait()


def _nearest(samples: list[Sample], at_s: float) -> Sample:
    return min(samples, key=lambda s: abs(s.elapsed_s - at_s))


def _trend_mib_per_hour(samples: list[Sample]) -> float | None:
    """Least-squares slope of RSS over time."""
    if len(samples) < 3:
        return None
    n = len(samples)
    mean_t = sum(s.elapsed_s for s in samples) / n
    mean_r = sum(s.rss_kib for s in samples) / n
    var_t = sum((s.elapsed_s - mean_t) ** 2 for s in samples)
    if var_t == 0:
        return None
    cov = sum((s.elapsed_s - mean_t) * (s.rss_kib - mean_r) for s in samples)
    return cov / var_t * 3600 / 1024


def _mib(kib: int) -> str:
    return f"{kib / 1024:.1f}"


def report(samples: list[Sample], *, duration_s: float, warmup_s: float) -> tuple[str, bool]:
    """The markdown tables and whether every process stayed under the growth target."""
    roles = list(dict.fromkeys(s.role for s in samples))
    marks = [duration_s / 6, duration_s / 2, duration_s]
    head = " | ".join(f"RSS @ {round(m / 60, 1):g} min (MiB)" for m in marks)
    lines = [
        f"| process | {head} | growth after warm-up ({warmup_s / 60:g} min → end) "
        "| trend after warm-up (MiB/h) | target | result |",
        "|---" * (len(marks) + 5) + "|",
    ]
    fd_lines = [
        "| process | open files @ first sample | @ warm-up | @ end |",
        "|---|---|---|---|",
    ]
    met = True
    for role in roles:
        mine = [s for s in samples if s.role == role]
        pids = sorted({s.pid for s in mine})
        name = role if len(pids) == 1 else f"{role} (pids {pids}: restarted?)"
        rss = " | ".join(_mib(_nearest(mine, m).rss_kib) for m in marks)
        warm, end = _nearest(mine, warmup_s), mine[-1]
        growth = (end.rss_kib - warm.rss_kib) / warm.rss_kib
        trend = _trend_mib_per_hour([s for s in mine if s.elapsed_s >= warm.elapsed_s])
        trend_text = f"{trend:+.1f}" if trend is not None else "n/a"
        ok = growth < TARGET_GROWTH
        met = met and ok
        lines.append(
            f"| {name} | {rss} | {growth:+.1%} | {trend_text} | < {TARGET_GROWTH:.0%} "
            f"| {'met' if ok else 'NOT MET'} |"
        )
        fd_lines.append(f"| {name} | {mine[0].fds} | {warm.fds} | {end.fds} |")
    times = sorted({s.elapsed_s for s in samples})
    totals = {t: sum(s.rss_kib for s in samples if s.elapsed_s == t) for t in times}
    warm_t = min(times, key=lambda t: abs(t - warmup_s))
    total_growth = (totals[times[-1]] - totals[warm_t]) / totals[warm_t]
    rss = " | ".join(_mib(totals[min(times, key=lambda t: abs(t - m))]) for m in marks)
    lines.append(f"| **all processes** | {rss} | {total_growth:+.1%} | | | |")
    steps = [s.step for s in samples if s.step is not None]
    step_at = [_nearest(samples, m).step for m in marks]
    lines.append(f"| trainer step | {' | '.join(str(step) for step in step_at)} | | | | |")
    tail = [
        "",
        *fd_lines,
        "",
        f"samples: {len(times)}, last at {times[-1] / 60:.1f} min; "
        f"trainer step at the last sample: {steps[-1] if steps else 'unknown'}",
        "",
        f"**MET**: every process grew less than {TARGET_GROWTH:.0%} after warm-up"
        if met
        else f"**NOT MET**: at least one process grew {TARGET_GROWTH:.0%} or more after warm-up",
    ]
    return "\n".join(lines + tail), met


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="example: .venv/bin/python scripts/soak_run.py --duration-min 3 --warmup-min 1 "
        "--sample-every 15 --out /tmp/soak/check",
    )
    add = parser.add_argument
    add("--duration-min", type=float, default=30.0, help="minutes to run (default: 30)")
    add("--warmup-min", type=float, default=5.0, help="growth is measured from here (default: 5)")
    add("--sample-every", type=float, default=60.0, help="seconds between samples (default: 60)")
    add("--out", type=Path, default=None, help="results folder (default: /tmp/soak/<time>)")
    add(
        "--game", default="tennis", help="built-in game with a config/<game>.yaml (default: tennis)"
    )
    add("--num-envs", type=int, default=2, help="environment workers (default: 2)")
    add("--window", type=int, default=10, help="self_play.window (default: 10)")
    add(
        "--save-steps",
        type=int,
        default=5000,
        help="self_play.save_steps; team_change is 4x (default: 5000)",
    )
    add("--swap-steps", type=int, default=2000, help="self_play.swap_steps (default: 2000)")
    add("--opponent", default="medium", help="scripted level evaluated against (default: medium)")
    add("--eval-every", type=int, default=100000, help="evaluation.every_steps (default: 100000)")
    add("--eval-games", type=int, default=50, help="evaluation.games (default: 50)")
    add(
        "--checkpoint-interval",
        type=int,
        default=200000,
        help="checkpoint_interval (default: 200000)",
    )
    add("--summary-freq", type=int, default=50000, help="summary_freq (default: 50000)")
    add(
        "--stop-timeout",
        type=float,
        default=120.0,
        help="seconds to wait after SIGINT (default: 120)",
    )
    return parser


def ghost_learn_command(config: Path, out: Path) -> list[str]:
    """The soak run's ``ghost-learn`` command (this venv's entry point, else ``python -m``)."""
    ghost_learn = Path(sys.executable).with_name("ghost-learn")
    launcher = (
        [str(ghost_learn)] if ghost_learn.exists() else [sys.executable, "-m", "ghost.running.cli"]
    )
    return [
        *launcher,
        str(config),
        "--run-id=soak",
        f"--results-dir={out / 'results'}",
        "--force",
    ]


def start_run(command: list[str], log_path: Path) -> subprocess.Popen:
    """Start ``command`` with its output in ``log_path``."""
    # A job started with `&` ignores SIGINT, and so would the trainer it starts: restore the
    # default so that SIGINT stops the run cleanly. The trainer gets its own session so that a
    # Ctrl-C at the terminal reaches only this script, which then stops the run once.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    with log_path.open("wb") as log:
        return subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, cwd=REPO, start_new_session=True
        )


def sample_run(
    process: subprocess.Popen,
    steps: StepReader,
    *,
    csv_path: Path,
    duration_s: float,
    sample_every: float,
) -> list[Sample]:
    """Sample the run's processes every ``sample_every`` seconds until ``duration_s``, the run's
    end or Ctrl-C; each sample printed and written to ``csv_path`` as it comes."""
    tree = ProcessTree(process.pid)
    samples: list[Sample] = []
    start = time.monotonic()
    with csv_path.open("w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["elapsed_s", "step", "role", "pid", "rss_kib", "fds"])
        try:
            for k in itertools.count(1):
                # the first sample comes one interval in, once the workers are up and training;
                # samples keep to a fixed grid (no drift) and the last one is at the duration
                due = min(k * sample_every, duration_s)
                time.sleep(max(0.0, start + due - time.monotonic()))
                elapsed = time.monotonic() - start
                rows = sample(tree, elapsed, steps.read())
                writer.writerows([[f"{r.elapsed_s:.1f}", r.step, r.role, r.pid, r.rss_kib, r.fds]
                                  for r in rows])  # fmt: skip
                file.flush()
                samples += rows
                print(f"{elapsed / 60:6.1f} min  step {rows[0].step if rows else '?'}  "
                      + "  ".join(f"{r.role} {_mib(r.rss_kib)} MiB/{r.fds} fds" for r in rows),
                      flush=True)  # fmt: skip
                if process.poll() is not None:
                    print(f"ghost-learn exited early with code {process.returncode}", flush=True)
                    break
                if due >= duration_s:
                    break
        except KeyboardInterrupt:
            print("interrupted: stopping the run and reporting the samples so far", flush=True)
    return samples


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    out = args.out or Path("/tmp/soak") / time.strftime("%Y%m%d-%H%M%S")
    out.mkdir(parents=True, exist_ok=True)
    config = out / "soak.yaml"
    write_config(args, config)
    command = ghost_learn_command(config, out)
    print("command:", " ".join(command), flush=True)
    log_path = out / "ghost-learn.log"
    duration_s, warmup_s = args.duration_min * 60, args.warmup_min * 60
    process = start_run(command, log_path)
    steps = StepReader(log_path)
    samples = sample_run(process, steps, csv_path=out / "samples.csv", duration_s=duration_s,
                         sample_every=args.sample_every)  # fmt: skip
    code = stop(process, args.stop_timeout)
    print(f"ghost-learn exit code: {code}; last step: {steps.read()}", flush=True)
    if not samples:
        print("no samples were taken")
        return 0
    # the marks are the planned duration's, unless the run ended well before it
    last = samples[-1].elapsed_s
    planned = duration_s if last >= duration_s - args.sample_every else last
    table, _ = report(samples, duration_s=planned, warmup_s=warmup_s)
    (out / "table.md").write_text(table + "\n")
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
