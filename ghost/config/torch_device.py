"""Checking ``torch_settings.device`` and ``acting_device`` before a run starts, so a wrong
device fails in ``--check`` with a fix-it message instead of as a traceback in the middle of
training."""

from __future__ import annotations

from ghost.config.settings import TorchSettings
from ghost.exceptions import ConfigError
from trainers.devices import AUTO


def check_torch_settings(settings: TorchSettings) -> None:
    """``check_torch_device`` for both of ``torch_settings``' devices."""
    check_torch_device(settings.device)
    check_torch_device(settings.acting_device, key="acting_device")


def check_torch_device(device: str | None, key: str = "device") -> None:
    """Raise ``ConfigError`` unless torch can place networks on ``device`` (None means the
    default: ``auto`` for ``device``, the CPU for ``acting_device``).

    torch is imported only for a device other than the CPU, so ``--check`` of a CPU run stays
    free of it. ``key`` names the setting in messages.
    """
    if device is None or device == "cpu" or (device == AUTO and key == "device"):
        return
    setting = f"torch_settings.{key}"
    choices = f"{'auto, ' if key == 'device' else ''}cpu, cuda, cuda:N or mps"
    import torch

    try:
        parsed = torch.device(device)
    except RuntimeError:
        raise ConfigError(f"{setting} {device!r} is not a torch device; use {choices}") from None
    if parsed.type == "cpu":
        return
    if parsed.type == "cuda":
        _check_cuda(setting, device, parsed.index)
    elif parsed.type == "mps":
        if not torch.backends.mps.is_available():
            raise ConfigError(
                f"{setting} is {device!r} but this torch has no usable MPS (Apple GPU) backend; "
                "pass --torch-device cpu"
            )
    else:
        raise ConfigError(f"{setting} {device!r} is not supported; use {choices}")


def _check_cuda(setting: str, device: str, index: int | None) -> None:
    import torch

    if torch.version.cuda is None:
        raise ConfigError(
            f"{setting} is {device!r} but the installed torch "
            f"{torch.__version__} is a CPU-only build; install a CUDA build of torch "
            "(https://pytorch.org/get-started/locally/) or pass --torch-device cpu"
        )
    if not torch.cuda.is_available():
        raise ConfigError(
            f"{setting} is {device!r} but torch sees no CUDA GPU (check the driver "
            "and CUDA_VISIBLE_DEVICES); pass --torch-device cpu to train on the CPU"
        )
    count = torch.cuda.device_count()
    if index is not None and index >= count:
        raise ConfigError(
            f"{setting} is {device!r} but torch sees {count} CUDA GPU(s), numbered 0 to {count - 1}"
        )
