"""MA-POCA's centralized critic: one network, two questions, any number of group members.

``value(obs, present)`` estimates the return of a whole group from the observations of its members;
``baseline(obs, present, actions)`` estimates it for one agent while its group mates' actions are
known and its own is not (the counterfactual baseline of Cohen et al. 2021). Members are entities
of a residual self-attention block, pooled by a masked mean, so a group of any size (agents that
finished early, agents that joined late) is one batch row with a ``present`` mask: no padding
values ever reach the pooled encoding.

Layout: ``obs`` is a list of ``[rows, members, ...]`` arrays, member 0 being the agent itself;
``present`` is ``[rows, members]`` (member 0 always present); ``actions`` ``[rows, members, A]``
are the members' actions (continuous values, then one-hot discrete branches), ignored for member 0
in ``baseline``. The encoding is followed by ``2 n / n_max - 1`` for ``n`` present members, as in
ML-Agents (``n_max``: the largest group seen so far, kept with the weights).

With ``network_settings.memory`` an LSTM (``trainers.memory``) follows the pooled encoding's body,
as in ML-Agents' POCA critic; the value and the baseline each carry a memory of their own per
agent through the same LSTM. Call the ``recurrent_*`` methods then.
"""

from __future__ import annotations

import math

import torch
from mlagents_envs.base_env import ActionSpec, ObservationSpec
from torch import nn
from torch.nn import functional

from trainers.group_minibatch import GroupMinibatch
from trainers.memory import MemoryCore
from trainers.networks import ObservationEncoder, mlp, value_head
from trainers.sequence_grid import SequenceGrid
from trainers.settings import NetworkSettings

#: attention heads of the self-attention block (as ML-Agents)
HEADS = 4


def _small_linear(inputs: int, outputs: int) -> nn.Linear:
    """A linear layer whose output variance is 1/8 of its input's (T-Fixup-style initialization,
    which keeps a residual attention block stable without learned normalization)."""
    layer = nn.Linear(inputs, outputs)
    nn.init.normal_(layer.weight, std=math.sqrt(0.125 / outputs))
    nn.init.zeros_(layer.bias)
    return layer


def _layer_norm(x: torch.Tensor) -> torch.Tensor:
    return functional.layer_norm(x, x.shape[-1:], eps=1e-5)


class ResidualSelfAttention(nn.Module):
    """Members attend to each other (absent ones masked out), then a masked mean pools them."""

    def __init__(self, size: int, heads: int = HEADS) -> None:
        super().__init__()
        self.heads = heads
        self.query, self.key, self.value, self.out = (_small_linear(size, size) for _ in range(4))

    def forward(self, entities: torch.Tensor, present: torch.Tensor) -> torch.Tensor:
        rows, members, size = entities.shape
        x = _layer_norm(entities)

        def split(t: torch.Tensor) -> torch.Tensor:
            return t.reshape(rows, members, self.heads, size // self.heads).transpose(1, 2)

        keep = present[:, None, None, :]  # the same key mask for every head and query
        attended = functional.scaled_dot_product_attention(
            split(self.query(x)), split(self.key(x)), split(self.value(x)), attn_mask=keep
        )
        attended = attended.transpose(1, 2).reshape(rows, members, size)
        x = _layer_norm(self.out(attended) + x)
        weight = present.to(x.dtype).unsqueeze(-1)
        return (x * weight).sum(dim=1) / weight.sum(dim=1).clamp_min(1e-7)


class GroupCritic(nn.Module):
    """The group value and the per-agent counterfactual baseline (see module docstring)."""

    def __init__(
        self,
        obs_specs: list[ObservationSpec],
        action_spec: ActionSpec,
        settings: NetworkSettings,
    ) -> None:
        super().__init__()
        hidden = settings.hidden_units
        self.encoder = ObservationEncoder(obs_specs, settings)
        self.action_size = action_spec.continuous_size + sum(action_spec.discrete_branches)
        self.embed_obs = _small_linear(self.encoder.output_size, hidden)
        self.embed_obs_action = _small_linear(self.encoder.output_size + self.action_size, hidden)
        # heads split the embedding evenly: fewer of them where hidden_units is not a multiple of 4
        self.attention = ResidualSelfAttention(
            hidden, next(h for h in (HEADS, 2, 1) if hidden % h == 0)
        )
        self.body = mlp(hidden, hidden, settings.num_layers, gain=math.sqrt(0.125 / hidden))
        self.memory_size = settings.memory.memory_size if settings.memory is not None else 0
        self.memory = MemoryCore(hidden, self.memory_size) if self.memory_size else None
        head_input = self.memory.output_size if self.memory is not None else hidden
        self.head = value_head(head_input + 1)
        self.register_buffer("max_members", torch.ones((), dtype=torch.float32))

    def _encode_members(self, obs: list[torch.Tensor]) -> torch.Tensor:
        rows, members = obs[0].shape[:2]
        flat = [o.reshape(rows * members, *o.shape[2:]) for o in obs]
        return self.encoder(flat).reshape(rows, members, -1)

    def _pool(
        self,
        entities: torch.Tensor,
        present: torch.Tensor,
        memory: torch.Tensor | None = None,
        sequence_length: int = 1,
        lengths: torch.Tensor | None = None,
        grid: SequenceGrid | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """One estimate per row and, with memory, each sequence's memory after its last real
        step (``MemoryCore.forward``; ``memory`` must then be given). With a ``grid`` the rows
        are only its real steps (``MemoryCore.over_grid``) and no memory is returned."""
        pooled = self.attention(entities, present)
        count = present.sum(dim=1, keepdim=True).to(pooled.dtype)
        self.max_members.fill_(max(float(self.max_members), float(count.max())))
        scaled = count * 2.0 / self.max_members - 1.0
        hidden, after = self.body(pooled), None
        if self.memory is not None:
            if memory is None:
                raise TypeError("a group critic with memory is called through recurrent_*(...)")
            if grid is not None:
                hidden = self.memory.over_grid(hidden, memory, grid)
            else:
                hidden, after = self.memory(hidden, memory, sequence_length, lengths)
        return self.head(torch.cat([hidden, scaled], dim=1)).squeeze(-1), after

    def value(self, obs: list[torch.Tensor], present: torch.Tensor) -> torch.Tensor:
        """V(s): the group's expected return from all present members' observations."""
        return self._pool(self.embed_obs(self._encode_members(obs)), present)[0]

    def _baseline_entities(
        self, encoded: torch.Tensor, own: torch.Tensor, actions: torch.Tensor
    ) -> torch.Tensor:
        """Member 0 as ``own`` (its observation's embedding), its mates with their actions."""
        mates = self.embed_obs_action(torch.cat([encoded[:, 1:], actions[:, 1:]], dim=2))
        return torch.cat([own, mates], dim=1)

    def baseline(
        self, obs: list[torch.Tensor], present: torch.Tensor, actions: torch.Tensor
    ) -> torch.Tensor:
        """Q(s, a_mates): member 0's observation alone, its mates' with their actions."""
        return self._pool(self._baseline_input(obs, actions), present)[0]

    def _baseline_input(self, obs: list[torch.Tensor], actions: torch.Tensor) -> torch.Tensor:
        encoded = self._encode_members(obs)
        return self._baseline_entities(encoded, self.embed_obs(encoded[:, :1]), actions)

    def value_and_baseline(
        self, obs: list[torch.Tensor], present: torch.Tensor, actions: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``value`` and ``baseline`` of the same rows in one pass (the members are encoded once
        and both questions go through the attention block as one batch)."""
        return self.recurrent_value_and_baseline(obs, present, actions, None, None)

    def grouped_value_and_baseline(
        self, obs: list[torch.Tensor], actions: torch.Tensor, batch: GroupMinibatch
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``value_and_baseline`` of a group-aware minibatch (``trainers.group_minibatch``):
        ``obs`` and ``actions`` ``[distinct rows, A]`` are those of ``batch.rows``, each row is
        encoded once and each group's value computed once. Returns one value per group and one
        baseline per minibatch row."""
        encoded = self.encoder(obs)
        plain = self.embed_obs(encoded)
        acted = self.embed_obs_action(torch.cat([encoded, actions], dim=1))
        own = plain[batch.baseline_members[:, :1]]
        mates = acted[batch.baseline_members[:, 1:]]
        value_entities = plain[batch.value_members]
        both, _ = self._pool(
            torch.cat([value_entities, torch.cat([own, mates], dim=1)]),
            torch.cat([batch.value_present, batch.baseline_present]),
        )
        groups = len(value_entities)
        return both[:groups], both[groups:]

    # -- with memory: rows are sequences of ``sequence_length`` steps, one after the other -----
    def recurrent_value(
        self,
        obs: list[torch.Tensor],
        present: torch.Tensor,
        memory: torch.Tensor,
        sequence_length: int = 1,
        lengths: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``value`` along sequences, each from its row of ``memory``; and the memories after."""
        entities = self.embed_obs(self._encode_members(obs))
        values, after = self._pool(entities, present, memory, sequence_length, lengths)
        assert after is not None
        return values, after

    def recurrent_baseline(
        self,
        obs: list[torch.Tensor],
        present: torch.Tensor,
        actions: torch.Tensor,
        memory: torch.Tensor,
        sequence_length: int = 1,
        lengths: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``baseline`` along sequences, each from its row of ``memory``; and the memories
        after."""
        entities = self._baseline_input(obs, actions)
        baselines, after = self._pool(entities, present, memory, sequence_length, lengths)
        assert after is not None
        return baselines, after

    def recurrent_value_and_baseline(
        self,
        obs: list[torch.Tensor],
        present: torch.Tensor,
        actions: torch.Tensor,
        value_memory: torch.Tensor | None,
        baseline_memory: torch.Tensor | None,
        sequence_length: int = 1,
        grid: SequenceGrid | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``value_and_baseline`` along sequences, the value's started from ``value_memory`` and
        the baseline's from ``baseline_memory`` (both None without memory); with a ``grid``,
        of its real steps only (``MemoryCore.over_grid``)."""
        encoded = self._encode_members(obs)
        plain = self.embed_obs(encoded)
        baseline_entities = self._baseline_entities(encoded, plain[:, :1], actions)
        memory = None
        if value_memory is not None and baseline_memory is not None:
            memory = torch.cat([value_memory, baseline_memory])
        both, _ = self._pool(
            torch.cat([plain, baseline_entities]),
            torch.cat([present, present]),
            memory,
            sequence_length,
            grid=None if grid is None else grid.stacked(2),
        )
        return both[: len(plain)], both[len(plain) :]
