"""One-step matrix games: rock-paper-scissors and a biased variant.

Every ``step()`` each arena plays one round: both agents choose an action (one discrete branch of
3: 0 rock, 1 paper, 2 scissors) from a constant observation ``[1.0]``; the step reports the round
in ``TerminalSteps`` (reward = the player's payoff, whose sign is the result; never interrupted)
and the next round's decision in ``DecisionSteps`` for the same agents.

``payoff_matrix[i, j]`` is the payoff of playing ``i`` against ``j``. Both games are symmetric
and zero-sum (``payoff_matrix == -payoff_matrix.T``), so their value is 0 and a symmetric mixed
strategy ``p`` can be scored exactly by its **exploitability**: what a best response earns
against it, ``max_i (payoff_matrix @ p)_i``; 0 exactly at the equilibrium.

- ``RockPaperScissors``: win +1, loss -1; equilibrium uniform (1/3, 1/3, 1/3).
- ``BiasedRPS``: winning with rock pays 2 (and losing to it costs 2); equilibrium
  (1/4, 1/2, 1/4): paper, rock's counter, is played twice as often.
"""

from __future__ import annotations

import numpy as np
from mlagents_envs.base_env import ActionSpec

from envs.scripted import ScriptedPolicy
from envs.vector_game import Role, RoleActions, VectorGame, mix_seed

ACTIONS = ("rock", "paper", "scissors")


def exploitability(payoff: np.ndarray, probs: np.ndarray) -> float:
    """Best-response value against the symmetric mixed strategy ``probs`` (0 at equilibrium).

    Args:
        payoff: ``(n, n)`` payoffs of a symmetric zero-sum game.
        probs: a probability vector of length ``n`` (non-negative, summing to 1).
    """
    p = np.asarray(probs, dtype=np.float64)
    if p.shape != (len(payoff),) or (p < -1e-12).any() or abs(p.sum() - 1.0) > 1e-6:
        raise ValueError(
            f"probs must be {len(payoff)} non-negative numbers summing to 1 (got {probs!r})"
        )
    return float(np.max(payoff @ p))


def equilibrium(payoff: np.ndarray) -> np.ndarray:
    """The fully mixed symmetric equilibrium of a symmetric zero-sum game with one.

    Solves ``payoff @ p = 0`` with ``sum(p) = 1``; raises ``ValueError`` if the game has no such
    interior equilibrium.
    """
    n = len(payoff)
    system = np.vstack([payoff, np.ones((1, n))])
    target = np.concatenate([np.zeros(n), [1.0]])
    p = np.linalg.lstsq(system, target, rcond=None)[0]
    if (p < -1e-9).any() or np.abs(system @ p - target).max() > 1e-9:
        raise ValueError("this game has no fully mixed equilibrium; solve it as a linear program")
    return np.clip(p, 0.0, None) / np.clip(p, 0.0, None).sum()


class MatrixGame(VectorGame):
    """A symmetric two-player matrix game played once per step in every arena."""

    BEHAVIOR = "MatrixGame"
    payoff_matrix: np.ndarray = np.zeros((3, 3))
    DEFAULT_MAX_EPISODE_STEPS = 1

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        spec = ActionSpec.create_discrete((len(cls.payoff_matrix),))
        cls.ROLES = tuple(
            Role(name=cls.BEHAVIOR, team=team, slots=1, obs_size=1, action_spec=spec)
            for team in (0, 1)
        )

    def _allocate_state(self) -> None:
        self.last_actions = np.full((self.num_arenas, 2), -1, dtype=np.int64)

    def _reset_arenas(self, arenas: np.ndarray) -> None:
        pass  # a round has no state; last_actions stays visible to render_arena

    def _advance(self, actions: list[RoleActions]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        first, second = actions[0].discrete[:, 0, 0], actions[1].discrete[:, 0, 0]
        self.last_actions = np.stack([first, second], axis=1)
        payoff = self.payoff_matrix[first, second]
        reward = np.stack([payoff, -payoff], axis=1)
        return reward, np.zeros_like(reward), np.ones(self.num_arenas, dtype=bool)

    def _observe(self, arenas: np.ndarray) -> list[np.ndarray]:
        ones = np.ones((len(arenas), 1, 1), dtype=np.float32)
        return [ones, ones.copy()]

    def render_arena(self, arena: int) -> dict:
        """The last round of ``arena``: both actions (``None`` before the first) and payoffs."""
        moves = [int(a) for a in self.last_actions[arena]]
        played = min(moves) >= 0
        return {
            "game": self.BEHAVIOR,
            "actions": [ACTIONS[m] if played else None for m in moves],
            "payoffs": (
                [
                    float(self.payoff_matrix[moves[0], moves[1]]),
                    float(self.payoff_matrix[moves[1], moves[0]]),
                ]
                if played
                else None
            ),
        }

    @classmethod
    def exploitability(cls, probs: np.ndarray) -> float:
        """Best-response value against the symmetric mixed strategy ``probs``."""
        return exploitability(cls.payoff_matrix, probs)

    @classmethod
    def equilibrium(cls) -> np.ndarray:
        """The game's (unique, fully mixed) symmetric equilibrium strategy."""
        return equilibrium(cls.payoff_matrix)


class RockPaperScissors(MatrixGame):
    """Rock-paper-scissors: win +1, draw 0, loss -1."""

    BEHAVIOR = "RockPaperScissors"
    payoff_matrix = np.array([[0.0, -1.0, 1.0], [1.0, 0.0, -1.0], [-1.0, 1.0, 0.0]])


class BiasedRPS(MatrixGame):
    """Rock-paper-scissors where rock beating scissors pays 2 (equilibrium 1/4, 1/2, 1/4)."""

    BEHAVIOR = "BiasedRPS"
    payoff_matrix = np.array([[0.0, -1.0, 2.0], [1.0, 0.0, -1.0], [-2.0, 1.0, 0.0]])


def make_rock_paper_scissors(worker_id: int = 0, seed: int = 0, **kwargs) -> RockPaperScissors:
    """A ``RockPaperScissors`` environment for worker ``worker_id``."""
    return RockPaperScissors(seed=mix_seed(seed, worker_id), **kwargs)


def make_biased_rps(worker_id: int = 0, seed: int = 0, **kwargs) -> BiasedRPS:
    """A ``BiasedRPS`` environment for worker ``worker_id``."""
    return BiasedRPS(seed=mix_seed(seed, worker_id), **kwargs)


# ------------------------------------------------------------------------- scripted players
class MixedStrategy(ScriptedPolicy):
    """Plays a fixed mixed strategy ``probs`` (``deterministic`` plays its most likely action)."""

    probs: np.ndarray = np.full(3, 1.0 / 3.0)

    def _act(self, obs: np.ndarray, deterministic: bool) -> np.ndarray:
        if deterministic:
            return np.full((len(obs), 1), int(np.argmax(self.probs)))
        return self.rng.choice(len(self.probs), size=(len(obs), 1), p=self.probs)


def mixed_strategy(name: str, probs: tuple[float, ...]) -> type[MixedStrategy]:
    """A ``MixedStrategy`` subclass named ``name`` that plays ``probs``."""
    return type(name, (MixedStrategy,), {"probs": np.asarray(probs, dtype=np.float64)})


_EXPLOITABLE = {
    "rock": mixed_strategy("Rock", (1.0, 0.0, 0.0)),
    "paper": mixed_strategy("Paper", (0.0, 1.0, 0.0)),
    "scissors": mixed_strategy("Scissors", (0.0, 0.0, 1.0)),
    "rock_heavy": mixed_strategy("RockHeavy", (0.6, 0.2, 0.2)),
}

#: ``random`` is uniform (the equilibrium of RPS, exploitable in BiasedRPS); ``equilibrium`` is
#: each game's own; the rest are exploitable biases.
SCRIPTED_LEVELS: dict[str, dict[str, type[ScriptedPolicy]]] = {
    "rock_paper_scissors": {
        "random": mixed_strategy("UniformRPS", (1 / 3, 1 / 3, 1 / 3)),
        "equilibrium": mixed_strategy("RPSEquilibrium", tuple(RockPaperScissors.equilibrium())),
        **_EXPLOITABLE,
    },
    "biased_rps": {
        "random": mixed_strategy("UniformBiasedRPS", (1 / 3, 1 / 3, 1 / 3)),
        "equilibrium": mixed_strategy("BiasedRPSEquilibrium", tuple(BiasedRPS.equilibrium())),
        **_EXPLOITABLE,
    },
}
