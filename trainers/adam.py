"""``Adam``: the Adam optimizer without ``torch.optim``.

Building any ``torch.optim`` optimizer imports ``torch._dynamo`` (1.3 s here, 5 s on a loaded
machine): as much as the rest of a short run's start-up. This Adam does the same arithmetic as
``torch.optim.Adam(fused=True)`` (no weight decay, no AMSGrad), step for step and to the bit, in
one call of torch's fused kernel per step: a sixth of the time of the seven ``torch._foreach_*``
kernels of torch's default path, which matters at the sizes of small networks' updates. Where the
kernel is missing (torch before 2.4 on a CPU), it does the default path's arithmetic, to the bit,
with those seven kernels. It keeps its state in ``torch.optim.Adam``'s ``state_dict`` layout, so
checkpoints move between the two.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import torch


class Adam:
    """Adam over ``parameters`` (one parameter group), with ``torch.optim.Adam``'s interface:
    ``step``, ``zero_grad``, ``param_groups`` (a learning-rate schedule writes ``"lr"``),
    ``state_dict`` and ``load_state_dict``."""

    def __init__(
        self,
        parameters: Iterable[torch.nn.Parameter],
        *,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
    ) -> None:
        self.params = list(parameters)
        self.param_groups: list[dict[str, Any]] = [
            {"params": self.params, "lr": lr, "betas": tuple(betas), "eps": eps}
        ]
        self._steps = [0] * len(self.params)
        self._exp_avg: list[torch.Tensor | None] = [None] * len(self.params)
        self._exp_avg_sq: list[torch.Tensor | None] = [None] * len(self.params)

    def zero_grad(self, set_to_none: bool = True) -> None:
        for param in self.params:
            if param.grad is None:
                continue
            if set_to_none:
                param.grad = None
            else:
                param.grad.detach_().zero_()

    @torch.no_grad()
    def step(self) -> None:
        """One Adam step for every parameter that has a gradient."""
        group = self.param_groups[0]
        lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
        chosen = [i for i, param in enumerate(self.params) if param.grad is not None]
        if not chosen:
            return
        for i in chosen:
            if self._exp_avg[i] is None:
                self._exp_avg[i] = torch.zeros_like(self.params[i])
                self._exp_avg_sq[i] = torch.zeros_like(self.params[i])
            self._steps[i] += 1
        # parameters built together share a step count; group them so each group is one batch
        by_step: dict[int, list[int]] = {}
        for i in chosen:
            by_step.setdefault(self._steps[i], []).append(i)
        for step, rows in by_step.items():
            params = [self.params[i] for i in rows]
            grads = [self.params[i].grad for i in rows]
            exp_avgs = [self._exp_avg[i] for i in rows]
            exp_avg_sqs = [self._exp_avg_sq[i] for i in rows]
            if _fused_step(params, grads, exp_avgs, exp_avg_sqs, step, lr, beta1, beta2, eps):
                continue
            torch._foreach_lerp_(exp_avgs, grads, 1 - beta1)
            torch._foreach_mul_(exp_avg_sqs, beta2)
            torch._foreach_addcmul_(exp_avg_sqs, grads, grads, 1 - beta2)
            bias_correction1 = 1 - beta1**step
            bias_correction2_sqrt = math.sqrt(1 - beta2**step)
            denominators = torch._foreach_sqrt(exp_avg_sqs)
            torch._foreach_div_(denominators, bias_correction2_sqrt)
            torch._foreach_add_(denominators, eps)
            torch._foreach_addcdiv_(params, exp_avgs, denominators, -(lr / bias_correction1))

    # -- torch.optim.Adam's layout -----------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        state = {
            i: {
                "step": torch.tensor(float(self._steps[i])),
                "exp_avg": self._exp_avg[i],
                "exp_avg_sq": self._exp_avg_sq[i],
            }
            for i in range(len(self.params))
            if self._exp_avg[i] is not None
        }
        group = self.param_groups[0]
        return {
            "state": state,
            "param_groups": [{
                "lr": group["lr"], "betas": group["betas"], "eps": group["eps"],
                "weight_decay": 0, "amsgrad": False, "maximize": False, "foreach": None,
                "capturable": False, "differentiable": False, "fused": None,
                "decoupled_weight_decay": False, "params": list(range(len(self.params))),
            }],
        }  # fmt: skip

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Continue from a ``state_dict`` of this class or of ``torch.optim.Adam`` (one group,
        no weight decay, no AMSGrad) over the same parameters."""
        (group,) = state_dict["param_groups"]
        if len(group["params"]) != len(self.params):
            raise ValueError(
                f"the saved optimizer has {len(group['params'])} parameters, this one "
                f"{len(self.params)}"
            )
        if group.get("weight_decay", 0) or group.get("amsgrad", False):
            raise ValueError("the saved optimizer uses weight decay or AMSGrad, which Adam lacks")
        mine = self.param_groups[0]
        mine["lr"], mine["betas"], mine["eps"] = group["lr"], tuple(group["betas"]), group["eps"]
        for position, key in enumerate(group["params"]):
            saved = state_dict["state"].get(key)
            param = self.params[position]
            if saved is None:
                self._steps[position] = 0
                self._exp_avg[position] = self._exp_avg_sq[position] = None
                continue
            self._steps[position] = int(float(saved["step"]))
            self._exp_avg[position] = saved["exp_avg"].to(param.device, param.dtype).clone()
            self._exp_avg_sq[position] = saved["exp_avg_sq"].to(param.device, param.dtype).clone()


#: the fused kernel leaves the tensors' version counters alone, which is how acting copies of a
#: network (``trainers.fast_acting``) see that its weights changed; this bumps them
_increment_version = getattr(torch.autograd.graph, "increment_version", None)
#: whether torch's fused Adam kernel runs here (CPU support came with torch 2.4)
_FUSED = {"works": hasattr(torch, "_fused_adam_") and _increment_version is not None}


def _fused_step(
    params: list[torch.Tensor],
    grads: list[torch.Tensor],
    exp_avgs: list[torch.Tensor],
    exp_avg_sqs: list[torch.Tensor],
    step: int,
    lr: float,
    beta1: float,
    beta2: float,
    eps: float,
) -> bool:
    """One Adam step through torch's fused kernel; False where the kernel is missing or refuses
    these tensors, and nothing was changed."""
    if not _FUSED["works"]:
        return False
    steps = [torch.tensor(float(step), device=params[0].device)] * len(params)
    try:
        torch._fused_adam_(params, grads, exp_avgs, exp_avg_sqs, [], steps, lr=lr, beta1=beta1,
                           beta2=beta2, weight_decay=0.0, eps=eps, amsgrad=False,
                           maximize=False)  # fmt: skip
    except (RuntimeError, NotImplementedError):  # an older torch without it on this device
        _FUSED["works"] = False
        return False
    for param in params:
        _increment_version(param)
    return True
