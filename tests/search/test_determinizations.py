"""Several trees per root (``search(..., determinizations=K)``): how their results combine, and
that a game without chance searches one tree."""

from __future__ import annotations

import numpy as np

from tests.search.fakes import TicTacToe, hash_evaluator
from tri.config import MctsParams
from tri.search import SearchResult, combine, search


def _result(visits, policy, value, action):
    visits = np.array(visits, np.int32)
    return SearchResult(visits=visits, policy=np.array(policy, np.float32), value=np.array(value, np.float32),
                        tree=None, action=None if action is None else np.array(action, np.int64))


def test_the_move_is_the_one_most_trees_chose():
    # Two roots, three trees each, four actions. Root 0: trees chose 2, 1, 2. Root 1: 0, 3, 1 (a
    # three-way tie: the highest averaged policy, action 3, wins over the most visited, action 0).
    r = _result(visits=[[0, 3, 5, 0], [0, 6, 2, 0], [1, 1, 6, 0],
                        [7, 0, 1, 0], [0, 2, 0, 6], [0, 5, 3, 0]],
                policy=[[0, .3, .7, 0], [0, .8, .2, 0], [.1, .1, .8, 0],
                        [.5, 0, .1, .4], [0, .1, 0, .9], [0, .6, .1, .3]],
                value=[1, 2, 3, 4, 5, 9], action=[2, 1, 2, 0, 3, 1])
    c = combine(r, 3)
    assert c.action.tolist() == [2, 3]
    assert c.visits.tolist() == [[1, 10, 13, 0], [7, 7, 4, 6]]
    np.testing.assert_allclose(c.policy, [[.1 / 3, 1.2 / 3, 1.7 / 3, 0], [.5 / 3, .7 / 3, .2 / 3, 1.6 / 3]], rtol=1e-6)
    np.testing.assert_allclose(c.value, [2, 6])


def test_without_gumbel_there_is_no_vote():
    r = _result(visits=[[1, 3], [4, 0]], policy=[[.25, .75], [1, 0]], value=[0, 1], action=None)
    c = combine(r, 2)
    assert c.action is None and c.visits.tolist() == [[5, 3]]


def test_a_game_without_chance_searches_one_tree():
    game = TicTacToe()
    roots = game.initial(np.zeros(2, np.int64))
    params = MctsParams(simulations=20)
    one = search(game, hash_evaluator(game, (-1.0, 1.0)), roots, params, np.random.default_rng(0), noise=False)
    four = search(game, hash_evaluator(game, (-1.0, 1.0)), roots, params, np.random.default_rng(0), noise=False,
                  determinizations=4)
    assert four.tree.states.shape[0] == 2
    assert np.array_equal(one.visits, four.visits) and np.array_equal(one.action, four.action)
