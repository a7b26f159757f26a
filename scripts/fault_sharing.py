"""Fault campaign, shared runs and files: two processes on one run, a malicious policy file, and a
truncated checkpoint. ``scripts/fault_campaign.py --parts concurrent,malicious,truncated`` runs it.

1. **Concurrent runs**, ``--repeats`` times each: a second ``--resume`` on a live run that has not
   checkpointed yet, a ``--force`` on a live run, and two ``ghost.train`` calls on one new run id at
   once. The second process must be refused in one line naming the holder, and the live run must
   go on and end normally (Ctrl-C: exit 130, a checkpoint).
2. **A policy file whose unpickling would run a command**, given to every door that reads a user's
   policy file (``ghost-eval match``, ``--against``, ``init_path``, ``fixed_opponents``): each
   refuses it in one line, and the marker file the command would create does not exist.
3. **The newest checkpoint truncated** at ``--truncations`` random offsets: ``--resume`` goes on
   from the newest checkpoint that loads, says which, and finishes.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from fault_tools import ROOT, Outcome, learn_command, run, start, wait_for_line

LIGHT_CONFIG = """\
behaviors:
  Tennis:
    hyperparameters: {{batch_size: 256, buffer_size: 1024}}
    network_settings: {{hidden_units: 64, num_layers: 2}}
    max_steps: {max_steps}
    summary_freq: 500
    checkpoint_interval: {checkpoint_interval}
    keep_checkpoints: 5
    self_play: {{save_steps: 500, team_change: 2000, swap_steps: 250, window: 4}}
env_settings: {{env_path: tennis, seed: 7, num_envs: 2}}
{extra}"""

TWO_TRAIN_CALLS = """
import sys, ghost
from ghost.exceptions import GhostError
config = {{"behaviors": {{"Tennis": {{"max_steps": 3000, "summary_freq": 500,
           "network_settings": {{"hidden_units": 32}},
           "self_play": {{"save_steps": 500}}}}}}, "env_settings": {{"env_path": "tennis"}}}}
try:
    ghost.train(config, run_id="twin", results_dir={results!r})
except GhostError as error:
    print("refused:", error)
    sys.exit(2)
"""

MALICIOUS_POLICY = """
import os, sys, torch
class RunsCommand:
    def __reduce__(self):
        return (os.system, ("touch " + sys.argv[2],))
torch.save({"format": "ghost-trainer-policy", "payload": RunsCommand()}, sys.argv[1])
"""


def _one_error_line(stderr: str) -> str:
    lines = [line for line in stderr.strip().splitlines() if "error:" in line or "refused" in line]
    return lines[-1] if lines else (stderr.strip().splitlines() or ["(no message)"])[-1]


def _stop(process: subprocess.Popen, timeout: float = 120) -> int:
    """Ctrl-C the run (its whole process group, as a terminal does) and wait for it."""
    os.killpg(process.pid, signal.SIGINT)
    return process.wait(timeout=timeout)


# -- 1. concurrent runs ------------------------------------------------------------------------
def _second_on_live_run(work: Path, flag: str, number: int) -> tuple[bool, bool, str]:
    config = work / "live.yaml"
    config.write_text(LIGHT_CONFIG.format(max_steps=10**8, checkpoint_interval=10**6, extra=""))
    results, run_id = work / f"live-{flag.strip('-')}", f"run-{number}"
    log = work / f"live-{flag.strip('-')}-{number}.log"
    first = start(learn_command(config, results, run_id), log)
    live = wait_for_line(log, "Step:", 180, first)
    second = run(learn_command(config, results, run_id, flag), timeout=300)
    line = _one_error_line(second.stderr)
    refused = second.returncode == 2 and "in use" in line and "Traceback" not in second.stderr
    still_live = first.poll() is None
    code = _stop(first) if still_live else first.returncode
    text = log.read_text(errors="replace")
    intact = code == 130 and (results / run_id / "checkpoint.json").is_file()
    intact = intact and "Traceback" not in text
    detail = (
        f"{flag} on a live run: exit {second.returncode} {line[:160]!r}; first run live="
        f"{live and still_live}, its Ctrl-C exit {code}, checkpoint kept={intact}"
    )
    return refused and live and still_live, not intact, detail


def _two_train_calls(work: Path, number: int) -> tuple[bool, bool, str]:
    results = work / f"twins-{number}"
    script = work / "twin.py"
    script.write_text(TWO_TRAIN_CALLS.format(results=str(results)))
    command = [sys.executable, str(script)]
    both = [
        subprocess.Popen(
            command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )  # fmt: skip
        for _ in range(2)
    ]
    outputs = [process.communicate(timeout=600) for process in both]
    codes = sorted(process.returncode for process in both)
    refusal = next(
        (out for (out, _), p in zip(outputs, both, strict=True) if p.returncode == 2), ""
    )
    one_trained = codes == [0, 2] and (results / "twin" / "Tennis.pt").is_file()
    detail = f"two ghost.train at once: exit codes {codes}, refusal {refusal.strip()[:160]!r}"
    return one_trained, not one_trained, detail


def concurrent_campaign(work: Path, repeats: int) -> list[Outcome]:
    resume = Outcome("--resume on a live run (before its first checkpoint)")
    force = Outcome("--force on a live run")
    twins = Outcome("two ghost.train calls on one new run id")
    for number in range(repeats):
        resume.record(*_second_on_live_run(work, "--resume", number))
        force.record(*_second_on_live_run(work, "--force", number))
        twins.record(*_two_train_calls(work, number))
    return [resume, force, twins]


# -- 2. a malicious policy file ----------------------------------------------------------------
def _eval_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "ghost.evaluation.cli", *args]


def malicious_campaign(work: Path) -> Outcome:
    outcome = Outcome("policy file that would run code")
    marker = work / "code-ran"
    policy = work / "shared-policy.pt"
    subprocess.run([sys.executable, "-c", MALICIOUS_POLICY, str(policy), str(marker)],
                   cwd=ROOT, check=True)  # fmt: skip
    trained = work / "trained.yaml"
    trained.write_text(LIGHT_CONFIG.format(max_steps=1000, checkpoint_interval=1000, extra=""))
    run(learn_command(trained, work / "mal", "good"))
    good = work / "mal" / "good" / "Tennis.pt"
    init = work / "init.yaml"
    init.write_text(
        LIGHT_CONFIG.format(max_steps=1000, checkpoint_interval=1000, extra="")
        .replace("max_steps:", f"init_path: {policy}\n    max_steps:")
    )  # fmt: skip
    fixed = work / "fixed.yaml"
    fixed.write_text(
        LIGHT_CONFIG.format(max_steps=1000, checkpoint_interval=1000, extra="").replace(
            "window: 4}",
            f"window: 4, fixed_opponents: [{{name: shared, policy: {policy}}}]}}",
        )
    )
    doors = {
        "ghost-eval match FILE": _eval_command(
            "match", str(policy), "--game", "tennis", "--against", "random"
        ),  # fmt: skip
        "ghost-eval --against FILE": _eval_command(
            "match", str(good), "--game", "tennis", "--against", str(policy)
        ),  # fmt: skip
        "init_path: FILE": learn_command(init, work / "mal", "init"),
        "fixed_opponents policy: FILE": learn_command(fixed, work / "mal", "fixed"),
    }
    for door, command in doors.items():
        done = run(command, timeout=300)
        ran = marker.exists()
        clear = done.returncode == 2 and "Traceback" not in done.stderr
        outcome.record(clear and not ran, ran,
                       f"{door}: exit {done.returncode}, marker created={ran}, "
                       f"{_one_error_line(done.stderr)[:160]!r}")  # fmt: skip
        marker.unlink(missing_ok=True)
    return outcome


# -- 3. a truncated checkpoint -----------------------------------------------------------------
def truncated_campaign(work: Path, truncations: int, rng: random.Random) -> Outcome:
    outcome = Outcome("newest checkpoint truncated")
    config = work / "trunc.yaml"
    config.write_text(LIGHT_CONFIG.format(max_steps=3000, checkpoint_interval=1000, extra=""))
    results = work / "trunc"
    done = run(learn_command(config, results, "base"), timeout=900)
    if done.returncode != 0:
        outcome.record(False, True, f"the base run failed: {done.stderr[-300:]}")
        return outcome
    index = json.loads((results / "base" / "checkpoint.json").read_text())
    newest = index["behaviors"]["Tennis"]
    longer = work / "trunc-longer.yaml"
    longer.write_text(LIGHT_CONFIG.format(max_steps=4000, checkpoint_interval=1000, extra=""))
    for number in range(truncations):
        run_id = f"cut-{number}"
        shutil.copytree(results / "base", results / run_id)
        target = results / run_id / newest["file"]
        size = target.stat().st_size
        offset = rng.randrange(size)
        with target.open("r+b") as handle:
            handle.truncate(offset)
        resumed = run(learn_command(longer, results, run_id, "--resume"), timeout=900)
        text = resumed.stdout + resumed.stderr
        fell_back = "cannot be read" in text
        finished = resumed.returncode == 0 and (results / run_id / "Tennis.pt").is_file()
        outcome.record(finished and fell_back, not finished,
                       f"cut at byte {offset} of {size}: --resume exit {resumed.returncode}, "
                       f"fallback named={fell_back}")  # fmt: skip
    return outcome


def sharing_campaigns(
    work: Path, parts: set[str], *, repeats: int, truncations: int, rng: random.Random
) -> list[Outcome]:
    """The parts of this module named in ``parts`` (``concurrent``, ``malicious``, ``truncated``)."""
    outcomes: list[Outcome] = []
    started = time.monotonic()
    if "concurrent" in parts:
        print("== concurrent runs")
        outcomes.extend(concurrent_campaign(work, repeats))
    if "malicious" in parts:
        print("== malicious policy file")
        outcomes.append(malicious_campaign(work))
    if "truncated" in parts:
        print("== truncated checkpoint")
        outcomes.append(truncated_campaign(work, truncations, rng))
    print(f"  (shared runs and files: {time.monotonic() - started:.0f} s)")
    return outcomes
