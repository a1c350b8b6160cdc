"""Chance nodes in the tree (``mcts.chance_outcomes``, :mod:`tri.chance`): a chance edge's
outcomes, how many there are (progressive widening), which one a descent takes, and that an
edge's visits and value are its outcomes' combined - in selection, at the Gumbel root and in the
search's result. The roots are triangle positions one placement before a refill, so every root
move is a chance edge."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.search.fakes import TicTacToe, before_refill, hash_evaluator
from tri.chance import root_edges
from tri.config import MctsParams
from tri.gumbel import GumbelRoot
from tri.search import Tree, search
from tri.search_kernels import _select_outcomes


def outcomes_of(tree: Tree, b: int, c: int) -> list[int]:
    """The outcomes of the edge whose first outcome is node ``c``."""
    out = []
    while c >= 0:
        out.append(int(c))
        c = tree.next_outcome[b, c]
    return out


def evaluator(game):
    return hash_evaluator(game, (0.0, 3.0), key=game.encode)


def check_tree(tree: Tree, outcomes: int, widened_exactly: bool) -> int:
    """Every edge of every tree has at most ``outcomes`` outcomes, each a child of the edge's node;
    every node but the roots is reached once; with ``widened_exactly`` (one leaf per step, so no
    collisions) an edge of ``N`` visits has ``min(outcomes, floor(sqrt(N - 1)) + 1)`` outcomes.
    Returns how many edges have more than one."""
    several = 0
    for b in range(tree.children.shape[0]):
        seen = []
        for node in range(int(tree.num_nodes[b])):
            for a in np.flatnonzero(tree.children[b, node] >= 0):
                outs = outcomes_of(tree, b, tree.children[b, node, a])
                seen += outs
                assert 1 <= len(outs) <= outcomes
                assert all(tree.parent[b, o] == node for o in outs)
                if len(outs) > 1:
                    several += 1
                    assert tree.chance[b, outs].all()
                if widened_exactly and tree.chance[b, outs[0]]:
                    n = int(tree.visits[b, outs].sum())
                    assert len(outs) == min(outcomes, math.isqrt(n - 1) + 1), (b, node, a, n)
        assert sorted(seen) == list(range(1, int(tree.num_nodes[b])))
    return several


@pytest.mark.parametrize("gumbel", [False, True])
@pytest.mark.parametrize("outcomes", [2, 4])
def test_root_visits_are_the_sums_over_outcomes(game, gumbel, outcomes):
    roots = before_refill(game, np.arange(4))
    sims = 64
    params = MctsParams(simulations=sims, gumbel=gumbel, gumbel_actions=4, chance_outcomes=outcomes,
                        afterstates=False)
    r = search(game, evaluator(game), roots, params, np.random.default_rng(0), noise=True)
    tree = r.tree
    assert (tree.visits[:, 0] == sims + 1).all()
    assert (r.visits.sum(axis=1) == sims).all()
    for b in range(4):
        for a in range(game.num_actions):
            c = tree.children[b, 0, a]
            expected = tree.visits[b, outcomes_of(tree, b, c)].sum() if c >= 0 else 0
            assert r.visits[b, a] == expected
    assert check_tree(tree, outcomes, widened_exactly=True) >= 4  # several outcomes somewhere
    if gumbel:  # the move is among the most visited edges (outcomes summed)
        assert (r.visits[np.arange(4), r.action] == r.visits.max(axis=1)).all()


def test_one_outcome_is_the_search_as_before(game):
    """``chance_outcomes: 1`` never links outcomes nor asks which steps drew; a game without
    chance is not affected by the setting at all."""
    roots = before_refill(game, np.arange(3))
    r = search(game, evaluator(game), roots, MctsParams(simulations=32), np.random.default_rng(0))
    assert (r.tree.next_outcome == -1).all() and not r.tree.chance.any()
    ttt = TicTacToe()
    start = ttt.initial(np.zeros(2, np.int64))
    runs = [search(ttt, hash_evaluator(ttt, (-1.0, 1.0)), start, MctsParams(simulations=30, chance_outcomes=c, afterstates=False),
                   np.random.default_rng(0)) for c in (1, 8)]
    assert np.array_equal(runs[0].visits, runs[1].visits) and np.array_equal(runs[0].policy, runs[1].policy)
    assert (runs[1].tree.next_outcome == -1).all()


@pytest.mark.parametrize("gumbel", [False, True])
def test_determinized_trees_grow_outcomes_too(game, gumbel):
    roots = before_refill(game, np.arange(2))
    params = MctsParams(simulations=40, gumbel=gumbel, chance_outcomes=3, leaves_per_step=2, afterstates=False)
    r = search(game, evaluator(game), roots, params, np.random.default_rng(1), determinizations=2)
    assert r.tree.children.shape[0] == 4 and r.visits.shape == (2, game.num_actions)
    # Two leaves a step: a collision may cost a simulation, never more than the budget.
    assert (r.visits.sum(axis=1) <= 2 * 40).all() and (r.visits.sum(axis=1) >= 2 * 30).all()
    assert check_tree(r.tree, 3, widened_exactly=False) >= 4
    assert (r.tree.virtual == 0).all()
    legal = game.legal(roots)
    assert (r.visits[~legal] == 0).all()


# ---- a tree built by hand: root, action 0 a chance edge with two outcomes ------------------


def chance_tree(visits: tuple[int, int], nodes: int = 8) -> Tree:
    """Root (two actions) whose action 0 has outcomes 1 and 2 (``visits``; q = 2 and 0 at
    discount 1: reward 1 + value 1, reward 0 + value 0) and action 1 one child 3 (4 visits,
    q = 1.6); every node below the root has one legal action."""
    tree = Tree.empty(1, nodes, 2, 2)
    tree.prior[0, 0] = [0.5, 0.5]
    tree.children[0, 0] = [1, 3]
    tree.next_outcome[0, 1] = 2
    tree.chance[0, [1, 2]] = True
    for node, n, r, v in [(1, visits[0], 1.0, 1.0), (2, visits[1], 0.0, 0.0), (3, 4, 0.0, 1.6)]:
        tree.parent[0, node] = 0
        tree.visits[0, node], tree.reward[0, node], tree.value_sum[0, node] = n, r, n * v
        tree.prior[0, node] = [1.0, -1.0]
    tree.visits[0, 0] = 1 + visits[0] + visits[1] + 4
    tree.value_sum[0, 0] = 1.5 * tree.visits[0, 0]
    tree.num_nodes[0] = 4
    tree.qmin[0], tree.qmax[0] = 0.0, 2.0
    return tree


def select(tree: Tree, outcomes: int, *, c_puct: float = 1.0, only: int | None = None):
    out_leaf, out_kind, out_action = (np.empty((1, 1), np.int32), np.empty((1, 1), np.int8),
                                      np.empty((1, 1), np.int32))
    if only is not None:  # only this root action legal
        tree.prior[0, 0] = [1.0 if a == only else -1.0 for a in range(2)]
    _select_outcomes(tree.children, tree.prior, tree.legal_actions, tree.num_legal, tree.visits, tree.virtual,
                     tree.value_sum, tree.reward, tree.terminal, tree.exact, tree.parent, tree.num_nodes, tree.qmin,
                     tree.qmax, c_puct, 1.0, False, False, 1, np.zeros((1, 2)), np.full((1, 1), -1, np.int64),
                     out_leaf, out_kind, out_action, 0.0, tree.next_outcome, tree.chance, outcomes)
    return int(out_leaf[0, 0]), int(out_kind[0, 0])


def test_the_edge_value_is_the_visit_weighted_mean_of_its_outcomes():
    tree = chance_tree((3, 1))  # action 0: (3 * 2 + 1 * 0) / 4 = 1.5 < 1.6, though its first outcome has 2
    n, q = root_edges(tree.children, tree.next_outcome, tree.visits, tree.value_sum, tree.reward, False, 1.0,
                      np.zeros((1, 2), np.int64), np.zeros((1, 2)))
    assert n.tolist() == [[4, 4]] and q.tolist() == [[1.5, 1.6]]
    # PUCT with a tiny prior weight takes the better edge by value: action 1.
    leaf, kind = select(tree, 1, c_puct=1e-6)
    assert kind == 0 and tree.parent[0, leaf] == 3
    # The Gumbel root: equal priors, equal visits, no noise: the move and policy follow q.
    tree = chance_tree((3, 1))
    root = GumbelRoot(np.array([[0.5, 0.5]], np.float32), np.array([[True, True]]), np.array([1.5]),
                      np.random.default_rng(0), noise=False, considered=2, simulations=8, c_visit=50.0,
                      c_scale=1.0, two_player=False, discount=1.0)
    action, policy = root.result(tree)
    assert action[0] == 1 and policy[0, 1] > policy[0, 0]
    visits, q = root._root_q(tree)
    assert visits.tolist() == [[4, 4]]
    slow = root.noisy_logits + root._sigma(visits, q)
    assert np.array_equal(root.scores(tree), slow)  # numba's scores read the outcomes as numpy does


@pytest.mark.parametrize("visits, outcomes, expected", [
    ((5, 2), 2, "descend 2"),  # C outcomes already: the least visited
    ((2, 5), 2, "descend 1"),
    ((2, 2), 2, "descend 1"),  # a tie: the first
    ((5, 2), 3, "new"),  # 2 outcomes, 7 visits >= 2 * 2: widen
    ((2, 1), 3, "descend 2"),  # 3 visits < 4: not yet
    ((2, 2), 3, "new"),  # 4 visits: widen
    ((5, 2), 1, "descend 1"),  # chance nodes off: the edge's first node, as before
])
def test_a_descent_widens_or_takes_the_least_visited_outcome(visits, outcomes, expected):
    tree = chance_tree(visits)
    leaf, kind = select(tree, outcomes, only=0)
    if expected == "new":
        assert kind == 3 and leaf == 4 and tree.parent[0, 4] == 0
        assert tree.next_outcome[0, 2] == 4 and tree.chance[0, 4] and tree.num_nodes[0] == 5
        assert tree.virtual[0, [0, 4]].tolist() == [1, 1]
    else:
        below = int(expected.split()[1])
        assert kind == 0 and tree.parent[0, leaf] == below and tree.children[0, below, 0] == leaf
        assert tree.virtual[0, below] == 1


def test_a_full_tree_descends_instead_of_widening():
    tree = chance_tree((5, 2), nodes=4)
    leaf, kind = select(tree, 3, only=0)
    assert kind == 2 and tree.num_nodes[0] == 4  # no room below node 2 either: abandoned
    assert (tree.virtual == 0).all()
