"""Exhaustive cycle planning (``tri.plan.plan_cycle``, ``mcts.plan_cycle``) against a plain
recursion on the reference engine (``reference_triangle``): every order and placement of the
shapes in hand, no merging, each way's discounted rewards plus the discounted, scaled value of
the board it ends on; a way on which the shapes left no longer fit ends with its rewards. Then
the limit, the real game's future never read, and the agent that plays the plan."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from tests.games.reference_triangle import ReferenceGame
from tests.games.test_triangle_random import reference_for, rewards_of
from tri.agents import MctsAgent
from tri.config import MctsParams, Params
from tri.games.triangle.game import TriangleGame
from tri.games.triangle.rules import DEFAULT_TEMPLATES, TriangleConfig
from tri.plan import plan_cycle

DISCOUNT, SCALE = 0.9, 1.3
# 3 slots, 5 templates of 1-4 triangles: many ways per cycle, small enough to enumerate
THREE = TriangleConfig(num_slots=3, templates=tuple(DEFAULT_TEMPLATES[i] for i in (0, 2, 5, 15, 23)))


def board_value(grid: np.ndarray) -> float:
    """The test's value of a board: a fixed function of its cells (so the plan's afterstates and
    the reference's grids get the same value)."""
    cells = np.asarray(grid, np.float64).ravel()
    return float(np.sin(cells @ np.arange(1, cells.size + 1)) * 2 + 5)


def evaluator(game: TriangleGame, calls: list | None = None, *, plan_only: bool = True):
    """``plan_only``: assert every position asked is an afterstate (no shapes in hand), as the
    plan's are (a search's are not)."""

    def evaluate(states):
        assert not plan_only or not (states[:, game.geometry.num_words + 2:] != 0).any()
        if calls is not None:
            calls.append(len(states))
        legal = game.legal(states)
        values = np.array([board_value(game.board(s)) for s in states], np.float32)
        return legal / legal.sum(axis=1, keepdims=True).clip(1), legal, values

    return evaluate


def reference(game: TriangleGame, state: np.ndarray) -> tuple[dict[int, float], int]:
    """``({first move: its best way's worth}, the most distinct positions at any level)`` by
    plain recursion over copies of the reference game (no merging of equal positions)."""
    scalar = game.states(state[None])[0]
    ref = ReferenceGame(reference_for(game), list(scalar.shapes), rewards_of(game))
    ref.grid = [[bool(v) for v in row] for row in scalar.grid]
    ref.game_over = not ref.legal_actions()
    levels: dict[int, set] = {}
    ends: set = set()

    def worth(g: ReferenceGame, root: int, depth: int) -> float:
        best = -np.inf
        for action in g.legal_actions():
            nxt = copy.deepcopy(g)
            step = nxt.place(action, refill=[None] * len(g.slots))
            grid = np.array(nxt.grid_ints())
            r = root if depth else game.action_index(action)
            if step.refilled:  # the slots emptied: the cycle's end, valued as an afterstate
                ends.add(grid.tobytes())
                w = step.reward + DISCOUNT * SCALE * board_value(grid)
            elif step.game_over:  # the shapes left fit nowhere
                w = step.reward
            else:
                hand = tuple(sorted(str(s) for s in nxt.slots if s is not None))
                levels.setdefault(depth, set()).add((r, grid.tobytes(), hand))
                w = step.reward + DISCOUNT * worth(nxt, r, depth + 1)
            if depth == 0:
                firsts[r] = w
            best = max(best, w)
        return best

    firsts: dict[int, float] = {}
    worth(ref, -1, 0)
    widest = max([len(firsts), len(ends), *(len(v) for v in levels.values())])
    return firsts, widest


def positions(game: TriangleGame, games: int, seed: int) -> np.ndarray:
    """States with shapes in hand from random play, every tightness and hand size."""
    rng = np.random.default_rng(seed)
    out = []
    for g in range(games):
        s = game.initial(np.array([seed * 1000 + g]))
        while not game.terminal(s)[0]:
            out.append(s[0].copy())
            s = game.step(s, np.array([rng.choice(np.flatnonzero(game.legal(s)[0]))])).states
    return np.array(out)


@pytest.mark.parametrize("config", [THREE, TriangleConfig()], ids=["5 templates", "default"])
def test_plan_matches_the_reference_recursion(config: TriangleConfig) -> None:
    game = TriangleGame(config)
    states = positions(game, 3, 5)
    plan = plan_cycle(game, evaluator(game), states, discount=DISCOUNT, scale=SCALE, limit=60)
    assert 10 <= plan.planned.sum() < len(states)  # crowded boards and short hands; not the open ones
    rows = np.flatnonzero(plan.planned)
    hands = (states[rows, game.geometry.num_words + 2:] != 0).sum(axis=1)
    assert {1, 2, 3} <= set(hands.tolist())
    for i in rows[:: max(1, rows.size // 25)]:
        firsts, widest = reference(game, states[i])
        legal = np.flatnonzero(game.legal(states[i : i + 1])[0])
        assert sorted(firsts) == legal.tolist()
        np.testing.assert_allclose(plan.q[i, legal], [firsts[a] for a in legal], rtol=0, atol=1e-5)
        assert np.isneginf(np.delete(plan.q[i], legal)).all()
        assert widest <= 60
        assert plan.action[i] == legal[np.argmax([firsts[a] for a in legal])]
        assert plan.value[i] == pytest.approx(max(firsts.values()), abs=1e-5)


def test_the_limit_is_the_widest_level() -> None:
    """A root is planned exactly when no level of its cycle (first moves, merged positions, end
    boards) has more distinct positions than the limit."""
    game = TriangleGame(THREE)
    states = positions(game, 2, 9)
    wide = plan_cycle(game, evaluator(game), states, discount=DISCOUNT, scale=SCALE, limit=40)
    checked = 0
    for i in np.flatnonzero(wide.planned)[::3]:
        _, widest = reference(game, states[i])
        at = [plan_cycle(game, evaluator(game), states[i : i + 1], discount=DISCOUNT, scale=SCALE, limit=n)
              for n in (widest - 1, widest)]
        assert not at[0].planned[0] and at[1].planned[0]
        assert np.isneginf(at[0].q).all() and at[0].action[0] == -1 and np.isnan(at[0].value[0])
        checked += 1
    assert checked >= 5


def test_ends_are_evaluated_once_in_one_call() -> None:
    game = TriangleGame(THREE)
    states = positions(game, 2, 3)
    calls: list = []
    plan = plan_cycle(game, evaluator(game, calls), states, discount=DISCOUNT, scale=SCALE, limit=50)
    assert len(calls) == 1 and 0 < calls[0] <= plan.ends.sum()  # ends shared by roots: evaluated once
    assert (plan.ends[~plan.planned] == 0).all() and (plan.ends[plan.planned] <= 50).all()


def test_over_and_empty_handed_roots_are_left_to_the_search(game) -> None:
    s = game.initial(np.array([3]))
    while not game.terminal(s)[0]:
        s = game.step(s, np.array([np.flatnonzero(game.legal(s)[0])[0]])).states
    plan = plan_cycle(game, evaluator(game), np.concatenate([s, game.afterstate(s)]), discount=DISCOUNT,
                      scale=SCALE, limit=10**6)
    assert not plan.planned.any()


def test_the_plan_never_reads_the_real_future(game) -> None:
    """Twins: the same board and shapes, different chance streams (so different real refills).
    Their plans are identical: no way is stepped past the cycle's end on a real draw."""
    states = positions(game, 2, 11)
    twins = game.reseed(states, np.arange(len(states)) + 10**6)
    assert not np.array_equal(twins, states)
    a = plan_cycle(game, evaluator(game), states, discount=DISCOUNT, scale=SCALE, limit=200)
    b = plan_cycle(game, evaluator(game), twins, discount=DISCOUNT, scale=SCALE, limit=200)
    assert a.planned.sum() >= 10
    np.testing.assert_array_equal(a.q, b.q)
    np.testing.assert_array_equal(a.planned, b.planned)


def agent(game: TriangleGame, limit: int, calls: list | None = None) -> MctsAgent:
    params = MctsParams(simulations=16, discount=DISCOUNT, value_scale=SCALE, plan_cycle=limit)
    return MctsAgent(game, evaluator(game, calls, plan_only=False), params, np.random.default_rng(0), noise=False,
                     temperature=0.0, temperature_moves=0)


def test_an_agent_plays_the_plan_and_searches_the_rest() -> None:
    game = TriangleGame(THREE)
    states = positions(game, 2, 4)
    moves = np.zeros(len(states), np.int64)
    plan = plan_cycle(game, evaluator(game), states, discount=DISCOUNT, scale=SCALE, limit=30)
    assert 0 < plan.planned.sum() < len(states)
    mixed = agent(game, 30).act(states, moves)
    rest = np.flatnonzero(~plan.planned)
    searched = agent(game, 0).act(states[rest], moves[rest])  # the same generator, the same rows
    np.testing.assert_array_equal(mixed.actions[plan.planned], plan.action[plan.planned])
    np.testing.assert_array_equal(mixed.actions[rest], searched.actions)
    np.testing.assert_array_equal(mixed.policy[rest], searched.policy)
    onehot = np.eye(game.num_actions, dtype=np.float32)[plan.action[plan.planned]]
    np.testing.assert_array_equal(mixed.policy[plan.planned], onehot)
    np.testing.assert_allclose(mixed.value[plan.planned], plan.value[plan.planned], rtol=1e-6)


def test_an_agent_with_every_row_planned_does_not_search() -> None:
    game = TriangleGame(THREE)
    states = positions(game, 2, 4)
    plan = plan_cycle(game, evaluator(game), states, discount=DISCOUNT, scale=SCALE, limit=30)
    calls: list = []
    decision = agent(game, 30, calls).act(states[plan.planned], np.zeros(plan.planned.sum(), np.int64))
    np.testing.assert_array_equal(decision.actions, plan.action[plan.planned])
    assert len(calls) == 1  # the plan's one call for its ends; a search would make more


def test_a_shard_s_key_names_plan_cycle_when_on() -> None:
    from tri.selfplay import ShardTask, _task_key

    def key(**mcts):
        return _task_key(ShardTask(Params(mcts=MctsParams(**mcts)), "m.pt", "out", 1, 0, 0, (1, 2)), "model-id")

    assert key(plan_cycle=64) != key() == key(plan_cycle=0)
