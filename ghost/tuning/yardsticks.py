"""Yardsticks: the one number a trial is judged by, chosen by the game.

- ``exploitability``: exact, 0 at a Nash equilibrium, lower is better. In a two-player zero-sum
  OpenSpiel game the run scores its learners itself (``self_play.exploitability_every``, written to
  ``run_logs/exploitability.csv``); the trial reads those scores as they arrive and the final
  one as its value. In a built-in matrix game (``rock_paper_scissors``, ``biased_rps``) it is what
  a best response earns against the checkpoint's mixed strategy (``ghost.play.head_to_head``).
- ``scripted:LEVEL``: built-in games; the score of each checkpoint against the scripted level
  (win 1, draw or unfinished match 0.5, loss 0), over ``games`` games with evaluation seed 1,
  averaged over the game's behaviors (each playing its own side). Higher is better.
- ``exploiter``: any game; after training, a fresh learner trains ``exploiter_steps`` steps
  against the final policy (``ghost-eval exploit``); its score (built-in games) or mean reward
  (OpenSpiel, PettingZoo) is the value. Lower is better. Measured only at the end of a trial, so
  nothing is pruned.

``auto`` picks exact exploitability where it exists, else ``scripted:medium`` for built-in games,
else ``exploiter``.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping
from pathlib import Path

from envs.behavior_id import BehaviorId
from envs.env_kinds import describe_env
from envs.games import BUILTIN_GAMES, scripted_levels
from ghost.exceptions import ConfigError
from ghost.play.head_to_head import EvaluationResult, evaluate
from trainers.callbacks import Checkpoint, Summary, TrainingCallback
from trainers.run_files.layout import RunLayout

logger = logging.getLogger(__name__)

AUTO = "auto"
EXPLOITABILITY = "exploitability"
SCRIPTED = "scripted"
EXPLOITER = "exploiter"
MINIMIZE, MAXIMIZE = "minimize", "maximize"
#: the scripted level ``auto`` measures built-in games against
AUTO_LEVEL = "medium"
#: the evaluation seed: every trial meets the same games
EVALUATION_SEED = 1

#: told ``(trainer step, value)`` during a run; True asks the run to stop (the trial is pruned)
Reporter = Callable[[int, float], bool]


class Yardstick:
    """How one trial's runs are judged (see the module docstring for the kinds)."""

    #: the spec as ``--yardstick`` takes it (``scripted:medium``)
    name: str = ""
    #: ``minimize`` or ``maximize``
    direction: str = MINIMIZE

    def watch(self, *, run_dir: Path, report: Reporter) -> TrainingCallback | None:
        """A training callback telling ``report`` the value during the run (None: none)."""
        return None

    def final_value(self, run_dir: Path, *, seed: int) -> float:
        """The value of the finished run in ``run_dir``."""
        raise NotImplementedError

    @property
    def better(self) -> str:
        """``lower`` or ``higher``: which way is better, for messages."""
        return "lower" if self.direction == MINIMIZE else "higher"


# -- exploitability of OpenSpiel runs ------------------------------------------------------------
def exploitability_rows(run_dir: Path) -> list[tuple[int, float]]:
    """``(step, exploitability)`` of each score the run wrote, oldest first."""
    path = RunLayout(run_dir).run_logs_dir / "exploitability.csv"
    if not path.is_file():
        return []
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:
        fields = line.split(",")
        if len(fields) >= 2:
            rows.append((int(fields[0]), float(fields[1])))
    return rows


class _ExploitabilityFileWatch(TrainingCallback):
    """Reports each new row of the run's ``exploitability.csv`` (the scores arrive in the
    background, so the file is read at every summary and checkpoint)."""

    def __init__(self, *, run_dir: Path, report: Reporter) -> None:
        self.run_dir = run_dir
        self.report = report
        self.seen = 0

    def _poll(self) -> bool | None:
        rows = exploitability_rows(self.run_dir)
        for step, value in rows[self.seen :]:
            self.seen += 1
            if self.report(step, value):
                return False
        return None

    def on_summary(self, summary: Summary) -> bool | None:
        return self._poll()

    def on_checkpoint(self, checkpoint: Checkpoint) -> bool | None:
        return self._poll()


class OpenSpielExploitability(Yardstick):
    """The run's own exact exploitability scores (``self_play.exploitability_every``)."""

    name = EXPLOITABILITY
    direction = MINIMIZE

    def watch(self, *, run_dir: Path, report: Reporter) -> TrainingCallback | None:
        return _ExploitabilityFileWatch(run_dir=run_dir, report=report)

    def final_value(self, run_dir: Path, *, seed: int) -> float:
        rows = exploitability_rows(run_dir)
        if not rows:
            raise RuntimeError(
                f"the run {run_dir} wrote no exploitability (run_logs/exploitability.csv); "
                "its log says why"
            )
        return rows[-1][1]


# -- built-in games: policies played against something ---------------------------------------
def game_behaviors(game: str) -> list[str]:
    """The behavior names of a built-in game, team 0's first."""
    from ghost.evaluation.builtin_exploiter import game_sides

    return list(dict.fromkeys(BehaviorId.parse(side).name for side in game_sides(game)))


def match_score(result: EvaluationResult) -> float:
    """Win 1, draw or unfinished match 0.5, loss 0, per match played."""
    if result.episodes == 0:
        return math.nan
    return (result.wins + 0.5 * (result.draws + result.interrupted)) / result.episodes


class _CheckpointWatch(TrainingCallback):
    """At each checkpoint, scores the checkpoint files of ``behaviors`` and reports the value."""

    def __init__(
        self,
        *,
        behaviors: list[str],
        score: Callable[[Mapping[str, Path]], float],
        report: Reporter,
    ) -> None:
        self.behaviors = behaviors
        self.score = score
        self.report = report

    def on_checkpoint(self, checkpoint: Checkpoint) -> bool | None:
        steps = {name: checkpoint.steps[name] for name in self.behaviors
                 if checkpoint.steps.get(name)}  # fmt: skip
        if len(steps) < len(self.behaviors):
            return None
        layout = RunLayout(checkpoint.index_path.parent)
        files = {name: layout.checkpoint_path(name, step) for name, step in steps.items()}
        value = self.score(files)
        return False if self.report(steps[self.behaviors[0]], value) else None


class BuiltinYardstick(Yardstick):
    """A built-in game's policies scored one behavior at a time (``score_policy``)."""

    def __init__(self, *, game: str, games: int) -> None:
        self.game = game
        self.games = games
        self.behaviors = game_behaviors(game)

    def score_policy(self, policy: Path, behavior: str) -> float:
        """The value of one behavior's policy file."""
        raise NotImplementedError

    def score(self, files: Mapping[str, Path]) -> float:
        """The mean over behaviors of ``score_policy``."""
        values = [self.score_policy(path, name) for name, path in files.items()]
        return float(sum(values) / len(values))

    def side(self, behavior: str) -> str | None:
        """The ``side`` a behavior's policy plays in ``evaluate`` (None: team 0's, the only
        behavior of a symmetric game)."""
        return behavior if len(self.behaviors) > 1 else None

    def watch(self, *, run_dir: Path, report: Reporter) -> TrainingCallback | None:
        return _CheckpointWatch(behaviors=self.behaviors, score=self.score, report=report)

    def final_value(self, run_dir: Path, *, seed: int) -> float:
        layout = RunLayout(run_dir)
        return self.score({name: layout.final_policy_path(name) for name in self.behaviors})


class MatrixExploitability(BuiltinYardstick):
    """Exact exploitability of a built-in matrix game's mixed strategy."""

    name = EXPLOITABILITY
    direction = MINIMIZE

    def score_policy(self, policy: Path, behavior: str) -> float:
        result = evaluate(game=self.game, policy=str(policy), opponent="random",
                          episodes=min(self.games, 32), seed=EVALUATION_SEED,
                          side=self.side(behavior))  # fmt: skip
        if result.exploitability is None:
            raise RuntimeError(f"{self.game} gave no exploitability for {policy}")
        return float(result.exploitability)


class ScriptedScore(BuiltinYardstick):
    """The score against a scripted level of a built-in game."""

    direction = MAXIMIZE

    def __init__(self, *, game: str, level: str, games: int) -> None:
        super().__init__(game=game, games=games)
        self.level = level
        self.name = f"{SCRIPTED}:{level}"

    def score_policy(self, policy: Path, behavior: str) -> float:
        result = evaluate(game=self.game, policy=str(policy), opponent=self.level,
                          episodes=self.games, seed=EVALUATION_SEED,
                          side=self.side(behavior))  # fmt: skip
        return match_score(result)


# -- any game: an exploiter ----------------------------------------------------------------------
class ExploiterScore(Yardstick):
    """What a fresh learner trained against the final policy wins (``ghost-eval exploit``)."""

    name = EXPLOITER
    direction = MINIMIZE

    def __init__(self, *, steps: int, games: int) -> None:
        self.steps = steps
        self.games = games

    def final_value(self, run_dir: Path, *, seed: int) -> float:
        from ghost.evaluation.builtin_exploiter import exploit_run
        from ghost.evaluation.exploiter import score_exploiter, train_exploiter
        from ghost.evaluation.report import run_game

        if run_game(run_dir) is not None:
            exploits = exploit_run(run_dir, self.steps, episodes=self.games, seed=seed)
            return float(sum(match_score(e.result) for e in exploits) / len(exploits))
        folder = train_exploiter(run_dir, self.steps, seed=seed)
        return float(score_exploiter(run_dir, folder, games=self.games, seed=seed).mean_reward)


# -- choosing one --------------------------------------------------------------------------------
def _exact_exploitability_reason(env_path: str) -> str | None:
    """Why exact exploitability does not apply to ``env_path`` (None: it does)."""
    return describe_env(env_path).exact_exploitability_problem()


def resolve_yardstick(spec: str, env_path: str) -> str:
    """The yardstick ``spec`` (``auto`` resolved) for the game ``env_path``, checked.

    Raises:
        ConfigError: the yardstick does not apply to the game (the message says which does).
    """
    if spec == AUTO:
        if _exact_exploitability_reason(env_path) is None:
            return EXPLOITABILITY
        if env_path in BUILTIN_GAMES:
            levels = scripted_levels(env_path)
            return f"{SCRIPTED}:{AUTO_LEVEL if AUTO_LEVEL in levels else levels[-1]}"
        return EXPLOITER
    if spec == EXPLOITABILITY:
        reason = _exact_exploitability_reason(env_path)
        if reason is not None:
            raise ConfigError(
                f"--yardstick exploitability: exact exploitability needs a two-player zero-sum "
                f"OpenSpiel game or a built-in matrix game, and {reason}; use --yardstick "
                "exploiter (or scripted:LEVEL for a built-in game)"
            )
        return spec
    if spec.startswith(f"{SCRIPTED}:"):
        level = spec.partition(":")[2]
        if env_path not in BUILTIN_GAMES:
            raise ConfigError(
                f"--yardstick {spec}: scripted levels exist for the built-in games "
                f"({', '.join(sorted(BUILTIN_GAMES))}), not {env_path!r}; use --yardstick "
                "exploiter or auto"
            )
        levels = scripted_levels(env_path)
        if level not in levels:
            raise ConfigError(
                f"--yardstick {spec}: {env_path} has no level {level!r}; valid: "
                + ", ".join(f"{SCRIPTED}:{name}" for name in levels)
            )
        return spec
    if spec == EXPLOITER:
        return spec
    raise ConfigError(
        f"--yardstick {spec!r}: choose auto, exploitability, scripted:LEVEL or exploiter"
    )


def make_yardstick(spec: str, env_path: str, *, games: int, exploiter_steps: int) -> Yardstick:
    """The yardstick named by a resolved ``spec`` (see ``resolve_yardstick``)."""
    if spec == EXPLOITABILITY:
        if env_path in BUILTIN_GAMES:
            return MatrixExploitability(game=env_path, games=games)
        return OpenSpielExploitability()
    if spec.startswith(f"{SCRIPTED}:"):
        return ScriptedScore(game=env_path, level=spec.partition(":")[2], games=games)
    if spec == EXPLOITER:
        return ExploiterScore(steps=exploiter_steps, games=games)
    raise ConfigError(f"unknown yardstick {spec!r}")
