"""Afterstates in the tree (``mcts.afterstates``): a path ends at a move that draws, valued by the
evaluator on the position before the draw; no draw, the real game's or the search's own, reaches
the search's result.

The evaluator hashes ``game.encode`` (what a network sees), so positions that differ only in their
chance streams look the same to it, and an afterstate (no shapes in hand) looks like no position
with shapes."""

from __future__ import annotations

import numpy as np
import pytest

from tests.search.fakes import before_refill, hash_evaluator
from tri.config import MctsParams
from tri.errors import TriError
from tri.search import search
from tri.search_kernels import UNKNOWN, _store

PARAMS = MctsParams(simulations=48, discount=0.99, afterstates=True)


def evaluator(game, seen=None):
    inner = hash_evaluator(game, (0.0, 3.0), key=game.encode)

    def evaluate(states):
        if seen is not None:
            seen.append(states.copy())
        return inner(states)

    return evaluate


def slots(game, states):
    return states[..., game.geometry.num_words + 2:]


@pytest.fixture(scope="module")
def one_shape(game):
    """Four positions with one shape left: every legal move empties the slots and draws."""
    return before_refill(game, np.arange(4))


def test_every_drawing_move_ends_at_its_afterstate(game, one_shape):
    seen = []
    r = search(game, evaluator(game, seen), one_shape, PARAMS, np.random.default_rng(7), noise=False)
    tree, value = r.tree, evaluator(game)
    for b in range(one_shape.shape[0]):
        kids = tree.children[b, 0][tree.children[b, 0] >= 0]
        assert kids.size > 1 and tree.num_nodes[b] == kids.size + 1  # the tree stops at the root's children
        assert tree.terminal[b, kids].all() and (tree.exact[b, kids] == UNKNOWN).all()
        assert (tree.children[b, kids] < 0).all()
        # Each child holds the value of its afterstate, however often it was visited.
        _, _, expected = value(game.afterstate(tree.states[b, kids]))
        np.testing.assert_allclose(tree.value_sum[b, kids] / tree.visits[b, kids], expected, rtol=1e-6)
        assert (tree.visits[b, kids] > 1).any()
    # What the evaluator saw after the roots: positions with no shapes in hand, not over.
    after = np.concatenate(seen[1:])
    assert after.shape[0] == (tree.num_nodes - 1).sum()
    assert (slots(game, after) == 0).all() and not game.terminal(after).any()


@pytest.mark.parametrize("noise", [False, True])
def test_no_draw_reaches_the_result(game, one_shape, noise):
    """The twins of each position (the same board and shape, another real future) and another
    search seed for the refills inside the tree (Gumbel's noise kept: the same seed) all give the
    same search, because every path stops before a draw."""
    twins = np.stack([game.reseed(one_shape, np.full(4, s)) for s in (1, 2)])
    results = [search(game, evaluator(game), t, PARAMS, np.random.default_rng(7), noise=noise) for t in twins]
    for other in results[1:]:
        np.testing.assert_array_equal(results[0].visits, other.visits)
        np.testing.assert_array_equal(results[0].policy, other.policy)
        np.testing.assert_array_equal(results[0].value, other.value)
        np.testing.assert_array_equal(results[0].action, other.action)
    if not noise:  # the generator only reseeds the trees' streams: their draws are never read
        again = search(game, evaluator(game), one_shape, PARAMS, np.random.default_rng(8), noise=False)
        np.testing.assert_array_equal(results[0].visits, again.visits)
        np.testing.assert_array_equal(results[0].value, again.value)


def test_without_afterstates_the_draws_do_reach_it(game, one_shape):
    """The control: the same searches with one sampled draw per path differ between search seeds."""
    params = PARAMS.model_copy(update={"afterstates": False})
    r7 = search(game, evaluator(game), one_shape, params, np.random.default_rng(7), noise=False)
    r8 = search(game, evaluator(game), one_shape, params, np.random.default_rng(8), noise=False)
    assert not np.array_equal(r7.value, r8.value)


def test_moves_that_do_not_draw_are_searched_as_before(game):
    """From the start of a cycle (three shapes in hand) paths go on through placements that draw
    nothing and stop only at the third; every node the tree stops at drew or ended the game."""
    roots = game.initial(np.arange(3))
    r = search(game, evaluator(game), roots, PARAMS.model_copy(update={"simulations": 200}),
               np.random.default_rng(3), noise=False)
    tree, deep = r.tree, 0
    for b in range(roots.shape[0]):
        n = int(tree.num_nodes[b])
        held = (slots(game, tree.states[b, 1:n]) != 0).sum(axis=1)
        depth = np.zeros(n, int)
        for node in range(1, n):
            depth[node] = depth[tree.parent[b, node]] + 1
        # The root holds three shapes: its grandchildren one, and the next placement draws.
        assert (held[depth[1:] == 1] == 2).all() and (held[depth[1:] == 2] == 1).all()
        assert depth.max() == 3
        stopped = tree.terminal[b, 1:n]
        np.testing.assert_array_equal(stopped, depth[1:] == 3)
        deep += int(stopped.sum())
    assert deep > 0


def test_a_draw_that_ends_the_game_is_still_an_afterstate():
    """``_store``: a leaf whose step drew is evaluated (a row) and stopped at without an exact
    value even when its sampled draw ended the game, which is one draw among many; a step that
    ended the game without drawing is terminal, valued 0, not evaluated."""
    states = np.zeros((1, 4, 2), np.uint64)
    reward = np.zeros((1, 4), np.float32)
    terminal = np.zeros((1, 4), bool)
    exact = np.full((1, 4), UNKNOWN, np.int8)
    chance = np.zeros((1, 4), bool)
    new_b, new_node = np.zeros(3, np.int64), np.array([1, 2, 3], np.int64)
    step_states = np.arange(6, dtype=np.uint64).reshape(3, 2)
    ended = np.array([True, True, False])
    after = np.array([True, False, False])
    rows = np.empty(3, np.int64)
    live = _store(states, reward, terminal, exact, chance, new_b, new_node, step_states,
                  np.array([1.0, 2.0, 3.0]), ended, np.zeros(3, bool), after, rows)
    assert live == 2 and rows.tolist() == [0, -1, 1]
    assert terminal[0, 1:].tolist() == [True, True, False]
    assert exact[0, 1:].tolist() == [UNKNOWN, 0, UNKNOWN]


def test_with_chance_nodes_an_edge_starts_at_its_afterstate_then_searches_past_draws(game, one_shape):
    """Afterstates and chance nodes together (``chance_outcomes > 1``): a drawing edge's first
    outcome is its afterstate leaf, holding the afterstate's value; the outcomes progressive
    widening adds are draws of the search's own, evaluated with their shapes in hand and
    searched on."""
    params = PARAMS.model_copy(update={"chance_outcomes": 4, "simulations": 200})
    r = search(game, evaluator(game), one_shape, params, np.random.default_rng(7), noise=False)
    tree, value = r.tree, evaluator(game)
    later = deeper = 0
    for b in range(one_shape.shape[0]):
        for first in tree.children[b, 0][tree.children[b, 0] >= 0]:
            assert tree.terminal[b, first] and tree.exact[b, first] == UNKNOWN
            _, _, expected = value(game.afterstate(tree.states[b, first:first + 1]))
            np.testing.assert_allclose(tree.value_sum[b, first] / tree.visits[b, first], expected, rtol=1e-6)
            c = tree.next_outcome[b, first]
            while c >= 0:
                later += 1
                assert tree.parent[b, c] == 0 and tree.chance[b, c]
                if tree.exact[b, c] == UNKNOWN:  # not a draw that ended the game: a position to search
                    assert not tree.terminal[b, c] and (slots(game, tree.states[b, c]) != 0).any()
                    deeper += int((tree.children[b, c] >= 0).any())
                c = tree.next_outcome[b, c]
    assert later > 10 and deeper > 0


def test_determinized_trees_with_afterstates(game, one_shape):
    """``K`` trees per root: with every path stopping before a draw, they are the same tree."""
    r = search(game, evaluator(game), one_shape[:1], PARAMS, np.random.default_rng(7), noise=False,
               determinizations=3)
    one = search(game, evaluator(game), one_shape[:1], PARAMS, np.random.default_rng(7), noise=False)
    np.testing.assert_array_equal(r.visits, 3 * one.visits)
    np.testing.assert_allclose(r.value, one.value, rtol=1e-6)


def test_a_stochastic_game_without_afterstates_is_a_user_error(game, one_shape):
    """A future game with draws but no ``afterstate()``: one line naming the setting, not a crash
    inside the tree."""

    class NoAfterstates:  # the triangle's interface without afterstate()
        def __getattr__(self, name):
            if name == "afterstate":
                raise AttributeError(name)
            return getattr(game, name)

    with pytest.raises(TriError, match="mcts.afterstates: the game triangle has no afterstate"):
        search(NoAfterstates(), evaluator(game), one_shape, PARAMS, np.random.default_rng(7), noise=False)
