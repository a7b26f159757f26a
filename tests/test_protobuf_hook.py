"""mlagents-envs' protocol messages on a current protobuf: compiled parsing in every process.

The hook (``envs.protobuf_hook``) builds mlagents-envs' old generated modules from the descriptors
they carry. These tests run fresh interpreters, because what matters is what a new process gets:
the trainer, an environment worker, a Ray actor or the stand-in player, whatever it imports first.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest

from envs.exceptions import ProtobufLayoutError
from envs.mlagents_protobuf import load_generated_module, protobuf_backend, protobuf_version
from envs.protobuf_hook import needs_hook

ROOT = Path(__file__).resolve().parent.parent


def run_fresh(code: str) -> str:
    """Run ``code`` in a new interpreter (with site-packages' .pth files, as any process has)."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip()


def test_messages_parse_with_a_compiled_backend():
    """Pure-Python parsing is several times slower per step of a Unity build: never accept it."""
    backend = run_fresh(
        """
        from mlagents_envs.communicator_objects.observation_pb2 import ObservationProto
        from google.protobuf.internal import api_implementation
        print(api_implementation.Type())
        """
    )
    assert backend in ("upb", "cpp"), f"protobuf {protobuf_version()} parses with {backend}"
    assert protobuf_backend() == backend


@pytest.mark.parametrize(
    "first",
    [
        "import mlagents_envs.environment",
        "import ghost.running.api",
        "from tests.fake_unity.agent_infos import AgentInfo",
    ],
)
def test_any_import_order_gives_working_messages(first):
    out = run_fresh(
        f"""
        {first}
        from mlagents_envs.environment import UnityEnvironment
        from mlagents_envs.communicator_objects.command_pb2 import QUIT, RESET, CommandProto
        from mlagents_envs.communicator_objects.unity_rl_input_pb2 import UnityRLInputProto
        from mlagents_envs.communicator_objects.unity_to_external_pb2_grpc import (
            UnityToExternalProtoStub,
        )
        message = UnityRLInputProto(command=RESET, side_channel=b"x")
        action = message.agent_actions["Pong?team=1"].value.add()
        action.continuous_actions.extend([0.5, -1.0])
        action.discrete_actions.extend([2])
        copy = UnityRLInputProto.FromString(message.SerializeToString())
        assert copy == message and copy.agent_actions["Pong?team=1"].value[0].discrete_actions == [2]
        print(CommandProto.Name(QUIT), type(UnityRLInputProto.ListAgentActionProto).__name__)
        """
    )
    assert out.split()[0] == "QUIT"


def test_start_up_installs_the_hook_where_protobuf_needs_it():
    """The .pth file in site-packages installs it before any import of ours."""
    names = run_fresh("import sys; print([type(f).__name__ for f in sys.meta_path])")
    assert ("DescriptorModuleFinder" in names) == needs_hook(), names


def fake_module(tmp_path, name, source):
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    return types.ModuleType(name), str(path)


def test_a_module_without_a_descriptor_is_a_clear_error(tmp_path):
    module, origin = fake_module(tmp_path, "future_layout_pb2", "MESSAGES = {}\n")
    with pytest.raises(
        ProtobufLayoutError, match="future_layout_pb2.*no serialized file descriptor"
    ):
        load_generated_module(module, origin)


def test_a_descriptor_missing_a_bound_class_is_a_clear_error(tmp_path):
    from google.protobuf import descriptor_pb2

    proto = descriptor_pb2.FileDescriptorProto(
        name="ghost_tests/layout_check.proto", package="ghost_tests_layout", syntax="proto3"
    )
    proto.message_type.add(name="Present")
    serialized = proto.SerializeToString()
    module, origin = fake_module(
        tmp_path,
        "layout_check_pb2",
        f"""
        DESCRIPTOR = _descriptor.FileDescriptor(name="x", serialized_pb={serialized!r})
        Present = _reflection.GeneratedProtocolMessageType("Present", (), {{}})
        Absent = _reflection.GeneratedProtocolMessageType("Absent", (), {{}})
        """,
    )
    with pytest.raises(ProtobufLayoutError, match="does not define Absent"):
        load_generated_module(module, origin)
    assert module.Present().SerializeToString() == b""
