"""``trainers.adam.Adam``: torch's Adam arithmetic without importing ``torch._dynamo``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from trainers import adam as adam_module
from trainers.adam import Adam

ROOT = Path(__file__).resolve().parents[1]


def small_net() -> torch.nn.Module:
    torch.manual_seed(1)
    return torch.nn.Sequential(torch.nn.Linear(5, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3))


def train(net: torch.nn.Module, optimizer, steps: int, seed: int = 0) -> None:
    generator = torch.Generator().manual_seed(seed)
    for step in range(steps):
        optimizer.zero_grad(set_to_none=True)
        net(torch.randn(32, 5, generator=generator)).pow(2).mean().backward()
        optimizer.step()
        if step == 10:  # what a learning-rate schedule does
            optimizer.param_groups[0]["lr"] = 1e-3


@pytest.fixture(params=["fused kernel", "without it"])
def kernel(request, monkeypatch):
    """Our Adam with torch's fused kernel, or as where torch lacks it; the keyword arguments of
    the ``torch.optim.Adam`` that does the same arithmetic."""
    if request.param == "without it":
        monkeypatch.setitem(adam_module._FUSED, "works", False)
        return {"foreach": True}
    return {"fused": True}


def test_every_step_is_torchs_adam_to_the_bit(kernel):
    ours, theirs = small_net(), small_net()
    train(ours, Adam(ours.parameters(), lr=3e-3), 30)
    train(theirs, torch.optim.Adam(theirs.parameters(), lr=3e-3, **kernel), 30)
    for mine, reference in zip(ours.parameters(), theirs.parameters(), strict=True):
        assert torch.equal(mine, reference)


def test_without_the_kernel_every_step_is_torchs_default_adam(monkeypatch):
    monkeypatch.setitem(adam_module._FUSED, "works", False)
    ours, theirs = small_net(), small_net()
    train(ours, Adam(ours.parameters(), lr=3e-3), 30)
    train(theirs, torch.optim.Adam(theirs.parameters(), lr=3e-3), 30)
    for mine, reference in zip(ours.parameters(), theirs.parameters(), strict=True):
        assert torch.equal(mine, reference)


def test_state_moves_between_torchs_adam_and_ours(kernel):
    reference, ours = small_net(), small_net()
    torch_adam = torch.optim.Adam(reference.parameters(), lr=3e-3, **kernel)
    train(reference, torch_adam, 12)
    ours.load_state_dict(reference.state_dict())
    our_adam = Adam(ours.parameters())
    our_adam.load_state_dict(torch_adam.state_dict())  # a checkpoint written before
    train(reference, torch_adam, 8, seed=5)
    train(ours, our_adam, 8, seed=5)
    for mine, theirs in zip(ours.parameters(), reference.parameters(), strict=True):
        assert torch.equal(mine, theirs)
    back = torch.optim.Adam(small_net().parameters())
    back.load_state_dict(our_adam.state_dict())
    assert float(back.state_dict()["state"][0]["step"]) == 20.0


def test_a_mismatched_state_is_refused():
    adam = Adam(small_net().parameters())
    other = torch.optim.Adam([torch.nn.Parameter(torch.zeros(2))])
    with pytest.raises(ValueError, match="parameters"):
        adam.load_state_dict(other.state_dict())


def test_training_never_imports_torch_dynamo():
    script = (
        "import sys, torch\n"
        "from trainers.adam import Adam\n"
        "net = torch.nn.Linear(3, 2)\n"
        "adam = Adam(net.parameters())\n"
        "net(torch.ones(4, 3)).sum().backward()\n"
        "adam.step()\n"
        "print('torch._dynamo' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.stdout.strip() == "False", result.stderr


def test_a_step_tells_every_parameter_it_changed(kernel):
    """Acting copies of a network (``trainers.fast_acting``) rebuild when a tensor's version
    moves; the fused kernel alone would leave the versions as they were."""
    net = small_net()
    adam = Adam(net.parameters(), lr=3e-3)
    net(torch.ones(4, 5)).sum().backward()
    before = [p._version for p in net.parameters()]
    adam.step()
    assert all(p._version > v for p, v in zip(net.parameters(), before, strict=True))
