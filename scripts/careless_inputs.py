"""The careless inputs of a new user's first hour, given to every console command.

Each case is a command line a new user might type by mistake: a wrong path, a folder where a file
goes, a misspelt command, game, level or preset, a file of the wrong kind, a foreign binary given
as a Unity build, a busy port. Each must end in **one clear line**: exit code 2, no traceback, and
the line says what is wrong (the case's ``expect`` is a piece of it). Run on purpose, from the
repository root (about two minutes: every case is a fresh process, as a user runs it)::

    python scripts/careless_inputs.py [--only learn,eval,export,tune] [--out careless.json]

It prints one row per case and the counts of clear lines, tracebacks and misleading answers (no
traceback, but the answer does not name the problem, or the command went on as if nothing was
wrong). ``tests/test_careless_inputs.py`` runs the same cases in-process.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import attrs

ROOT = Path(__file__).resolve().parents[1]
FAKE_PONG = ROOT / "tests" / "fake_unity" / "FakePong"

#: the entry point of each command, as ``python -c`` runs it
ENTRY_POINTS = {
    "learn": "ghost.running.cli",
    "eval": "ghost.evaluation.cli",
    "export": "ghost.running.export",
    "tune": "ghost.tuning.cli",
}

#: a tiny self-play tennis run: the trained run the evaluation cases point at
TINY_TENNIS = """\
behaviors:
  Tennis:
    trainer_type: ppo
    hyperparameters: {batch_size: 64, buffer_size: 256}
    network_settings: {hidden_units: 16, num_layers: 1}
    max_steps: 1200
    summary_freq: 400
    checkpoint_interval: 600
    self_play: {save_steps: 300, team_change: 600, swap_steps: 200}
env_settings: {env_path: tennis, seed: 0}
"""


@attrs.frozen
class CarelessInput:
    """One mistaken command line; ``argv``'s ``{names}`` are filled from the prepared files."""

    label: str
    command: str  # a key of ENTRY_POINTS
    argv: tuple[str, ...]
    expect: str  # a piece of the one clear line

    def arguments(self, files: dict[str, str]) -> list[str]:
        return [part.format(**files) for part in self.argv]

    def expected(self, files: dict[str, str]) -> str:
        return self.expect.format(**files)


def _case(command: str) -> Callable[..., CarelessInput]:
    """A maker of ``command``'s cases: ``(label, expect, *argv)``."""

    def make(label: str, expect: str, *argv: str) -> CarelessInput:
        return CarelessInput(label, command, argv, expect)

    return make


_learn, _eval, _export, _tune = (_case(command) for command in ENTRY_POINTS)


RESULTS = ("--results-dir", "{results}")

CARELESS_INPUTS = [
    # -- ghost-learn: paths and files
    _learn("config file missing", "not found", "{work}/tenis.yaml", *RESULTS),
    _learn("config is a folder", "is a folder", "{work}", *RESULTS),
    _learn("config is a policy file", "binary file, not a YAML config", "{policy}", *RESULTS),
    _learn("config is empty", "empty", "{empty_yaml}", *RESULTS),
    _learn("config is plain text", "expected", "{text_file}", *RESULTS),
    _learn("misspelt game", "'tennis'?", "--env", "tenis", *RESULTS),
    _learn("config given as --env", "--env", "--env", "{tiny_config}", *RESULTS),
    _learn("misspelt preset", "did you mean 'robust'", "{robus_config}", *RESULTS),
    _learn("--results-dir is a file", "{text_file}", "{tiny_config}", "--results-dir", "{text_file}"),
    _learn("--run-id with a slash", "must name one folder", "{tiny_config}", "--run-id", "a/b", *RESULTS),
    _learn("--max-steps -5", "--max-steps", "{tiny_config}", "--max-steps", "-5", *RESULTS),
    _learn("--max-steps 1e5", "--max-steps", "{tiny_config}", "--max-steps", "lots", *RESULTS),
    _learn("--seed 1.5", "--seed", "{tiny_config}", "--seed", "1.5", *RESULTS),
    _learn("--num-envs 0", "--num-envs", "{tiny_config}", "--num-envs", "0", *RESULTS),
    _learn("--resume of a run that does not exist", "nosuch", "--resume", "--run-id", "nosuch", *RESULTS),
    _learn("--resume and --force", "contradict", "{tiny_config}", "--resume", "--force", *RESULTS),
    _learn("an existing run without --resume", "--resume", "{tiny_config}", "--run-id", "trained", *RESULTS),
    _learn("--initialize-from a missing run", "cannot initialize from", "{tiny_config}",
           "--initialize-from", "nosuch", "--run-id", "new", *RESULTS),
    _learn("--initialize-from a policy file", "--initialize-from", "{tiny_config}",
           "--initialize-from", "{policy}", "--run-id", "new2", *RESULTS),
    _learn("--torch-device gpu", "not a torch device", "{tiny_config}", "--torch-device", "gpu", *RESULTS),
    _learn("--torch-device cuda without a GPU", "cuda", "{tiny_config}", "--torch-device", "cuda", *RESULTS),
    _learn("unknown flag", "unrecognized arguments", "{tiny_config}", "--max-step", "10", *RESULTS),
    # -- ghost-learn: Unity builds
    _learn("build path missing", "no such file", "{tiny_config}", "--env", "{work}/Builds/Tennis.x86_64", *RESULTS),
    _learn("build is a folder without a player", "{build_folder}", "{tiny_config}", "--env", "{build_folder}", *RESULTS),
    _learn("build is not executable", "chmod", "{tiny_config}", "--env", "{not_executable}", *RESULTS),
    _learn("build is a text file", "{text_file}", "{tiny_config}", "--env", "{text_file}", *RESULTS),
    _learn("build is a foreign program", "never connected", "{tiny_config}", "--env", "/bin/sleep",
           "--timeout-wait", "3", *RESULTS),
    _learn("build's port is busy", "--base-port", "{tiny_config}", "--env", str(FAKE_PONG),
           "--base-port", "{busy_port}", "--timeout-wait", "5", *RESULTS),
    # -- ghost-eval
    _eval("misspelt command", "did you mean 'match'", "matc", "{trained}"),
    _eval("run missing", "no such", "match", "{work}/results/nosuch", "--against", "medium"),
    _eval("misspelt level", "did you mean 'strong'", "match", "{trained}", "--against", "strnog"),
    _eval("opponent is a config", "{tiny_config}", "match", "{trained}", "--against", "{tiny_config}"),
    _eval("policy is truncated", "{truncated}", "match", "{truncated}", "--against", "medium", "--game", "tennis"),
    _eval("episodes 0", "--episodes", "match", "{trained}", "--against", "medium", "--episodes", "0"),
    _eval("report into a file's folder", "cannot be made", "report", "{trained}", "{text_file}/r.png"),
    _eval("report of a folder that is no run", "{build_folder}", "report", "{build_folder}", "{work}/r.png"),
    _eval("snapshots of a folder that is no run", "{build_folder}", "snapshots", "{build_folder}", "--against", "medium"),
    _eval("league of an empty folder", "{build_folder}", "league", "{build_folder}"),
    _eval("exploitability of tennis", "exploitab", "exploitability", "{trained}"),
    _eval("misspelt option", "did you mean '--against'", "match", "{trained}", "--againts", "medium"),
    # -- ghost-export
    _export("policy missing", "no such policy file", "{work}/nosuch.pt"),
    _export("policy is a config", "{tiny_config}", "{tiny_config}"),
    _export("policy is truncated", "{truncated}", "{truncated}"),
    _export("-o into a file's folder", "cannot be made", "{policy}", "-o", "{text_file}/"),
    _export("-o with several policies", "-o names one file", "{trained}", "--all", "-o", "{work}/x.onnx"),
    # -- ghost-tune
    _tune("space file missing", "nosuch.yaml", "--env", "tennis", "--space", "{work}/nosuch.yaml", "--results-dir", "{results}"),
    _tune("space with an unknown key", "hyperparameters.betta", "--env", "tennis", "--space", "{bad_space}", "--results-dir", "{results}"),
    _tune("misspelt game", "'tennis'?", "--env", "tenis", "--results-dir", "{results}"),
]  # fmt: skip


@contextlib.contextmanager
def busy_port() -> Iterator[int]:
    """A port some other program listens on, for as long as the context lasts."""
    listener = socket.socket()
    listener.bind(("localhost", 0))
    listener.listen()
    try:
        yield listener.getsockname()[1]
    finally:
        listener.close()


def prepare(work: Path) -> dict[str, str]:
    """The files the cases point at: a trained tiny run, a policy, broken and foreign files."""
    results = work / "results"
    config = work / "tiny.yaml"
    config.write_text(TINY_TENNIS)
    learn = [sys.executable, "-m", "ghost.running.cli", str(config), "--results-dir", str(results)]
    subprocess.run([*learn, "--run-id", "trained"], check=True, capture_output=True, cwd=ROOT)
    trained = results / "trained"
    policy = trained / "Tennis.pt"
    truncated = work / "truncated.pt"
    truncated.write_bytes(policy.read_bytes()[: policy.stat().st_size // 2])
    text = work / "notes.txt"
    text.write_text("remember to train tennis\n")
    empty = work / "empty.yaml"
    empty.write_text("")
    not_executable = work / "Tennis.x86_64"
    not_executable.write_bytes(b"\x7fELF" + bytes(60))
    not_executable.chmod(stat.S_IRUSR | stat.S_IWUSR)
    build_folder = work / "TennisBuild"
    build_folder.mkdir(exist_ok=True)
    (build_folder / "UnityPlayer.so").write_bytes(b"")
    robus = work / "robus.yaml"
    robus.write_text(TINY_TENNIS.replace("self_play: {", "self_play: {preset: robus, "))
    bad_space = work / "space.yaml"
    bad_space.write_text("hyperparameters.betta: {low: 0.001, high: 0.01, log: true}\n")
    return {
        "work": str(work),
        "results": str(results),
        "trained": str(trained),
        "policy": str(policy),
        "truncated": str(truncated),
        "text_file": str(text),
        "empty_yaml": str(empty),
        "not_executable": str(not_executable),
        "build_folder": str(build_folder),
        "tiny_config": str(config),
        "robus_config": str(robus),
        "bad_space": str(bad_space),
    }


@attrs.frozen
class Answer:
    """What a command said to one careless input, and how it reads."""

    code: int
    output: str
    expect: str

    @property
    def verdict(self) -> str:
        """``clear``, ``traceback`` or ``misleading``."""
        if "Traceback (most recent call last)" in self.output:
            return "traceback"
        named = self.expect.lower() in self.output.lower()
        if self.code == 2 and named and len(self.problem_lines()) <= 2:
            return "clear"
        return "misleading"

    def problem_lines(self) -> list[str]:
        """The lines that are not argparse's usage nor progress: what the user has to read."""
        return [
            line
            for line in self.output.splitlines()
            if line.strip() and not line.startswith(("usage:", " ", "[INFO]"))
        ]


def ask(case: CarelessInput, files: dict[str, str], *, timeout: float = 120) -> Answer:
    """Run ``case`` as a fresh process, as a user would."""
    command = [sys.executable, "-m", ENTRY_POINTS[case.command], *case.arguments(files)]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=timeout, cwd=files["work"]
        )
    except subprocess.TimeoutExpired:
        return Answer(code=-1, output=f"no answer within {timeout} s", expect=case.expected(files))
    return Answer(
        code=done.returncode, output=done.stderr + done.stdout, expect=case.expected(files)
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default=",".join(ENTRY_POINTS),
                        help="commands to try, comma-separated (default: all)")  # fmt: skip
    parser.add_argument("--out", type=Path, help="write every answer to this JSON file")
    args = parser.parse_args()
    only = set(args.only.split(","))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    os.environ.update(env)
    rows = []
    with tempfile.TemporaryDirectory() as folder, busy_port() as port:
        files = {**prepare(Path(folder)), "busy_port": str(port)}
        for case in CARELESS_INPUTS:
            if case.command not in only:
                continue
            answer = ask(case, files)
            shown = answer.problem_lines()[:1] or [answer.output.strip()[-150:]]
            print(f"{answer.verdict:<10} ghost-{case.command:<6} {case.label:<42} {shown[0][:110]}")
            rows.append({"label": case.label, "command": case.command, "verdict": answer.verdict,
                         "code": answer.code, "output": answer.output})  # fmt: skip
    counts = {verdict: sum(row["verdict"] == verdict for row in rows)
              for verdict in ("clear", "traceback", "misleading")}  # fmt: skip
    print(f"\n{len(rows)} careless inputs: " + ", ".join(f"{n} {v}" for v, n in counts.items()))
    if args.out:
        args.out.write_text(json.dumps({"counts": counts, "cases": rows}, indent=1))
    return 0 if counts["clear"] == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
