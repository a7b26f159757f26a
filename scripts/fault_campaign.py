"""Fault campaign: kill, starve and feed garbage to ``ghost-learn``, and check that nothing is lost.

Run on purpose (several minutes), from the repository root::

    python scripts/fault_campaign.py [--kills 20] [--worker-kills 5] [--out campaign.json]
        [--parts kill,workers,disk,malformed,concurrent,malicious,truncated]

1. **kill -9** of a self-play tennis run with 2 environment workers at ``--kills`` moments: random
   ones, and ones timed to land inside a checkpoint write or a snapshot write. After every kill the
   last checkpoint is loaded into a fresh session, which must equal it (snapshot window, ratings,
   counters, learning team, RNG states); then ``--resume`` continues, and the run finishes.
2. **An environment worker killed** ``--worker-kills`` times: each is restarted and the run ends
   normally. Then a run with ``--max-lifetime-restarts 1`` whose workers die twice: a clear error,
   a checkpoint, and ``--resume`` finishes it.
3. **A full disk and a read-only one** (a small tmpfs; needs root and ``mount``, else skipped and
   said so): a clear error, the last checkpoint intact, and ``--resume`` finishes once there is room.
4. **Malformed inputs** (``scripts/malformed_inputs.py``): each a clear error with exit code 2 and no
   traceback; afterwards the same run id starts (or resumes) cleanly.
5. **Shared runs and files** (``scripts/fault_sharing.py``): concurrent runs on one run folder, a
   policy file that would run code, and a checkpoint truncated at random offsets.

Prints the table (fault, count, survived, data lost) and writes every detail to ``--out``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import attrs
from fault_sharing import sharing_campaigns
from fault_tools import (
    CONFIG,
    Outcome,
    environment_workers,
    kill_group,
    learn_command,
    run,
    saved_step,
    start,
    verify_checkpoint,
    wait_for_count,
    wait_for_line,
    wait_for_temp_file,
)
from malformed_inputs import GOOD_CONFIG, MALFORMED_INPUTS


# -- 1. kill -9 --------------------------------------------------------------------------------
def kill_campaign(work: Path, kills: int, rng: random.Random) -> Outcome:
    outcome = Outcome("kill -9 of ghost-learn (2 env workers)")
    config = work / "kill.yaml"
    config.write_text(CONFIG.format(max_steps=10**8))
    results, run_id = work / "results", "kill"
    root = results / run_id
    moments = ["checkpoint write", "snapshot write", "random", "random", "random"]
    for number in range(kills):
        moment = moments[number % len(moments)]
        flags = ["--resume"] if root.exists() else []
        log = work / f"kill-{number}.log"
        before = saved_step(root)
        process = start(learn_command(config, results, run_id, *flags), log)
        started = wait_for_line(log, "Step:", 120, process)
        if moment == "checkpoint write":
            hit = wait_for_temp_file(root / "Tennis" / "checkpoints", "Tennis-", 60, process)
        elif moment == "snapshot write":
            hit = wait_for_temp_file(root / "Tennis" / "snapshots", "snapshot-", 60, process)
        else:
            time.sleep(rng.uniform(0.0, 6.0))
            hit = True
        still_running = process.poll() is None
        kill_group(process)
        problems = verify_checkpoint(root)
        after = saved_step(root)
        detail = (
            f"kill {number + 1} during {moment}{'' if hit else ' (window missed)'}: "
            f"started={started}, checkpoint step {before} -> {after}, "
            f"{'; '.join(problems) or 'restored state equals the checkpoint'}"
        )
        outcome.record(started and still_running and not problems, bool(problems), detail)
    # the run finishes: the same run resumed with a budget just above where it stands
    final = work / "kill-final.yaml"
    target = saved_step(root) + 20000
    final.write_text(CONFIG.format(max_steps=target))
    done = run(learn_command(final, results, run_id, "--resume"))
    finished = done.returncode == 0 and (root / "Tennis.pt").is_file()
    outcome.details.append(
        f"final --resume to step {target}: exit {done.returncode}, final policy "
        f"{'written' if finished else 'MISSING'}, checkpoint step {saved_step(root)}"
    )
    print("  " + outcome.details[-1])
    if not finished:
        outcome.data_lost += 1
        print(done.stderr[-2000:])
    return outcome


# -- 2. environment workers killed -------------------------------------------------------------
def worker_campaign(work: Path, worker_kills: int) -> list[Outcome]:
    restarted = Outcome("env worker killed (restarted)")
    config = work / "workers.yaml"
    config.write_text(CONFIG.format(max_steps=250_000))
    results = work / "results"
    log = work / "workers.log"
    flags = ["--max-lifetime-restarts", "10", "--restarts-rate-limit-n", "-1"]
    process = start(learn_command(config, results, "workers", *flags), log)
    wait_for_line(log, "Step:", 120, process)
    for number in range(worker_kills):
        time.sleep(2.0)
        workers = environment_workers(process.pid)
        if process.poll() is not None or not workers:
            restarted.record(False, False, f"kill {number + 1}: no worker to kill")
            continue
        os.kill(workers[number % len(workers)], signal.SIGKILL)
        found = wait_for_count(log, "restarting it (restart", number + 1, 60, process)
        restarted.record(found, False, f"kill {number + 1}: worker killed, restart logged={found}")
    code = process.wait(timeout=900)
    text = log.read_text(errors="replace")
    ended = code == 0 and "Exported" in text and "Traceback" not in text
    restarted.details.append(f"run ended with exit {code}, final policy exported={ended}")
    print("  " + restarted.details[-1])
    if not ended:
        restarted.survived = 0

    limit = Outcome("env worker past max_lifetime_restarts")
    log = work / "limit.log"
    long_run = work / "limit.yaml"
    long_run.write_text(CONFIG.format(max_steps=10**8))
    flags = ["--max-lifetime-restarts", "1", "--restarts-rate-limit-n", "-1"]
    process = start(learn_command(long_run, results, "limit", *flags), log)
    wait_for_line(log, "Step:", 120, process)
    for _ in range(2):
        time.sleep(2.0)
        for pid in environment_workers(process.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        wait_for_count(log, "restarting it (restart", 2, 30, process)
    code = process.wait(timeout=300)
    text = log.read_text(errors="replace")
    root = results / "limit"
    clear = code == 2 and "is not restarted again" in text and "Traceback" not in text
    problems = verify_checkpoint(root)
    long_run.write_text(CONFIG.format(max_steps=saved_step(root) + 10000))
    resumed = run(learn_command(long_run, results, "limit", "--resume"))
    detail = (f"exit {code}, clear error={clear}, checkpoint step {saved_step(root)} "
              f"({'; '.join(problems) or 'intact'}), --resume exit {resumed.returncode}")  # fmt: skip
    limit.record(clear and resumed.returncode == 0, bool(problems), detail)
    return [restarted, limit]


# -- 3. disks ----------------------------------------------------------------------------------
@contextlib.contextmanager
def tmpfs(path: Path, size: str) -> Iterator[bool]:
    path.mkdir(parents=True, exist_ok=True)
    mounted = (
        run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)]).returncode == 0
    )
    try:
        yield mounted
    finally:
        if mounted:
            run(["umount", "-l", str(path)])


def disk_campaign(work: Path) -> list[Outcome]:
    full = Outcome("results disk full (3 MB tmpfs)")
    readonly = Outcome("results disk turns read-only mid-run")
    at_start = Outcome("results dir unwritable at start")
    config = work / "disk.yaml"
    config.write_text(CONFIG.format(max_steps=10**8))
    disk = work / "disk"
    with tmpfs(disk, "3m") as mounted:
        if not mounted:
            for outcome in (full, readonly, at_start):
                outcome.details.append("skipped: mounting a tmpfs needs root and mount(8)")
            return [full, readonly, at_start]
        done = run(learn_command(config, disk, "full"), timeout=900)
        root = disk / "full"
        clear = done.returncode == 2 and "No space left on device" in done.stderr
        clear = clear and "Traceback" not in done.stderr
        problems = verify_checkpoint(root) if root.exists() else ["run folder gone"]
        step = saved_step(root)
        run(["mount", "-o", "remount,size=256m", str(disk)])
        final = work / "disk-final.yaml"
        final.write_text(CONFIG.format(max_steps=step + 10000))
        resumed = run(learn_command(final, disk, "full", "--resume"))
        full.record(clear and resumed.returncode == 0, bool(problems),
                    f"exit {done.returncode}: {done.stderr.strip().splitlines()[-1][:200]}; "
                    f"checkpoint step {step} {'; '.join(problems) or 'intact'}; after making "
                    f"room --resume exit {resumed.returncode}")  # fmt: skip

        log = work / "readonly.log"
        process = start(learn_command(config, disk, "ro"), log)
        wait_for_line(log, "Checkpoint written", 180, process)
        run(["mount", "-o", "remount,ro", str(disk)])
        code = process.wait(timeout=300)
        text = log.read_text(errors="replace")
        clear = code == 2 and "Read-only file system" in text and "Traceback" not in text
        problems = verify_checkpoint(disk / "ro")
        step = saved_step(disk / "ro")
        started = run(learn_command(config, disk, "new-run"))
        at_start.record(started.returncode == 2 and "Traceback" not in started.stderr, False,
                        f"exit {started.returncode}: {started.stderr.strip()[-200:]}")  # fmt: skip
        run(["mount", "-o", "remount,rw", str(disk)])
        final.write_text(CONFIG.format(max_steps=step + 10000))
        resumed = run(learn_command(final, disk, "ro", "--resume"))
        readonly.record(clear and resumed.returncode == 0, bool(problems),
                        f"exit {code}, clear error={clear}, checkpoint step {step} "
                        f"{'; '.join(problems) or 'intact'}; writable again: --resume exit "
                        f"{resumed.returncode}")  # fmt: skip
    return [full, readonly, at_start]


# -- 4. malformed inputs -----------------------------------------------------------------------
def malformed_campaign(work: Path) -> Outcome:
    outcome = Outcome("malformed input (config, flag, env)")
    results = work / "malformed"
    good = work / "good.yaml"
    good.write_text(json.dumps(GOOD_CONFIG))
    for number, case in enumerate(MALFORMED_INPUTS):
        run_id = f"case-{number}"
        argv = case.argv(work, good)
        done = run(learn_command(*argv[:1], results, run_id, *argv[1:]) if argv else [])
        clear = done.returncode == 2 and "Traceback" not in done.stderr
        clear = clear and case.expect in done.stderr
        root = results / run_id
        follow = ["--resume"] if root.exists() else []
        again = run(learn_command(good, results, run_id, *follow))
        ok = clear and again.returncode == 0
        last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
        outcome.record(ok, again.returncode != 0,
                       f"{case.label}: exit {done.returncode}, {last[:160]!r}; then "
                       f"{'--resume' if follow else 'a fresh start'} exit {again.returncode}")  # fmt: skip
    return outcome


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--worker-kills", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("fault-campaign.json"))
    parser.add_argument("--repeats", type=int, default=3,
                        help="times each concurrent-run fault is tried")  # fmt: skip
    parser.add_argument("--truncations", type=int, default=10,
                        help="random offsets the newest checkpoint is cut at")  # fmt: skip
    parser.add_argument("--parts",
                        default="kill,workers,disk,malformed,concurrent,malicious,truncated",
                        help="comma-separated parts to run")  # fmt: skip
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    rng = random.Random(args.seed)
    outcomes: list[Outcome] = []
    with tempfile.TemporaryDirectory(prefix="ghost-faults-") as folder:
        work = Path(folder)
        if "malformed" in parts:
            print("== malformed inputs")
            outcomes.append(malformed_campaign(work))
        if "workers" in parts:
            print("== environment workers")
            outcomes.extend(worker_campaign(work, args.worker_kills))
        if "disk" in parts:
            print("== disks")
            outcomes.extend(disk_campaign(work))
        if "kill" in parts:
            print("== kill -9")
            outcomes.append(kill_campaign(work, args.kills, rng))
        outcomes.extend(sharing_campaigns(work, parts, repeats=args.repeats,
                                          truncations=args.truncations, rng=rng))  # fmt: skip
    print("\n| fault | count | survived | data lost |\n|---|---|---|---|")
    for outcome in outcomes:
        print(f"| {outcome.fault} | {outcome.count} | {outcome.survived} | {outcome.data_lost} |")
    args.out.write_text(json.dumps([attrs.asdict(o) for o in outcomes], indent=2))
    failed = any(o.survived < o.count or o.data_lost for o in outcomes)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
