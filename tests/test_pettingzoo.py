"""PettingZoo adapter: who decides when, rewards on the last move, masks, seats, spaces, workers;
and the scripted board players."""

from __future__ import annotations

import pickle
import warnings

import attrs
import numpy as np
import pytest
from mlagents_envs.base_env import ActionSpec, ActionTuple

pytest.importorskip("pettingzoo", reason="pettingzoo is not installed (the pettingzoo extra)")

from gymnasium import spaces  # noqa: E402
from pettingzoo import AECEnv, ParallelEnv  # noqa: E402

from envs.behavior_id import BehaviorId  # noqa: E402
from envs.board_players import (  # noqa: E402
    SCRIPTED_LEVELS,
    OnePlyPolicy,
    RandomLegalPolicy,
    scripted_levels,
)
from envs.exceptions import EnvironmentSourceError  # noqa: E402
from envs.pettingzoo import adapt, from_module  # noqa: E402
from envs.workers import SubprocessStepper  # noqa: E402

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from pettingzoo.classic import connect_four_v3, tictactoe_v3

C4 = ("connect_four?team=0", "connect_four?team=1")
TTT = ("tictactoe?team=0", "tictactoe?team=1")


# --------------------------------------------------------------------------- helpers
def moves(*columns: int) -> ActionTuple:
    """One discrete action per deciding agent."""
    return ActionTuple(discrete=np.asarray(columns, dtype=np.int32).reshape(-1, 1))


def steps(env) -> dict:
    """Behavior name → (decision steps, terminal steps)."""
    return {name: env.get_steps(name) for name in env.behavior_specs}


def step(env, actions: dict[str, ActionTuple]) -> dict:
    for name, action in actions.items():
        env.set_actions(name, action)
    env.step()
    return steps(env)


def play_turns(env, columns: list[int]) -> dict:
    """One table: the single deciding agent plays each of ``columns`` in turn."""
    result = steps(env)
    for column in columns:
        (name,) = [name for name, (decision, _) in result.items() if len(decision)]
        result = step(env, {name: moves(column)})
    return result


def play_once(env, policies: dict) -> dict:
    """One step with a policy per behavior (behaviors without decisions get no actions)."""
    actions = {}
    for name, (decision, _) in steps(env).items():
        if len(decision):
            actions[name] = policies[name].act(decision.obs, decision.action_mask)
    return step(env, actions)


def play_random(env, policies: dict, turns: int):
    """``turns`` steps with ``play_once``; yields the steps after each."""
    for _ in range(turns):
        yield play_once(env, policies)


def random_players(env, seed: int = 0) -> dict:
    return {
        name: RandomLegalPolicy(action_spec=spec.action_spec, seed=seed + i)
        for i, (name, spec) in enumerate(env.behavior_specs.items())
    }


# --------------------------------------------------------------------------- turn-based (AEC)
def test_connect_four_behaviors_and_specs():
    env = adapt(connect_four_v3.env, copies=2)()
    assert tuple(env.behavior_specs) == C4
    for spec in env.behavior_specs.values():
        assert spec.observation_specs[0].shape == (84,)
        assert spec.action_spec.discrete_branches == (7,)


def test_only_the_seat_to_move_decides_alternately():
    env = adapt(connect_four_v3.env, copies=3)()
    result = steps(env)
    for turn in range(6):
        mover, waiter = C4[turn % 2], C4[(turn + 1) % 2]
        assert result[mover][0].agent_id.tolist() == [turn % 2 + 2 * t for t in range(3)]
        assert len(result[waiter][0]) == 0
        result = step(env, {mover: moves(turn, turn, turn)})


def test_winning_move_rewards_both_seats_and_restarts():
    env = adapt(connect_four_v3.env, copies=1)()
    before = play_turns(env, [0, 1, 0, 1, 0, 1])
    assert all(not decision.reward.any() for decision, _ in before.values())
    after = play_turns(env, [0])  # four in column 0 for player_0
    (win_decision, win_terminal), (lose_decision, lose_terminal) = after[C4[0]], after[C4[1]]
    assert win_terminal.agent_id.tolist() == [0] and win_terminal.reward.tolist() == [1.0]
    assert lose_terminal.agent_id.tolist() == [1] and lose_terminal.reward.tolist() == [-1.0]
    assert not win_terminal.interrupted.any() and not lose_terminal.interrupted.any()
    # the next episode's first mover, same agent id, fresh board, no reward carried over
    assert win_decision.agent_id.tolist() == [0] and win_decision.reward.tolist() == [0.0]
    assert not win_decision.obs[0].any() and len(lose_decision) == 0
    assert win_terminal.obs[0].reshape(6, 7, 2)[2:, 0, 0].all()  # the winner's final board


def test_tictactoe_win_reaches_the_loser():
    env = adapt(tictactoe_v3.env, copies=1)()
    assert tuple(env.behavior_specs) == TTT
    result = play_turns(env, [0, 3, 1, 4, 2])  # player_0 fills the top row
    assert result[TTT[0]][1].reward.tolist() == [1.0]
    assert result[TTT[1]][1].reward.tolist() == [-1.0]
    assert result[TTT[0]][0].agent_id.tolist() == [0]


def test_masks_block_full_columns_and_illegal_moves_raise():
    env = adapt(connect_four_v3.env, copies=1)()
    first = steps(env)[C4[0]][0]
    assert not first.action_mask[0].any()  # every column legal → nothing blocked
    result = play_turns(env, [0] * 6)
    decision = result[C4[0]][0]
    assert decision.action_mask[0].tolist() == [[True] + [False] * 6]
    env.set_actions(C4[0], moves(0))
    with pytest.raises(
        ValueError, match=r"action 0 .* not legal now \(legal: \[1, 2, 3, 4, 5, 6\]\)"
    ):
        env.step()


def test_max_episode_steps_interrupts_both_seats():
    env = adapt(tictactoe_v3.env, copies=1, max_episode_steps=3)()
    result = play_turns(env, [0, 1, 2])
    for name in TTT:
        terminal = result[name][1]
        assert terminal.interrupted.tolist() == [True] and terminal.reward.tolist() == [0.0]


def test_agent_ids_stable_across_episodes_and_unique_across_tables():
    env = adapt(tictactoe_v3.env, copies=4)()
    seen: dict[str, set] = {name: set() for name in TTT}
    episodes = 0
    for result in play_random(env, random_players(env), 60):
        for name, (decision, terminal) in result.items():
            seen[name] |= set(decision.agent_id.tolist()) | set(terminal.agent_id.tolist())
            assert (env.arena_of(name, decision.agent_id) == decision.agent_id // 2).all()
        episodes += len(result[TTT[0]][1])
    assert episodes >= 8  # several episodes per table
    assert seen[TTT[0]] == {0, 2, 4, 6} and seen[TTT[1]] == {1, 3, 5, 7}


def test_tables_are_independent():
    env = adapt(connect_four_v3.env, copies=2)()
    table_0, table_1 = [0, 1, 0, 1, 0, 1, 0], [3, 3, 3, 3, 3, 3, 4]
    result = steps(env)
    for turn, columns in enumerate(zip(table_0, table_1, strict=True)):
        result = step(env, {C4[turn % 2]: moves(*columns)})
    assert result[C4[0]][1].agent_id.tolist() == [0]  # only table 0 ended
    assert result[C4[1]][1].agent_id.tolist() == [1]
    restarted, playing_on = result[C4[0]][0], result[C4[1]][0]
    assert restarted.agent_id.tolist() == [0] and restarted.obs[0].sum() == 0
    assert playing_on.agent_id.tolist() == [3] and playing_on.obs[0].sum() == 7


def test_seeded_runs_repeat_and_workers_differ():
    pytest.importorskip("rlcard", reason="rlcard is not installed (pettingzoo[classic])")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from pettingzoo.classic import leduc_holdem_v4
    source = adapt(leduc_holdem_v4.env, copies=4)

    def trace(worker_id: int) -> list:
        env = source(worker_id=worker_id, seed=5)
        return [
            (name, decision.obs[0].tobytes(), terminal.reward.tobytes())
            for result in play_random(env, random_players(env), 25)
            for name, (decision, terminal) in result.items()
        ]

    assert trace(0) == trace(0)
    assert trace(0) != trace(1)


def test_leduc_holdem_hands_are_zero_sum():
    pytest.importorskip("rlcard", reason="rlcard is not installed (pettingzoo[classic])")
    source = from_module("pettingzoo.classic.leduc_holdem_v4", copies=8)
    assert source.behavior_names() == ("leduc_holdem?team=0", "leduc_holdem?team=1")
    env = source(seed=1)
    hands = 0
    for result in play_random(env, random_players(env), 40):
        by_table: dict[int, float] = {}
        for decision, terminal in result.values():
            assert not decision.reward.any()  # poker pays only at the showdown or fold
            for agent_id, reward in zip(terminal.agent_id, terminal.reward, strict=True):
                by_table[agent_id // 2] = by_table.get(agent_id // 2, 0.0) + reward
        assert all(abs(total) < 1e-6 for total in by_table.values())
        hands += len(by_table)
    assert hands >= 20


class Relay(AECEnv):
    """Three agents in turn; each move pays +1 to every other agent. ``c`` is truncated after
    its first move, the others play on; the game ends after 6 moves."""

    metadata = {"name": "relay_v0"}
    possible_agents = ["a", "b", "c"]

    def observation_space(self, agent):
        return spaces.Box(0, 10, (1,), np.float32)

    def action_space(self, agent):
        return spaces.Discrete(2)

    def reset(self, seed=None, options=None):
        self.agents, self.moves = list(self.possible_agents), 0
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos = {agent: {} for agent in self.agents}
        self.agent_selection = "a"

    def observe(self, agent):
        return np.array([self.moves], np.float32)

    def step(self, action):
        mover = self.agent_selection
        if self.terminations[mover] or self.truncations[mover]:
            return self._was_dead_step(action)
        self._clear_rewards()
        self.moves += 1
        for agent in self.agents:
            self.rewards[agent] = float(agent != mover)
        self.truncations["c"] = mover == "c"
        if self.moves == 6:
            self.terminations = dict.fromkeys(self.agents, True)
        turn = self.agents.index(mover)
        self.agent_selection = (
            next(
                agent
                for agent in self.agents[turn + 1 :] + self.agents[: turn + 1]
                if not (self.terminations[agent] or self.truncations[agent])
            )
            if self.moves < 6
            else mover
        )
        self._accumulate_rewards()
        self._deads_step_first()


def make_relay() -> Relay:
    return Relay()


def test_aec_waiting_rewards_and_a_truncated_agent_leaving_early():
    env = adapt(make_relay, copies=1)()
    names = [f"relay?team={seat}" for seat in range(3)]
    expected = [  # after each move: (who decides, its reward), then the terminal rows
        ("b", 1.0, {}),
        ("c", 2.0, {}),
        ("a", 2.0, {"c": (0.0, True)}),  # c's own move paid the others; truncated
        ("b", 2.0, {}),
        ("a", 1.0, {}),  # only b moved for a since c left
        ("a", 0.0, {"a": (0.0, False), "b": (1.0, False)}),  # game over, a restarts
    ]
    for turn, (mover, reward, ended) in enumerate(expected):
        (deciding,) = [n for n in names if len(env.get_steps(n)[0])]
        result = step(env, {deciding: moves(turn % 2)})
        decisions = {n: d for n, (d, _) in result.items() if len(d)}
        assert list(decisions) == [names["abc".index(mover)]], turn
        assert decisions[names["abc".index(mover)]].reward.tolist() == [reward], turn
        terminals = {
            "abc"[names.index(n)]: (t.reward[0], bool(t.interrupted[0]))
            for n, (_, t) in result.items()
            if len(t)
        }
        assert terminals == ended, turn


# --------------------------------------------------------------------------- simultaneous (Parallel)
class Duel(ParallelEnv):
    """Two seats moving together: the pilot (Box actions) leaves after 2 steps, the gunner
    (MultiDiscrete actions, Discrete observations, action 2 of branch 0 masked) is truncated
    after 4. Rewards echo the actions the environment received."""

    metadata = {"name": "duel_v0"}
    possible_agents = ["pilot", "gunner"]

    def __init__(self) -> None:
        self.agents: list[str] = []
        self.received: list[dict] = []
        self.t = 0

    def observation_space(self, agent):
        return (
            spaces.Box(-np.inf, np.inf, (3,), np.float32)
            if agent == "pilot"
            else spaces.Discrete(4)
        )

    def action_space(self, agent):
        if agent == "pilot":
            low, high = (
                np.array([-2, 0, -np.inf], np.float32),
                np.array([2, 10, np.inf], np.float32),
            )
            return spaces.Box(low, high)
        return spaces.MultiDiscrete([3, 2])

    def _observe(self) -> tuple[dict, dict]:
        observations = {"pilot": np.array([self.t, 1.0, 2.0], np.float32), "gunner": self.t % 4}
        infos = {"pilot": {}, "gunner": {"action_mask": np.array([1, 1, 0, 1, 1], np.int8)}}
        return (
            {a: observations[a] for a in self.agents},
            {a: infos[a] for a in self.agents},
        )

    def reset(self, seed=None, options=None):
        self.agents, self.t = list(self.possible_agents), 0
        return self._observe()

    def step(self, actions):
        self.received.append(actions)
        self.t += 1
        rewards = {}
        if "pilot" in actions:
            rewards["pilot"] = float(actions["pilot"][0])
        rewards["gunner"] = float(actions["gunner"].sum())
        terminations = {a: a == "pilot" and self.t == 2 for a in self.agents}
        truncations = {a: a == "gunner" and self.t == 4 for a in self.agents}
        observations, infos = self._observe()
        self.agents = [a for a in self.agents if not (terminations[a] or truncations[a])]
        return observations, rewards, terminations, truncations, infos


def make_duel() -> Duel:
    return Duel()


PILOT, GUNNER = "pilot?team=0", "gunner?team=1"


def test_parallel_seats_map_spaces_and_leave_individually():
    env = adapt(make_duel, copies=1)()
    duel = env.tables[0].env
    assert tuple(env.behavior_specs) == (PILOT, GUNNER)  # spaces differ → asymmetric
    assert env.behavior_specs[PILOT].action_spec.continuous_size == 3
    assert env.behavior_specs[GUNNER].action_spec.discrete_branches == (3, 2)
    assert env.behavior_specs[GUNNER].observation_specs[0].shape == (4,)
    gunner = steps(env)[GUNNER][0]
    assert gunner.obs[0].tolist() == [[1.0, 0.0, 0.0, 0.0]]  # Discrete → one-hot
    assert gunner.action_mask[0].tolist() == [[False, False, True]]
    assert gunner.action_mask[1].tolist() == [[False, False]]

    pilot_moves = [[1.0, -1.0, 5.0], [3.0, 0.5, -7.0]]
    for t, pilot_move in enumerate(pilot_moves):
        result = step(
            env,
            {
                PILOT: ActionTuple(continuous=np.array([pilot_move], np.float32)),
                GUNNER: ActionTuple(discrete=np.array([[1, 1]], np.int32)),
            },
        )
        assert result[GUNNER][0].obs[0].argmax() == t + 1
    np.testing.assert_allclose(duel.received[0]["pilot"], [2.0, 0.0, 5.0])
    np.testing.assert_allclose(duel.received[1]["pilot"], [2.0, 7.5, -7.0])  # clipped, unbounded
    assert duel.received[0]["gunner"].tolist() == [1, 1]
    (pilot_decision, pilot_terminal), (gunner_decision, _) = result[PILOT], result[GUNNER]
    assert len(pilot_decision) == 0 and pilot_terminal.reward.tolist() == [2.0]
    assert pilot_terminal.interrupted.tolist() == [False]
    assert gunner_decision.agent_id.tolist() == [1] and gunner_decision.reward.tolist() == [2.0]

    for _ in range(2):  # the gunner plays on alone
        result = step(env, {GUNNER: ActionTuple(discrete=np.array([[0, 1]], np.int32))})
    assert set(duel.received[-1]) == {"gunner"}
    gunner_terminal = result[GUNNER][1]
    assert gunner_terminal.interrupted.tolist() == [True]
    assert gunner_terminal.reward.tolist() == [
        1.0
    ]  # its last step's; the one before came with its decision
    assert result[PILOT][0].agent_id.tolist() == [0]  # restarted, both seats decide again
    assert result[GUNNER][0].agent_id.tolist() == [1]


def test_seat_options():
    assert adapt(connect_four_v3.env, seats="separate").behavior_names() == (
        "player_0?team=0",
        "player_1?team=1",
    )
    mapped = adapt(connect_four_v3.env, seats={"player_0": "Red?team=0", "player_1": "Red?team=1"})
    assert mapped.behavior_names() == ("Red?team=0", "Red?team=1")
    assert attrs.evolve(mapped, copies=2).behavior_names() == ("Red?team=0", "Red?team=1")
    assert adapt(tictactoe_v3.env, name="ttt").behavior_names() == ("ttt?team=0", "ttt?team=1")
    with pytest.raises(EnvironmentSourceError, match="observe and act alike"):
        adapt(make_duel, seats="teams")
    with pytest.raises(EnvironmentSourceError, match=r"missing \['player_1'\]"):
        adapt(connect_four_v3.env, seats={"player_0": "Red?team=0"})
    with pytest.raises(EnvironmentSourceError, match="share behavior Ace"):
        adapt(make_duel, seats={"pilot": "Ace?team=0", "gunner": "Ace?team=0"})
    with pytest.raises(ValueError, match="seats='mixed'"):
        adapt(connect_four_v3.env, seats="mixed")
    with pytest.raises(ValueError, match="copies must be >= 1"):
        adapt(connect_four_v3.env, copies=0)


class TupleEyes(Duel):
    def observation_space(self, agent):
        return spaces.Tuple([spaces.Discrete(2), spaces.Discrete(3)])


def make_tuple_eyes() -> TupleEyes:
    return TupleEyes()


def test_unsupported_space_names_the_agent():
    with pytest.raises(EnvironmentSourceError, match="agent 'pilot' observes Tuple"):
        adapt(make_tuple_eyes)


# --------------------------------------------------------------------------- sources and workers
def test_from_module_and_its_errors():
    source = from_module("pettingzoo.classic.tictactoe_v3", copies=2)
    assert source.behavior_names() == TTT
    assert "pettingzoo.classic.tictactoe_v3.env" in source.describe()
    assert from_module("pettingzoo.classic.rps_v2").env_fn.attribute == "parallel_env"
    with pytest.raises(EnvironmentSourceError, match=r"not found.*pip install"):
        from_module("pettingzoo.classic.no_such_game_v1")
    with pytest.raises(EnvironmentSourceError, match="neither parallel_env nor env"):
        from_module("json")


def test_sources_pickle_and_run_in_worker_processes():
    copy = pickle.loads(pickle.dumps(adapt(connect_four_v3.env, copies=2)))
    assert tuple(copy().behavior_specs) == C4
    source = pickle.loads(pickle.dumps(from_module("pettingzoo.classic.tictactoe_v3", copies=3)))
    stepper = SubprocessStepper(factory=source, num_envs=2, seed=3)
    try:
        result = stepper.reset()
        ended = 0
        policies = {
            bid: RandomLegalPolicy(action_spec=s.action_spec)
            for bid, s in stepper.behavior_specs.items()
        }
        for _ in range(12):
            actions = {
                bid: policies[bid].act(found.decision.obs, found.decision.action_mask)
                for bid, found in result.items()
                if len(found.decision)
            }
            result = stepper.step(actions)
            ended += len(result[BehaviorId("tictactoe", 0)].terminal)
        assert set(stepper.behavior_specs) == {
            BehaviorId("tictactoe", 0),
            BehaviorId("tictactoe", 1),
        }
        assert ended >= 6  # 2 workers × 3 tables, tic-tac-toe ends within 9 moves
    finally:
        stepper.close()


# --------------------------------------------------------------------------- board players
def board(rows: int, cols: int, mine: list[tuple[int, int]], theirs: list[tuple[int, int]]):
    planes = np.zeros((rows, cols, 2), np.float32)
    for row, col in mine:
        planes[row, col, 0] = 1
    for row, col in theirs:
        planes[row, col, 1] = 1
    return planes.reshape(-1)


def one_ply(actions: int) -> OnePlyPolicy:
    return OnePlyPolicy(action_spec=ActionSpec.create_discrete((actions,)), seed=0)


def test_one_ply_wins_then_blocks_connect_four():
    positions = [
        # horizontal three at the bottom: play column 3 to win
        board(6, 7, [(5, 0), (5, 1), (5, 2)], [(4, 0), (4, 1), (4, 2)]),
        # the opponent's vertical three in column 5 must be blocked
        board(6, 7, [(5, 0), (5, 2)], [(5, 5), (4, 5), (3, 5)]),
        # both: winning at column 3 beats blocking column 6
        board(6, 7, [(5, 0), (5, 1), (5, 2)], [(5, 6), (4, 6), (3, 6)]),
        # a diagonal win lands on top of column 3
        board(6, 7, [(5, 0), (4, 1), (3, 2), (5, 1), (3, 3)], [(5, 3), (4, 3), (5, 2), (4, 2)]),
    ]
    for deterministic in (False, True):
        actions = one_ply(7).act([np.stack(positions)], deterministic=deterministic).discrete
        assert actions[:, 0].tolist() == [3, 5, 3, 3]


def test_one_ply_wins_then_blocks_tictactoe_and_respects_masks():
    positions = np.stack(
        [
            board(3, 3, [(0, 0), (1, 1)], [(0, 1), (0, 2)]),  # win on the diagonal at 8
            board(3, 3, [(0, 0)], [(1, 0), (1, 1)]),  # block the middle row at 5
        ]
    )
    assert one_ply(9).act([positions]).discrete[:, 0].tolist() == [8, 5]
    blocked = np.zeros((2, 9), bool)
    blocked[:, 8] = blocked[:, 5] = True  # a mask can only take moves away
    chosen = one_ply(9).act([positions], [blocked]).discrete[:, 0]
    assert not blocked[np.arange(2), chosen].any()


def test_random_legal_policy_and_levels():
    mask = np.ones((200, 7), bool)
    mask[:, [2, 4]] = False
    chosen = RandomLegalPolicy(action_spec=ActionSpec.create_discrete((7,))).act(
        [np.zeros((200, 84))], [mask]
    )
    assert set(chosen.discrete[:, 0].tolist()) == {2, 4}
    assert set(SCRIPTED_LEVELS) == {"connect_four", "tictactoe"}
    assert scripted_levels("connect_four") == {"random": RandomLegalPolicy, "one_ply": OnePlyPolicy}
    assert scripted_levels("leduc_holdem") == {"random": RandomLegalPolicy}
    with pytest.raises(ValueError, match="RandomLegalPolicy for other games"):
        one_ply(4)


def test_one_ply_beats_random_at_connect_four():
    wins = games = 0
    for one_ply_team in (0, 1):
        env = adapt(connect_four_v3.env, copies=50)(seed=one_ply_team)
        players = random_players(env, seed=10 + one_ply_team)
        smart = C4[one_ply_team]
        players[smart] = OnePlyPolicy(action_spec=env.behavior_specs[smart].action_spec, seed=1)
        ended = 0
        while ended < 100:
            result = play_once(env, players)
            terminal = result[smart][1]
            wins += int((terminal.reward > 0).sum())
            ended += len(terminal)
        games += ended
    assert wins / games >= 0.8
