"""The BaseEnv contract: what the API allows trains, what breaks it ends with a clear error and a
run that resumes once the environment is fixed."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

import ghost
from ghost.running import cli
from tests import contract_envs

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

from malformed_inputs import GOOD_CONFIG as CONFIG  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.mark.parametrize(
    "quirks",
    [{"no_mask": True}, {"idle_steps": True}, {"churn": True}, "all"],
    ids=["no-action-mask", "no-deciding-agents-on-some-steps", "agents-come-and-go", "all"],
)
def test_legal_quirks_train(tmp_path, quirks):
    if quirks == "all":
        env = contract_envs.all_quirks
    else:
        env = lambda worker_id=0, seed=0: contract_envs.ContractEnv(seed=seed, **quirks)  # noqa: E731
    result = ghost.train(CONFIG, env=env, run_id="r", results_dir=tmp_path)
    assert result.steps["Duel"] >= 600 and not result.stopped_early
    assert result.ratings["Duel"] != 1200.0  # matches were played and rated


@pytest.mark.parametrize(
    ("fault", "message"),
    [
        ("nan_obs", "observation 0 holds NaN or infinite values"),
        ("inf_reward", "reward holds NaN or infinite values"),
        ("wrong_obs_shape", "observation 0 has shape (2, 3); the behavior spec says (2, 4)"),
        ("wrong_mask_shape", "has 1 action masks for 2 discrete branches"),
        ("spec_change", "behavior spec of Duel?team=0 changed between steps"),
        ("wrong_types", "returned (list, list); a BaseEnv returns (DecisionSteps, TerminalSteps)"),
        ("raises", "raised during step: RuntimeError: the simulation diverged"),
        ("refilled_ids", "changed the DecisionSteps.agent_id array it returned the step before"),
    ],
)
def test_a_broken_environment_ends_clearly_and_the_run_resumes(tmp_path, capsys, fault, message):
    common = ["--results-dir", str(tmp_path), "--run-id", "r"]
    config = tmp_path / "config.yaml"
    config.write_text(json.dumps(CONFIG))
    code = cli.main([str(config), "--env", f"tests.contract_envs:{fault}", *common])
    err = capsys.readouterr().err
    assert code == 2, err
    assert message in err and "Traceback" not in err
    # the run stopped with a checkpoint, and goes on once the environment is fixed
    assert (tmp_path / "r" / "checkpoint.json").is_file()
    code = cli.main([str(config), "--env", "tests.contract_envs:healthy", "--resume", *common])
    assert code == 0, capsys.readouterr().err


def _steps(ids: np.ndarray) -> tuple:
    from mlagents_envs.base_env import DecisionSteps, TerminalSteps

    n = len(ids)
    decision = DecisionSteps([np.zeros((n, 3), np.float32)], np.zeros(n, np.float32), ids, None,
                             np.zeros(n, np.int32), np.zeros(n, np.float32))  # fmt: skip
    terminal = TerminalSteps([np.zeros((0, 3), np.float32)], np.zeros(0, np.float32),
                             np.zeros(0, bool), np.zeros(0, np.int64), np.zeros(0, np.int32),
                             np.zeros(0, np.float32))  # fmt: skip
    return decision, terminal


def test_agent_ids_refilled_long_after_the_first_steps_are_caught():
    from envs.exceptions import EnvironmentOutputError
    from envs.step_checks import ReusedArrayCheck

    check = ReusedArrayCheck(steps=4)
    ids = np.arange(3)
    for _ in range(100):  # the same array, unchanged: allowed
        check("Duel?team=0", *_steps(ids))
        check.step_done()
    ids[:] = [3, 4, 5]  # the episode ends: new ids written into the array handed out
    with pytest.raises(EnvironmentOutputError, match="changed the DecisionSteps.agent_id array"):
        check("Duel?team=0", *_steps(ids))


def test_fresh_arrays_each_step_are_not_compared_after_the_first_steps():
    from envs.step_checks import ReusedArrayCheck

    check = ReusedArrayCheck(steps=4)
    for step in range(10):
        check("Duel?team=0", *_steps(np.arange(3) + step))
        check.step_done()
    assert not check._handed_out_twice
