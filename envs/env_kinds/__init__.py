"""Environment kinds: every form ``--env`` / ``env_settings.env_path`` takes, read in one place.

========================  ==========================================  ===========================
``env_path``              kind (``EnvironmentKind``)                  can (``Capabilities``)
========================  ==========================================  ===========================
``tennis``                ``builtin.BuiltinGames``                    arenas, replays, exact
                                                                      exploitability (matrix
                                                                      games)
``my_envs:make_env``      ``python_callable.PythonCallable``          base_env
``openspiel:<game>``      ``openspiel.OpenSpielGames``                seated, exact
                                                                      exploitability (two-player
                                                                      zero-sum games)
``pettingzoo:<module>``   ``pettingzoo.PettingZooGames``              seated
``builds/Tennis``         ``unity.UnityBuildPath`` (any other text)   base_env
none                      ``unity.UnityInEditor``                     base_env
========================  ==========================================  ===========================

``describe_env(env_path)`` reads the text once and returns an ``EnvPath`` (its kind, its target,
``factory()``, ``game_kind()``, ``capabilities``); ``envs.sources.resolve_env``, the presets'
game kinds, the run record and ``ghost-eval`` all ask it instead of parsing the text.

A new kind is one module (subclass ``EnvironmentKind``: a ``prefix`` or ``recognises``,
``factory``, ``game_kind``, ``capabilities``) and one ``register_kind(MyKind())``, here for a kind
we ship, or in the user's own code before ``resolve_env`` runs.
"""

from __future__ import annotations

from envs.env_kinds.builtin import BuiltinGames
from envs.env_kinds.openspiel import OpenSpielGames
from envs.env_kinds.pettingzoo import PettingZooGames
from envs.env_kinds.python_callable import PythonCallable
from envs.env_kinds.registry import (
    Capabilities,
    EnvironmentKind,
    EnvPath,
    GameKind,
    accepted_forms,
    describe_env,
    env_kinds,
    register_kind,
)
from envs.env_kinds.unity import UnityBuildPath, UnityInEditor

__all__ = [
    "Capabilities",
    "EnvPath",
    "EnvironmentKind",
    "GameKind",
    "accepted_forms",
    "describe_env",
    "env_kinds",
    "register_kind",
]

# the order the forms are listed in errors (UnityBuildPath, the catch-all, is asked last)
register_kind(BuiltinGames())
register_kind(PythonCallable())
register_kind(OpenSpielGames())
register_kind(PettingZooGames())
register_kind(UnityBuildPath())
register_kind(UnityInEditor())
