"""``DeferredAdam``: an Adam optimizer built the first time it is used.

Building any torch optimizer imports ``torch._dynamo`` (about 1.3 s here, more than the rest of
a run's start-up after ``import torch``). Nothing needs the optimizer before the first update or a
checkpoint, so a run starts stepping its environments that much sooner; the import is paid when
the first update comes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch


class DeferredAdam:
    """Stands for ``torch.optim.Adam(parameters, **options)`` and becomes it on first use.

    Every attribute (``step``, ``zero_grad``, ``param_groups``, ``state_dict``...) is the real
    optimizer's. The parameters are taken now, so later changes to the module do not matter.
    """

    def __init__(self, parameters: Iterable[torch.nn.Parameter], **options: Any) -> None:
        self._parameters = list(parameters)
        self._options = options
        self._optimizer: torch.optim.Adam | None = None

    @property
    def optimizer(self) -> torch.optim.Adam:
        """The real optimizer (built now if it was not yet)."""
        if self._optimizer is None:
            self._optimizer = torch.optim.Adam(self._parameters, **self._options)
        return self._optimizer

    @property
    def built(self) -> bool:
        return self._optimizer is not None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # never reached for our own fields; keeps copy/pickle sane
            raise AttributeError(name)
        return getattr(self.optimizer, name)
