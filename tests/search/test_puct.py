"""PUCT selection (``tri.search_kernels._select_outcomes``) and backup (``tri.search_kernels._backup``) on tiny hand-made
trees whose scores are worked out by hand in the comments.

Every tree here has one batch entry, ``A = 4`` actions, and room for a few nodes. Scores are
``Q + c_puct * P * sqrt(N(node)) / (1 + N(child))``; single-player ``Q = (r + discount * V(child)
- qmin) / (qmax - qmin)``, two-player ``Q = r - V(child)``; an unvisited action's ``Q`` is the node's
own value ``value_sum / visits`` (normalised like an action value in single-player).
"""

from __future__ import annotations

import numpy as np
import pytest

from tri.search import Tree
from tri.search_kernels import _backup, _select_outcomes

A = 4


def make_tree(nodes: int = 8, actions: int = A) -> Tree:
    return Tree.empty(1, nodes, 2, actions)


def add_node(tree: Tree, parent: int, action: int, *, visits: int, value_sum: float, reward: float = 0.0,
             terminal: bool = False, prior: list[float] | None = None) -> int:
    """Link a new node under ``parent`` by ``action``; a non-terminal node gets ``prior`` (default:
    only action 0 legal, so a descent into it creates a new node under action 0)."""
    c = int(tree.num_nodes[0])
    tree.num_nodes[0] += 1
    tree.children[0, parent, action] = c
    tree.parent[0, c] = parent
    tree.visits[0, c] = visits
    tree.value_sum[0, c] = value_sum
    tree.reward[0, c] = reward
    tree.terminal[0, c] = terminal
    n_actions = tree.prior.shape[2]
    if terminal:
        tree.prior[0, c] = -1.0
    else:
        tree.prior[0, c] = prior if prior is not None else [1.0] + [-1.0] * (n_actions - 1)
    return c


def set_root(tree: Tree, prior: list[float], visits: int, value_sum: float) -> None:
    tree.prior[0, 0] = prior
    tree.visits[0, 0] = visits
    tree.value_sum[0, 0] = value_sum


def select(tree: Tree, *, c_puct: float, discount: float = 1.0, two_player: bool = False,
           leaves: int = 1) -> tuple[np.ndarray, np.ndarray]:
    out_leaf = np.empty((1, leaves), np.int32)
    out_kind = np.empty((1, leaves), np.int8)
    no_gumbel = np.full((1, leaves), -1, np.int64)  # PUCT at the root too
    _select_outcomes(tree.children, tree.prior, tree.legal_actions, tree.num_legal, tree.visits, tree.virtual, tree.value_sum, tree.reward,
            tree.terminal, tree.exact, tree.parent, tree.num_nodes, tree.qmin, tree.qmax, c_puct, discount,
            two_player, False, leaves, np.zeros((1, tree.prior.shape[2])), no_gumbel, out_leaf, out_kind,
            np.empty((1, leaves), np.int32), 0.0, tree.next_outcome, tree.chance, 1)
    return out_leaf[0], out_kind[0]


def root_action_of(tree: Tree, leaf: int) -> int:
    """The root action on the path to ``leaf``."""
    node = leaf
    while tree.parent[0, node] != 0:
        node = tree.parent[0, node]
    return int(np.flatnonzero(tree.children[0, 0] == node)[0])


# ---- single-player ------------------------------------------------------------------------------


def single_player_tree(root_value_sum: float) -> Tree:
    """c_puct 1, discount 0.9, qmin 1, qmax 3 (spread 2); root visits 4 -> sqrt(N) = 2.

    a0 -> node 1: visits 2, V = 4/2 = 2.0, r = 0.5  -> Q = 0.5 + 0.9 * 2.0 = 2.3  -> (2.3-1)/2 = 0.65
    a1 -> node 2: visits 1, V = 1.0,       r = 0.25 -> Q = 0.25 + 0.9 * 1.0 = 1.15 -> 0.075
    a2: unvisited, Q = root's own value
    a3: illegal
    """
    tree = make_tree()
    set_root(tree, [0.5, 0.3, 0.2, -1.0], visits=4, value_sum=root_value_sum)
    add_node(tree, 0, 0, visits=2, value_sum=4.0, reward=0.5)
    add_node(tree, 0, 1, visits=1, value_sum=1.0, reward=0.25)
    tree.qmin[0], tree.qmax[0] = 1.0, 3.0
    return tree


def test_single_player_visited_action_wins_with_normalised_discounted_q():
    # Root own value 6/4 = 1.5 -> normalised (1.5 - 1) / 2 = 0.25.
    # a0: 0.65  + 1 * 0.5 * 2 / (1 + 2) = 0.65  + 0.3333 = 0.9833   <- best
    # a1: 0.075 + 1 * 0.3 * 2 / (1 + 1) = 0.075 + 0.3    = 0.375
    # a2: 0.25  + 1 * 0.2 * 2 / (1 + 0) = 0.25  + 0.4    = 0.65
    # (Without normalisation a0 = 2.3 + 0.33 still wins, so the next test pins the own value and
    # the one after pins the discount.)
    tree = single_player_tree(root_value_sum=6.0)
    leaf, kind = select(tree, c_puct=1.0, discount=0.9)
    # a0 leads to node 1, whose only legal action 0 is unexpanded: a new node 3 under node 1.
    assert kind[0] == 0
    assert leaf[0] == 3
    assert tree.parent[0, 3] == 1 and tree.children[0, 1, 0] == 3
    assert root_action_of(tree, 3) == 0
    assert tree.num_nodes[0] == 4
    # Virtual visits on the whole path until backup.
    assert tree.virtual[0, :4].tolist() == [1, 1, 0, 1]
    assert tree.prior[0, 3, 0] == -2.0  # pending evaluation


def test_single_player_unvisited_action_uses_the_nodes_own_value():
    # Root own value 11.6/4 = 2.9 -> normalised (2.9 - 1) / 2 = 0.95.
    # a0: 0.9833 (as before); a1: 0.375; a2: 0.95 + 0.4 = 1.35   <- best
    # Had the unvisited Q been 0 (normalised -0.5), a2 would score -0.1 and a0 would win.
    tree = single_player_tree(root_value_sum=11.6)
    leaf, kind = select(tree, c_puct=1.0, discount=0.9)
    assert kind[0] == 0
    assert leaf[0] == 3
    assert tree.children[0, 0, 2] == 3 and tree.parent[0, 3] == 0
    assert tree.virtual[0, :4].tolist() == [1, 0, 0, 1]


def test_single_player_discount_applies_to_the_child_value():
    # c_puct 1, discount 0.5, qmin 0, qmax 2.5; root visits 3 -> sqrt(3) = 1.7321, own value 0.
    # a0 -> node 1: r = 0,   V = 2.0 -> Q = 0 + 0.5 * 2.0 = 1.0  -> 0.4
    # a1 -> node 2: r = 1.0, V = 0.5 -> Q = 1 + 0.5 * 0.5 = 1.25 -> 0.5
    # Equal priors 0.4 and equal visits 1: U = 0.4 * 1.7321 / 2 = 0.3464 for both.
    # a0: 0.7464; a1: 0.8464 <- best; a2 (prior 0.2, Q = own 0 -> 0): 0.3464.
    # Undiscounted, a0's Q would be 2.0 > a1's 1.5 and a0 would win.
    tree = make_tree()
    set_root(tree, [0.4, 0.4, 0.2, -1.0], visits=3, value_sum=0.0)
    add_node(tree, 0, 0, visits=1, value_sum=2.0, reward=0.0)
    add_node(tree, 0, 1, visits=1, value_sum=0.5, reward=1.0)
    tree.qmin[0], tree.qmax[0] = 0.0, 2.5
    leaf, kind = select(tree, c_puct=1.0, discount=0.5)
    assert kind[0] == 0
    assert tree.parent[0, leaf[0]] == 2  # descended into a1's node
    assert root_action_of(tree, int(leaf[0])) == 1


def test_single_player_q_is_min_max_normalised():
    # c_puct 2, discount 1, qmin 10, qmax 20; root visits 3 -> sqrt(3) = 1.7321, own 30/3 = 10 -> 0.
    # a0 -> node 1: V = 19 -> Q 19 -> 0.9;  U = 2 * 0.05 * 1.7321 / 2 = 0.0866 -> 0.9866
    # a1 -> node 2: V = 11 -> Q 11 -> 0.1;  U = 2 * 0.90 * 1.7321 / 2 = 1.5588 -> 1.6588 <- best
    # a2: Q = 0;                            U = 2 * 0.05 * 1.7321 / 1 = 0.1732 -> 0.1732
    # Unnormalised, a0 (19.09) would beat a1 (12.56).
    tree = make_tree()
    set_root(tree, [0.05, 0.9, 0.05, -1.0], visits=3, value_sum=30.0)
    add_node(tree, 0, 0, visits=1, value_sum=19.0)
    add_node(tree, 0, 1, visits=1, value_sum=11.0)
    tree.qmin[0], tree.qmax[0] = 10.0, 20.0
    leaf, kind = select(tree, c_puct=2.0, discount=1.0)
    assert kind[0] == 0
    assert root_action_of(tree, int(leaf[0])) == 1


# ---- two-player ---------------------------------------------------------------------------------


def test_two_player_q_is_reward_minus_child_value():
    # c_puct 1.5; root visits 5 -> sqrt(5) = 2.23607, own value 0.5/5 = 0.1.
    # qmin/qmax are set to nonsense: two-player Q is not normalised.
    # a0 -> node 1: visits 3, V = 1.5/3 = 0.5  -> Q = 0 - 0.5  = -0.5
    #               U = 1.5 * 0.4 * 2.23607 / 4 = 0.33541 -> -0.16459
    # a1 -> node 2: visits 1, V = -0.5         -> Q = 0 + 0.5  =  0.5
    #               U = 1.5 * 0.4 * 2.23607 / 2 = 0.67082 ->  1.17082 <- best
    # a2: unvisited, Q = own = 0.1; U = 1.5 * 0.2 * 2.23607 = 0.67082 -> 0.77082
    # With the sign wrong (Q = r + V), a0 (0.835) would win.
    tree = make_tree()
    set_root(tree, [0.4, 0.4, 0.2, -1.0], visits=5, value_sum=0.5)
    add_node(tree, 0, 0, visits=3, value_sum=1.5)
    add_node(tree, 0, 1, visits=1, value_sum=-0.5)
    tree.qmin[0], tree.qmax[0] = 5.0, 6.0
    leaf, kind = select(tree, c_puct=1.5, two_player=True)
    assert kind[0] == 0
    assert tree.parent[0, leaf[0]] == 2
    assert root_action_of(tree, int(leaf[0])) == 1


def test_two_player_edge_reward_counts_for_the_mover():
    # As above plus a2 -> node 3: a terminal win (reward 1, V = 0), visits 1; root visits 6 ->
    # sqrt(6) = 2.44949.
    # a0: -0.5 + 1.5 * 0.4 * 2.44949 / 4 = -0.5 + 0.36742 = -0.13258
    # a1:  0.5 + 1.5 * 0.4 * 2.44949 / 2 =  0.5 + 0.73485 =  1.23485
    # a2:  1.0 + 1.5 * 0.2 * 2.44949 / 2 =  1.0 + 0.36742 =  1.36742 <- best (a terminal leaf)
    # Ignoring the reward (Q = -V = 0), a2 would score 0.367 and a1 would win.
    tree = make_tree()
    set_root(tree, [0.4, 0.4, 0.2, -1.0], visits=6, value_sum=0.6)
    add_node(tree, 0, 0, visits=3, value_sum=1.5)
    add_node(tree, 0, 1, visits=1, value_sum=-0.5)
    win = add_node(tree, 0, 2, visits=1, value_sum=0.0, reward=1.0, terminal=True)
    leaf, kind = select(tree, c_puct=1.5, two_player=True)
    assert (leaf[0], kind[0]) == (win, 1)  # an existing terminal node: kind 1
    assert tree.num_nodes[0] == 4  # nothing created
    assert tree.virtual[0, :4].tolist() == [1, 0, 0, 1]


# ---- ties, illegal actions ----------------------------------------------------------------------


@pytest.mark.parametrize("two_player", [False, True])
def test_ties_go_to_the_lowest_action(two_player):
    # Fresh root (visits 1, sqrt 1, own value 0.3; single-player spread unset -> every Q is the same
    # constant). All unvisited: score = Q + P. a1 and a2 tie at Q + 0.4; a0 (0.2) and a3 (0.0) lose.
    tree = make_tree()
    set_root(tree, [0.2, 0.4, 0.4, 0.0], visits=1, value_sum=0.3)
    leaf, kind = select(tree, c_puct=1.0, two_player=two_player)
    assert kind[0] == 0
    assert tree.children[0, 0].tolist() == [-1, 1, -1, -1]


@pytest.mark.parametrize("two_player", [False, True])
def test_ties_among_visited_children_go_to_the_lowest_action(two_player):
    # a1 and a3 have identical children (visits 1) and priors 0.3, so identical scores; a0 is
    # illegal; a2 (prior 0) is unvisited with Q = own = 0.75 / 3 = 0.25. Root visits 3 -> sqrt 1.7321.
    # Single-player (discount 1, qmin 0, qmax 1): children V = 0.25 -> Q = 0.25 -> normalised 0.25.
    # Two-player: children V = -0.25 -> Q = 0 - (-0.25) = 0.25.
    # a1 = a3 = 0.25 + 0.3 * 1.7321 / 2 = 0.5098 (tie -> a1); a2 = 0.25 + 0 = 0.25.
    tree = make_tree()
    v = -0.25 if two_player else 0.25
    set_root(tree, [-1.0, 0.3, 0.0, 0.3], visits=3, value_sum=0.75)
    add_node(tree, 0, 3, visits=1, value_sum=v)  # created first: node ids do not decide
    add_node(tree, 0, 1, visits=1, value_sum=v)
    tree.qmin[0], tree.qmax[0] = 0.0, 1.0
    leaf, kind = select(tree, c_puct=1.0, two_player=two_player)
    assert kind[0] == 0
    assert tree.parent[0, leaf[0]] == 2  # node 2 is a1's child
    assert root_action_of(tree, int(leaf[0])) == 1


@pytest.mark.parametrize("two_player", [False, True])
def test_illegal_action_is_never_selected(two_player):
    # a0 is illegal (prior -1) but linked to a child that would score enormously: V = 1e9 with
    # reward 1e3 (single-player, normalised by qmin 0 / qmax 1 -> ~1e9) or V = -1e9 (two-player,
    # Q = +1e9). Legal a1, a2, a3 are unvisited; a3 has the largest prior.
    tree = make_tree()
    set_root(tree, [-1.0, 0.3, 0.3, 0.4], visits=11, value_sum=0.0)
    add_node(tree, 0, 0, visits=10, value_sum=-1e10 if two_player else 1e10, reward=1e3)
    tree.qmin[0], tree.qmax[0] = 0.0, 1.0
    for _ in range(3):  # repeated descents (virtual visits accumulate) still avoid it
        leaf, kind = select(tree, c_puct=1.0, two_player=two_player)
        assert kind[0] == 0
        assert tree.parent[0, leaf[0]] == 0
        assert root_action_of(tree, int(leaf[0])) != 0
    assert tree.children[0, 0, 3] == 2  # the first descent took a3 (largest prior)
    assert tree.virtual[0, 1] == 0  # the illegal child was never on a path


def test_node_without_legal_actions_is_treated_as_terminal():
    tree = make_tree()
    set_root(tree, [-1.0, -1.0, -1.0, -1.0], visits=1, value_sum=0.0)
    leaf, kind = select(tree, c_puct=1.0)
    assert (leaf[0], kind[0]) == (0, 1)
    assert tree.num_nodes[0] == 1


# ---- several leaves per step --------------------------------------------------------------------


def test_two_leaves_differ_through_virtual_visits_single_player():
    # Fresh root: visits 1, priors 0.5 / 0.3 / 0.2, qmin/qmax unset -> every Q is the same constant
    # (0.5).
    # Descent 1: sqrt(max(1, 1)) = 1; scores 0.5 + P -> a0 (1.0). Creates node 1 (virtual 1).
    # Descent 2: N(root) = 1 visit + 1 earlier virtual visit = 2 -> sqrt 1.41421.
    #   a0: N(child) = 1 (virtual) -> 0.5 + 0.5 * 1.41421 / 2 = 0.85355
    #   a1: 0.5 + 0.3 * 1.41421 = 0.92426 <- best
    #   a2: 0.5 + 0.2 * 1.41421 = 0.78284
    tree = make_tree()
    set_root(tree, [0.5, 0.3, 0.2, -1.0], visits=1, value_sum=0.7)
    leaf, kind = select(tree, c_puct=1.0, discount=0.9, leaves=2)
    assert kind.tolist() == [0, 0]
    assert leaf.tolist() == [1, 2]
    assert tree.children[0, 0].tolist() == [1, 2, -1, -1]
    assert tree.virtual[0, :3].tolist() == [2, 1, 1]


def test_two_leaves_differ_through_virtual_visits_two_player():
    # Fresh root, own value 0, priors 0.9 / 0.1; c_puct 1.
    # Descent 1: a0 (0 + 0.9) -> node 1.
    # Descent 2: sqrt(2) = 1.41421; a pending child counts as a visit worth +1 to ITS side to move
    # (a loss for the parent): a0: Q = 0 - 1 = -1, + 0.9 * 1.41421 / 2 = -0.36360;
    # a1: 0 + 0.1 * 1.41421 = 0.14142 <- best. (Without the pessimistic virtual value a0 would
    # score 0.636 and collide with the pending node.)
    tree = make_tree()
    set_root(tree, [0.9, 0.1, -1.0, -1.0], visits=1, value_sum=0.0)
    leaf, kind = select(tree, c_puct=1.0, two_player=True, leaves=2)
    assert kind.tolist() == [0, 0]
    assert leaf.tolist() == [1, 2]
    assert tree.children[0, 0].tolist() == [1, 2, -1, -1]


def test_collision_with_a_pending_node_is_abandoned_and_its_virtual_visits_undone():
    # Only a0 is legal: descent 2 reaches node 1, still waiting for its evaluation.
    tree = make_tree()
    set_root(tree, [1.0, -1.0, -1.0, -1.0], visits=1, value_sum=0.0)
    leaf, kind = select(tree, c_puct=1.0, leaves=2)
    assert kind.tolist() == [0, 2]
    assert leaf.tolist() == [1, -1]
    assert tree.num_nodes[0] == 2
    assert tree.virtual[0, :2].tolist() == [1, 1]  # only descent 1's path


# ---- backup -------------------------------------------------------------------------------------


def backup_tree() -> Tree:
    """root 0 -(a0)-> 1 -(a0)-> 2 (new leaf) and root 0 -(a1)-> 3 (new terminal leaf), as left by a
    two-leaf selection: virtual visits 2 on the root and 1 on nodes 1, 2, 3."""
    tree = make_tree(nodes=5, actions=3)
    set_root(tree, [0.5, 0.5, -1.0], visits=3, value_sum=6.0)
    add_node(tree, 0, 0, visits=2, value_sum=3.0, prior=[1.0, -1.0, -1.0])
    for parent, action in ((1, 0), (0, 1)):
        c = add_node(tree, parent, action, visits=0, value_sum=0.0)
        tree.prior[0, c, 0] = -2.0
    tree.virtual[0, :4] = [2, 1, 1, 1]
    tree.qmin[0], tree.qmax[0] = 1.0, 3.0
    return tree


def run_backup(tree: Tree, *, leaf_value: float, discount: float, two_player: bool) -> None:
    """Back up the new leaves 2 (evaluated: row 0, ``leaf_value``) and 3 (terminal: no row)."""
    leaf_prior = np.array([[0.25, 0.75, 0.5]], np.float32)
    leaf_legal = np.array([[True, True, False]])
    none = np.zeros(0, np.int64)
    _backup(tree.prior, tree.legal_actions, tree.num_legal, tree.visits, tree.virtual, tree.value_sum, tree.reward, tree.terminal, tree.exact,
            tree.children, tree.parent, tree.qmin, tree.qmax, np.array([0, 0], np.int64),
            np.array([2, 3], np.int64), np.array([0, -1], np.int64), leaf_prior, leaf_legal,
            np.array([leaf_value], np.float32), none, none, discount, two_player, False)


def test_backup_single_player():
    tree = backup_tree()
    tree.reward[0, 1:4] = [0.5, 0.25, -2.0]
    tree.terminal[0, 3] = True
    run_backup(tree, leaf_value=5.0, discount=0.9, two_player=False)
    # Leaf 2 (value 5.0):        node 2 += 5.0
    #   edge 1->2: g = 0.25 + 0.9 * 5.0  = 4.75   -> node 1 += 4.75  (3.0 -> 7.75)
    #              mean Q = 0.25 + 0.9 * 5/1 = 4.75                  -> qmax 4.75
    #   edge 0->1: g = 0.5  + 0.9 * 4.75 = 4.775  -> root   += 4.775 (6.0 -> 10.775)
    #              mean Q = 0.5 + 0.9 * 7.75/3 = 2.825 (inside [1, 4.75])
    # Leaf 3 (terminal, value 0): node 3 += 0
    #   edge 0->3: g = -2.0 + 0.9 * 0    = -2.0   -> root   += -2.0 (10.775 -> 8.775)
    #              mean Q = -2.0                                       -> qmin -2.0
    assert tree.value_sum[0, :4] == pytest.approx([8.775, 7.75, 5.0, 0.0], abs=1e-12)
    assert tree.visits[0, :4].tolist() == [5, 3, 1, 1]
    assert tree.virtual[0].tolist() == [0] * 5
    assert tree.qmin[0] == pytest.approx(-2.0) and tree.qmax[0] == pytest.approx(4.75)
    # Priors written: illegal -> -1; the terminal leaf's pending marker cleared.
    assert tree.prior[0, 2].tolist() == [0.25, 0.75, -1.0]
    assert tree.prior[0, 3].tolist() == [-1.0, -1.0, -1.0]


def test_backup_two_player():
    tree = backup_tree()
    tree.reward[0, 1:4] = [0.0, 0.0, 1.0]  # node 3: the mover won
    tree.terminal[0, 3] = True
    run_backup(tree, leaf_value=0.25, discount=0.9, two_player=True)
    # Leaf 2 (0.25 for its side to move):  node 2 += 0.25
    #   edge 1->2: g = 0 - 0.25    = -0.25 -> node 1 += -0.25 (3.0 -> 2.75)
    #   edge 0->1: g = 0 - (-0.25) =  0.25 -> root   +=  0.25 (6.0 -> 6.25)
    # Leaf 3 (terminal, 0):                 node 3 += 0
    #   edge 0->3: g = 1 - 0       =  1.0  -> root   += 1.0  (6.25 -> 7.25)
    # (The discount plays no part in two-player games.)
    assert tree.value_sum[0, :4] == pytest.approx([7.25, 2.75, 0.25, 0.0], abs=1e-12)
    assert tree.visits[0, :4].tolist() == [5, 3, 1, 1]
    assert tree.virtual[0].tolist() == [0] * 5
    assert tree.prior[0, 2].tolist() == [0.25, 0.75, -1.0]


def test_select_then_backup_leaves_no_virtual_visits():
    # The single-player tree: select two leaves, back them up, every virtual visit is gone and
    # the root gained exactly two visits.
    tree = single_player_tree(root_value_sum=6.0)
    leaf, kind = select(tree, c_puct=1.0, discount=0.9, leaves=2)
    assert (kind == 0).all() and leaf[0] != leaf[1]
    m = leaf.size
    _backup(tree.prior, tree.legal_actions, tree.num_legal, tree.visits, tree.virtual, tree.value_sum, tree.reward, tree.terminal, tree.exact,
            tree.children, tree.parent, tree.qmin, tree.qmax, np.zeros(m, np.int64), leaf.astype(np.int64),
            np.arange(m), np.full((m, A), 0.25, np.float32), np.ones((m, A), bool), np.full(m, 1.0, np.float32),
            np.zeros(0, np.int64), np.zeros(0, np.int64), 0.9, False, False)
    assert tree.virtual.sum() == 0
    assert tree.visits[0, 0] == 6


@pytest.mark.parametrize("gumbel", [False, True])
def test_selection_through_the_legal_lists_is_the_scan_s(gumbel):
    """A search lists each evaluated node's legal actions and selection walks the list: the same
    leaves, in the same order, as scanning every action's prior (the path of a tree built by
    hand, ``num_legal`` -1), on the trees of a real triangle search (PUCT and Gumbel roots)."""
    import dataclasses

    import torch

    from tri.config import MctsParams, NetParams, Params
    from tri.games import make_game
    from tri.evaluator import make_evaluator
    from tri.net import build_model
    from tri.search import search

    game = make_game(Params().game)
    torch.manual_seed(0)
    net = make_evaluator(build_model(game, NetParams(channels=8, blocks=1)), game)

    def evaluate(states):  # the network's values; priors rising with the action, so the last legal one leads
        _, legal, values = net(states)
        priors = legal * np.arange(1, game.num_actions + 1, dtype=np.float32)
        # (an afterstate has no legal action: its row of priors stays 0)
        return priors / np.maximum(priors.sum(axis=1, keepdims=True), 1.0), legal, values

    mcts = MctsParams(simulations=24, gumbel=gumbel, leaves_per_step=3)
    done = search(game, evaluate, game.initial(np.arange(4)), mcts, np.random.default_rng(0)).tree
    for b, node in zip(*np.nonzero(done.num_legal >= 0)):  # every list is its node's legal actions
        assert list(done.legal_actions[b, node, :done.num_legal[b, node]]) == \
            list(np.flatnonzero(done.prior[b, node] >= 0)), (b, node)
    assert (done.num_legal[:, 0] == game.legal(done.states[:, 0]).sum(axis=1)).all()
    assert (done.num_legal[:, 1:] > 0).any()
    outs = []
    for listed in (True, False):
        tree = Tree.empty(4, 40, game.state_size, game.num_actions)  # room for the leaves selected here
        n = done.children.shape[1]
        for f in dataclasses.fields(Tree):
            old, new = getattr(done, f.name), getattr(tree, f.name)
            if old.ndim >= 2:
                new[:, :n] = old
            else:
                new[:] = old
        if not listed:
            tree.num_legal[:] = -1
        out = [np.full((4, 3), -9, np.int32), np.full((4, 3), -9, np.int8), np.full((4, 3), -9, np.int32)]  # an
        # action is written for new leaves only: with afterstates an existing terminal leaf is selected too
        score = np.random.default_rng(1).normal(size=(4, game.num_actions))
        target = np.zeros((4, 3), np.int64) if gumbel else np.full((4, 3), -1, np.int64)
        _select_outcomes(tree.children, tree.prior, tree.legal_actions, tree.num_legal, tree.visits, tree.virtual,
                tree.value_sum, tree.reward, tree.terminal, tree.exact, tree.parent, tree.num_nodes, tree.qmin,
                tree.qmax, 1.25, 0.95, False, False, 3, score, target, *out, 0.0, tree.next_outcome,
                         tree.chance, 1)
        assert (out[1] == 0).any()  # new leaves, not only collisions
        outs.append((*out, tree.virtual, tree.children))
    for a, b in zip(*outs):
        assert np.array_equal(a, b)
