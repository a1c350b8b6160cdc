"""The search's numba kernels over the arrays of :class:`tri.search.Tree` (``[B, N, ...]``):
selection with virtual visits (PUCT, UCT, or Gumbel's scheduled root action), gathering a step's
leaves, storing their states, and backing their values up (with the solver's proofs). The loop
that calls them, and the meaning of every array, is :func:`tri.search.search`."""

from __future__ import annotations

import numba as nb
import numpy as np

from tri.chance import edge_q, outcome_to_descend
from tri.gumbel import scheduled_action

UNKNOWN = 2  # Tree.exact: no proven value yet


@nb.njit(cache=True, nogil=True)
def _select_outcomes(children, prior, legal_actions, num_legal, visits, virtual, value_sum, reward, terminal,
                     exact, parent, num_nodes, qmin, qmax, c_puct, discount, two_player, solver, leaves,
                     root_score, root_target, out_leaf, out_kind, out_action, ucb, next_outcome, chance,
                     outcomes):
    """Descend every tree ``leaves`` times; for each ``(b, k)`` write the leaf node to
    ``out_leaf[b, k]`` and its kind to ``out_kind[b, k]``: 0 = a new node to evaluate (already
    linked to its parent, by the action written to ``out_action[b, k]``), 1 = an existing terminal
    node (or, with ``solver``, a proven one below the root), 2 = nothing (tree full or collision),
    3 = a new outcome of a chance edge (as 0, but its parent's state is to be stepped on a fresh
    chance stream).
    Chance nodes (:mod:`tri.chance`): an edge's visits and action value are its outcomes'
    combined (``next_outcome [B, N]`` links them); with ``outcomes > 1`` a descent through an edge
    whose first outcome has ``chance [B, N]`` set (its step drew new shapes) adds a new outcome
    or goes to the least visited one (:func:`tri.chance.outcome_to_descend`).
    Every node on a selected path gets a virtual visit, undone by :func:`_backup`.
    Gumbel root: ``root_target[b, k] >= 0`` makes descent ``k`` of tree ``b`` take, at the root,
    the legal action with the best ``root_score [B, A]`` among those whose visits (virtual ones
    included, so the leaves of one step spread as sequential halving schedules them) equal the
    target; if none has, the best among the most visited. ``root_target [B, K]`` is -1 for PUCT.
    ``ucb > 0``: plain UCT instead of PUCT (two-player): an unvisited legal action first (the
    lowest), else the largest ``(1 + Q) / 2 + ucb * sqrt(ln N / n)`` (priors only mark legality).
    A node's actions are visited through its legal actions' list (``legal_actions``, the first
    ``num_legal`` of its row; -1: no list, its whole ``prior`` row is scanned), in increasing order."""
    B, N, A = children.shape
    virtual_value = 1.0 if two_player else 0.0  # pessimistic for the parent
    for b in range(B):
        for k in range(leaves):
            out_kind[b, k] = 2
            out_leaf[b, k] = -1
            node = 0
            while True:
                virtual[b, node] += 1
                if terminal[b, node] or (solver and node != 0 and exact[b, node] != UNKNOWN):
                    out_leaf[b, k] = node
                    out_kind[b, k] = 1
                    break
                if prior[b, node, 0] == -2.0:  # created this step, not evaluated yet: collision
                    break
                if node == 0 and root_target[b, k] >= 0:
                    best_a = scheduled_action(children, next_outcome, prior, legal_actions, num_legal, visits,
                                              virtual, root_score, b, root_target[b, k])
                else:
                    parent_n = visits[b, node] + virtual[b, node] - 1
                    sqrt_n = np.sqrt(max(parent_n, 1))
                    own = value_sum[b, node] / visits[b, node] if visits[b, node] > 0 else 0.0
                    spread = qmax[b] - qmin[b]
                    # An unvisited action's q is the node's own value: normalised once per node.
                    own_q = own
                    if not two_player:
                        own_q = (own - qmin[b]) / spread if spread > 1e-12 else 0.5
                    best, best_a = -np.inf, -1
                    listed = num_legal[b, node] >= 0
                    for j in range(num_legal[b, node] if listed else A):
                        a = np.int64(legal_actions[b, node, j]) if listed else j
                        p = prior[b, node, a]
                        if p < 0:
                            continue
                        c = children[b, node, a]
                        if solver and c >= 0 and exact[b, c] != UNKNOWN:
                            proven = reward[b, c] - exact[b, c]
                            if proven >= 1.0:  # a proven win: take it
                                best, best_a = np.inf, a
                                break
                            if proven <= -1.0:  # a proven loss: only if nothing else is left
                                if best == -np.inf:
                                    best, best_a = -1e300, a
                                continue
                        n_a = 0
                        if c >= 0:
                            n_a, q = edge_q(next_outcome, visits, virtual, value_sum, reward, b, c,
                                            virtual_value, two_player, discount)
                        if n_a > 0:
                            if not two_player:
                                q = (q - qmin[b]) / spread if spread > 1e-12 else 0.5
                        else:
                            q = own_q
                        if ucb > 0:
                            score = 1e9 - a if n_a == 0 else \
                                0.5 * (1.0 + q) + ucb * np.sqrt(np.log(max(parent_n, 1)) / n_a)
                        else:
                            score = q + c_puct * p * sqrt_n / (1 + n_a)
                        if score > best:
                            best, best_a = score, a
                    if best_a < 0:  # no legal action: treat as terminal
                        out_leaf[b, k] = node
                        out_kind[b, k] = 1
                        break
                c = children[b, node, best_a]
                if c >= 0 and outcomes > 1 and chance[b, c]:
                    c, last = outcome_to_descend(next_outcome, visits, virtual, b, c, outcomes,
                                                 num_nodes[b] < N)
                    if c < 0:  # a new outcome of the chance edge, after the last
                        c = num_nodes[b]
                        num_nodes[b] += 1
                        next_outcome[b, last] = c
                        chance[b, c] = True
                        parent[b, c] = node
                        prior[b, c, 0] = -2.0
                        virtual[b, c] += 1
                        out_leaf[b, k] = c
                        out_kind[b, k] = 3
                        out_action[b, k] = best_a
                        break
                if c < 0:
                    if num_nodes[b] >= N:
                        break
                    c = num_nodes[b]
                    num_nodes[b] += 1
                    children[b, node, best_a] = c
                    parent[b, c] = node
                    prior[b, c, 0] = -2.0  # marks "pending" until _backup writes the priors
                    virtual[b, c] += 1
                    out_leaf[b, k] = c
                    out_kind[b, k] = 0
                    out_action[b, k] = best_a
                    break
                node = c
            if out_kind[b, k] == 2:  # undo the virtual visits of an abandoned path
                while node >= 0:
                    virtual[b, node] -= 1
                    node = parent[b, node]


@nb.njit(cache=True, nogil=True)
def _leaves(states, parent, out_leaf, out_kind, out_action):
    """The selected leaves of :func:`_select_outcomes`'s ``out_* [B, K]``, in ``(b, k)`` order: the new
    ones as ``(tree [M] int64, node [M] int64, action [M] int64, parent's state [M, L], fresh [M]
    bool)`` (``fresh``: a new outcome of a chance edge, to step on a fresh chance stream), then the
    terminal (or proven) ones as ``(tree [T] int64, node [T] int64)``."""
    B, K = out_kind.shape
    m = t = 0
    for b in range(B):
        for k in range(K):
            if out_kind[b, k] == 0 or out_kind[b, k] == 3:
                m += 1
            elif out_kind[b, k] == 1:
                t += 1
    new_b, new_node, action = np.empty(m, np.int64), np.empty(m, np.int64), np.empty(m, np.int64)
    parent_states = np.empty((m, states.shape[2]), states.dtype)
    fresh = np.zeros(m, np.bool_)
    term_b, term_node = np.empty(t, np.int64), np.empty(t, np.int64)
    m = t = 0
    for b in range(B):
        for k in range(K):
            if out_kind[b, k] == 0 or out_kind[b, k] == 3:
                node = out_leaf[b, k]
                new_b[m], new_node[m], action[m] = b, node, out_action[b, k]
                parent_states[m] = states[b, parent[b, node]]
                fresh[m] = out_kind[b, k] == 3
                m += 1
            elif out_kind[b, k] == 1:
                term_b[t], term_node[t] = b, out_leaf[b, k]
                t += 1
    return new_b, new_node, action, parent_states, fresh, term_b, term_node


@nb.njit(cache=True, nogil=True)
def _store(states, reward, terminal, exact, chance, new_b, new_node, step_states, step_reward, step_terminal,
           step_chance, step_after, rows):
    """Write the new leaves' states, rewards and terminal flags (a terminal one's exact value is 0)
    into the trees, ``chance [B, N]`` where ``step_chance [M]`` says a step drew from the chance
    stream, and ``rows [M]``: each leaf's row among the ones to evaluate (in that order), -1 for a
    terminal one. ``step_after [M]`` (``mcts.afterstates``) marks afterstate leaves: evaluated
    (on the state before the draw, whatever the draw did, game over included), then stopped at
    like a terminal node, with no exact value: a later visit backs up the value it holds
    (:func:`_backup`). Returns how many leaves are to be evaluated."""
    live = 0
    for m in range(new_b.shape[0]):
        b, node = new_b[m], new_node[m]
        states[b, node] = step_states[m]
        chance[b, node] = chance[b, node] or step_chance[m]
        reward[b, node] = step_reward[m]
        ended = step_terminal[m] and not step_after[m]
        terminal[b, node] = step_terminal[m] or step_after[m]
        exact[b, node] = 0 if ended else UNKNOWN
        if ended:
            rows[m] = -1
        else:
            rows[m] = live
            live += 1
    return live


@nb.njit(cache=True, nogil=True)
def _backup_path(prior, visits, virtual, value_sum, reward, exact, children, parent, qmin, qmax, b, node, g,
                 discount, two_player, solver):
    """Add the leaf value ``g`` (from the side to move at ``node``) to every node of the path from
    ``node`` up, converted at each edge to the parent's point of view; remove the path's virtual
    visits; widen ``qmin/qmax`` to each edge's updated mean action value; with ``solver``, a leaf
    with an exact value proves what it can of its ancestors (:func:`_prove`)."""
    proving = solver and exact[b, node] != UNKNOWN
    while node >= 0:
        visits[b, node] += 1
        virtual[b, node] -= 1
        value_sum[b, node] += g
        p = parent[b, node]
        if p >= 0:
            # The normalisation range follows the edges' mean action values (as MuZero).
            v = value_sum[b, node] / visits[b, node]
            q = reward[b, node] - v if two_player else reward[b, node] + discount * v
            qmin[b] = min(qmin[b], q)
            qmax[b] = max(qmax[b], q)
            g = reward[b, node] - g if two_player else reward[b, node] + discount * g
            if proving:
                proving = _prove(prior, reward, exact, children, b, p)
        node = p


@nb.njit(cache=True, nogil=True)
def _backup(prior, legal_actions, num_legal, visits, virtual, value_sum, reward, terminal, exact, children, parent,
            qmin, qmax, new_b, new_node, rows, leaf_prior, leaf_legal, leaf_value, term_b, term_node, discount,
            two_player, solver):
    """Back up one step's leaves, the new ones first, then the terminal (or proven) ones
    (:func:`_backup_path`). A new leaf with ``rows[m] >= 0`` was evaluated as row ``rows[m]`` of
    ``leaf_prior``, ``leaf_legal [E, A]`` and ``leaf_value [E]``: its priors are written (illegal ->
    -1) with the list of its legal actions (``legal_actions``, ``num_legal``), and its value backed
    up; a terminal one (``rows[m] < 0``) gets no priors (an empty list) and backs up 0. An existing
    terminal leaf backs up 0, an afterstate (terminal, no exact value: :func:`_store`) its own
    mean value, a proven one its exact value (its priors set to -1, its list emptied: selection
    stops at it)."""
    A = prior.shape[2]
    for m in range(new_b.shape[0]):
        b, node, r = new_b[m], new_node[m], rows[m]
        if r >= 0:
            count = 0
            for a in range(A):
                if leaf_legal[r, a]:
                    prior[b, node, a] = leaf_prior[r, a]
                    legal_actions[b, node, count] = a
                    count += 1
                else:
                    prior[b, node, a] = -1.0
            num_legal[b, node] = count
            g = np.float64(leaf_value[r])
        else:
            for a in range(A):
                prior[b, node, a] = -1.0
            num_legal[b, node] = 0
            g = 0.0
        _backup_path(prior, visits, virtual, value_sum, reward, exact, children, parent, qmin, qmax, b, node, g,
                     discount, two_player, solver)
    for m in range(term_b.shape[0]):
        b, node = term_b[m], term_node[m]
        if not terminal[b, node] or prior[b, node, 0] == -2.0:  # a proven node's priors are done with
            for a in range(A):
                prior[b, node, a] = -1.0
            num_legal[b, node] = 0
        if exact[b, node] != UNKNOWN:
            g = np.float64(exact[b, node])
        elif terminal[b, node] and visits[b, node] > 0:  # an afterstate: its value again
            g = value_sum[b, node] / visits[b, node]
        else:
            g = 0.0
        _backup_path(prior, visits, virtual, value_sum, reward, exact, children, parent, qmin, qmax, b, node, g,
                     discount, two_player, solver)


@nb.njit(cache=True, nogil=True)
def _prove(prior, reward, exact, children, b, node):
    """Try to give ``node`` an exact value from its children's (two-player: a child's move is
    worth ``reward - exact`` to the node's side to move): a proven win among them proves the
    node won; otherwise every legal move proven proves the best of them. True if it did."""
    if exact[b, node] != UNKNOWN or prior[b, node, 0] == -2.0:
        return False
    best, complete = -np.inf, True
    for a in range(prior.shape[2]):
        if prior[b, node, a] < 0:
            continue
        c = children[b, node, a]
        if c < 0 or exact[b, c] == UNKNOWN:
            complete = False
            continue
        q = reward[b, c] - exact[b, c]
        if q >= 1.0:
            exact[b, node] = 1
            return True
        best = max(best, q)
    if complete and best > -np.inf:
        exact[b, node] = np.int8(round(best))
        return True
    return False


@nb.njit(cache=True, nogil=True)
def _list_legal(legal, legal_actions, num_legal):
    """``legal_actions [B, A]`` and ``num_legal [B]`` <- each row of ``legal [B, A]``'s legal
    actions, in increasing order (the roots' lists: :func:`_backup` writes the other nodes')."""
    for b in range(legal.shape[0]):
        count = 0
        for a in range(legal.shape[1]):
            if legal[b, a]:
                legal_actions[b, count] = a
                count += 1
        num_legal[b] = count
