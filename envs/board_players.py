"""Scripted opponents for PettingZoo board games played through ``envs.pettingzoo``.

Levels: ``random`` (uniform over the legal actions, any discrete masked game) and, for
``connect_four`` and ``tictactoe``, ``one_ply`` (win now if possible, else block the opponent's
immediate win, else random legal). ``scripted_levels(game)`` is the registry.

Both games observe ``(rows, cols, 2)`` boards flattened row-major: plane 0 holds the pieces of the
player to move, plane 1 the opponent's. Connect four's action is a column (the piece falls to the
lowest empty row, row 0 is the top); tic-tac-toe's is the cell index ``row * 3 + col``.
"""

from __future__ import annotations

import itertools

import attrs
import numpy as np
from mlagents_envs.base_env import ActionSpec, ActionTuple

from envs.scripted import ScriptedPolicy


class RandomLegalPolicy(ScriptedPolicy):
    """Uniform over the legal actions of every discrete branch (all actions when unmasked)."""

    def act(
        self,
        obs: list[np.ndarray],
        action_mask: list[np.ndarray] | None = None,
        deterministic: bool = False,
    ) -> ActionTuple:
        """Actions for ``len(obs[0])`` agents; ``action_mask`` is BaseEnv's (True: blocked)."""
        if self.action_spec.continuous_size:
            return super().act(obs, action_mask, deterministic)
        batch = np.asarray(obs[0], dtype=np.float32)
        return ActionTuple(discrete=self._choose(batch, action_mask, deterministic))

    def _act(self, obs: np.ndarray, deterministic: bool) -> np.ndarray:
        if self.action_spec.continuous_size:
            return self.random_actions(len(obs))
        return self._choose(obs, None, deterministic)

    def _choose(
        self, obs: np.ndarray, action_mask: list[np.ndarray] | None, deterministic: bool
    ) -> np.ndarray:
        n = len(obs)
        columns = []
        for branch, size in enumerate(self.action_spec.discrete_branches):
            blocked = action_mask[branch] if action_mask is not None else np.zeros((n, size), bool)
            columns.append(self._pick(~np.asarray(blocked, dtype=bool)))
        return np.stack(columns, axis=1).astype(np.int32) if columns else np.zeros((n, 0), np.int32)

    def _pick(self, allowed: np.ndarray, preferred: np.ndarray | None = None) -> np.ndarray:
        """Per row, a uniform choice among the allowed actions with the highest preference."""
        score = self.rng.random(allowed.shape) + (preferred if preferred is not None else 0.0)
        # a row with nothing allowed still gets an action (the environment will reject it)
        return np.where(allowed, score, score - 1e9).argmax(axis=1)


@attrs.frozen(kw_only=True)
class _Board:
    """A game's geometry: board size, line length, whether pieces fall down columns."""

    rows: int
    cols: int
    line: int
    gravity: bool

    @property
    def lines(self) -> np.ndarray:
        """Every winning line as ``(lines, line)`` flat cell indices."""
        found = []
        for row, col in itertools.product(range(self.rows), range(self.cols)):
            for d_row, d_col in ((0, 1), (1, 0), (1, 1), (1, -1)):
                end_row, end_col = row + d_row * (self.line - 1), col + d_col * (self.line - 1)
                if 0 <= end_row < self.rows and 0 <= end_col < self.cols:
                    found.append(
                        [(row + k * d_row) * self.cols + col + k * d_col for k in range(self.line)]
                    )
        return np.asarray(found)


CONNECT_FOUR = _Board(rows=6, cols=7, line=4, gravity=True)
TICTACTOE = _Board(rows=3, cols=3, line=3, gravity=False)
#: action count → board (connect four has 7 columns to drop into, tic-tac-toe 9 cells)
_BOARDS = {7: CONNECT_FOUR, 9: TICTACTOE}


class OnePlyPolicy(RandomLegalPolicy):
    """Connect four or tic-tac-toe (told apart by the action count): win, else block, else random.

    ``deterministic`` breaks ties towards the centre instead of at random.
    """

    def __init__(self, *, action_spec: ActionSpec, seed: int | None = 0) -> None:
        super().__init__(action_spec=action_spec, seed=seed)
        actions = action_spec.discrete_branches
        if action_spec.continuous_size or len(actions) != 1 or actions[0] not in _BOARDS:
            raise ValueError(
                f"OnePlyPolicy plays connect_four (7 actions) or tictactoe (9 actions); got "
                f"{action_spec}. Use RandomLegalPolicy for other games"
            )
        self.board = _BOARDS[actions[0]]
        self._lines = self.board.lines
        centre = np.abs(np.arange(actions[0]) - (actions[0] - 1) / 2)
        self._centre_bias = 0.5 - centre / (2 * centre.max())

    def _choose(
        self, obs: np.ndarray, action_mask: list[np.ndarray] | None, deterministic: bool
    ) -> np.ndarray:
        cells = self.board.rows * self.board.cols
        planes = obs.reshape(len(obs), cells, 2) > 0.5
        mine, theirs = planes[..., 0], planes[..., 1]
        target = self._landing_cells(mine | theirs)
        allowed = target >= 0
        if action_mask is not None:
            allowed &= ~np.asarray(action_mask[0], dtype=bool)
        wins = self._completes_line(mine, target) & allowed
        blocks = self._completes_line(theirs, target) & allowed
        preferred = 4.0 * wins + 2.0 * blocks
        if deterministic:
            # scaled so that the random tie-break in _pick can no longer reorder actions
            preferred = (preferred + self._centre_bias) * 1e3
        return self._pick(allowed, preferred)[:, None].astype(np.int32)

    def _landing_cells(self, occupied: np.ndarray) -> np.ndarray:
        """``(n, actions)``: the cell each action fills, -1 where it is illegal."""
        n = len(occupied)
        if not self.board.gravity:
            return np.where(occupied, -1, np.arange(occupied.shape[1]))
        grid = occupied.reshape(n, self.board.rows, self.board.cols)
        lowest_empty = self.board.rows - 1 - (~grid[:, ::-1, :]).argmax(axis=1)
        full = grid.all(axis=1)
        return np.where(full, -1, lowest_empty * self.board.cols + np.arange(self.board.cols))

    def _completes_line(self, pieces: np.ndarray, target: np.ndarray) -> np.ndarray:
        """``(n, actions)``: whether adding a piece at ``target`` gives ``pieces`` a full line."""
        n, actions = target.shape
        placed = np.repeat(pieces[:, None, :], actions, axis=1)
        rows, columns = np.nonzero(target >= 0)
        placed[rows, columns, target[rows, columns]] = True
        return np.asarray(placed[..., self._lines].all(axis=-1).any(axis=-1))


#: game → level → policy class
SCRIPTED_LEVELS: dict[str, dict[str, type[ScriptedPolicy]]] = {
    "connect_four": {"random": RandomLegalPolicy, "one_ply": OnePlyPolicy},
    "tictactoe": {"random": RandomLegalPolicy, "one_ply": OnePlyPolicy},
}


def scripted_levels(game_name: str) -> dict[str, type[ScriptedPolicy]]:
    """Level → policy class for ``game_name`` (``random`` only for games without their own).

    Args:
        game_name: the symmetric behavior name ``envs.pettingzoo`` gives the game, e.g.
            ``connect_four``.
    """
    return dict(SCRIPTED_LEVELS.get(game_name, {"random": RandomLegalPolicy}))
