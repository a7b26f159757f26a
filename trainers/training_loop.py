"""The training loop of one run: collect → route → update → log → checkpoint.

``TrainingLoop`` trains one trainer per behavior name of an environment stepper (PPO, SAC or any
registered trainer type) until every trainer reached ``max_steps``, writing checkpoints, stats and
the final policies into a ``RunLayout``. It knows nothing of self-play. A loop that adds to it
(``ghost.running.session.SelfPlaySession``) overrides these hooks and nothing else:

- ``settings_for(behavior_specs)``: which settings each behavior name trains with;
- ``make_trainer(name, settings, spec)``: the trainer of a new behavior name (a wrapper may wrap it);
- ``on_trainer_connected(trainer, behavior_id)``: a behavior id got its trainer and policy;
- ``between_steps(steps)``: after every trainer advanced; may reset the environments;
- ``run_state()`` / ``load_run_state(state)``: JSON-safe state of the loop kept in checkpoints.

The acting policy of each behavior id is whatever its trainer publishes (``Trainer.acting_policy``
and the policy queues), so the loop never asks what kind of trainer it drives.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import torch
from mlagents_envs.base_env import BehaviorSpec

from envs.behavior_id import BehaviorId
from envs.environment_parameters import EnvironmentStats
from envs.exceptions import EnvironmentOutputError, EnvironmentWorkerError, GhostError
from envs.stepping import EnvStepper, StepResult
from trainers import registry
from trainers.agent_processor import AgentProcessor
from trainers.base import ExperienceQueue, PolicyQueue, Trainer
from trainers.callbacks import CallbackList, Checkpoint, TrainingCallback
from trainers.checkpoints import RunCheckpointer
from trainers.devices import acting_device_argument, behavior_devices
from trainers.exceptions import ConfigError, results_write_errors
from trainers.policy_file import initialize_policy
from trainers.run_files.layout import RunLayout
from trainers.run_files.logs import PhaseTimers, TrainingStatus
from trainers.settings import TrainerSettings
from trainers.stats import Aggregation, SummaryConsole

logger = logging.getLogger(__name__)


class TrainingLoop:
    """Trains every behavior of ``stepper`` until all reach ``max_steps`` (see module docstring).

    Args:
        stepper: the environments.
        behaviors: settings per behavior name.
        layout: the run folder results go to.
        seed: seed of every trainer.
        device: where the networks train: ``auto`` (GPU for wide networks when one is present,
            ``trainers.devices``), ``cpu``, ``cuda``...
        acting_device: where policies decide (default: the CPU).
        training: False acts without learning (no updates, no checkpoints, no final policies).
        initialize_from: per behavior name, a policy file whose weights start the behavior.
        callbacks: told of summaries and checkpoints; one returning False stops the run.
    """

    def __init__(
        self,
        *,
        stepper: EnvStepper,
        behaviors: Mapping[str, TrainerSettings],
        layout: RunLayout,
        seed: int = 0,
        device: str = "cpu",
        acting_device: str | None = None,
        training: bool = True,
        initialize_from: Mapping[str, Path] | None = None,
        callbacks: Iterable[TrainingCallback] = (),
    ) -> None:
        self.stepper = stepper
        self.behaviors = dict(behaviors)
        self.layout = layout
        self.seed = seed
        self.device = device
        self.acting_device = acting_device
        self.training = training
        self.initialize_from_files = dict(initialize_from or {})
        self.callbacks = CallbackList(callbacks)
        self.trainers: dict[str, Trainer] = {}
        self.processors: dict[BehaviorId, AgentProcessor] = {}
        self.policy_queues: dict[BehaviorId, PolicyQueue] = {}
        self.checkpointer = RunCheckpointer(layout)
        self.timers = PhaseTimers()
        self.status = TrainingStatus(layout)
        #: every trainer's summary lines, logged together after each round (in step order)
        self.summaries = SummaryConsole()
        self.interrupted = False
        self._settings: dict[str, TrainerSettings] = {}
        self._next_checkpoint: dict[str, int] = {}
        self._saved_at: dict[str, int] | None = None

    # -- hooks ---------------------------------------------------------------------------------
    def settings_for(self, behavior_specs: Mapping[BehaviorId, BehaviorSpec]) -> dict[str, Any]:
        """The settings of every behavior name the environment reports."""
        names = sorted({behavior_id.name for behavior_id in behavior_specs})
        missing = [name for name in names if name not in self.behaviors]
        if missing:
            raise ConfigError(
                f"the environment's behaviors {missing} have no settings; configured: "
                f"{sorted(self.behaviors) or 'none'}"
            )
        return {name: self.behaviors[name] for name in names}

    def make_trainer(self, name: str, settings: Any, spec: BehaviorSpec) -> Trainer:
        """The trainer of behavior name ``name`` (its registered ``trainer_type``)."""
        trainer_class = registry.trainer_class(settings.trainer_type)
        devices = behavior_devices(
            self.device,
            self.acting_device,
            settings.network_settings.hidden_units,
            settings.trainer_type,
            gpu_present=torch.cuda.is_available(),
        )
        if devices.update != "cpu" or devices.acting != "cpu":
            logger.info(
                "%s trains on %s and acts on %s (%s)",
                name, devices.update, devices.acting, devices.reason,
            )  # fmt: skip
        trainer: Trainer = trainer_class(
            behavior_name=name,
            settings=settings,
            artifact_dir=self.layout.behavior_dir(name),
            seed=self.seed,
            device=devices.update,
            training=self.training,
            **acting_device_argument(devices.update, devices.acting),
        )
        return trainer

    def on_trainer_connected(self, trainer: Trainer, behavior_id: BehaviorId) -> None:
        """A behavior id was connected to ``trainer`` (nothing to do in a plain loop)."""

    def between_steps(self, steps: StepResult) -> StepResult:
        """After every trainer advanced: the steps the next round acts on."""
        return steps

    def run_state(self) -> dict[str, Any]:
        """JSON-safe state of the loop itself, saved in each checkpoint index."""
        return {}

    def load_run_state(self, state: dict[str, Any]) -> None:
        """Continue from ``run_state()`` of a checkpoint."""

    # -- wiring --------------------------------------------------------------------------------
    def _trainer_for(self, name: str, spec: BehaviorSpec) -> Trainer:
        if name not in self.trainers:
            trainer = self.make_trainer(name, self._settings[name], spec)
            trainer.stats.console = self.summaries
            trainer.stats.listeners.append(
                lambda summary: self.callbacks.emit("on_summary", summary)
            )
            self.trainers[name] = trainer
            self._next_checkpoint[name] = trainer.settings.checkpoint_interval
        return self.trainers[name]

    def connect_behaviors(self) -> None:
        """Create trainers, policies and queues for behavior ids not seen before."""
        specs = self.stepper.behavior_specs
        new = [bid for bid in sorted(specs) if bid not in self.processors]
        if not new:
            return
        self._settings = self.settings_for(specs)
        for behavior_id in new:
            trainer = self._trainer_for(behavior_id.name, specs[behavior_id])
            trainer.add_policy(behavior_id, trainer.create_policy(behavior_id, specs[behavior_id]))
            queue = ExperienceQueue(behavior_id)
            trainer.subscribe_trajectory_queue(queue)
            policy_queue = PolicyQueue(behavior_id)
            trainer.publish_policy_queue(policy_queue)
            self.policy_queues[behavior_id] = policy_queue
            self.processors[behavior_id] = AgentProcessor(
                policy=trainer.acting_policy(behavior_id), queue=queue
            )
            self.on_trainer_connected(trainer, behavior_id)
            logger.info("Connected behavior %s (trainer %s)", behavior_id, type(trainer).__name__)

    def initialize_from(self, policy_files: Mapping[str, Path]) -> None:
        """Start behaviors from the weights of earlier runs' policy files.

        Raises:
            CheckpointError: a file cannot be read; ``NetworkMismatchError`` when its network is
                not the one this behavior's ``network_settings`` build.
        """
        for name, path in policy_files.items():
            trainer = self.trainers.get(name)
            behavior_id = next((b for b in self.processors if b.name == name), None)
            if trainer is None or behavior_id is None:
                continue
            initialize_policy(
                trainer.get_policy(behavior_id),
                path,
                behavior_name=name,
                network_settings=trainer.settings.network_settings,
            )
            logger.info("Initialized %s from %s", name, path)

    # -- the loop ------------------------------------------------------------------------------
    @property
    def still_training(self) -> bool:
        return any(t.should_still_train for t in self.trainers.values())

    def start(self, *, resume: bool) -> StepResult:
        """Reset the environments, connect behaviors, and restore a checkpoint on ``resume``."""
        steps = self.stepper.reset()
        self.connect_behaviors()
        if not self.trainers:
            raise EnvironmentOutputError(
                "the environment reports no behaviors after reset, so there is nothing to train; "
                "check that its agents register a behavior before the first step"
            )
        if resume and self.checkpointer.exists():
            self.load_run_state(self.checkpointer.load(self.trainers))
            for trainer in self.trainers.values():
                trainer.end_episode()  # the environments restarted: nothing pending carries over
            self._schedule_checkpoints()
            self._apply_published_policies(force=True)
            return steps
        if resume:
            logger.warning(
                "Nothing to resume from yet: the run wrote no checkpoint before it stopped; "
                "starting at step 0 (its earlier TensorBoard points are dropped)"
            )
            for trainer in self.trainers.values():
                trainer.stats.set_start(0)
        self.initialize_from(self.initialize_from_files)
        return steps

    def run(self, *, resume: bool = False, max_env_steps: int | None = None) -> None:
        """Train until every behavior reached ``max_steps``, a callback stops the run, or Ctrl-C
        (then: checkpoint and stop).

        Raises:
            ResultsWriteError: the run folder could not be written (disk full, read-only); the
                checkpoint set named by ``checkpoint.json`` is still the last complete one.
            EnvironmentWorkerError: an environment failed for good; its message ends with the
                checkpoint to ``--resume`` from.
        """
        try:
            with results_write_errors(
                lambda: self._last_checkpoint_text("make room (or fix permissions)")
            ):
                self._run(resume=resume, max_env_steps=max_env_steps)
        except EnvironmentWorkerError as error:
            # finish() has written a checkpoint on the way out: say how to go on from it
            hint = self._last_checkpoint_text("fix the environment").lstrip(". ")
            raise EnvironmentWorkerError(f"{error}\n{hint}") from error

    def _last_checkpoint_text(self, fix: str) -> str:
        try:
            behaviors = self.checkpointer.read_index()["behaviors"]
        except (GhostError, KeyError):
            return f". No checkpoint was written; {fix} and start again"
        steps = ", ".join(f"{name} step {entry['step']}" for name, entry in behaviors.items())
        return (
            f". The last complete checkpoint ({steps}) is intact; {fix} and continue with --resume"
        )

    def _run(self, *, resume: bool, max_env_steps: int | None) -> None:
        steps = self.start(resume=resume)
        env_steps = 0
        try:
            with _ctrl_c_requests_stop() as ctrl_c:
                while self.still_training and not self.callbacks.stop_requested:
                    if ctrl_c.pressed:
                        raise KeyboardInterrupt
                    if max_env_steps is not None and env_steps >= max_env_steps:
                        break
                    steps = self.step_once(steps)
                    env_steps += 1
        except KeyboardInterrupt:
            self.interrupted = True
            logger.info("Interrupted: writing a checkpoint and the current policies")
        finally:
            self.finish()

    def step_once(self, steps: StepResult) -> StepResult:
        """One round: act, step the environments, let every trainer advance, checkpoint if due."""
        timers = self.timers
        started = time.perf_counter()
        actions = {}
        for behavior_id, behavior_steps in steps.items():
            answer = self.processors[behavior_id].process(behavior_steps)
            if answer is not None:
                actions[behavior_id] = answer
        acted = time.perf_counter()
        timers.add("act", acted - started)
        steps = self.stepper.step(actions)
        stepped = time.perf_counter()
        timers.add("env_step", stepped - acted)
        for worker, stats in self.stepper.environment_stats():
            self.record_environment_stats(worker, stats)
        if any(bid not in self.processors for bid in steps):
            self.connect_behaviors()
        for trainer in self.trainers.values():
            trainer.advance()
        self.summaries.flush()
        steps = self.between_steps(steps)
        self._apply_published_policies()
        timers.add("trainer_advance", time.perf_counter() - stepped)
        self._maybe_checkpoint()
        return steps

    def record_environment_stats(self, worker: int, stats: EnvironmentStats) -> None:
        """Write what an environment reported (Unity's StatsRecorder) to every behavior's
        TensorBoard under the key it chose; a most-recent value only from worker 0, as in
        ML-Agents, so that workers do not overwrite each other."""
        for key, entries in stats.items():
            for value, method in entries:
                aggregation = Aggregation[method.name]
                if aggregation is Aggregation.MOST_RECENT and worker != 0:
                    continue
                for trainer in self.trainers.values():
                    trainer.stats.record(key, value, aggregation)

    def reset_environments(self) -> StepResult:
        """Reset every environment; trainers drop their partial trajectories."""
        for trainer in self.trainers.values():
            trainer.end_episode()
        for processor in self.processors.values():
            processor.forget_memories()
        return self.stepper.reset()

    def _apply_published_policies(self, force: bool = False) -> None:
        for behavior_id, queue in self.policy_queues.items():
            policy = queue.take()
            if force:
                policy = self.trainers[behavior_id.name].acting_policy(behavior_id)
            if policy is not None:
                self.processors[behavior_id].policy = policy

    def _schedule_checkpoints(self) -> None:
        for name, trainer in self.trainers.items():
            interval = trainer.settings.checkpoint_interval
            self._next_checkpoint[name] = (trainer.step // interval + 1) * interval

    def _maybe_checkpoint(self) -> None:
        due = any(t.step >= self._next_checkpoint[n] for n, t in self.trainers.items())
        if due and self.training:
            self.checkpoint()
            self._schedule_checkpoints()

    def checkpoint(self) -> None:
        """Write a checkpoint set unless one exists for the current steps."""
        steps = {name: trainer.step for name, trainer in self.trainers.items()}
        if steps != self._saved_at:
            started = time.perf_counter()
            index = self.checkpointer.save(self.trainers, self.run_state())
            self._saved_at = steps
            self.timers.add("checkpoint", time.perf_counter() - started)
            self.status.record_checkpoint(self.trainers)
            self.timers.write(self.layout.timers_path)
            self.callbacks.emit("on_checkpoint", Checkpoint(steps=steps, index_path=index))

    def _export_onnx(self, name: str, policy: Any) -> None:
        """``<Behavior>.onnx`` beside the final policy, as ML-Agents writes it, when the policy is
        a ``TorchPolicy`` and the onnx extra is installed."""
        from trainers import onnx_export  # torch.onnx loads slowly: only at the end of a run
        from trainers.policy import TorchPolicy

        if not isinstance(policy, TorchPolicy):
            return
        if not onnx_export.onnx_available():
            logger.info("No %s.onnx: install the onnx extra to get Unity brains too", name)
            return
        path = onnx_export.export_onnx(policy, self.layout.final_onnx_path(name))
        logger.info("Exported %s", path)

    def finish(self) -> None:
        """Write a last checkpoint and each behavior's final policy ``<run>/<Behavior>.pt``."""
        self.summaries.flush()
        try:
            if self.training and self.trainers:
                self.checkpoint()
                for name, trainer in self.trainers.items():
                    behavior_id = next(b for b in self.processors if b.name == name)
                    path = self.layout.final_policy_path(name)
                    policy = trainer.export_policy(behavior_id)
                    policy.save(path)
                    logger.info("Exported %s", path)
                    self._export_onnx(name, policy)
                self.status.record_checkpoint(self.trainers, final=True)
        finally:
            for trainer in self.trainers.values():
                trainer.close()
            self.stepper.close()


class _CtrlC:
    pressed = False


@contextlib.contextmanager
def _ctrl_c_requests_stop() -> Iterator[_CtrlC]:
    """The first Ctrl-C asks the loop to stop between steps; a second one interrupts at once.

    A KeyboardInterrupt raised wherever the main thread happens to be can be lost (Python only
    prints it when it lands in a finalizer or a callback run from C), and then the run trains on.
    """
    state = _CtrlC()
    if threading.current_thread() is not threading.main_thread():
        yield state
        return

    def on_ctrl_c(signum: int, frame: Any) -> None:
        if state.pressed:
            raise KeyboardInterrupt
        state.pressed = True

    previous = signal.signal(signal.SIGINT, on_ctrl_c)
    try:
        yield state
    finally:
        signal.signal(signal.SIGINT, previous)
