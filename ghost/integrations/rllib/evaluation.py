"""Judging an RLlib-trained module with our yardsticks: scripted levels and exploitability.

``ModulePolicy`` makes an RLModule a player of ``ghost.evaluation`` (``act`` on BaseEnv
observations and masks, ``action_probabilities`` for exact exploitability), so:

- ``win_rate(algorithm, "connect_four", opponent="one_ply")`` seats the learner in every seat in
  turn against a scripted level (``ghost.play.seated_matches.evaluate_both_seats``);
- ``exploitability_of(algorithm, "leduc_poker")`` is the exact exploitability of the learner
  (``envs.exploitability``) in a two-player zero-sum OpenSpiel game.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np
import torch
from mlagents_envs.base_env import ActionTuple
from ray.rllib.core.columns import Columns

from envs.sources import resolve_env
from ghost.integrations.rllib.modules import MaskedPPOTorchRLModule
from ghost.integrations.rllib.routing import LEARNER_MODULE


class ModulePolicy:
    """An RLlib module as a ``ghost.evaluation`` player of one discrete branch.

    Args:
        module: the RLModule (``algorithm.get_module("main")``).
        seed: seeds sampled (non-deterministic) actions.
    """

    def __init__(self, module: Any, *, seed: int = 0) -> None:
        self.module = module
        self.masked = isinstance(module, MaskedPPOTorchRLModule)
        self.generator = torch.Generator().manual_seed(seed)

    def _logits(self, obs: list[np.ndarray], action_mask: Any) -> torch.Tensor:
        rows = np.concatenate([np.asarray(o, np.float32).reshape(len(o), -1) for o in obs], 1)
        if self.masked:
            blocked = np.concatenate([np.asarray(m, bool) for m in action_mask], axis=1)
            rows = np.concatenate([rows, (~blocked).astype(np.float32)], axis=1)
        with torch.no_grad():
            out = self.module.forward_inference({Columns.OBS: torch.from_numpy(rows)})
        return out[Columns.ACTION_DIST_INPUTS]

    def action_probabilities(self, obs: list[np.ndarray], action_mask: Any = None) -> list:
        """Probabilities of every action, one ``[n, actions]`` array."""
        return [torch.softmax(self._logits(obs, action_mask), dim=-1).double().numpy()]

    def act(
        self, obs: list[np.ndarray], action_mask: Any = None, deterministic: bool = False
    ) -> ActionTuple:
        probabilities = torch.softmax(self._logits(obs, action_mask), dim=-1)
        if deterministic:
            chosen = probabilities.argmax(dim=-1)
        else:
            chosen = torch.multinomial(probabilities, 1, generator=self.generator)[:, 0]
        return ActionTuple(discrete=chosen.numpy().astype(np.int32).reshape(-1, 1))


def module_policy(algorithm: Any, module_id: str = LEARNER_MODULE, *, seed: int = 0) -> Any:
    """The algorithm's learner (or another module) as a ``ModulePolicy``."""
    return ModulePolicy(algorithm.get_module(module_id), seed=seed)


class OpenSpielBoardView:
    """Shows a connect-four level written for PettingZoo's board (rows from the top, planes
    "mine" and "theirs") the OpenSpiel board of seat ``seat`` (rows from the bottom, planes
    "player 0", "player 1", "empty")."""

    ROWS, COLUMNS = 6, 7

    def __init__(self, level: Any, *, seat: int) -> None:
        self.level = level
        self.seat = seat

    def act(self, obs: list[np.ndarray], action_mask: Any = None, deterministic: bool = False):
        planes = np.asarray(obs[0]).reshape(-1, 3, self.ROWS, self.COLUMNS)[:, :, ::-1, :]
        board = np.stack([planes[:, self.seat], planes[:, 1 - self.seat]], axis=-1)
        return self.level.act([board.reshape(len(board), -1)], action_mask, deterministic)


def _opponents(game: str, level: str, seats: Any, *, seed: int) -> dict[int, Any]:
    from ghost.play.seated_matches import opponent_players

    players = opponent_players(level, seats, seed=seed)
    if game == "connect_four" and level == "one_ply":
        return {seat: OpenSpielBoardView(player, seat=seat) for seat, player in players.items()}
    return players


def win_rate(
    algorithm: Any, game: str, *, opponent: str = "random", games: int = 200, seed: int = 0
) -> float:
    """The learner's win rate (draws count half) over ``games`` games in each seat of OpenSpiel
    ``game`` against scripted level ``opponent`` (``random``, ``one_ply``...)."""
    from ghost.play.seated_matches import evaluate_both_seats

    source = attrs.evolve(resolve_env(f"openspiel:{game}"), copies=min(games, 64))
    probe = attrs.evolve(source, copies=1)(worker_id=0, seed=seed)
    seats = probe.seats
    probe.close()
    player = module_policy(algorithm, seed=seed)
    both = evaluate_both_seats(
        lambda seed: source(worker_id=0, seed=seed),
        policy=dict.fromkeys(range(len(seats)), player),
        opponent=_opponents(game, opponent, seats, seed=seed),
        games=games,
        seed=seed,
    )
    wins = sum(s.wins + 0.5 * s.draws for s in both.seats)
    return float(wins / sum(s.games for s in both.seats))


def exploitability_of(algorithm: Any, game: str) -> float:
    """The exact exploitability (NashConv / 2) of the learner in OpenSpiel ``game``."""
    from envs.exploitability import InfoStateTable, exploitability
    from ghost.play.exploitability import table_probabilities

    table = InfoStateTable.build(game)
    player = module_policy(algorithm)
    probabilities = table_probabilities(table, {0: player, 1: player})
    return float(exploitability(table, probabilities).exploitability)
