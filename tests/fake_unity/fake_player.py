"""A stand-in Unity player: Unity's side of the ML-Agents protocol (communication API 1.5.0).

The launchers beside this file (``FakePong.x86_64``, ``FakeStrikers.x86_64``) are what
``UnityEnvironment(file_name="tests/fake_unity/FakePong")`` starts, exactly as it starts a Linux
build. They run ``#!/usr/bin/env python3``, so the ``python3`` first on ``PATH`` must have grpc,
protobuf, numpy and mlagents_envs: tests prepend the venv's ``bin`` (``os.path.dirname(
sys.executable)``) to ``PATH``. ``NeverConnects.x86_64`` starts, writes its log and waits to be
killed, for timeout tests.

Command line (as ``mlagents_envs.env_utils.launch_executable`` passes it):
``--mlagents-port N`` (without it the player says so and exits 1, as a build without a trainer
would just play), ``-nographics``, ``-batchmode``, ``-logFile PATH`` (the player log below; none
without it); other arguments are ignored and logged. Test options: ``--fake-crash-after-steps N``
(``os._exit(3)`` after N environment steps), ``--fake-crash-marker PATH`` (crash only if PATH does
not exist, creating it first, so a restarted build does not crash again), ``--fake-decision-period
K`` (a DecisionRequester's period, default 1; actions repeat between decisions),
``--fake-respawn-agents`` (see agent ids in ``agent_infos``), ``--fake-exit-at-start CODE`` (log
start-up lines and a fatal error, then exit with CODE before connecting, as a build missing a file
or a GPU does), ``--fake-communication-version V`` (claim API V in the handshake instead of 1.5.0,
for a build of an incompatible ML-Agents release), ``--fake-leave-play-after-steps N`` (after N
environment steps send a message with status 400 and exit 0, as the Unity Editor's communicator
does when Play mode ends).

Started by hand with ``--mlagents-port`` on the port a trainer listens on with no build to start,
the player stands in for the Unity Editor after Play is pressed: the Editor is a gRPC client too.

Protocol, as ``RpcCommunicator.cs`` does it (the player is the gRPC client of
``UnityToExternalProto/Exchange``; every message carries a header with status 200):

1. send the initialization output (name ``AcademySingleton``, communication version ``1.5.0``,
   package version ``2.2.1``, every capability true); the reply holds ``rl_initialization_input``
   (seed, num_areas, ...);
2. send a message with no ``unity_output`` at all; the reply (Python's ``reset()``) holds the first
   side channels and the RESET command;
3. then every environment step where some agent requested a decision or ended its episode: send
   the agent infos of every behavior (terminal infos first, then decisions) with the player's
   outgoing side channels; a behavior's brain parameters go in ``rl_initialization_output`` of the
   first output that holds infos of that behavior. The reply's side channels are processed first,
   then its command: RESET (reset every area; the next output holds every agent's first
   decision), QUIT, or STEP: actions, per behavior, in the order of the decisions sent.
   A reply with status other than 200 (``UnityEnvironment.close()`` sends 400), a QUIT command or
   a broken connection ends the player with exit code 0 (Unity's ``Application.Quit``).

The player's parts: ``side_channels`` (the side-channel codecs and environment parameters),
``agent_infos`` (agent ids, the infos sent, the actions read) and ``fake_games`` (the games).
They import one another as top-level modules: the launchers put this folder on ``sys.path``.

Stats sent (StatsAggregationMethod: 0 average, 1 most recent): ``Environment/Episode Steps``
(average) at every episode end, with the episode's length; ``Fake/<key>`` (most recent) for every
environment parameter received, at every area reset, with the value the area uses (the game reads
its own keys; other keys are read once per reset by the player).

Player log (``-logFile``, appended to): JSON lines, flushed after each, each with ``event`` and
``time``:

- ``start``: pid, argv, port, graphics (false under ``-nographics``), batchmode, game,
  decision_period, respawn_agents, ignored_args, protobuf (the parser's backend: upb, cpp or
  python);
- ``initialized``: seed, num_areas, communication_version, package_version, capabilities (the
  trainer's), unity_communication_version, unity_package_version;
- ``engine_configuration``: setting (screen_resolution, quality_level, time_scale,
  target_frame_rate, capture_frame_rate) and its value(s), one line per message;
- ``environment_parameter``: key, kind (float, uniform, gaussian, multirange_uniform) and its
  fields (value; seed, min, max; seed, mean, st_dev; seed, intervals);
- ``training_analytics``: message (the protobuf type) and its fields;
  ``unknown_side_channel``: channel_id, length; ``side_channel_error``: channel_id, error;
- ``reset``: episode (count of RESET commands), steps (environment steps so far), parameters;
- ``crash``: step, exit_code (3); ``leave_play``: step; ``quit``: reason, exit_code;
- under ``--fake-exit-at-start``: ``startup`` (line, message) lines, then ``fatal`` (message,
  exit_code).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import grpc
import numpy as np
from google.protobuf.internal import api_implementation
from google.protobuf.json_format import MessageToDict
from mlagents_envs.communicator_objects.capabilities_pb2 import UnityRLCapabilitiesProto
from mlagents_envs.communicator_objects.command_pb2 import QUIT, RESET
from mlagents_envs.communicator_objects.header_pb2 import HeaderProto
from mlagents_envs.communicator_objects.unity_input_pb2 import UnityInputProto
from mlagents_envs.communicator_objects.unity_message_pb2 import UnityMessageProto
from mlagents_envs.communicator_objects.unity_rl_initialization_output_pb2 import (
    UnityRLInitializationOutputProto,
)
from mlagents_envs.communicator_objects.unity_rl_input_pb2 import UnityRLInputProto
from mlagents_envs.communicator_objects.unity_to_external_pb2_grpc import (
    UnityToExternalProtoStub,
)

# isort: split
# sibling modules, imported as top-level modules: the launchers put this folder on sys.path
from agent_infos import ActionCountError, Agents
from side_channels import (
    STAT_AVERAGE,
    STAT_MOST_RECENT,
    STATS_CHANNEL,
    EnvironmentParameters,
    SideChannelError,
    join_side_channel_messages,
    process_side_channel_data,
    stat_message,
)

COMMUNICATION_VERSION = "1.5.0"
#: com.unity.ml-agents of Release 19, the release of mlagents_envs 0.28 (Python only logs it)
PACKAGE_VERSION = "2.2.1"
ACADEMY_NAME = "AcademySingleton"
CONNECT_TIMEOUT_S = 60.0
CRASH_EXIT_CODE = 3
#: what ``--fake-exit-at-start`` logs first: more lines than a start-up error shows of a log
STARTUP_LINES = 12


class PlayerQuit(Exception):
    """The player stops: ``reason`` goes to the log, ``exit_code`` to the shell."""

    def __init__(self, reason: str, exit_code: int = 0) -> None:
        super().__init__(reason)
        self.reason = reason
        self.exit_code = exit_code


class PlayerLog:
    """Unity's player log as JSON lines (nothing is written without ``-logFile``)."""

    def __init__(self, path: str | None) -> None:
        self._file: TextIO | None = None
        if path == "-":  # Unity's "-logFile -": the log goes to standard output
            self._file = sys.stdout
        elif path:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            # appended to, so that a restarted build's lines follow those of the one that died
            self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115 (open for the run)

    def write(self, event: str, **fields: Any) -> None:
        if self._file is not None:
            record = {"event": event, "time": round(time.time(), 3), **fields}
            self._file.write(json.dumps(record) + "\n")
            self._file.flush()


@dataclass(frozen=True)
class Options:
    """The command line: Unity's arguments, the test options, and the arguments ignored."""

    port: int | None
    log_file: str | None
    graphics: bool
    batchmode: bool
    crash_after_steps: int | None
    crash_marker: str | None
    decision_period: int
    respawn_agents: bool
    ignored_args: list[str]
    exit_at_start: int | None = None
    communication_version: str = COMMUNICATION_VERSION
    leave_play_after_steps: int | None = None


def parse_options(argv: Sequence[str]) -> Options:
    """Unity's own arguments and the test options; everything else is kept to be logged."""
    parser = argparse.ArgumentParser(prog="fake-unity-player", allow_abbrev=False, add_help=False)
    parser.add_argument("--mlagents-port", type=int)
    parser.add_argument("-logFile", "-logfile", dest="log_file")
    parser.add_argument("-nographics", action="store_true")
    parser.add_argument("-batchmode", action="store_true")
    parser.add_argument("--fake-crash-after-steps", type=int)
    parser.add_argument("--fake-crash-marker")
    parser.add_argument("--fake-decision-period", type=int, default=1)
    parser.add_argument("--fake-respawn-agents", action="store_true")
    parser.add_argument("--fake-exit-at-start", type=int)
    parser.add_argument("--fake-communication-version", default=COMMUNICATION_VERSION)
    parser.add_argument("--fake-leave-play-after-steps", type=int)
    known, ignored = parser.parse_known_args(list(argv))
    if known.fake_decision_period < 1:
        parser.error(f"--fake-decision-period must be >= 1, got {known.fake_decision_period}")
    return Options(
        port=known.mlagents_port,
        log_file=known.log_file,
        graphics=not known.nographics,
        batchmode=known.batchmode,
        crash_after_steps=known.fake_crash_after_steps,
        crash_marker=known.fake_crash_marker,
        decision_period=known.fake_decision_period,
        respawn_agents=known.fake_respawn_agents,
        ignored_args=ignored,
        exit_at_start=known.fake_exit_at_start,
        communication_version=known.fake_communication_version,
        leave_play_after_steps=known.fake_leave_play_after_steps,
    )


class FakePlayer:
    """Plays ``game`` for the trainer listening on ``options.port``."""

    def __init__(self, *, options: Options, game_class: Any, log: PlayerLog) -> None:
        self.options = options
        self.game_class = game_class
        self.log = log
        self.parameters = EnvironmentParameters()
        self._outgoing: list[tuple[uuid.UUID, bytes]] = []
        self.steps = 0
        self.resets = 0
        self.academy_step = 0

    def run(self) -> int:
        """Connect, play until told to stop; returns the exit code."""
        channel = grpc.insecure_channel(f"localhost:{self.options.port}")
        try:
            grpc.channel_ready_future(channel).result(timeout=CONNECT_TIMEOUT_S)
        except grpc.FutureTimeoutError:
            return self._quit(f"no trainer on port {self.options.port}", 1)
        self._stub = UnityToExternalProtoStub(channel)
        try:
            self._initialize()
            self._play()
        except PlayerQuit as stop:
            return self._quit(stop.reason, stop.exit_code)
        finally:
            channel.close()
        return 0

    def _quit(self, reason: str, exit_code: int) -> int:
        self.log.write("quit", reason=reason, exit_code=exit_code)
        return exit_code

    def _exchange(self, message: UnityMessageProto) -> UnityInputProto:
        try:
            reply = self._stub.Exchange(message)
        except grpc.RpcError as error:
            raise PlayerQuit(f"connection lost: {error.code().name}") from None
        if reply.header.status != 200:
            raise PlayerQuit(f"trainer sent status {reply.header.status}")
        return reply.unity_input

    def _exchange_rl(self, message: UnityMessageProto) -> UnityRLInputProto:
        """Send ``message``; the reply's side channels are processed, then a QUIT command."""
        rl_input = self._exchange(message).rl_input
        self._process_side_channels(rl_input.side_channel)
        if rl_input.command == QUIT:
            raise PlayerQuit("quit command")
        return rl_input

    def _initialize(self) -> None:
        every_capability = {
            field.name: True for field in UnityRLCapabilitiesProto.DESCRIPTOR.fields
        }
        academy = UnityRLInitializationOutputProto(
            name=ACADEMY_NAME,
            communication_version=self.options.communication_version,
            package_version=PACKAGE_VERSION,
            capabilities=UnityRLCapabilitiesProto(**every_capability),
        )
        message = new_message()
        message.unity_output.rl_initialization_output.CopyFrom(academy)
        init = self._exchange(message)
        trainer = init.rl_initialization_input
        # Unity's TrainingAreaReplicator keeps its own count when the trainer sends 0
        num_areas = max(1, trainer.num_areas)
        self.log.write(
            "initialized",
            seed=trainer.seed,
            num_areas=trainer.num_areas,
            communication_version=trainer.communication_version,
            package_version=trainer.package_version,
            capabilities=MessageToDict(trainer.capabilities, preserving_proto_field_name=True),
            unity_communication_version=self.options.communication_version,
            unity_package_version=PACKAGE_VERSION,
        )
        self.game = self.game_class(num_areas=num_areas, seed=trainer.seed)
        self.agents = Agents(layouts=self.game.behaviors, num_areas=num_areas)
        # C# sends a second message without content; its reply is Python's first reset
        self._exchange_rl(new_message())
        self._full_reset()  # done on RESET, and by the Academy's first step anyway

    def _play(self) -> None:
        period = self.options.decision_period
        while True:
            deciding = self.academy_step % period == 0
            if deciding:
                self.agents.queue_decisions(self.game.observations(), self.game.action_masks())
            self.academy_step += 1
            if self.agents.has_infos():
                rl_input = self._exchange_rl(self._output_message())
                if rl_input.command == RESET:
                    self._full_reset()
                    continue
                if deciding:
                    self._take_actions(rl_input)
            self._act()

    def _output_message(self) -> UnityMessageProto:
        message = new_message()
        self.agents.write_output(message.unity_output)
        message.unity_output.rl_output.side_channel = join_side_channel_messages(self._outgoing)
        self._outgoing.clear()
        return message

    def _take_actions(self, rl_input: UnityRLInputProto) -> None:
        try:
            self.agents.take_actions(rl_input)
        except ActionCountError as error:
            raise PlayerQuit(str(error), 1) from None

    def _act(self) -> None:
        outcome = self.game.step(self.agents.actions())
        self.agents.add_rewards(outcome.rewards, outcome.group_rewards)
        self.steps += 1
        self._maybe_crash()
        self._maybe_leave_play()
        areas = np.flatnonzero(outcome.ended)
        if len(areas):
            self._end_episodes(areas, interrupted=outcome.interrupted)

    def _end_episodes(self, areas: np.ndarray, *, interrupted: np.ndarray) -> None:
        self.agents.queue_episode_ends(self.game.observations(), areas, interrupted=interrupted)
        for area in areas:
            steps = float(self.game.episode_steps[area])
            self._send_stat("Environment/Episode Steps", steps, STAT_AVERAGE)
        if self.options.respawn_agents:
            self.agents.respawn(areas)
        self._reset_areas(areas)

    def _full_reset(self) -> None:
        """A RESET command: every area starts a new episode."""
        self.resets += 1
        self.academy_step = 0
        all_areas = np.arange(self.game.num_areas)
        if self.options.respawn_agents:
            self.agents.destroy_started(self.game.observations())
        self._reset_areas(all_areas)
        read = {key: self.parameters.last_read.get(key) for key in self.parameters.received_keys()}
        self.log.write("reset", episode=self.resets, steps=self.steps, parameters=read)

    def _reset_areas(self, areas: np.ndarray) -> None:
        """New episodes in ``areas``; each reports the parameter values it reads."""
        for area in areas:
            self.parameters.reads.clear()
            self.game.reset(np.array([area]), self.parameters)
            for key in self.parameters.received_keys():
                if key not in self.parameters.reads:
                    self.parameters.get_with_default(key, 0.0)
                self._send_stat(f"Fake/{key}", self.parameters.last_read[key], STAT_MOST_RECENT)
        self.agents.reset_areas(areas)

    def _send_stat(self, key: str, value: float, aggregation: int) -> None:
        self._outgoing.append((STATS_CHANNEL, stat_message(key, value, aggregation)))

    def _process_side_channels(self, data: bytes) -> None:
        try:
            process_side_channel_data(data, parameters=self.parameters, log=self.log.write)
        except SideChannelError as error:
            raise PlayerQuit(f"unreadable side-channel data: {error}", 1) from None

    def _maybe_crash(self) -> None:
        limit = self.options.crash_after_steps
        if limit is None or self.steps < limit:
            return
        marker = self.options.crash_marker
        if marker is not None:
            if os.path.exists(marker):
                return
            Path(marker).write_text(f"crashed after {self.steps} steps\n", encoding="utf-8")
        self.log.write("crash", step=self.steps, exit_code=CRASH_EXIT_CODE)
        os._exit(CRASH_EXIT_CODE)

    def _maybe_leave_play(self) -> None:
        """``--fake-leave-play-after-steps``: what the Editor's communicator does when Play mode
        ends (status 400, to which the trainer does not reply), then quit."""
        limit = self.options.leave_play_after_steps
        if limit is None or self.steps < limit:
            return
        self.log.write("leave_play", step=self.steps)
        # the trainer closes its server instead of replying
        with contextlib.suppress(grpc.RpcError):
            self._stub.Exchange(UnityMessageProto(header=HeaderProto(status=400)), timeout=5)
        raise PlayerQuit("left play mode")


def new_message() -> UnityMessageProto:
    """A message to Python: status 200 (C#'s WrapMessage), no content yet."""
    return UnityMessageProto(header=HeaderProto(status=200))


def _start(argv: Sequence[str], game_name: str) -> tuple[Options, PlayerLog]:
    options = parse_options(argv)
    log = PlayerLog(options.log_file)
    log.write(
        "start",
        pid=os.getpid(),
        argv=list(argv),
        port=options.port,
        graphics=options.graphics,
        batchmode=options.batchmode,
        game=game_name,
        decision_period=options.decision_period,
        respawn_agents=options.respawn_agents,
        ignored_args=options.ignored_args,
        protobuf=api_implementation.Type(),
    )
    return options, log


def main(argv: Sequence[str], game: Any) -> int:
    """Run the player for the game class ``game``; returns the exit code."""
    options, log = _start(argv, game.name)
    if options.port is None:
        print("No trainer port given (--mlagents-port): nothing to connect to.", file=sys.stderr)
        log.write("quit", reason="no trainer port", exit_code=1)
        return 1
    if options.exit_at_start is not None:
        return exit_at_start(log, options.exit_at_start)
    return FakePlayer(options=options, game_class=game, log=log).run()


def exit_at_start(log: PlayerLog, exit_code: int) -> int:
    """``--fake-exit-at-start``: a player that dies while loading, its reason last in its log."""
    for line in range(STARTUP_LINES):
        log.write("startup", line=line, message=f"loading subsystem {line}")
    message = "Failed to load the game's data folder"
    log.write("fatal", message=message, exit_code=exit_code)
    print(message, file=sys.stderr)
    return exit_code


def never_connect(argv: Sequence[str]) -> int:
    """A build that starts, writes its log and never connects: it waits to be killed."""
    _start(argv, "never-connects")
    while True:
        time.sleep(3600)
