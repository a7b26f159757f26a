"""Every careless input of ``scripts/careless_inputs.py``, in-process: one clear line each (exit
code 2, no traceback, the problem named). The script runs the same cases as fresh processes and
counts the answers."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from careless_inputs import CARELESS_INPUTS, ENTRY_POINTS, Answer, busy_port, prepare  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    work = tmp_path_factory.mktemp("careless")
    with busy_port() as port:
        yield {**prepare(work), "busy_port": str(port)}


def answer_in_process(case, files, capsys, monkeypatch) -> Answer:
    monkeypatch.chdir(files["work"])
    main = importlib.import_module(ENTRY_POINTS[case.command]).main
    try:
        code = main(case.arguments(files))
    except SystemExit as stop:  # argparse's own errors
        code = stop.code
    captured = capsys.readouterr()
    return Answer(code=code, output=captured.err + captured.out, expect=case.expected(files))


@pytest.mark.parametrize("case", CARELESS_INPUTS, ids=[c.label for c in CARELESS_INPUTS])
def test_a_careless_input_gets_one_clear_line(files, capsys, monkeypatch, case):
    if case.command == "tune":
        pytest.importorskip("optuna")
    answer = answer_in_process(case, files, capsys, monkeypatch)
    assert answer.verdict == "clear", answer.output
