"""The import hook that loads mlagents-envs' protocol modules on protobuf >= 4.

mlagents-envs 0.28's ``*_pb2`` modules were generated before protobuf 3.19 and build their
descriptors by hand, which protobuf >= 4 refuses unless it falls back to its pure-Python parser.
``install()`` puts a finder first on ``sys.meta_path`` that hands those modules to
``envs.mlagents_protobuf``, which builds them from the serialized descriptor they carry.

This module runs at every interpreter start-up: the ``ghost_trainer_protobuf.pth`` file that
``setup.py`` installs into site-packages imports it and calls ``install()``, so the hook holds in
every process (trainer, environment workers, Ray actors, ``ghost-eval``, the stand-in player)
whichever of ``ghost`` and ``mlagents_envs`` is imported first. It therefore imports nothing
beyond the standard import machinery until a protocol module is really imported.
``envs.unity_build`` calls ``install()`` too before it starts a build, for a source checkout that
was not installed.
"""

from __future__ import annotations

import importlib.machinery
import sys
from types import ModuleType
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:  # importlib.abc costs milliseconds at every interpreter start
    from collections.abc import Sequence
    from importlib.abc import Loader

PACKAGE = "mlagents_envs.communicator_objects"
#: the first protobuf major release that refuses hand-built descriptors (and has upb)
FIRST_REFUSING_MAJOR = 4


def needs_hook() -> bool:
    """Whether the installed protobuf refuses mlagents-envs' hand-built descriptors."""
    import google.protobuf

    return int(google.protobuf.__version__.split(".")[0]) >= FIRST_REFUSING_MAJOR


def install() -> None:
    """Put the hook first on ``sys.meta_path``, once per process.

    Does nothing on protobuf 3.x (ML-Agents 1.1's own pins), where the generated modules load as
    they are, nor without protobuf.
    """
    if any(isinstance(finder, DescriptorModuleFinder) for finder in sys.meta_path):
        return
    try:
        if not needs_hook():
            return
    except ImportError:
        return
    sys.meta_path.insert(0, DescriptorModuleFinder())


def installed() -> bool:
    """Whether this process loads the protocol modules through the hook."""
    return any(isinstance(finder, DescriptorModuleFinder) for finder in sys.meta_path)


class DescriptorModuleFinder:
    """A meta-path finder for ``mlagents_envs.communicator_objects.*_pb2`` (and nothing else)."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if not (fullname.startswith(PACKAGE + ".") and fullname.endswith("_pb2")):
            return None
        found = importlib.machinery.PathFinder.find_spec(fullname, path)
        if found is None or found.origin is None:
            return None
        loader = cast("Loader", DescriptorLoader(found.origin))
        spec = importlib.machinery.ModuleSpec(fullname, loader, origin=found.origin)
        spec.has_location = True
        return spec

    def invalidate_caches(self) -> None:
        """Nothing is cached here (``importlib.invalidate_caches`` calls this)."""


class DescriptorLoader:
    """Loads one generated module through ``envs.mlagents_protobuf.load_generated_module``."""

    def __init__(self, origin: str) -> None:
        self.origin = origin

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None  # the default module object

    def exec_module(self, module: ModuleType) -> None:
        from envs.mlagents_protobuf import load_generated_module

        load_generated_module(module, self.origin)
