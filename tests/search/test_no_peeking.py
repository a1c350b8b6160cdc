"""The search never sees the real game's future shape draws.

Two triangle games with the same board and slots but different chance streams have different
real refills; searched with the same search seed they must give identical results, because the
search plans with refills drawn from its own generator. The position has a single shape left, so
every first move inside the tree triggers a refill: a search that used the real stream would see
different shapes below the root in the two games, and the control at the end shows that such a
search (a game whose ``reseed`` does nothing) indeed gives different results.

The evaluator hashes ``game.encode`` (board and slots: what a network sees, not the stream word),
so the evaluator itself cannot tell the two games apart.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.search.fakes import hash_evaluator
from tri.config import MctsParams
from tri.games.base import sample_legal
from tri.search import search

# Paths that go on past a refill (no afterstates): the variant whose tree holds sampled draws. The
# default, afterstates, stops every path before the draw: tests/search/test_afterstates.py.
PARAMS = MctsParams(simulations=48, c_puct=1.25, discount=0.99, afterstates=False)


class NoReseed:
    """The game, except that ``reseed`` keeps the real chance stream (a search that peeks)."""

    def __init__(self, game):
        self._game = game

    def __getattr__(self, name):
        return getattr(self._game, name)

    def reseed(self, states, seeds):
        return states.copy()


@pytest.fixture(scope="module")
def twins(game):
    """Two positions: same board, one shape in slot 0, other slots empty; chance streams from
    seeds 1 and 2."""
    rng = np.random.default_rng(0)
    state = game.initial(np.array([42]))
    for _ in range(60):
        t = game.step(state, sample_legal(game.legal(state), rng))
        assert not t.terminal[0]
        state = t.states
        scalar = game.states(state)[0]
        filled = [s for s in scalar.shapes if s is not None]
        if len(filled) == 1 and scalar.grid.sum() >= 20:
            break
    else:
        pytest.fail("no one-shape position reached")
    shapes = [next(s for s in scalar.shapes if s is not None), None, None]
    a = game.position(scalar.grid.astype(int), shapes, seed=1)
    b = game.position(scalar.grid.astype(int), shapes, seed=2)
    assert not a.game_over and not b.game_over
    return a, b


def evaluator(game):
    return hash_evaluator(game, (0.0, 3.0), key=game.encode)


def test_twins_differ_only_in_their_future(game, twins):
    a, b = twins
    assert np.array_equal(a.grid, b.grid) and a.shapes == b.shapes
    assert not np.array_equal(a.data, b.data)  # the chance stream word
    assert np.array_equal(game.encode(a.data), game.encode(b.data))
    # Play the same move in both: it empties the slots, and the real refills differ.
    move = game.legal_actions(a)[0]
    a2, step_a = game.place(a, move)
    b2, step_b = game.place(b, move)
    assert step_a.refilled and step_b.refilled
    assert np.array_equal(a2.grid, b2.grid)
    assert a2.shapes != b2.shapes
    # So the evaluator does tell the positions after the refill apart.
    pa, _, va = evaluator(game)(a2.data)
    pb, _, vb = evaluator(game)(b2.data)
    assert va[0] != vb[0]


@pytest.mark.parametrize("noise", [False, True])
def test_search_result_does_not_depend_on_the_real_future(game, twins, noise):
    a, b = twins
    roots_a, roots_b = a.data.copy(), b.data.copy()
    ra = search(game, evaluator(game), roots_a, PARAMS, np.random.default_rng(7), noise=noise)
    rb = search(game, evaluator(game), roots_b, PARAMS, np.random.default_rng(7), noise=noise)
    np.testing.assert_array_equal(ra.visits, rb.visits)
    np.testing.assert_array_equal(ra.policy, rb.policy)
    np.testing.assert_array_equal(ra.value, rb.value)
    # The whole trees, states included, are the same: no node holds a real refill.
    n = int(ra.tree.num_nodes[0])
    assert n == rb.tree.num_nodes[0]
    np.testing.assert_array_equal(ra.tree.states[:, :n], rb.tree.states[:, :n])
    # The refills happened inside the search horizon: every root child holds three new shapes.
    kids = ra.tree.children[0, 0][ra.tree.children[0, 0] >= 0]
    assert kids.size > 1
    assert (ra.tree.states[0, kids, game.geometry.num_words + 2:] != 0).all()
    # The real positions were not touched.
    assert np.array_equal(roots_a, a.data) and np.array_equal(roots_b, b.data)


def test_refills_in_the_tree_come_from_the_search_seed(game, twins):
    a, _ = twins
    r7 = search(game, evaluator(game), a.data, PARAMS, np.random.default_rng(7), noise=False)
    r8 = search(game, evaluator(game), a.data, PARAMS, np.random.default_rng(8), noise=False)
    kids7 = r7.tree.children[0, 0][r7.tree.children[0, 0] >= 0]
    kids8 = r8.tree.children[0, 0][r8.tree.children[0, 0] >= 0]
    slots = slice(game.geometry.num_words + 2, None)
    assert not np.array_equal(r7.tree.states[0, kids7[:1], slots], r8.tree.states[0, kids8[:1], slots])
    assert not (np.array_equal(r7.visits, r8.visits) and r7.value[0] == r8.value[0])


def test_a_search_that_used_the_real_stream_would_differ(game, twins):
    """The control: with reseeding disabled the twins' trees see their real refills, and the
    results differ - so the equality above is not an accident of this position."""
    a, b = twins
    peek = NoReseed(game)
    ra = search(peek, evaluator(game), a.data, PARAMS, np.random.default_rng(7), noise=False)
    rb = search(peek, evaluator(game), b.data, PARAMS, np.random.default_rng(7), noise=False)
    assert not (np.array_equal(ra.visits, rb.visits) and ra.value[0] == rb.value[0])
    # ...and below the root the trees hold the real refills of each game.
    move = int(np.flatnonzero(ra.tree.children[0, 0] >= 0)[0])
    real_a, _ = game.place(a, game.action_tuple(move))
    node = ra.tree.children[0, 0, move]
    assert np.array_equal(ra.tree.states[0, node], real_a.data[0])


def test_determinized_trees_each_plan_on_their_own_future(game, twins):
    """Several trees per root (``determinizations``): each draws its own refills from the
    search's generator, and still none sees the real game's."""
    a, b = twins
    k = 3
    ra = search(game, evaluator(game), a.data, PARAMS, np.random.default_rng(7), noise=False, determinizations=k)
    rb = search(game, evaluator(game), b.data, PARAMS, np.random.default_rng(7), noise=False, determinizations=k)
    assert ra.tree.states.shape[0] == k and ra.visits.shape == (1, game.num_actions)
    assert ra.visits.sum() == k * PARAMS.simulations
    assert np.array_equal(ra.visits, rb.visits) and ra.value[0] == rb.value[0] and ra.action[0] == rb.action[0]
    slots = slice(game.geometry.num_words + 2, None)
    refills = set()
    for tree in range(k):  # every first move refills: the trees' first children show their draws
        kids = ra.tree.children[tree, 0][ra.tree.children[tree, 0] >= 0]
        refills.add(ra.tree.states[tree, kids[0], slots].tobytes())
    assert len(refills) == k


@pytest.mark.parametrize("afterstates", [False, True])
def test_chance_outcomes_each_draw_their_own_future(game, twins, afterstates):
    """Chance nodes (``chance_outcomes > 1``): the outcomes of one root move hold different
    refills, each drawn from the search's generator, none the real game's next shapes; and the
    twins still get the same search. With afterstates too, the first outcome is the afterstate
    (its stored draw the search's, never read) and the others are searched past their draws.
    The control: a game whose ``reseed`` keeps the real stream puts the real refill in every
    outcome."""
    a, b = twins
    params = PARAMS.model_copy(update={"chance_outcomes": 4, "afterstates": afterstates})
    ra = search(game, evaluator(game), a.data, params, np.random.default_rng(7), noise=False)
    rb = search(game, evaluator(game), b.data, params, np.random.default_rng(7), noise=False)
    assert np.array_equal(ra.visits, rb.visits) and np.array_equal(ra.policy, rb.policy)
    assert ra.value[0] == rb.value[0] and ra.action[0] == rb.action[0]
    n = int(ra.tree.num_nodes[0])
    assert n == rb.tree.num_nodes[0]
    np.testing.assert_array_equal(ra.tree.states[:, :n], rb.tree.states[:, :n])
    np.testing.assert_array_equal(ra.tree.next_outcome, rb.tree.next_outcome)
    words, slots = slice(0, game.geometry.num_words), slice(game.geometry.num_words + 2, None)

    def outcomes(result, move):
        out, c = [], result.tree.children[0, 0, move]
        while c >= 0:
            out.append(int(c))
            c = result.tree.next_outcome[0, c]
        return out

    several = 0
    for move in np.flatnonzero(ra.tree.children[0, 0] >= 0):
        outs = outcomes(ra, move)
        real = [game.place(t, game.action_tuple(int(move)))[0] for t in (a, b)]
        for o in outs:
            assert np.array_equal(ra.tree.states[0, o, words], real[0].data[0, words])  # the same board
            for r in real:
                assert not np.array_equal(ra.tree.states[0, o, slots], r.data[0, slots])
        draws = {ra.tree.states[0, o, slots].tobytes() for o in outs}
        assert len(draws) == len(outs)
        several += len(outs) > 1
    assert several >= 3
    peek = NoReseed(game)
    rp = search(peek, evaluator(game), a.data, params, np.random.default_rng(7), noise=False)
    move = next(m for m in np.flatnonzero(rp.tree.children[0, 0] >= 0) if len(outcomes(rp, m)) > 1)
    real, _ = game.place(a, game.action_tuple(int(move)))
    assert all(np.array_equal(rp.tree.states[0, o], real.data[0]) for o in outcomes(rp, move))
