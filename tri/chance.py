"""Chance nodes in the search tree (``mcts.chance_outcomes``): the outcomes of a chance edge and
their combined statistics, for the kernels of :mod:`tri.search_kernels` and the Gumbel root
(:mod:`tri.gumbel`). The scheme is described in :mod:`tri.search` ("Chance nodes").

An edge ``(n, a)`` leads to its first outcome ``children[b, n, a]``; ``next_outcome [B, N]``
links an outcome to the next one of the same edge (-1: the last; every edge without chance has
one outcome, its child). Every outcome's ``parent`` is ``n``, so the backup needs nothing new.
The edge's visits are its outcomes' summed, and its action value their visit-weighted mean:
``Q(n, a) = sum_i n_i * q_i / sum_i n_i`` with ``q_i`` an outcome's own (``reward + discount * V``,
or ``reward - V`` for two players). An edge with one outcome keeps the single-child arithmetic
bit for bit, so a search without chance nodes gives the numbers it always gave.

numba's on-disk cache of a kernel that calls these (:func:`tri.search_kernels._select_outcomes`,
:func:`tri.gumbel.root_scores`) is keyed by its own file only: after editing this module alone,
delete the ``*.nbi``/``*.nbc`` files of ``tri/__pycache__`` or the callers run the old code.
"""

from __future__ import annotations

import numba as nb
import numpy as np


@nb.njit(cache=True, nogil=True)
def edge_visits(next_outcome, visits, virtual, b, c):
    """``visits + virtual`` summed over the outcomes of the edge whose first outcome is node ``c``
    of tree ``b`` (``visits``, ``virtual``, ``next_outcome [B, N]``); 0 for ``c < 0``."""
    n = 0
    while c >= 0:
        n += visits[b, c] + virtual[b, c]
        c = next_outcome[b, c]
    return n


@nb.njit(cache=True, nogil=True)
def edge_q(next_outcome, visits, virtual, value_sum, reward, b, c, virtual_value, two_player, discount):
    """``(n, q)`` of the edge whose first outcome is node ``c >= 0``, pending visits included (each
    worth ``virtual_value`` to the outcome's side to move): ``n`` its outcomes' ``visits +
    virtual`` summed, ``q`` their visit-weighted mean action value (0 when ``n == 0``)."""
    if next_outcome[b, c] < 0:  # one outcome: the single child's arithmetic, as ever
        n = visits[b, c] + virtual[b, c]
        if n == 0:
            return 0, 0.0
        v = (value_sum[b, c] + virtual[b, c] * virtual_value) / n
        return n, (reward[b, c] - v if two_player else reward[b, c] + discount * v)
    total, weighted = 0, 0.0
    while c >= 0:
        n = visits[b, c] + virtual[b, c]
        if n > 0:
            v = (value_sum[b, c] + virtual[b, c] * virtual_value) / n
            q = reward[b, c] - v if two_player else reward[b, c] + discount * v
            total += n
            weighted += n * q
        c = next_outcome[b, c]
    return total, (weighted / total if total > 0 else 0.0)


@nb.njit(cache=True, nogil=True)
def backed_edge(next_outcome, visits, value_sum, reward, b, c, two_player, discount):
    """``(n, q)`` of the edge whose first outcome is node ``c`` (-1: none, ``(0, 0.0)``) from the
    backed-up visits only (no pending ones): the Gumbel root's numbers (:func:`root_edges`)."""
    if c < 0:
        return 0, 0.0
    if next_outcome[b, c] < 0:
        n = visits[b, c]
        if n == 0:
            return 0, 0.0
        v = value_sum[b, c] / n
        r = np.float64(reward[b, c])
        return n, (r - v if two_player else r + discount * v)
    total, weighted = 0, 0.0
    while c >= 0:
        n = visits[b, c]
        if n > 0:
            v = value_sum[b, c] / n
            r = np.float64(reward[b, c])
            total += n
            weighted += n * (r - v if two_player else r + discount * v)
        c = next_outcome[b, c]
    return total, (weighted / total if total > 0 else 0.0)


@nb.njit(cache=True, nogil=True)
def root_edges(children, next_outcome, visits, value_sum, reward, two_player, discount, out_n, out_q):
    """``out_n [B, A]`` int64 and ``out_q [B, A]`` float64 <- :func:`backed_edge` of every root
    edge (``children [B, N, A]``; 0 and 0.0 where unvisited): the root's visits and mean action
    values, combined over the edges' outcomes."""
    B, A = out_n.shape
    for b in range(B):
        for a in range(A):
            out_n[b, a], out_q[b, a] = backed_edge(next_outcome, visits, value_sum, reward, b,
                                                   children[b, 0, a], two_player, discount)
    return out_n, out_q


@nb.njit(cache=True, nogil=True)
def outcome_to_descend(next_outcome, visits, virtual, b, c, outcomes, room):
    """Where a descent through the chance edge whose first outcome is ``c`` goes: ``(-1, last)``
    to add a new outcome after ``last`` (progressive widening: while the edge has ``k < outcomes``
    outcomes and ``k * k <= N``, ``N`` its visits, pending ones included, so outcome ``k + 1``
    comes on the visit after the ``k**2``-th, and ``room`` says the tree has a free node), else
    ``(node, -1)``: the outcome with the fewest visits (pending included; ties: the first)."""
    k, total, least, least_n, last = 0, 0, -1, np.iinfo(np.int64).max, c
    while c >= 0:
        n = visits[b, c] + virtual[b, c]
        k += 1
        total += n
        if n < least_n:
            least, least_n = c, n
        last = c
        c = next_outcome[b, c]
    if room and k < outcomes and k * k <= total:
        return -1, last
    return least, -1
