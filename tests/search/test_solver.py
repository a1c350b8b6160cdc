"""The search's solver (``mcts.solver``, :func:`tri.search_kernels._prove`): every value it proves is
the exact minimax value, checked on every Tic-Tac-Toe position against the exhaustive solver
(:func:`tri.evaluate.solve`, itself checked against a plain-Python negamax), and the root's
decision keeps to the best proven moves."""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pytest

from tests.search.fakes import hash_evaluator
from tri.agents import MctsAgent
from tri.config import MctsParams
from tri.evaluate import solve
from tri.games.kinrow.connect4 import Connect4Game
from tri.games.kinrow.mnk import MnkGame
from tri.search import UNKNOWN, Tree, _proven_root, search

PUCT = MctsParams(gumbel=False, solver=True, c_puct=1.25)


@lru_cache(maxsize=1)
def _ttt():
    game = MnkGame()
    solution = solve(game)
    exact = {s.tobytes(): int(v) for s, v in zip(solution.states, solution.value)}
    return game, solution, exact


@pytest.mark.parametrize("gumbel", [False, True])
def test_every_proven_node_has_its_minimax_value(gumbel):
    game, solution, exact = _ttt()
    params = PUCT.model_copy(update={"gumbel": gumbel, "gumbel_actions": 9})
    evaluate = hash_evaluator(game, (-0.3, 0.3))
    result = search(game, evaluate, solution.states, params, np.random.default_rng(0), noise=False,
                    simulations=120)
    tree = result.tree
    b, n = np.nonzero((tree.exact != UNKNOWN) & ~tree.terminal)
    n = n[n < tree.num_nodes[b]]
    b = b[: n.size]
    assert n.size > 20_000  # the test has teeth: many nodes proven, roots among them
    proven_roots = np.flatnonzero(tree.exact[:, 0] != UNKNOWN)
    assert proven_roots.size > 2_000
    for bi, ni in zip(b, n):
        assert tree.exact[bi, ni] == exact[tree.states[bi, ni].tobytes()]
    # A proven root's value is exact, and its move is one minimax plays.
    assert (result.value[proven_roots] == solution.value[proven_roots]).all()
    moves = result.action if gumbel else np.argmax(result.visits, axis=1)
    best = solution.action_values[proven_roots, moves[proven_roots]]
    assert (best == solution.value[proven_roots]).all()


def test_without_the_solver_nothing_is_proven_and_the_search_is_unchanged():
    game, solution, _ = _ttt()
    states = solution.states[::40]
    evaluate = hash_evaluator(game, (-0.3, 0.3))
    off = search(game, evaluate, states, PUCT.model_copy(update={"solver": False}), np.random.default_rng(0),
                 noise=False, simulations=60)
    assert (off.tree.exact[off.tree.terminal] == 0).all() and (off.tree.exact[~off.tree.terminal] == UNKNOWN).all()
    # The same selection as the solver's wherever it proved nothing below the root.
    on = search(game, evaluate, states, PUCT, np.random.default_rng(0), noise=False, simulations=60)
    quiet = np.flatnonzero(((on.tree.exact != UNKNOWN) & ~on.tree.terminal).sum(axis=1) == 0)
    assert quiet.size > 0
    assert (on.visits[quiet] == off.visits[quiet]).all()


def _root_with(children: list[tuple[int, float, int]]) -> Tree:
    """A two-player tree whose root has one child per ``(visits, reward, exact)``, action = index."""
    tree = Tree.empty(1, len(children) + 1, 3, len(children))
    tree.visits[0, 0] = 1 + sum(v for v, _, _ in children)
    for a, (visits, reward, exact) in enumerate(children):
        c = a + 1
        tree.children[0, 0, a], tree.parent[0, c] = c, 0
        tree.visits[0, c], tree.reward[0, c], tree.exact[0, c] = visits, reward, exact
    tree.num_nodes[0] = len(children) + 1
    return tree


def _decide(tree: Tree, action: int):
    visits = tree.visits[:, 1:].copy()
    policy = (visits / visits.sum()).astype(np.float32)
    return _proven_root(tree, visits, policy, np.array([action]), np.array([0.25], np.float32))


def test_the_root_keeps_a_proven_win_over_more_visited_moves():
    # Move 0: most visited, unproven; move 1: a win found late (a terminal child, reward 1);
    # move 2: proven lost (its child's side to move has a proven win).
    tree = _root_with([(50, 0.0, UNKNOWN), (3, 1.0, 0), (10, 0.0, 1)])
    visits, policy, action, value = _decide(tree, action=0)
    assert visits[0].tolist() == [0, 3, 0] and policy[0].tolist() == [0.0, 1.0, 0.0]
    assert action[0] == 1  # a Gumbel choice of an unproven move gives way to the win
    assert value[0] == 0.25  # the root itself is not marked proven here: its estimate stays


def test_the_root_drops_proven_losses_and_keeps_the_rest():
    tree = _root_with([(5, 0.0, 1), (20, 0.0, UNKNOWN), (7, 0.0, 0), (9, 0.0, 1)])
    visits, policy, action, _ = _decide(tree, action=3)
    assert visits[0].tolist() == [0, 20, 7, 0]
    assert policy[0] == pytest.approx([0, 20 / 27, 7 / 27, 0])
    assert action[0] == 1
    # Every move lost: nothing is dropped, the search's own choice stands.
    tree = _root_with([(5, 0.0, 1), (9, 0.0, 1)])
    tree.exact[0, 0] = -1
    visits, policy, action, value = _decide(tree, action=0)
    assert visits[0].tolist() == [5, 9] and action[0] == 0 and value[0] == -1.0


def test_selection_takes_a_proven_win_and_passes_over_proven_losses():
    game = Connect4Game()
    state = game.from_moves("112233")[None]  # X to move; column 4 wins at once

    def evaluate(states):
        lg = game.legal(states)
        priors = np.where(lg, 1.0, 0.0).astype(np.float32)
        priors[:, 3] = 0.05  # the winning column: little prior
        priors /= priors.sum(axis=1, keepdims=True)
        return priors, lg, np.zeros(len(states), np.float32)

    result = search(game, evaluate, state, PUCT, np.random.default_rng(0), noise=False, simulations=200)
    assert result.tree.exact[0, 0] == 1 and result.value[0] == 1.0
    assert result.policy[0, 3] == 1.0
    agent = MctsAgent(game, evaluate, PUCT, np.random.default_rng(0), noise=False, temperature=1.0,
                      temperature_moves=99, simulations=200)
    assert agent.act(state, np.array([6])).actions[0] == 3  # even a sampled move
