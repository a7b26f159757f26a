"""Every malformed input of ``scripts/malformed_inputs.py``: one clear message, exit code 2, and a
run folder that is either gone or holds a checkpoint to resume from."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from ghost.running import cli

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

from malformed_inputs import GOOD_CONFIG, MALFORMED_INPUTS  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.mark.parametrize("case", MALFORMED_INPUTS, ids=[c.label for c in MALFORMED_INPUTS])
def test_malformed_input_is_one_clear_error(tmp_path, capsys, case):
    good = tmp_path / "good.yaml"
    good.write_text(json.dumps(GOOD_CONFIG))
    config, *flags = case.argv(tmp_path, good)
    results = tmp_path / "results"
    if "--run-id" not in flags:
        flags += ["--run-id", "r"]
    code = cli.main([config, "--results-dir", str(results), *flags])
    err = capsys.readouterr().err
    assert code == 2, err
    assert case.expect in err and "Traceback" not in err
    run = results / "r"
    assert not run.exists() or (run / "checkpoint.json").is_file()
