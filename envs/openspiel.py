"""OpenSpiel games as ``BaseEnv``s: ``--env openspiel:<game string>``.

Any OpenSpiel game string works (``leduc_poker``, ``goofspiel(num_cards=4)``...), with any number of
players, turn-based or simultaneous-move. Each copy of the game is a ``Table`` of
``envs.seated_game.SeatedGame``:

- chance nodes (deals, draws) are sampled inside the environment from the seeded generator;
- turn-based games ask only the player to move for a decision; at a simultaneous node every player
  with a choice decides in the same step;
- observation: the information-state tensor when the game provides one (perfect recall, what
  exploitability is defined over), else the observation tensor (``observation=`` chooses);
- actions: one discrete branch over the game's distinct actions, illegal ones masked;
- rewards: changes of ``state.returns()``, so terminal returns arrive at the end (to every player,
  whoever made the last move) and games with intermediate rewards pay them as they come.

Player ``p`` is seat ``p``. ``seats="teams"`` (default) puts every player on one behavior,
``<short name>?team=p`` (OpenSpiel games give all players the same tensors and actions);
``seats="separate"`` gives each its own, ``<short name>_p<p>?team=p``.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence

import attrs
import numpy as np
from mlagents_envs.base_env import ActionSpec

from envs.behavior_id import BehaviorId
from envs.exceptions import EnvironmentSourceError, UnsupportedGameError
from envs.seated_game import Seat, SeatedGame, Table
from envs.vector_game import mix_seed

#: copies per environment when ``env_settings.num_areas`` is left at 1
DEFAULT_COPIES = 32
OBSERVATIONS = ("auto", "info_state", "observation")
SEAT_MAPPINGS = ("teams", "separate")
#: how a user lists every game OpenSpiel knows
LIST_GAMES = "list every game with: python -c 'import pyspiel; print(pyspiel.registered_names())'"


def _pyspiel():
    try:
        import pyspiel
    except ModuleNotFoundError:
        raise EnvironmentSourceError(
            "OpenSpiel games need the open_spiel package: pip install 'ghost-trainer[openspiel]' "
            "(or pip install open_spiel)"
        ) from None
    return pyspiel


def load_game(game):
    """The ``pyspiel.Game`` named by an OpenSpiel game string (or ``game`` itself when it is
    already one); ``UnsupportedGameError`` when OpenSpiel cannot load it."""
    pyspiel = _pyspiel()
    if isinstance(game, pyspiel.Game):
        return game
    # Checked before load_game: on an unknown name OpenSpiel's C++ prints its whole list of games
    # to stderr, which no Python exception handler can hold back.
    name = game.split("(", 1)[0]
    names = pyspiel.registered_names()
    if name not in names:
        raise UnsupportedGameError(_unknown_game_message(game, name, names))
    try:
        with _spiel_errors_held_back():
            return pyspiel.load_game(game)
    except pyspiel.SpielError as error:
        reason = (str(error).splitlines() or ["unknown error"])[0]
        raise UnsupportedGameError(
            f"cannot load OpenSpiel game {game!r} ({reason}). Give a game string such as "
            f"leduc_poker or goofspiel(num_cards=4); {LIST_GAMES}"
        ) from None


@contextlib.contextmanager
def _spiel_errors_held_back() -> Iterator[None]:
    """OpenSpiel's C++ writes each error it raises to stderr as well (``OpenSpiel exception:
    ...``); the raised error already carries it, so that line is dropped. Anything else written
    meanwhile (by another thread, say) is passed on."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            captured.seek(0)
            kept = [
                line
                for line in captured.read().decode(errors="replace").splitlines(keepends=True)
                if not line.startswith("OpenSpiel exception:")
            ]
            if kept:
                sys.stderr.write("".join(kept))


def _unknown_game_message(game: str, name: str, names: Sequence[str]) -> str:
    """One line: the unknown name, the closest registered ones, how to list them all."""
    close = difflib.get_close_matches(name, names, n=5)
    hint = (
        f"did you mean {', '.join(close)}?"
        if close
        else "give a game string such as leduc_poker or goofspiel(num_cards=4);"
    )
    return f"cannot load OpenSpiel game {game!r}: no game is named {name!r}; {hint} {LIST_GAMES}"


def uses_info_state(game, observation: str) -> bool:
    """Whether ``observation`` (``auto``/``info_state``/``observation``) means information-state
    tensors for ``game``; raises when the game lacks the tensor asked for."""
    if observation not in OBSERVATIONS:
        raise ValueError(f"observation must be one of {OBSERVATIONS} (got {observation!r})")
    kind = game.get_type()
    name = kind.short_name
    if observation == "info_state" or (
        observation == "auto" and kind.provides_information_state_tensor
    ):
        if not kind.provides_information_state_tensor:
            raise UnsupportedGameError(f"OpenSpiel game {name} has no information-state tensor")
        return True
    if not kind.provides_observation_tensor:
        raise UnsupportedGameError(
            f"OpenSpiel game {name} provides neither an information-state nor an observation "
            "tensor, so it cannot feed a neural policy"
        )
    return False


def observation_of(state, player: int, info_state: bool) -> np.ndarray:
    """What player ``player`` observes in ``state`` (the vector the policy sees)."""
    if info_state:
        return np.asarray(state.information_state_tensor(player), dtype=np.float32)
    return np.asarray(state.observation_tensor(player), dtype=np.float32)


class OpenSpielTable(Table):
    """One copy of an OpenSpiel game (see the module docstring for its semantics)."""

    def __init__(self, *, game, info_state: bool) -> None:
        self.game = game
        self.num_players = game.num_players()
        self.num_actions = game.num_distinct_actions()
        self._info_state = info_state
        # games that pay only at the end need their returns read only there
        self._pays_along_the_way = (
            game.get_type().reward_model != type(game.get_type().reward_model).TERMINAL
        )
        self._rng = np.random.default_rng(0)
        self.state = game.new_initial_state()
        self._returns = np.zeros(self.num_players)
        self._rewards = np.zeros(self.num_players)
        self._finished_reported = False

    def reset(self, rng: np.random.Generator) -> None:
        self._rng = rng
        self.state = self.game.new_initial_state()
        self._returns[:] = 0.0
        self._rewards[:] = 0.0
        self._finished_reported = False
        self._play_chance()

    def acting(self) -> Sequence[int]:
        state = self.state
        if state.is_terminal():
            return ()
        if state.is_simultaneous_node():
            return tuple(p for p in range(self.num_players) if state.legal_actions(p))
        return (state.current_player(),)

    def observe(self, seat: int) -> np.ndarray:
        return observation_of(self.state, seat, self._info_state)

    def legal(self, seat: int) -> np.ndarray | None:
        legal = np.zeros(self.num_actions, dtype=bool)
        legal[self.state.legal_actions(seat)] = True
        return legal

    def apply(self, actions: Mapping[int, tuple[np.ndarray, np.ndarray]]) -> None:
        state = self.state
        if state.is_simultaneous_node():
            joint = []
            for player in range(self.num_players):
                if player in actions:
                    joint.append(int(actions[player][1][0]))
                else:  # a player without a choice here plays its only (pass) action
                    joint.append(state.legal_actions(player)[0])
            state.apply_actions(joint)
        else:
            state.apply_action(int(actions[state.current_player()][1][0]))
        self._play_chance()
        if self._pays_along_the_way or state.is_terminal():
            returns = np.asarray(state.returns(), dtype=np.float64)
            self._rewards += returns - self._returns
            self._returns = returns

    def take_rewards(self) -> np.ndarray:
        rewards, self._rewards = self._rewards, np.zeros(self.num_players)
        return rewards

    def take_departed(self) -> Mapping[int, bool]:
        if not self.state.is_terminal() or self._finished_reported:
            return {}
        self._finished_reported = True
        return dict.fromkeys(range(self.num_players), False)

    def _play_chance(self) -> None:
        state = self.state
        while state.is_chance_node():
            outcomes = state.chance_outcomes()
            # inverse-CDF draw: much cheaper than Generator.choice(p=...) for a handful of outcomes
            point = self._rng.random() * sum(p for _, p in outcomes)
            chosen = outcomes[-1][0]  # rounding may leave the point just past the last one
            for action, probability in outcomes:
                point -= probability
                if point < 0:
                    chosen = action
                    break
            state.apply_action(chosen)


def seat_behaviors(game, seats: str) -> list[BehaviorId]:
    """The behavior each player of ``game`` plays under the ``seats`` mapping."""
    if seats not in SEAT_MAPPINGS:
        raise ValueError(f"seats must be one of {SEAT_MAPPINGS} (got {seats!r})")
    name = game.get_type().short_name
    players = range(game.num_players())
    if seats == "teams":
        return [BehaviorId(name, team=p) for p in players]
    return [BehaviorId(f"{name}_p{p}", team=p) for p in players]


@attrs.frozen(kw_only=True)
class OpenSpielSource:
    """Environment factory for ``--env openspiel:<game>``: ``copies`` tables per environment.

    Attributes:
        game: the OpenSpiel game string.
        copies: games played at once by each environment (worker).
        seats: ``teams`` (one behavior, a team per player) or ``separate`` (a behavior each).
        observation: ``auto``, ``info_state`` or ``observation`` tensors.
        max_episode_steps: moves after which a game is interrupted (None: play to the end).
        shuffle_seats: deal the seats to the teams at random every game (``SeatedGame``).
    """

    game: str
    copies: int = attrs.field(default=DEFAULT_COPIES, validator=attrs.validators.ge(1))
    seats: str = attrs.field(default="teams", validator=attrs.validators.in_(SEAT_MAPPINGS))
    observation: str = attrs.field(default="auto", validator=attrs.validators.in_(OBSERVATIONS))
    max_episode_steps: int | None = None
    shuffle_seats: bool = False

    def load(self):
        """The ``pyspiel.Game``, checked to be playable here."""
        game = load_game(self.game)
        uses_info_state(game, self.observation)
        return game

    def __call__(self, *, worker_id: int = 0, seed: int = 0) -> SeatedGame:
        game = load_game(self.game)
        info_state = uses_info_state(game, self.observation)
        size = (
            game.information_state_tensor_size() if info_state else game.observation_tensor_size()
        )
        action_spec = ActionSpec.create_discrete((game.num_distinct_actions(),))
        seats = [
            Seat(behavior=behavior, obs_size=size, action_spec=action_spec)
            for behavior in seat_behaviors(game, self.seats)
        ]
        tables = [OpenSpielTable(game=game, info_state=info_state) for _ in range(self.copies)]
        return SeatedGame(
            tables=tables,
            seats=seats,
            seed=mix_seed(seed, worker_id),
            max_episode_steps=self.max_episode_steps,
            shuffle_seats=self.shuffle_seats,
        )

    @property
    def env_path(self) -> str:
        """The ``--env`` text naming this game."""
        return f"openspiel:{self.game}"

    def describe(self) -> str:
        return f"OpenSpiel game {self.game!r} ({self.copies} copies)"
