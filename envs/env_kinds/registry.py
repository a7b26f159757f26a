"""The registry of environment kinds, and ``describe_env``: an ``env_path`` read once.

An **environment kind** (``EnvironmentKind``) is one form of ``--env`` / ``env_settings.env_path``
text. It knows how to tell its text (a ``prefix`` such as ``openspiel``, or a form such as
``module:callable``), how to make the text's environment factory, the game kind ``preset: auto``
picks settings by, and what the environments it makes can do (``Capabilities``).

``describe_env(env_path)`` returns an ``EnvPath``: the text and the one kind that claims it.
Kinds are asked in registration order; the catch-all (a Unity build path: any text no other kind
claims) is asked last. Recognition is exclusive: a prefixed kind claims every ``<prefix>:...``
text, and ``module:callable`` steps aside for registered prefixes.
"""

from __future__ import annotations

import abc
from typing import Any, ClassVar

import attrs

from envs.exceptions import EnvironmentSourceError
from envs.settings import EngineSettings, EnvironmentSettings

__all__ = [
    "Capabilities",
    "EnvPath",
    "EnvironmentKind",
    "GameKind",
    "accepted_forms",
    "describe_env",
    "env_kinds",
    "register_kind",
    "registered_prefixes",
]


@attrs.frozen(kw_only=True)
class Capabilities:
    """What the environments of a kind can do; ask these instead of reading ``env_path`` text.

    Attributes:
        arenas: an in-process game of many arenas, with scripted levels (``ghost-eval match``
            ``--game``, ``--num-arenas``): the built-in games.
        seated: a turn-based game whose seats are dealt to teams (``self_play.seats``, seated
            evaluation): OpenSpiel and PettingZoo games.
        base_env: an opaque ``BaseEnv`` that ``ghost-eval`` opens and plays one game after the
            other: ``module:callable``, a Unity build, the Unity Editor.
        exact_exploitability: some of its games have an exact exploitability (which ones:
            ``EnvPath.exact_exploitability_problem``).
        replays: matches can be recorded and replayed (``--record``).
    """

    arenas: bool = False
    seated: bool = False
    base_env: bool = False
    exact_exploitability: bool = False
    replays: bool = False


@attrs.frozen
class GameKind:
    """A game's kind (``envs.game_kind.GAME_KINDS``) and how it was told (``why``: for the log
    line of ``preset: auto``)."""

    kind: str
    why: str


def areas_asked(env_settings: EnvironmentSettings | None) -> int | None:
    """``env_settings.num_areas`` when it asks for more than one copy of the game, else None
    (the kind's own default)."""
    areas = env_settings.num_areas if env_settings is not None else 1
    return areas if areas > 1 else None


class EnvironmentKind(abc.ABC):
    """One form of ``env_path`` text; subclass it and ``register_kind`` an instance.

    Class attributes:
        name: the kind's name, unique among registered kinds.
        prefix: claims every text ``<prefix>:<target>`` (None: the kind tells its texts with
            ``recognises``).
        catch_all: asked after every other kind (at most one: the Unity build path).
        capabilities: what its environments can do.
    """

    name: ClassVar[str]
    prefix: ClassVar[str | None] = None
    catch_all: ClassVar[bool] = False
    capabilities: ClassVar[Capabilities] = Capabilities()

    def recognises(self, text: str | None) -> bool:
        """Whether ``text`` is of this kind. A prefixed kind claims ``<prefix>`` and
        ``<prefix>:...``; a kind without a prefix overrides this."""
        if not text or self.prefix is None:
            return False
        return text.partition(":")[0] == self.prefix

    def form(self) -> str | None:
        """How the 'names no environment' message lists this kind (None: not listed)."""
        return f"{self.prefix}:<target>" if self.prefix is not None else None

    def example(self) -> str | None:
        """For a prefixed kind, how to write one, when a text names only the prefix."""
        return self.form()

    @abc.abstractmethod
    def factory(
        self,
        env: EnvPath,
        *,
        env_settings: EnvironmentSettings | None,
        engine_settings: EngineSettings | None,
    ) -> Any:
        """The environment factory of ``env`` (``envs.sources.EnvFactory``), checked as far as
        possible before any environment starts.

        Raises:
            EnvironmentSourceError: the text names nothing usable (the message says why).
        """

    @abc.abstractmethod
    def game_kind(self, env: EnvPath) -> GameKind:
        """The kind of game ``env`` is, told before any environment starts.

        Raises:
            UnknownGameKindError: the environment declares a kind that does not exist.
        """

    def exact_exploitability_problem(self, env: EnvPath) -> str | None:
        """Why exact exploitability does not apply to ``env`` (None: it does); asked only of
        kinds whose ``capabilities.exact_exploitability`` is set."""
        return None


@attrs.frozen
class EnvPath:
    """An ``env_path`` text and the kind that claims it (``describe_env``).

    Attributes:
        text: the ``--env`` / ``env_settings.env_path`` text, None when none is given.
        kind: the environment kind of the text.
    """

    text: str | None
    kind: EnvironmentKind

    @property
    def target(self) -> str:
        """The text after ``<prefix>:`` for a prefixed kind, else the whole text."""
        text = self.text or ""
        return text.partition(":")[2] if self.kind.prefix is not None else text

    @property
    def capabilities(self) -> Capabilities:
        """What the environment can do."""
        return self.kind.capabilities

    def factory(
        self,
        *,
        env_settings: EnvironmentSettings | None = None,
        engine_settings: EngineSettings | None = None,
    ) -> Any:
        """The environment factory (``EnvironmentKind.factory``).

        Raises:
            EnvironmentSourceError: the text names nothing usable, or only a prefix.
        """
        if self.kind.prefix is not None and not self.target:
            examples = [example for kind in env_kinds() if (example := _prefixed_example(kind))]
            raise EnvironmentSourceError(
                f"--env {self.text!r} names no game; write {' or '.join(examples)}"
            )
        return self.kind.factory(self, env_settings=env_settings, engine_settings=engine_settings)

    def game_kind(self) -> GameKind:
        """The kind of game (``EnvironmentKind.game_kind``)."""
        return self.kind.game_kind(self)

    def exact_exploitability_problem(self) -> str | None:
        """Why exact exploitability does not apply here (None: it does)."""
        if not self.capabilities.exact_exploitability:
            return f"{self.text!r} is neither an OpenSpiel game nor a built-in matrix game"
        return self.kind.exact_exploitability_problem(self)


def _prefixed_example(kind: EnvironmentKind) -> str | None:
    return kind.example() if kind.prefix is not None else None


_KINDS: list[EnvironmentKind] = []


def register_kind(kind: EnvironmentKind) -> EnvironmentKind:
    """Make ``kind`` known to ``describe_env`` (and so to ``resolve_env``, presets and
    ``ghost-eval``); its form joins the accepted forms. Returns ``kind``.

    Raises:
        ValueError: another kind has its name or prefix, or a second catch-all.
    """
    for known in _KINDS:
        if known.name == kind.name:
            raise ValueError(f"an environment kind named {kind.name!r} is already registered")
        if kind.prefix is not None and known.prefix == kind.prefix:
            raise ValueError(
                f"the env_path prefix {kind.prefix!r} already belongs to the kind {known.name!r}"
            )
        if kind.catch_all and known.catch_all:
            raise ValueError(
                f"{known.name!r} already takes every text no other kind claims; register "
                f"{kind.name!r} with a prefix or a form of its own"
            )
    _KINDS.append(kind)
    return kind


def env_kinds() -> tuple[EnvironmentKind, ...]:
    """Every registered kind, in the order they are asked: registration order, catch-all last."""
    return tuple(sorted(_KINDS, key=lambda kind: kind.catch_all))


def describe_env(env_path: str | None) -> EnvPath:
    """``env_path`` read once: the text and the kind that claims it.

    Raises:
        EnvironmentSourceError: no registered kind claims the text (only when the catch-all is
            missing).
    """
    for kind in env_kinds():
        if kind.recognises(env_path):
            return EnvPath(env_path, kind)
    raise EnvironmentSourceError(
        f"--env/env_path {env_path!r} is of no registered environment kind; give {accepted_forms()}"
    )


def accepted_forms() -> str:
    """The forms of ``env_path`` text, as errors list them (``a, b, ..., or z``)."""
    forms = [form for kind in env_kinds() if (form := kind.form())]
    return ", ".join(forms[:-1]) + ", or " + forms[-1] if len(forms) > 1 else "".join(forms)


def registered_prefixes() -> frozenset[str]:
    """The prefixes claimed by registered kinds."""
    return frozenset(kind.prefix for kind in _KINDS if kind.prefix is not None)
