"""The optimizer is built at its first use, so a run steps its environments before torch's
optimizer machinery (``torch._dynamo``, ~1.3 s) is imported."""

from __future__ import annotations

import subprocess
import sys

import torch

from trainers.deferred_optimizer import DeferredAdam


def _train(optimizer_of, steps: int = 5) -> list[torch.Tensor]:
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 2)
    optimizer = optimizer_of(model.parameters())
    data = torch.randn(16, 3)
    for _ in range(steps):
        optimizer.zero_grad()
        model(data).pow(2).sum().backward()
        optimizer.step()
    return [p.detach().clone() for p in model.parameters()]


def test_it_trains_exactly_as_adam_and_is_built_at_first_use():
    deferred = _train(lambda params: DeferredAdam(params, lr=0.01))
    direct = _train(lambda params: torch.optim.Adam(params, lr=0.01))
    assert all(torch.equal(a, b) for a, b in zip(deferred, direct, strict=True))
    optimizer = DeferredAdam(torch.nn.Linear(2, 2).parameters(), lr=0.1)
    assert not optimizer.built
    assert optimizer.param_groups[0]["lr"] == 0.1 and optimizer.built


def test_its_state_round_trips_through_a_checkpoint():
    model = torch.nn.Linear(3, 2)
    optimizer = DeferredAdam(model.parameters(), lr=0.01)
    model(torch.randn(4, 3)).sum().backward()
    optimizer.step()
    fresh = DeferredAdam(model.parameters(), lr=0.01)
    fresh.load_state_dict(optimizer.state_dict())
    assert fresh.state_dict()["state"][0]["step"] == 1


def test_a_run_reaches_its_first_environment_step_before_torch_dynamo_is_imported(tmp_path):
    script = f"""
import sys
import envs.stepping as stepping
seen = []
original = stepping.InProcessStepper.step
def step(self, *args, **kwargs):
    if not seen:
        seen.append("torch._dynamo" in sys.modules)
    return original(self, *args, **kwargs)
stepping.InProcessStepper.step = step
import ghost
ghost.train(env="tennis", max_steps=300, run_id="startup", results_dir={str(tmp_path)!r},
            verbose=0, overrides={{"behaviors.Tennis.hyperparameters.buffer_size": 256,
                                   "behaviors.Tennis.hyperparameters.batch_size": 64}})
print("dynamo before first step:", seen[0])
"""
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "dynamo before first step: False" in result.stdout
