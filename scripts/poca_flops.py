"""Where MA-POCA's update arithmetic goes: one minibatch, ours against ML-Agents 1.1's.

    python scripts/poca_flops.py [--config tests/fixtures/mlagents_configs/SoccerTwos-poca.yaml]
        [--repeats 5] [--rounds 1] [--mlagents-python .venv-mlagents/bin/python]

Both sides build their POCA networks for ``envs.soccer``'s spec (one team: groups of 2 agents,
16 floats of observation, two discrete branches of 3) under the config's ``network_settings`` and
``batch_size``, fill a synthetic rollout of exactly ``batch_size`` agent steps (``ARENAS`` groups;
random observations and actions, since arithmetic does not depend on the values) and count, with
``torch.utils.flop_counter.FlopCounterMode``, the floating-point operations of one minibatch of the
update per module: the forward pass (actor, group value, counterfactual baseline, losses), the
backward pass and the optimizer step. Then the same minibatch is timed (median of ``--repeats``
after a warm-up, one torch thread).

- **ours**: ``trainers.poca.POCATrainer`` builds the rollout's targets as its update does, then its
  own ``_optimize`` runs one epoch over the one minibatch;
- **ML-Agents 1.1**: ``TorchPOCAOptimizer`` fills an update buffer as its POCA trainer does
  (``Trajectory.to_agentbuffer`` per agent, its own value and baseline estimates), then runs its
  trainer's loop body: ``AgentBuffer.make_mini_batch`` and ``TorchPOCAOptimizer.update``.

ML-Agents' half runs in its own environment (``.venv-mlagents``, built by ``bash
.ci/mlagents-venv``): this script starts itself there with ``--side mlagents`` and reads one JSON
object from the last line of its standard output (``--side ours`` prints ours the same way).

FlopCounterMode counts matrix products and attention, 2 FLOPs per multiply-add, not elementwise
work (activations, layer norms, softmax, Adam). The CPU attention kernels that
``scaled_dot_product_attention`` dispatches to are missing from its registry; they are counted
with its own attention formulas. The no-grad pass of the critic that gives the targets (values
and baselines of the same rows) is counted apart.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.flop_counter import FlopCounterMode, sdpa_backward_flop_count, sdpa_flop_count

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CONFIG = ROOT / "tests" / "fixtures" / "mlagents_configs" / "SoccerTwos-poca.yaml"
MLAGENTS_PYTHON = ROOT / ".venv-mlagents" / "bin" / "python"
#: groups (arenas) of the synthetic rollout; its length is batch_size / (ARENAS * team size)
ARENAS = 16
SIDE_NAMES = {"ours": "ghost-trainer", "mlagents": "ML-Agents 1.1"}


# -- counting and timing (either environment) ----------------------------------------------------
def _cpu_attention_formulas() -> dict[Any, Callable[..., int]]:
    """FlopCounterMode formulas for the CPU flash-attention kernels (its registry has the GPU
    ones only), from its own attention formulas."""
    aten = torch.ops.aten

    def forward(query: Any, key: Any, value: Any, *args: Any, **kwargs: Any) -> int:
        return sdpa_flop_count(query, key, value)

    def backward(grad_out: Any, query: Any, key: Any, value: Any, *args: Any, **kwargs: Any) -> int:
        return sdpa_backward_flop_count(grad_out, query, key, value)

    formulas: dict[Any, Callable[..., int]] = {}
    if hasattr(aten, "_scaled_dot_product_flash_attention_for_cpu"):
        formulas[aten._scaled_dot_product_flash_attention_for_cpu] = forward
        formulas[aten._scaled_dot_product_flash_attention_for_cpu_backward] = backward
    return formulas


def _counter() -> FlopCounterMode:
    return FlopCounterMode(display=False, custom_mapping=_cpu_attention_formulas())


def _grad_nodes(*trees: Any) -> list[Any]:
    """The autograd nodes of the tensors in ``trees`` (nested tuples, lists and dicts)."""
    nodes, stack = [], list(trees)
    while stack:
        item = stack.pop()
        if isinstance(item, torch.Tensor):
            nodes.append(item.grad_fn)
        elif isinstance(item, list | tuple):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
    return [node for node in nodes if node is not None]


class PartCounter:
    """FLOPs per part of the networks, a part being a list of modules (none inside another).

    Forward: what runs inside a part's modules. Backward: what runs inside the autograd nodes
    that a part's modules created in their forward pass (found from their outputs back to their
    inputs), so the gradient of every matrix product counts for the part that did the product.
    """

    def __init__(self, parts: dict[str, list[torch.nn.Module]]) -> None:
        self.counter = _counter()
        self.forward = dict.fromkeys(parts, 0)
        self.backward = dict.fromkeys(parts, 0)
        self._depth, self._start = 0, 0
        self._inputs: list[list[Any]] = []  # of each module call under way, innermost last
        self._watched: set[Any] = set()
        self._hooks: list[Any] = []
        for part, modules in parts.items():
            for module in {m for root in modules for m in root.modules()}:
                self._hooks.append(module.register_forward_pre_hook(self._enter, with_kwargs=True))
                self._hooks.append(
                    module.register_forward_hook(
                        functools.partial(self._leave, part), with_kwargs=True
                    )
                )

    def total(self) -> int:
        """All FLOPs counted so far."""
        return self.counter.get_total_flops()

    def _enter(self, module: torch.nn.Module, args: Any, kwargs: Any) -> None:
        if self._depth == 0:
            self._start = self.total()
        self._depth += 1
        self._inputs.append(_grad_nodes(args, kwargs))

    def _leave(
        self, part: str, module: torch.nn.Module, args: Any, kwargs: Any, output: Any
    ) -> None:
        self._depth -= 1
        if self._depth == 0:
            self.forward[part] += self.total() - self._start
        seen = set(self._inputs.pop())
        stack = _grad_nodes(output)
        while stack:  # the nodes this call created: from its outputs back to its inputs
            node = stack.pop()
            if node is None or node in seen:
                continue
            seen.add(node)
            if node not in self._watched:  # not already an inner module's
                self._watched.add(node)
                self._watch(part, node)
            stack.extend(following for following, _ in node.next_functions)

    def _watch(self, part: str, node: Any) -> None:
        if type(node).__name__ == "AccumulateGrad":
            return  # a parameter's gradient: no arithmetic
        begun: list[int] = []
        node.register_prehook(lambda grad_outputs: begun.append(self.total()))

        def done(grad_inputs: Any, grad_outputs: Any) -> None:
            self.backward[part] += self.total() - begun.pop()

        node.register_hook(done)

    def __enter__(self) -> PartCounter:
        self.counter.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.counter.__exit__(*exc)
        for hook in self._hooks:
            hook.remove()
        self._watched.clear()


def count_call(call: Callable[[], Any], parts: dict[str, list[torch.nn.Module]]) -> dict[str, int]:
    """FLOPs per part of one ``call()`` (no gradients: forward only), and their ``total``."""
    with PartCounter(parts) as counter:
        call()
    return {**counter.forward, "total": counter.total()}


def count_minibatch(
    step: Callable[[], Any],
    optimizer: Any,
    parts: dict[str, list[torch.nn.Module]],
    attention: torch.nn.Module,
) -> dict[str, Any]:
    """FLOPs per part of one minibatch ``step()`` (``PartCounter``), and in all: before
    ``optimizer.zero_grad()`` (forward), up to ``optimizer.step()`` (backward), in the step; and
    the ``[rows, entities, size]`` of each batch the ``attention`` module saw."""
    marks, batches = [], []
    hook = attention.register_forward_hook(
        lambda module, args, output: batches.append(list(args[0].shape))
    )
    counter = PartCounter(parts)

    def marking(method: Callable[..., Any]) -> Callable[..., Any]:
        def marked(*args: Any, **kwargs: Any) -> Any:
            marks.append(counter.total())
            return method(*args, **kwargs)

        return marked

    optimizer.zero_grad = marking(optimizer.zero_grad)
    optimizer.step = marking(optimizer.step)
    try:
        with counter:
            step()
    finally:
        del optimizer.zero_grad, optimizer.step  # the class's methods again
        hook.remove()
    if len(marks) != 2:
        raise RuntimeError(f"expected one zero_grad and one step per minibatch, saw {len(marks)}")
    return {
        "forward": {**counter.forward, "total": marks[0]},
        "backward": {**counter.backward, "total": marks[1] - marks[0]},
        "step": counter.total() - marks[1],
        "attention_batches": batches,
    }


def timed(call: Callable[[], Any], repeats: int) -> list[float]:
    """Seconds of ``repeats`` calls of ``call()`` after one warm-up call."""
    call()
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        seconds.append(time.perf_counter() - start)
    return seconds


def soccer_spec() -> tuple[Any, int]:
    """The behavior spec of one soccer team and its agents per group."""
    from envs.soccer import SoccerTwos, make_env

    env = make_env()
    try:
        spec = next(iter(env.behavior_specs.values()))
    finally:
        env.close()
    return spec, SoccerTwos.ROLES[0].slots


def _steps_per_agent(rows: int, team: int) -> int:
    agents = ARENAS * team
    if rows % agents:
        raise ValueError(
            f"batch_size {rows} is not a multiple of {agents} (ARENAS {ARENAS} x {team} agents "
            "per group); pick a batch_size that is, or change ARENAS"
        )
    return rows // agents


# -- our side -------------------------------------------------------------------------------------
def _our_trainer(config: Path, spec: Any, folder: Path) -> Any:
    """Our POCA trainer for ``config``'s one behavior, one epoch per update."""
    import attrs

    from envs.behavior_id import BehaviorId
    from ghost.config.loader import load_options
    from trainers.poca import POCATrainer

    options = load_options(config)
    if len(options.behaviors) != 1:
        raise ValueError(f"{config} has behaviors {sorted(options.behaviors)}; give it one")
    name, settings = next(iter(options.behaviors.items()))
    if settings.trainer_type != "poca":
        raise ValueError(f"{config}: trainer_type is {settings.trainer_type!r}; use a poca config")
    one_epoch = attrs.evolve(settings.hyperparameters, num_epoch=1)
    settings = attrs.evolve(settings, hyperparameters=one_epoch)
    trainer = POCATrainer(behavior_name=name, settings=settings, artifact_dir=folder)
    behavior = BehaviorId(name, 0)
    trainer.add_policy(behavior, trainer.create_policy(behavior, spec))
    return trainer


def _our_rollout(rows: int, spec: Any, team: int) -> list[Any]:
    """``rows`` synthetic transitions: ``ARENAS`` groups of ``team`` agents stepping together,
    one ``GroupTransitions`` per environment step."""
    from trainers.group_rollout import GroupTransitions
    from trainers.rollout import Transitions

    rng = np.random.default_rng(0)
    agents, branches = ARENAS * team, tuple(spec.action_spec.discrete_branches)
    size = spec.observation_specs[0].shape[0]
    obs = rng.standard_normal((_steps_per_agent(rows, team) + 1, agents, size), np.float32)
    steps = []
    for t in range(len(obs) - 1):
        steps.append(
            Transitions(
                obs=[obs[t]], next_obs=[obs[t + 1]],
                continuous_raw=np.zeros((agents, spec.action_spec.continuous_size), np.float32),
                discrete=np.stack([rng.integers(0, b, agents) for b in branches], axis=1),
                action_mask=np.zeros((agents, sum(branches)), bool),
                next_action_mask=np.zeros((agents, sum(branches)), bool),
                log_probs=np.full((agents, len(branches)), np.log(1 / 3), np.float32),
                rewards=rng.normal(0.0, 0.01, agents).astype(np.float32),
                dones=np.zeros(agents, bool), continues=np.ones(agents, bool),
                slots=np.arange(agents), ended=np.zeros(agents, bool),
                group_rewards=np.zeros(agents, np.float32),
                groups=np.repeat(np.arange(1, ARENAS + 1), team),
            )
        )  # fmt: skip
    return [GroupTransitions.of(step) for step in steps]


def _our_parts(trainer: Any) -> dict[str, list[torch.nn.Module]]:
    """Our networks' modules by part of the report."""
    critic = trainer.critic
    return {
        "actor": [trainer.policy.actor],
        "entity embeddings": [critic.encoder, critic.embed_obs, critic.embed_obs_action],
        "entity attention": [critic.attention],
        "critic body": [critic.body],
        "value head": [critic.head],
    }


def measure_ours(config: Path, repeats: int) -> dict[str, Any]:
    """Our side's FLOPs and seconds of one minibatch (see module docstring)."""
    from trainers.poca import POCATrainer

    torch.set_num_threads(1)
    torch.manual_seed(0)
    spec, team = soccer_spec()
    with tempfile.TemporaryDirectory() as folder:
        trainer = _our_trainer(config, spec, Path(folder))
        rows = trainer.hyperparameters.batch_size
        for chunk in _our_rollout(rows, spec, team):
            trainer.buffer.add(chunk)
        captured: dict[str, Any] = {}
        # the update computes its targets, then hands the minibatches to _optimize: keep those
        # (_update_on_threads: _update would give a wide critic every core meanwhile)
        trainer._optimize = lambda *args, **kwargs: captured.update(args=args, kwargs=kwargs)
        parts = _our_parts(trainer)
        targets = count_call(trainer._update_on_threads, parts)
        del trainer._optimize

        def minibatch() -> None:
            POCATrainer._optimize(trainer, *captured["args"], **captured["kwargs"])

        result = count_minibatch(minibatch, trainer.optimizer, parts, trainer.critic.attention)
        result["seconds"] = timed(minibatch, repeats)
    result.update(side="ours", rows=rows, targets=targets, threads=torch.get_num_threads())
    return result


# -- ML-Agents' side (run in its environment) -----------------------------------------------------
def _mlagents_optimizer(config: Path, spec: Any) -> tuple[Any, Any]:
    """ML-Agents' ``TorchPOCAOptimizer`` for ``config``'s one behavior, and its settings."""
    import yaml
    from mlagents.plugins.trainer_type import get_default_trainer_types
    from mlagents.trainers.poca.optimizer_torch import TorchPOCAOptimizer
    from mlagents.trainers.policy.torch_policy import TorchPolicy
    from mlagents.trainers.settings import RunOptions
    from mlagents.trainers.torch_entities.networks import SimpleActor

    get_default_trainer_types()  # registers "poca" for the settings, as mlagents-learn does
    options = RunOptions.from_dict(yaml.safe_load(config.read_text(encoding="utf-8")))
    settings = next(iter(options.behaviors.values()))
    # as its POCATrainer.create_policy builds the policy
    actor = {"conditional_sigma": False, "tanh_squash": False}
    policy = TorchPolicy(0, spec, settings.network_settings, SimpleActor, actor)
    return TorchPOCAOptimizer(policy, settings), settings


def _agent_experience(obs: np.ndarray, actions: np.ndarray, agent: int, branches: tuple) -> Any:
    """ML-Agents' record of one agent's step: ``obs`` and ``actions`` are its group's, one row
    per agent; the others are its group mates."""
    from mlagents.trainers.torch_entities.action_log_probs import LogProbsTuple
    from mlagents.trainers.trajectory import AgentExperience, AgentStatus
    from mlagents_envs.base_env import ActionTuple

    def action(i: int) -> ActionTuple:
        return ActionTuple(continuous=np.zeros(0, np.float32), discrete=actions[i])

    mates = [i for i in range(len(obs)) if i != agent]
    return AgentExperience(
        obs=[obs[agent]], reward=0.0, done=False, action=action(agent),
        action_probs=LogProbsTuple(
            continuous=np.zeros(0, np.float32),
            discrete=np.full(len(branches), np.log(1 / 3), np.float32),
        ),
        action_mask=[np.zeros(b, bool) for b in branches],
        prev_action=np.zeros(len(branches), np.int32), interrupted=False, memory=None,
        group_status=[AgentStatus(obs=[obs[i]], reward=0.0, action=action(i), done=False)
                      for i in mates],
        group_reward=0.0,
    )  # fmt: skip


def _mlagents_trajectories(rows: int, spec: Any, team: int) -> list[Any]:
    """``rows`` synthetic steps: ``ARENAS`` groups of ``team`` agents, one trajectory per agent."""
    from mlagents.trainers.trajectory import Trajectory

    rng = np.random.default_rng(0)
    branches = tuple(spec.action_spec.discrete_branches)
    steps = _steps_per_agent(rows, team)
    size = spec.observation_specs[0].shape[0]
    obs = rng.standard_normal((steps + 1, ARENAS, team, size), np.float32)
    actions = np.stack(
        [rng.integers(0, b, (steps, ARENAS, team)) for b in branches], axis=-1
    ).astype(np.int32)
    trajectories = []
    for arena in range(ARENAS):
        for agent in range(team):
            experiences = [
                _agent_experience(obs[t, arena], actions[t, arena], agent, branches)
                for t in range(steps)
            ]
            last = obs[steps, arena]
            trajectories.append(Trajectory(
                steps=experiences, next_obs=[last[agent]],
                next_group_obs=[[last[i]] for i in range(team) if i != agent],
                agent_id=f"agent-{arena}-{agent}", behavior_id="SoccerTwos?team=0",
            ))  # fmt: skip
    return trajectories


def _mlagents_buffer(optimizer: Any, trajectories: list[Any]) -> Any:
    """The update buffer of ``trajectories``, filled as ML-Agents' POCA trainer fills it: its
    critic's values and baselines, returns, advantages (normalized as its update does)."""
    from mlagents.trainers.buffer import AgentBuffer, BufferKey, RewardSignalUtil

    rng = np.random.default_rng(1)
    update = AgentBuffer()
    for trajectory in trajectories:
        part = trajectory.to_agentbuffer()
        values, baselines, _, _, _ = optimizer.get_trajectory_and_baseline_value_estimates(
            part, trajectory.next_obs, trajectory.next_group_obs, False
        )
        advantages = []
        for name in values:
            returns = values[name] + rng.normal(0.0, 0.1, len(values[name])).astype(np.float32)
            part[RewardSignalUtil.value_estimates_key(name)].extend(values[name])
            part[RewardSignalUtil.baseline_estimates_key(name)].extend(baselines[name])
            part[RewardSignalUtil.returns_key(name)].set(list(returns))
            advantages.append(returns - baselines[name])
        part[BufferKey.ADVANTAGES].set(list(np.mean(advantages, axis=0)))
        part.resequence_and_append(update, training_length=1)
    advantages = np.array(update[BufferKey.ADVANTAGES].get_batch(), dtype=np.float32)
    update[BufferKey.ADVANTAGES].set(list((advantages - advantages.mean()) / advantages.std()))
    return update


def _mlagents_parts(optimizer: Any) -> dict[str, list[torch.nn.Module]]:
    """ML-Agents' networks' modules by part of the report."""
    body = optimizer.critic.network_body
    return {
        "actor": [optimizer.policy.actor],
        "entity embeddings": [body.observation_encoder, body.obs_encoder, body.obs_action_encoder],
        "entity attention": [body.self_attn],
        "critic body": [body.linear_encoder],
        "value head": [optimizer.critic.value_heads],
    }


def measure_mlagents(config: Path, repeats: int) -> dict[str, Any]:
    """ML-Agents' side's FLOPs and seconds of one minibatch (see module docstring)."""
    torch.manual_seed(0)
    spec, team = soccer_spec()
    optimizer, settings = _mlagents_optimizer(config, spec)
    torch.set_num_threads(1)  # importing mlagents chose its own number
    rows = settings.hyperparameters.batch_size
    trajectories = _mlagents_trajectories(rows, spec, team)
    buffers: list[Any] = []
    parts = _mlagents_parts(optimizer)
    targets = count_call(lambda: buffers.append(_mlagents_buffer(optimizer, trajectories)), parts)
    buffer = buffers[0]

    def minibatch() -> None:  # its on-policy trainer's loop body, one sequence per row
        batch = buffer.make_mini_batch(0, rows)
        optimizer.update(batch, rows)
        optimizer.update_reward_signals(batch)

    attention = optimizer.critic.network_body.self_attn
    result = count_minibatch(minibatch, optimizer.optimizer, parts, attention)
    result["seconds"] = timed(minibatch, repeats)
    made = buffer.make_mini_batch(0, rows)
    result["update_seconds"] = timed(lambda: optimizer.update(made, rows), repeats)
    result.update(side="mlagents", rows=rows, targets=targets, threads=torch.get_num_threads())
    return result


# -- both sides, the report -----------------------------------------------------------------------
def run_mlagents(python: Path, config: Path, repeats: int) -> dict[str, Any]:
    """``measure_mlagents`` in ML-Agents' environment ``python``."""
    if not python.exists():
        raise FileNotFoundError(
            f"no ML-Agents environment at {python}; build it with `bash .ci/mlagents-venv` or "
            "pass --mlagents-python"
        )
    command = [str(python), str(Path(__file__).resolve()), "--side", "mlagents"]
    command += ["--config", str(config), "--repeats", str(repeats)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def part_table(result: dict[str, Any]) -> tuple[list[str], int]:
    """Markdown rows (part, forward, backward, total GFLOP, share) of one side, and its total."""
    forward, backward = result["forward"], result["backward"]
    total = forward["total"] + backward["total"] + result["step"]
    lines = ["| part | forward GFLOP | backward GFLOP | total GFLOP | share |"]
    lines.append("|---|---|---|---|---|")
    parts = [name for name in forward if name != "total"]
    for part in parts:
        lines.append(_row(part, forward[part], backward[part], total))
    other = [phase["total"] - sum(phase[p] for p in parts) for phase in (forward, backward)]
    lines.append(_row("outside these modules", *other, total))
    lines.append(_row("optimizer step", 0, result["step"], total))
    lines.append(_row("**total**", forward["total"], total - forward["total"], total))
    return lines, total


def _row(part: str, forward: int, backward: int, total: int) -> str:
    share = (forward + backward) / total if total else 0.0
    return (
        f"| {part} | {forward / 1e9:.2f} | {backward / 1e9:.2f} | "
        f"{(forward + backward) / 1e9:.2f} | {share:.0%} |"
    )


def report(ours: list[dict[str, Any]], theirs: list[dict[str, Any]]) -> str:
    """The Markdown report of both sides' rounds (FLOPs from the first round)."""
    lines = []
    totals, seconds = {}, {}
    for side, rounds in (("ours", ours), ("mlagents", theirs)):
        result = rounds[0]
        table, totals[side] = part_table(result)
        seconds[side] = statistics.median(s for r in rounds for s in r["seconds"])
        batches = result["attention_batches"]
        critic_rows = sum(batch[0] for batch in batches)
        lines += [f"### {SIDE_NAMES[side]}: one minibatch of {result['rows']} agent steps", ""]
        lines += table + [""]
        shapes = ", ".join("x".join(map(str, batch)) for batch in batches)
        lines.append(f"- attention batches (rows x entities x size): {shapes}")
        # every minibatch row has one baseline; the other rows through the critic are values
        lines.append(
            f"- critic rows through attention, body and head: values {critic_rows - result['rows']}"
            f", baselines {result['rows']}"
        )
        lines.append(f"- targets, no-grad critic pass over the same rows: "
                     f"{result['targets']['total'] / 1e9:.2f} GFLOP")  # fmt: skip
        lines.append(
            f"- time per minibatch: median {seconds[side]:.3f} s of "
            f"{[round(s, 3) for r in rounds for s in r['seconds']]} ({result['threads']} thread), "
            f"{totals[side] / seconds[side] / 1e9:.1f} GFLOP/s"
        )
        if "update_seconds" in result:
            update = statistics.median(s for r in rounds for s in r["update_seconds"])
            lines.append(
                f"- TorchPOCAOptimizer.update alone (minibatch made once): median {update:.3f} s"
            )
        lines.append("")
    rates = {side: totals[side] / seconds[side] for side in totals}
    lines.append(
        f"**ours / ML-Agents**: FLOPs {totals['ours'] / totals['mlagents']:.2f}, "
        f"time {seconds['ours'] / seconds['mlagents']:.2f}, "
        f"GFLOP/s {rates['ours'] / rates['mlagents']:.2f}"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    """Count and time both sides (or one, with ``--side``) and print the report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=DEFAULT_CONFIG)
    parser.add_argument("--repeats", type=int, default=5, help="timed minibatches per round")
    parser.add_argument("--rounds", type=int, default=1, help="ours then ML-Agents', in turn")
    parser.add_argument("--mlagents-python", type=Path, default=MLAGENTS_PYTHON)
    parser.add_argument("--side", choices=("both", "ours", "mlagents"), default="both")
    args = parser.parse_args(argv)
    config = args.config.resolve()
    if args.side == "mlagents":
        print(json.dumps(measure_mlagents(config, args.repeats)))
        return
    if args.side == "ours":
        print(json.dumps(measure_ours(config, args.repeats)))
        return
    ours, theirs = [], []
    for _ in range(args.rounds):
        ours.append(measure_ours(config, args.repeats))
        theirs.append(run_mlagents(args.mlagents_python, config, args.repeats))
    print(report(ours, theirs))


if __name__ == "__main__":
    main()
