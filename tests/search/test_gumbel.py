"""Gumbel root selection (``mcts.gumbel``): the sequential-halving schedule, the forced root
action in ``_select_outcomes``, and whole searches whose choices can be checked from their own trees."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.search.fakes import TicTacToe, before_refill, hash_evaluator
from tri.config import MctsParams
from tri.games.triangle.game import TriangleGame
from tri.gumbel import GumbelRoot, considered_visits
from tri.search import Tree, search
from tri.search_kernels import _select_outcomes


def test_schedule_halves_the_considered_actions():
    # 4 actions, 16 simulations: log2(4) = 2 phases. Phase 1 visits all 4 twice (16 / (2 * 4) = 2
    # each), then the best 2 get the rest, alternating.
    assert considered_visits(4, 16) == (0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5)
    seq = considered_visits(16, 32)
    assert len(seq) == 32 and seq[:16] == (0,) * 16 and seq[16:24] == (1,) * 8
    assert considered_visits(1, 5) == (0, 1, 2, 3, 4)  # one action: it takes every visit


def _select_root(tree, score, target):
    k = len(target)
    out_leaf, out_kind = np.empty((1, k), np.int32), np.empty((1, k), np.int8)
    _select_outcomes(tree.children, tree.prior, tree.legal_actions, tree.num_legal, tree.visits, tree.virtual, tree.value_sum, tree.reward, tree.terminal,
            tree.exact, tree.parent, tree.num_nodes, tree.qmin, tree.qmax, 1.0, 1.0, False, False, k,
            np.array([score], float), np.array([target], np.int64), out_leaf, out_kind, np.empty((1, k), np.int32), 0.0,
                     tree.next_outcome, tree.chance, 1)
    return out_leaf[0], out_kind[0]


def test_select_takes_the_scheduled_root_action():
    tree = Tree.empty(1, 4, 2, 3)
    tree.prior[0, 0] = [0.9, 0.05, 0.05]  # PUCT alone would pick action 0
    tree.visits[0, 0] = 1
    leaf, kind = _select_root(tree, [0.0, 1.0, 2.0], [0])  # the best score among the unvisited
    assert kind[0] == 0 and tree.children[0, 0].tolist() == [-1, -1, 1]


def test_several_leaves_spread_over_the_schedule():
    """Four leaves in one step, schedule (0, 0, 0, 1): the pending visits count, so the first
    three take the three actions by score and the fourth the best again (it has 1 now)."""
    tree = Tree.empty(1, 8, 2, 3)
    tree.prior[0, 0] = [0.9, 0.05, 0.05]
    tree.visits[0, 0] = 1
    leaf, kind = _select_root(tree, [0.0, 2.0, 1.0], [0, 0, 0, 1])
    assert kind.tolist() == [0, 0, 0, 2]  # the fourth meets the pending leaf under action 1
    assert tree.children[0, 0].tolist() == [3, 1, 2]
    assert tree.virtual[0, 0] == 3 and tree.virtual[0, 1:4].tolist() == [1, 1, 1]


def _games():
    triangle = TriangleGame()
    ttt = TicTacToe()
    return [(triangle, triangle.initial(np.arange(6))), (ttt, ttt.initial(np.arange(3)))]


@pytest.mark.parametrize("leaves", [1, 4])
@pytest.mark.parametrize("which", [0, 1])
def test_gumbel_search_spends_its_budget_by_halving(which, leaves):
    """The same schedule whether the tree takes one leaf per network call or four (virtual
    visits: the pending ones count towards the schedule's visit counts)."""
    game, roots = _games()[which]
    evaluate = hash_evaluator(game, (0.0, 5.0) if game.num_players == 1 else (-1.0, 1.0))
    params = MctsParams(gumbel=True, gumbel_actions=4, simulations=16, leaves_per_step=leaves)
    result = search(game, evaluate, roots, params, np.random.default_rng(3), noise=True)
    legal = game.legal(roots)
    assert (result.visits.sum(axis=1) == 16).all()
    for b in range(roots.shape[0]):
        visited = np.flatnonzero(result.visits[b])
        assert legal[b, visited].all()
        assert len(visited) == min(4, legal[b].sum())  # exactly the considered actions
        # Schedule (0,0,0,0,1,1,1,1,2,2,3,3,4,4,5,5): all 4 twice, then the 2 survivors of the
        # halving take the other 8 visits: 6, 6, 2, 2.
        counts = np.sort(result.visits[b][visited])[::-1]
        if len(visited) == 4:
            assert counts.tolist() == [6, 6, 2, 2]
        # The move is one of the most visited; the policy target is a distribution over legal
        # actions that favours the move's action over any unvisited one.
        assert result.visits[b, result.action[b]] == counts[0]
        assert result.policy[b].sum() == pytest.approx(1.0, abs=1e-5)
        assert (result.policy[b][~legal[b]] == 0).all()


def test_without_noise_the_first_visits_follow_the_prior():
    game, roots = _games()[0]
    evaluate = hash_evaluator(game, (0.0, 5.0))
    params = MctsParams(gumbel=True, gumbel_actions=4, simulations=4)
    a = search(game, evaluate, roots, params, np.random.default_rng(0), noise=False)
    # the search reseeds the roots with its generator's first draw; the evaluator sees those states
    priors, legal, _ = evaluate(game.reseed(roots, np.random.default_rng(0).integers(0, 2**62, size=6)))
    for i in range(roots.shape[0]):
        # With 4 simulations and no noise, the 4 most probable actions get one visit each.
        top = np.argsort(-np.where(legal[i], priors[i], -1), kind="stable")[:4]
        assert set(np.flatnonzero(a.visits[i])) == set(top.tolist())


def test_improved_policy_puts_more_mass_on_a_better_action():
    """sigma(q) raises the target of an action whose q beats the others (completed-Q target)."""
    tree = Tree.empty(1, 3, 2, 2)
    priors = np.array([[0.5, 0.5]], np.float32)
    legal = np.array([[True, True]])
    root = GumbelRoot(priors, legal, np.array([0.0]), np.random.default_rng(0), noise=False, considered=2,
                      simulations=2, c_visit=50.0, c_scale=1.0, two_player=False, discount=1.0)
    # both children visited once: action 1 returned 3.0, action 0 returned 1.0
    for a, (r, v) in enumerate([(1.0, 0.0), (3.0, 0.0)]):
        tree.children[0, 0, a] = a + 1
        tree.visits[0, a + 1], tree.value_sum[0, a + 1], tree.reward[0, a + 1] = 1, v, r
    tree.qmin[0], tree.qmax[0] = 1.0, 3.0
    action, policy = root.result(tree)
    assert action[0] == 1 and policy[0, 1] > 0.99


@pytest.mark.parametrize("name, chance", [("triangle", 1), ("triangle", 4), ("connect4", 1)])
def test_numba_root_scores_are_numpys_to_the_bit(name, chance, monkeypatch):
    """:func:`tri.gumbel.root_scores` (numba, every simulation step) gives the numbers of the
    numpy arithmetic it replaced (:meth:`GumbelRoot._root_q` and ``_sigma``), bit for bit, at
    every step of real searches: single-player and two-player, noise on and off, with the
    pairwise sums numpy uses for a row of 360 (triangle) or 7 (Connect Four) actions; and with
    chance nodes (``chance > 1``, from positions where every root move refills: the root's edges
    have several outcomes)."""
    from tri.config import recipe_params
    from tri.games import make_game
    from tri.evaluator import make_evaluator
    from tri.net import build_model

    params = recipe_params(name)
    game = make_game(params.game)
    torch.manual_seed(0)
    model = build_model(game, params.net.model_copy(update={"channels": 8, "blocks": 1}))
    with torch.no_grad():
        for p in model.parameters():
            p.uniform_(-0.2, 0.2)
    checked = []
    numba_scores = GumbelRoot.scores

    def both(self, tree, out=None):
        fast = numba_scores(self, tree, out).copy()
        visits, q = self._root_q(tree)
        slow = np.where(self.legal, self.noisy_logits + self._sigma(visits, q), -np.inf)
        assert np.array_equal(fast, slow)
        checked.append(1)
        return numba_scores(self, tree, out)

    monkeypatch.setattr(GumbelRoot, "scores", both)
    mcts = MctsParams(simulations=24, gumbel=True, gumbel_actions=8, leaves_per_step=2,
                      chance_outcomes=chance, afterstates=False)
    states = game.initial(np.arange(6)) if chance == 1 else before_refill(game, np.arange(6))
    several = 0
    for noise in (True, False):
        rng = np.random.default_rng(1)
        tree = search(game, make_evaluator(model, game), states, mcts, rng, noise=noise).tree
        first = np.maximum(tree.children[:, 0], 0)
        several += (np.take_along_axis(tree.next_outcome, first, axis=1) >= 0).sum()
    assert len(checked) == 24
    assert (several > 0) == (chance > 1)
