"""``tri.search.search`` (batched, arrays, numba) against ``reference_search`` (scalar, dicts), with
a hash-based fake evaluator so both see exactly the same priors and values: every tree of the
batch must have the same shape, visit counts and values.

Games: the triangle puzzle (single-player, stochastic: the search reseeds the roots from its
generator and the reference does the same) and tic-tac-toe (two-player, deterministic: sign flips,
terminal wins and draws inside the tree).
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.search.fakes import TicTacToe, hash_evaluator
from tests.search.reference_search import Node, reference_search
from tri.config import MctsParams
from tri.games.base import sample_legal
from tri.search import SearchResult, search


def puct(**kw) -> MctsParams:
    """Search params for PUCT, the reference search's algorithm (the defaults are Gumbel's)."""
    return MctsParams(**{"gumbel": False, **kw})


def random_positions(game, count: int, rng: np.random.Generator, max_moves: int) -> np.ndarray:
    """Non-terminal states reached by uniformly random play (0..max_moves moves)."""
    out = []
    seed = 0
    while len(out) < count:
        state = game.initial(np.array([seed]))
        seed += 1
        for _ in range(int(rng.integers(0, max_moves + 1))):
            t = game.step(state, sample_legal(game.legal(state), rng))
            if t.terminal[0]:
                break
            state = t.states
        if not game.terminal(state)[0]:
            out.append(state[0])
    return np.stack(out)


def compare_trees(result: SearchResult, b: int, node: int, ref: Node, path: str = "root") -> int:
    """Assert the array tree of game ``b`` below ``node`` equals the reference tree below ``ref``;
    returns the number of nodes compared."""
    tree = result.tree
    assert tree.visits[b, node] == ref.visits, f"{path}: visits"
    assert tree.value_sum[b, node] == pytest.approx(ref.value_sum, rel=1e-9, abs=1e-9), f"{path}: value"
    assert bool(tree.terminal[b, node]) == ref.terminal, f"{path}: terminal"
    assert np.array_equal(tree.states[b, node], ref.state), f"{path}: state"
    created = np.flatnonzero(tree.children[b, node] >= 0).tolist()
    assert created == sorted(ref.children), f"{path}: children"
    count = 1
    for a, child in ref.children.items():
        count += compare_trees(result, b, int(tree.children[b, node, a]), child, f"{path}/{a}")
    return count


def check_against_reference(game, evaluate, roots, params: MctsParams, seed: int) -> SearchResult:
    result = search(game, evaluate, roots, params, np.random.default_rng(seed), noise=False)
    visits, values, ref_roots = reference_search(
        game, evaluate, roots, simulations=params.simulations, c_puct=params.c_puct,
        discount=params.discount, rng=np.random.default_rng(seed), afterstates=params.afterstates)
    assert result.visits.dtype == np.int32
    np.testing.assert_array_equal(result.visits, visits)
    np.testing.assert_allclose(result.value, values, rtol=1e-6, atol=1e-6)
    policy = visits / visits.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(result.policy, policy, rtol=1e-6)
    for b, ref in enumerate(ref_roots):
        assert compare_trees(result, b, 0, ref) == result.tree.num_nodes[b]
        assert ref.visits == params.simulations + 1
    return result


@pytest.mark.parametrize("afterstates", [True, False])
@pytest.mark.parametrize("c_puct, discount", [(1.25, 0.99), (0.5, 0.9), (3.0, 1.0)])
def test_triangle_matches_reference(game, c_puct, discount, afterstates):
    roots = random_positions(game, 5, np.random.default_rng(11), max_moves=30)
    evaluate = hash_evaluator(game, (0.0, 3.0))
    params = puct(simulations=40, c_puct=c_puct, discount=discount, leaves_per_step=1, afterstates=afterstates)
    result = check_against_reference(game, evaluate, roots, params, seed=3)
    # Some tree is deeper than one level (selection below the root was exercised too).
    assert (result.tree.parent[:, 1:] > 0).any()


@pytest.mark.parametrize("afterstates", [True, False])
def test_triangle_matches_reference_with_refills_everywhere(game, afterstates):
    """Positions with a single shape left: every first move refills the slots from the search's
    own chance stream (reseeded from the search rng), on both sides of the comparison; with
    afterstates every root child is an afterstate leaf, revisited without a network call."""
    roots = random_positions(game, 12, np.random.default_rng(5), max_moves=40)
    slots = roots[:, game.geometry.num_words + 2:]
    roots = roots[(slots != 0).sum(axis=1) == 1][:4]
    assert roots.shape[0] >= 2
    evaluate = hash_evaluator(game, (0.0, 2.0))
    params = puct(simulations=32, c_puct=1.0, discount=0.95, afterstates=afterstates)
    result = check_against_reference(game, evaluate, roots, params, seed=8)
    if afterstates:  # the tree stops at the root's children, some visited more than once
        assert (result.tree.num_nodes == (result.tree.children[:, 0] >= 0).sum(axis=1) + 1).all()
        assert (result.tree.visits[:, 1:] > 1).any()
    # Every root child holds three fresh shapes.
    for b in range(roots.shape[0]):
        kids = result.tree.children[b, 0][result.tree.children[b, 0] >= 0]
        assert (result.tree.states[b, kids, game.geometry.num_words + 2:] != 0).all()


@pytest.mark.parametrize("simulations, c_puct", [(30, 1.25), (200, 1.0), (400, 2.0)])
def test_tictactoe_matches_reference(simulations, c_puct):
    game = TicTacToe()
    roots = random_positions(game, 6, np.random.default_rng(simulations), max_moves=5)
    evaluate = hash_evaluator(game, (-1.0, 1.0))
    params = puct(simulations=simulations, c_puct=c_puct)
    result = check_against_reference(game, evaluate, roots, params, seed=1)
    if simulations >= 200:  # deep enough to revisit terminal nodes (wins and draws)
        assert result.tree.terminal.any()
        terminal_visits = np.where(result.tree.terminal, result.tree.visits, 0)
        assert terminal_visits.max() > 1


def test_tictactoe_one_move_win_is_found():
    """X to move with two in a row: the search, whatever the priors, spends most visits on the
    winning cell (the reward sign reaches the root correctly)."""
    game = TicTacToe()
    # Side to move holds cells 0 and 1; the opponent holds 3 and 4 (and threatens 5).
    root = np.array([[0b000000011, 0b000011000, 0]], np.uint64)
    result = search(game, hash_evaluator(game, (-1.0, 1.0)), root, puct(simulations=200),
                    np.random.default_rng(0), noise=False)
    assert int(np.argmax(result.visits[0])) == 2
    assert result.value[0] > 0.5


def test_batch_does_not_couple_trees():
    """A deterministic game searched as one batch or one position at a time gives the same trees;
    every simulation step makes at most one evaluator call for the whole batch."""
    game = TicTacToe()
    roots = random_positions(game, 5, np.random.default_rng(2), max_moves=4)
    calls: list[int] = []
    evaluate = hash_evaluator(game, (-1.0, 1.0), calls=calls)
    params = puct(simulations=50)
    together = search(game, evaluate, roots, params, np.random.default_rng(0), noise=False)
    assert len(calls) <= params.simulations + 1 and max(calls) <= roots.shape[0]
    assert calls[0] == roots.shape[0]  # the roots, in one call
    for b in range(roots.shape[0]):
        alone = search(game, evaluate, roots[b : b + 1], params, np.random.default_rng(0), noise=False)
        np.testing.assert_array_equal(alone.visits[0], together.visits[b])
        assert alone.value[0] == together.value[b]


@pytest.mark.parametrize("two_player", [False, True])
def test_invariants_with_several_leaves_per_step(game, two_player):
    """With virtual visits (``leaves_per_step`` 4): after the search no virtual visit is left, a
    non-terminal node's visits are its evaluation plus its children's visits, the tree holds at
    most ``simulations + 1`` nodes, and the policy is the root's normalised visits."""
    g = TicTacToe() if two_player else game
    roots = random_positions(g, 4, np.random.default_rng(4), max_moves=3 if two_player else 20)
    params = puct(simulations=48, leaves_per_step=4)
    r = search(g, hash_evaluator(g, (-1.0, 1.0) if two_player else (0.0, 3.0)), roots, params,
               np.random.default_rng(0), noise=True)
    t = r.tree
    assert (t.virtual == 0).all()
    assert (t.num_nodes <= params.simulations + 1).all()
    for b in range(roots.shape[0]):
        for node in range(t.num_nodes[b]):
            kids = t.children[b, node][t.children[b, node] >= 0]
            if t.terminal[b, node]:
                assert kids.size == 0 and t.visits[b, node] >= 1
            else:
                assert t.visits[b, node] == 1 + t.visits[b, kids].sum()
                assert (t.prior[b, node] != -2.0).all()  # every created node was evaluated
    assert (r.visits.sum(axis=1) == t.visits[:, 0] - 1).all()
    np.testing.assert_allclose(r.policy, r.visits / r.visits.sum(axis=1, keepdims=True), rtol=1e-6)
