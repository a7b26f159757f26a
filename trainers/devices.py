"""Where a behavior's networks train and where its policies act.

An update's large minibatches (thousands of rows through every network, several epochs) are
GPU work once the networks are wide or, with POCA, the critic attends over a group; a decision is
a small batch (one row per agent of one team), where a GPU's launch and copy costs outweigh its
arithmetic. So with ``device: auto`` (the default) such a behavior trains on a GPU when one is
present and keeps acting on the CPU; narrow PPO and SAC networks stay on the CPU altogether.
(Measured on an H100: docs/benchmarks.md, "GPU".)
"""

from __future__ import annotations

import attrs

#: ``device: auto`` trains on a GPU from this many hidden units per layer
WIDE_NETWORK_UNITS = 256
#: trainer types that ``device: auto`` trains on a GPU whatever their width (group critics)
GPU_TRAINER_TYPES = frozenset({"poca"})
#: the setting that asks for the choice above (None, ML-Agents' default, means the same)
AUTO = "auto"


@attrs.frozen
class BehaviorDevices:
    """The devices of one behavior's networks and why they were chosen."""

    #: where updates run (the trained networks live there)
    update: str
    #: where policies decide during rollouts
    acting: str
    #: what made the choice, for the log
    reason: str


def behavior_devices(
    device: str | None,
    acting_device: str | None,
    hidden_units: int,
    trainer_type: str,
    *,
    gpu_present: bool,
) -> BehaviorDevices:
    """The devices for a behavior of ``trainer_type`` with ``hidden_units`` per layer.

    ``device`` None or ``auto`` picks a GPU for updates of wide networks and of group trainers
    when ``gpu_present``, else the CPU; any other value is used as given. Policies act on
    ``acting_device``, by default the CPU.
    """
    acting = acting_device or "cpu"
    if device not in (None, AUTO):
        return BehaviorDevices(update=device, acting=acting, reason="torch_settings.device")
    if not gpu_present:
        return BehaviorDevices(update="cpu", acting=acting, reason="auto: no GPU present")
    if trainer_type in GPU_TRAINER_TYPES:
        return BehaviorDevices(
            update="cuda",
            acting=acting,
            reason=f"auto: {trainer_type}'s group critic and a GPU present",
        )
    if hidden_units >= WIDE_NETWORK_UNITS:
        return BehaviorDevices(
            update="cuda",
            acting=acting,
            reason=f"auto: {hidden_units} hidden units (>= {WIDE_NETWORK_UNITS}) and a GPU present",
        )
    return BehaviorDevices(
        update="cpu",
        acting=acting,
        reason=f"auto: {hidden_units} hidden units (< {WIDE_NETWORK_UNITS}) train fastest on the CPU",
    )


def acting_device_argument(update: str, acting: str) -> dict[str, str]:
    """The ``acting_device=`` keyword for a trainer's constructor, only where it differs from
    ``update``: a plugin's trainer written before the keyword existed still builds otherwise."""
    return {"acting_device": acting} if acting != update else {}
