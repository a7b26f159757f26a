"""Self-play state of a ``ghost_*`` behavior on disk, beside ML-Agents' own checkpoints.

``<results>/<run-id>/<Behavior>/self_play/`` holds:

- ``snapshot-<id>.pt``: the weights (ML-Agents' actor ``state_dict``) of each snapshot in the window;
- ``state.pt``: the ``SelfPlayState`` (window, ratings, counters, opponents in play, win rates), the
  controller (learning team, team changes) and the trainer step they belong to;
- ``payoff.csv``: the learner's results against each pool member.

It is the folder every host writes (``ghost.core.state_folder.SelfPlayFolder``), saved by the run's
host kit when ML-Agents writes a checkpoint of the wrapped trainer, so ``--resume`` finds a
self-play state of the same step as the model it loads.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from ghost.core.state_folder import SelfPlayFolder
from trainers.run_files.access import RUN_FILES


def self_play_folder(artifact_path: str | Path) -> SelfPlayFolder:
    """The ``self_play`` folder of one behavior's ML-Agents artifact folder."""
    return SelfPlayFolder(Path(artifact_path) / "self_play", files=RUN_FILES)


def read_checkpoint_policy(path: str | Path) -> Any:
    """The actor weights of a ``.pt`` checkpoint written by mlagents-learn (for fixed opponents).

    Raises:
        ValueError: the file is missing or is not an ML-Agents checkpoint.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"policy file {path} does not exist")
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # torch raises many kinds for a file that is not its own
        raise ValueError(f"{path} is not a torch checkpoint ({error})") from None
    if not isinstance(data, dict) or "Policy" not in data:
        raise ValueError(
            f"{path} is not a checkpoint written by mlagents-learn (it has no 'Policy' entry); "
            "use results/<run>/<Behavior>/checkpoint.pt or <Behavior>-<step>.pt"
        )
    return data["Policy"]
