"""A self-play trainer in one file: its own PPO, ghost-trainer's self-play core, built-in Tennis.

For people who write their own PyTorch loop. The PPO is CleanRL's shape (rollout into
preallocated tensors, GAE in a reversed loop, epochs x minibatches); the self-play is
``ghost.core``: its host kit (``SelfPlayHost``, a controller and a cycle per behavior) decides when
to snapshot, whom the ghosted team plays, when learning passes to the other team and how each
match moves the Elo, and this loop acts on its answers. Each place where it does says ``contract N``: the item of
docs/writing-a-host.md it fulfils. At the end the policy plays the scripted ``medium`` level.

Run: ``python examples/single_file_host.py`` (600k steps: about a minute on 2 CPU cores);
``--steps 20000`` for a few seconds, ``--steps 2000000`` for a longer run; ``--save tennis.pt``,
then ``--resume tennis.pt --steps 900000`` to go on (with the same ``--team-change``). Guide:
docs/writing-a-host.md.
"""

import argparse
import time
from pathlib import Path

import numpy as np
import torch
from mlagents_envs.base_env import ActionTuple
from torch import nn
from torch.distributions import Normal

from envs.games import make_game
from ghost.core.ghost_cycle import finished_matches
from ghost.core.self_play import SelfPlayState
from ghost.core.self_play_host import SelfPlayHost
from ghost.core.settings import SelfPlaySettings
from ghost.core.state_folder import SelfPlayFolder
from ghost.evaluation import evaluate
from trainers.run_files.access import RUN_FILES


class Agent(nn.Module):
    """Actor and critic; observation statistics are buffers, so snapshots carry them too."""

    def __init__(self, obs_size: int, act_size: int, hidden: int = 64) -> None:
        super().__init__()
        for name, value in (("mean", torch.zeros(obs_size)), ("var", torch.ones(obs_size)),
                            ("count", torch.tensor(1e-4))):  # fmt: skip
            self.register_buffer(f"obs_{name}", value)
        self.critic, self.actor_mean = (
            nn.Sequential(nn.Linear(obs_size, hidden), nn.Tanh(), nn.Linear(hidden, hidden),
                          nn.Tanh(), nn.Linear(hidden, out))
            for out in (1, act_size)
        )  # fmt: skip
        self.actor_logstd = nn.Parameter(torch.zeros(act_size))

    def update_norm(self, obs: torch.Tensor) -> None:
        count, mean, var = len(obs), obs.mean(0), obs.var(0, unbiased=False)
        total, delta = self.obs_count + count, mean - self.obs_mean
        self.obs_var.copy_((self.obs_var * self.obs_count + var * count
                            + delta**2 * self.obs_count * count / total) / total)  # fmt: skip
        self.obs_mean.add_(delta * count / total)
        self.obs_count.copy_(total)

    def norm(self, obs: torch.Tensor) -> torch.Tensor:
        return ((obs - self.obs_mean) / (self.obs_var + 1e-8).sqrt()).clamp(-10, 10)

    def get_value(self, obs: torch.Tensor) -> torch.Tensor:
        return self.critic(self.norm(obs))[:, 0]

    def get_action_and_value(self, obs, action=None, deterministic=False):
        mean = self.actor_mean(self.norm(obs))
        dist = Normal(mean, self.actor_logstd.exp().expand_as(mean))
        if action is None:
            action = mean if deterministic else dist.sample()
        return action, dist.log_prob(action).sum(-1), dist.entropy().sum(-1), self.get_value(obs)

    @torch.no_grad()
    def act(self, obs, action_mask=None, deterministic=False) -> ActionTuple:
        """What ``ghost.evaluation.evaluate`` calls: one batch of observations in, actions out."""
        return to_env(self.get_action_and_value(torch.as_tensor(obs[0]), None, deterministic)[0])


def to_env(action: torch.Tensor) -> ActionTuple:
    """Gaussian samples as the game's [-1, 1] actions (ML-Agents' PPO convention)."""
    return ActionTuple(continuous=(action.clamp(-3.0, 3.0) / 3.0).numpy())


class Host:
    """contract 1: the ``LearnerHandle`` through which the cycle acts on this loop."""

    def __init__(self, agent: Agent, ghosts: dict[int, Agent], max_steps: int) -> None:
        self.agent, self.ghosts, self.max_steps = agent, ghosts, max_steps
        self.step = 0  # the learner's trainer step: learning-team agent steps
        self.learning_team = 0

    @property
    def still_training(self) -> bool:
        return self.step < self.max_steps

    def weights(self) -> dict[str, torch.Tensor]:  # a copy: a snapshot must not go on training
        return {key: value.clone() for key, value in self.agent.state_dict().items()}

    def field(self, team: int, opponents: list) -> None:
        self.ghosts[team].load_state_dict(opponents[0].snapshot.weights)  # opponents_per_swap: 1

    def act_as_learner(self, team: int) -> None:
        self.learning_team = team

    def publish(self) -> None:
        """Nothing to hand over: the loop reads ``ghosts`` and ``learning_team`` as it acts."""


def self_play_folder(model: Path) -> SelfPlayFolder:
    """``tennis.self_play/`` beside ``tennis.pt``: snapshots, ``state.pt`` and ``payoff.csv``,
    in the host's weight format (torch files, written atomically, read weights-only)."""
    return SelfPlayFolder(model.with_suffix(".self_play"), files=RUN_FILES)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=600_000, help="learner steps in all")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--team-change", type=int, default=40_000, help="steps of one team's turn")
    parser.add_argument("--save", type=Path, help="write the model and self-play state here")
    parser.add_argument("--resume", type=Path, help="continue from a --save file")
    args = parser.parse_args()
    T, N, gamma, lam, clip, epochs, minibatches = 128, 32, 0.99, 0.95, 0.2, 4, 4
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)  # contract 14: one seed for the nets, the game and the draws
    env = make_game("tennis", seed=args.seed, num_arenas=N)
    names = {team: f"Tennis?team={team}" for team in (0, 1)}
    spec = env.behavior_specs[names[0]]
    obs_size, act_size = spec.observation_specs[0].shape[0], spec.action_spec.continuous_size
    agent = Agent(obs_size, act_size)
    optimizer = torch.optim.Adam(agent.parameters(), lr=3e-4, eps=1e-5)
    # contract 13: the ghosted team's copies only infer: no gradients, evaluation mode
    ghosts = {team: Agent(obs_size, act_size).eval().requires_grad_(False) for team in names}

    settings = SelfPlaySettings(save_steps=args.team_change // 4, team_change=args.team_change,
                                swap_steps=2_000, window=10)  # fmt: skip
    state = SelfPlayState(behavior_name="Tennis", settings=settings, seed=args.seed)  # contract 2
    kit = SelfPlayHost()  # contract 2: one per run (its controller), shared by every behavior
    host = Host(agent, ghosts, max_steps=args.steps)
    cycle = kit.add_behavior(
        state=state, learner=host,
        on_snapshot=lambda s: print(f"step {s.step}: snapshot {s.snapshot_id} (Elo {s.rating:.0f})"),
    )  # fmt: skip
    kit.subscribe("Tennis", names)  # contract 2: every team subscribed before any restore
    if args.resume:  # contract 12: the model, then the self-play state (weights-only reads)
        saved, folder = RUN_FILES.load(args.resume), self_play_folder(args.resume)
        record = folder.load()
        if record is None:
            raise SystemExit(f"{folder.state_path} is missing: resume from a --save file")
        agent.load_state_dict(saved["agent"])
        optimizer.load_state_dict(saved["optimizer"])
        host.step = saved["step"]
        kit.restore("Tennis", folder, record, step=host.step)  # controller, state, opponents
        window = [s.snapshot_id for s in state.window]
        print(f"resumed at step {host.step}: Elo {state.rating:.0f}, window {window}")
    kit.connect("Tennis", names)  # contract 3 (and 12): field restored opponents, or draw anew
    cycle.begin()  # contract 4: the untrained learner is the first snapshot; the first turn starts

    obs_buf, act_buf = torch.zeros((T, N, obs_size)), torch.zeros((T, N, act_size))
    logp_buf, rew_buf, done_buf, val_buf = (torch.zeros((T, N)) for _ in range(4))
    started, start_step, update = time.time(), host.step, 0
    while host.still_training:
        update += 1
        for t in range(T):
            learner, ghost = host.learning_team, 1 - host.learning_team
            obs = torch.as_tensor(env.get_steps(names[learner])[0].obs[0])
            ghost_obs = torch.as_tensor(env.get_steps(names[ghost])[0].obs[0])
            # contract 6: the learner acts with its latest weights, the ghosted team as fielded
            with torch.no_grad():
                action, logp, _, value = agent.get_action_and_value(obs)
                ghost_action = ghosts[ghost].get_action_and_value(ghost_obs)[0]
            env.set_actions(names[learner], to_env(action))
            env.set_actions(names[ghost], to_env(ghost_action))
            env.step()
            decision, terminal = env.get_steps(names[learner])
            reward = decision.reward + decision.group_reward  # 0 where an arena restarted
            arenas = env.arena_of(names[learner], terminal.agent_id)
            reward[arenas] += terminal.reward + terminal.group_reward
            done = np.zeros(N, dtype=np.float32)
            done[arenas] = 1.0
            # contract 5: only the learning team's steps enter the buffer (Route.LEARNER); the
            # ghosted team's are only counted (Route.GHOST), which paces the swaps
            obs_buf[t], act_buf[t], logp_buf[t], val_buf[t] = obs, action, logp, value
            rew_buf[t], done_buf[t] = torch.as_tensor(reward), torch.as_tensor(done)
            host.step += N
            cycle.route(team=learner, agent_steps=N)
            cycle.route(team=ghost, agent_steps=N)
            # contract 7: one result per finished match (an interrupted rally is none), rated
            cycle.book(finished_matches(
                agent_ids=terminal.agent_id, group_ids=terminal.group_id, arenas=arenas,
                rewards=terminal.reward + terminal.group_reward, interrupted=terminal.interrupted,
            ))  # fmt: skip

        with torch.no_grad():
            next_value = agent.get_value(torch.as_tensor(env.get_steps(names[learner])[0].obs[0]))
        advantages, last = torch.zeros((T, N)), torch.zeros(N)
        for t in reversed(range(T)):
            next_values = next_value if t == T - 1 else val_buf[t + 1]
            alive = 1.0 - done_buf[t]
            delta = rew_buf[t] + gamma * next_values * alive - val_buf[t]
            advantages[t] = last = delta + gamma * lam * alive * last
        returns = advantages + val_buf

        b_obs, b_act = obs_buf.reshape(-1, obs_size), act_buf.reshape(-1, act_size)
        b_logp, b_adv, b_ret = logp_buf.reshape(-1), advantages.reshape(-1), returns.reshape(-1)
        for _ in range(epochs):
            order = torch.randperm(T * N)
            for mb in order.split(T * N // minibatches):
                _, new_logp, _, new_value = agent.get_action_and_value(b_obs[mb], b_act[mb])
                log_ratio = new_logp - b_logp[mb]
                ratio = log_ratio.exp()
                with torch.no_grad():
                    approx_kl = ((ratio - 1) - log_ratio).mean()
                adv = (b_adv[mb] - b_adv[mb].mean()) / (b_adv[mb].std() + 1e-8)
                pg_loss = torch.max(-adv * ratio, -adv * ratio.clamp(1 - clip, 1 + clip)).mean()
                v_loss = 0.5 * ((new_value - b_ret[mb]) ** 2).mean()
                optimizer.zero_grad()
                (pg_loss + 0.5 * v_loss).backward()
                nn.utils.clip_grad_norm_(agent.parameters(), 0.5)
                optimizer.step()
        agent.update_norm(b_obs)  # after the update, whose ratios used the rollout's statistics

        # contract 8: a snapshot if due, then a team change request or a swap; contract 9: a
        # requested team change is taken and told to every behavior's cycle (one here); then
        # the games restart: no episode straddles two learners
        change = kit.update_done("Tennis")
        if change is not None:
            env.reset()
            print(
                f"step {host.step}: team {change.learning_team} learns now (change {change.count})"
            )
        if update % 10 == 0 or not host.still_training:  # contract 10: report the rating
            speed = (host.step - start_step) / (time.time() - started)
            print(f"step {host.step}: Elo {state.rating:.0f}, swaps {state.swaps}, pg_loss "
                  f"{pg_loss.item():+.3f}, v_loss {v_loss.item():.3f}, approx_kl "
                  f"{approx_kl.item():.4f}, {speed:.0f} steps/s")  # fmt: skip

    if args.save:  # contract 11: the model, then the self-play state of the same step
        RUN_FILES.save({"agent": agent.state_dict(), "optimizer": optimizer.state_dict(),
                        "step": host.step}, args.save)  # fmt: skip
        kit.save("Tennis", self_play_folder(args.save), step=host.step)  # snapshots, then state
    result = evaluate(game="tennis", policy=agent.eval(), opponent="medium", seed=args.seed,
                      deterministic=True)  # fmt: skip
    print(f"against medium: win rate {result.win_rate:.2f} ({result.wins} wins in "
          f"{result.decided} decided games); self-play Elo {state.rating:.0f}")  # fmt: skip
