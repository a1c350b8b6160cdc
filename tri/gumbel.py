"""Gumbel root selection (Danihelka et al., "Policy improvement by planning with Gumbel", 2022).

At the root, instead of PUCT: sample Gumbel noise ``g(a)`` (none in evaluation), consider the
``m`` actions with the largest ``g(a) + logit(a)``, and spend the simulations by **sequential
halving**: every considered action is visited equally, then the better half by
``g + logit + sigma(q)`` is kept, and so on. The move is the last action standing, and the policy
target is ``softmax(logit + sigma(completed q))`` over legal actions, where an unvisited action's
``q`` is completed by the mixed value estimate. This improves the policy even with few
simulations, where visit counts are a poor target. Below the root the search stays PUCT.

Arrays are ``[B, A]`` over the root's children; ``sigma(q) = (c_visit + max_b N(b)) * c_scale * q``
with ``q`` normalised to ``[0, 1]``.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numba as nb
import numpy as np

from tri.chance import backed_edge, edge_visits, root_edges


@lru_cache(maxsize=256)
def considered_visits(num_considered: int, simulations: int) -> tuple[int, ...]:
    """For each simulation, the visit count the root action it visits must have (mctx's table):
    a schedule of sequential halving over ``num_considered`` actions."""
    if num_considered <= 1:
        return tuple(range(simulations))
    log2max = int(math.ceil(math.log2(num_considered)))
    sequence: list[int] = []
    visits = [0] * num_considered
    considered = num_considered
    while len(sequence) < simulations:
        extra = max(1, int(simulations / (log2max * considered)))
        for _ in range(extra):
            sequence.extend(visits[:considered])
            for i in range(considered):
                visits[i] += 1
        considered = max(2, considered // 2)
    return tuple(sequence[:simulations])


# A schedule is a tuple of Python ints: an 8-byte reference and a 32-byte int object per entry
# kept, and about 24 more per entry while it is built (measured with tracemalloc).
_TABLE_ENTRY_BYTES = 40
_TABLE_BUILD_BYTES = 24


def root_bytes(batch: int, simulations: int, num_actions: int, considered: int) -> int:
    """Bytes of one search's :class:`GumbelRoot` over ``batch`` roots: its ``[B, A]`` arrays
    (logits, noise, their sum and the prior float64, legal, a dozen float64 temporaries per
    step), its ``[B, simulations]`` int64 schedule, and the :func:`considered_visits` tuples it
    is made from, ``simulations`` entries each, one per distinct number of considered actions (at
    most ``min(batch, considered, num_actions)``; cached)."""
    tables = min(batch, considered, num_actions)
    arrays = batch * num_actions * (4 * 8 + 1 + 12 * 8) + batch * simulations * 8
    return arrays + simulations * (tables * _TABLE_ENTRY_BYTES + _TABLE_BUILD_BYTES)


class GumbelRoot:
    """Root bookkeeping of one batched search (``B`` roots)."""

    def __init__(self, priors: np.ndarray, legal: np.ndarray, values: np.ndarray, rng: np.random.Generator,
                 *, noise: bool, considered: int, simulations: int, c_visit: float, c_scale: float,
                 two_player: bool, discount: float):
        self.legal = legal
        self.logits = np.where(legal, np.log(np.maximum(priors, 1e-12)), -np.inf)
        self.gumbel = rng.gumbel(size=legal.shape) if noise else np.zeros(legal.shape)
        # Fixed for the whole search, so computed once (the same arithmetic as per step):
        self.noisy_logits = self.gumbel + self.logits  # g + logit, the first terms of every score
        probs = np.exp(self.logits - self.logits.max(axis=1, keepdims=True))
        probs /= probs.sum(axis=1, keepdims=True)
        self.probs = probs  # the prior, completing q
        self.root_value = values.astype(np.float64)
        self.c_visit, self.c_scale = c_visit, c_scale
        self.two_player, self.discount = two_player, discount
        m = np.minimum(legal.sum(axis=1), considered)
        tables = [considered_visits(int(k), simulations) for k in m]
        # [B, simulations]: the schedules as one array, for targets() to slice
        self.schedule = np.array([t if t else (0,) * simulations for t in tables], np.int64).reshape(
            len(tables), simulations)

    def _root_q(self, tree) -> tuple[np.ndarray, np.ndarray]:
        """``(visits [B, A], normalised completed q [B, A])`` of the root's children."""
        children = tree.children[:, 0]
        idx = np.maximum(children, 0)
        if (np.take_along_axis(tree.next_outcome, idx, axis=1)[children >= 0] >= 0).any():
            # Chance nodes: an edge's visits and q combine its outcomes' (tri.chance)
            visits, q = root_edges(tree.children, tree.next_outcome, tree.visits, tree.value_sum, tree.reward,
                                   self.two_player, self.discount, np.zeros(children.shape, np.int64),
                                   np.zeros(children.shape))
        else:
            visits = np.where(children >= 0, np.take_along_axis(tree.visits, idx, axis=1), 0)
            value_sum = np.take_along_axis(tree.value_sum, idx, axis=1)
            reward = np.take_along_axis(tree.reward, idx, axis=1).astype(np.float64)
            v = np.divide(value_sum, visits, out=np.zeros(visits.shape), where=visits > 0)
            q = reward - v if self.two_player else reward + self.discount * v
        visited = visits > 0
        # Completed q: unvisited actions get the mixed value (network value and visited q's,
        # weighted by the prior), as in mctx.
        probs = self.probs
        weight = (probs * visited).sum(axis=1)
        weighted_q = np.divide((probs * np.where(visited, q, 0)).sum(axis=1), weight,
                               out=np.zeros(weight.shape), where=weight > 0)
        total = visits.sum(axis=1)
        mixed = np.where(weight > 0, (self.root_value + total * weighted_q) / (total + 1), self.root_value)
        completed = np.where(visited, q, mixed[:, None])
        if self.two_player:
            normalised = (completed + 1) / 2
        else:
            low, high = tree.qmin[:, None], tree.qmax[:, None]
            low = np.minimum(low, mixed[:, None])
            high = np.maximum(high, mixed[:, None])
            span = high - low
            normalised = np.divide(completed - low, span, out=np.full(completed.shape, 0.5), where=span > 1e-12)
        return visits, np.clip(normalised, 0, 1)

    def _sigma(self, visits: np.ndarray, q: np.ndarray) -> np.ndarray:
        return (self.c_visit + visits.max(axis=1, keepdims=True)) * self.c_scale * q

    def scores(self, tree, out: np.ndarray | None = None) -> np.ndarray:
        """``[B, A] float64``: ``g + logit + sigma(q)`` of the root's actions (``-inf`` where
        illegal), from the visits backed up so far; the search's ``_select_outcomes`` ranks by it.
        Computed by :func:`root_scores` (numba, in ``out`` if given): the numbers
        :meth:`_root_q` and :meth:`_sigma` give, to the bit."""
        out = np.empty(self.legal.shape) if out is None else out
        root_scores(tree.children, tree.next_outcome, tree.visits, tree.value_sum, tree.reward, tree.qmin,
                    tree.qmax, self.legal, tree.legal_actions[:, 0], tree.num_legal[:, 0], self.probs,
                    self.noisy_logits, self.root_value, self.c_visit, self.c_scale, self.two_player,
                    self.discount, out)
        return out

    def targets(self, simulation: int, leaves: int) -> np.ndarray:
        """``[B, leaves] int64``: the visit count the root action of each tree's descents
        ``simulation .. simulation + leaves - 1`` must have (past the schedule: its last entry)."""
        if not self.schedule.shape[1]:
            return np.zeros((len(self.schedule), leaves), np.int64)
        if simulation + leaves <= self.schedule.shape[1]:
            return self.schedule[:, simulation:simulation + leaves]  # a view: no copy per step
        steps = np.minimum(np.arange(simulation, simulation + leaves), self.schedule.shape[1] - 1)
        return self.schedule[:, steps]

    def result(self, tree) -> tuple[np.ndarray, np.ndarray]:
        """``(action [B], policy [B, A])``: the last action standing, and the improved policy."""
        visits, q = self._root_q(tree)
        sigma = self._sigma(visits, q)
        most = visits == visits.max(axis=1, keepdims=True)  # the survivors of the halving
        ranked = np.where(self.legal & most, self.noisy_logits + sigma, -np.inf)
        action = np.argmax(ranked, axis=1).astype(np.int64)
        logits = np.where(self.legal, self.logits + sigma, -np.inf)
        policy = np.exp(logits - logits.max(axis=1, keepdims=True))
        policy /= policy.sum(axis=1, keepdims=True)
        return action, policy.astype(np.float32)


@nb.njit(cache=True, nogil=True)
def scheduled_action(children, next_outcome, prior, legal_actions, num_legal, visits, virtual, root_score, b,
                     target):
    """Sequential halving's root action for tree ``b`` of the search's arrays (``children`` and
    ``prior [B, N, A]``, the root's legal actions' list ``legal_actions [B, N, A]`` and
    ``num_legal [B, N]`` (-1: none, the ``prior`` row is scanned), ``visits``, ``virtual`` and
    ``next_outcome [B, N]``): the best ``root_score [B, A]`` among the legal actions with
    ``target`` visits (pending ones counted, an edge's outcomes summed); else the best among the
    most visited. Called by the search's selection (:func:`tri.search_kernels._select_outcomes`)."""
    listed = num_legal[b, 0] >= 0
    count = num_legal[b, 0] if listed else prior.shape[2]
    best, best_a, most = -np.inf, -1, -1
    for j in range(count):
        a = np.int64(legal_actions[b, 0, j]) if listed else j
        if prior[b, 0, a] < 0:
            continue
        n = edge_visits(next_outcome, visits, virtual, b, children[b, 0, a])
        most = max(most, n)
        if n == target and root_score[b, a] > best:
            best, best_a = root_score[b, a], a
    if best_a < 0:
        for j in range(count):
            a = np.int64(legal_actions[b, 0, j]) if listed else j
            if prior[b, 0, a] < 0:
                continue
            n = edge_visits(next_outcome, visits, virtual, b, children[b, 0, a])
            if n == most and root_score[b, a] > best:
                best, best_a = root_score[b, a], a
    return best_a


@nb.njit(cache=True, nogil=True)
def _block_sum(a, lo, n):
    """``a[lo:lo + n].sum()`` for ``1 <= n <= 128`` as numpy adds a contiguous row, in ``a``'s
    own float type: one by one below 8, else eight partial sums, then the rest one by one."""
    if n < 8:
        res = a[lo]  # numpy starts from 0: the same sum (0 + x is x, but for the sign of a zero)
        for i in range(1, n):
            res += a[lo + i]
        return res
    r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
    r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
    i = 8
    while i < n - (n % 8):
        r0 += a[lo + i]
        r1 += a[lo + i + 1]
        r2 += a[lo + i + 2]
        r3 += a[lo + i + 3]
        r4 += a[lo + i + 4]
        r5 += a[lo + i + 5]
        r6 += a[lo + i + 6]
        r7 += a[lo + i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[lo + i]
        i += 1
    return res


@nb.njit(cache=True, nogil=True)
def _pairwise_sum(a, lo, n, seg_lo, seg_n, stage, sums):
    """``a[lo:lo + n].sum()`` as numpy adds a contiguous float row (pairwise: a row of over 128
    is split in two at a multiple of 8 near its middle, each half summed so, and the two added;
    a shorter one by :func:`_block_sum`), so that :func:`root_scores` gives
    :meth:`GumbelRoot._root_q`'s numbers to the bit. numpy's recursion as a loop over an
    explicit stack (numba's cache cannot hold a recursive function called by another), kept in
    the caller's scratch arrays (``seg_lo``, ``seg_n``, ``stage`` int64 and ``sums`` of ``a``'s type,
    64 entries each: the depth of a row of 2**64) so that a call allocates nothing."""
    if n <= 128:
        return _block_sum(a, lo, n)
    top, nsums = 0, 0
    seg_lo[0], seg_n[0], stage[0] = lo, n, 0
    while top >= 0:
        s_lo, s_n = seg_lo[top], seg_n[top]
        if s_n <= 128:
            sums[nsums] = _block_sum(a, s_lo, s_n)
            nsums += 1
            top -= 1
            continue
        half = s_n // 2
        half -= half % 8
        if stage[top] == 0:  # the left half first
            stage[top] = 1
            top += 1
            seg_lo[top], seg_n[top], stage[top] = s_lo, half, 0
        elif stage[top] == 1:  # then the right
            stage[top] = 2
            top += 1
            seg_lo[top], seg_n[top], stage[top] = s_lo + half, s_n - half, 0
        else:  # both done: left + right
            nsums -= 1
            sums[nsums - 1] = sums[nsums - 1] + sums[nsums]
            top -= 1
    return sums[0]


@nb.njit(cache=True, nogil=True)
def root_scores(children, next_outcome, visits, value_sum, reward, qmin, qmax, legal, legal_actions,
                num_legal, probs, noisy_logits, root_value, c_visit, c_scale, two_player, discount, out):
    """``out [B, A]`` = ``g + logit + sigma(completed q)`` of every root's actions, ``-inf`` where
    illegal (:meth:`GumbelRoot.scores`), from the search's arrays (``children [B, N, A]``,
    ``visits``, ``value_sum``, ``reward``, ``next_outcome [B, N]`` (an edge's outcomes combined:
    :func:`tri.chance.backed_edge`), ``qmin``, ``qmax [B]``), the roots' lists of
    legal actions (``legal_actions [B, A]``, the first ``num_legal [B]`` of each row; -1: no list,
    every action is looked at) and the root's (``legal``, ``probs``, ``noisy_logits [B, A]``,
    ``root_value [B]``): the arithmetic of :meth:`GumbelRoot._root_q` and
    :meth:`GumbelRoot._sigma` in the same order, per tree, with no ``[B, A]`` temporaries."""
    B, A = legal.shape
    n = np.zeros(A, np.int64)
    q = np.zeros(A)
    weighted = np.zeros(A, probs.dtype)  # summed in the prior's own type, as numpy does
    masked = np.zeros(A)  # the scratch rows stay zero but for the listed actions of the row at hand
    seg_lo, seg_n, stage = np.empty(64, np.int64), np.empty(64, np.int64), np.empty(64, np.int64)
    sums32, sums64 = np.empty(64, weighted.dtype), np.empty(64)
    for b in range(B):
        listed = num_legal[b] >= 0
        count = num_legal[b] if listed else A
        total, most = 0, 0
        for j in range(count):
            a = np.int64(legal_actions[b, j]) if listed else j
            n[a], q[a] = backed_edge(next_outcome, visits, value_sum, reward, b, children[b, 0, a],
                                     two_player, discount)
            total += n[a]
            most = max(most, n[a])
            if n[a] > 0:
                weighted[a] = probs[b, a]
                masked[a] = probs[b, a] * q[a]
            else:
                q[a] = 0.0
                weighted[a] = 0
                masked[a] = 0.0
        weight = _pairwise_sum(weighted, 0, A, seg_lo, seg_n, stage, sums32)
        mixed = root_value[b]
        if weight > 0:
            mixed = (root_value[b] + total * (_pairwise_sum(masked, 0, A, seg_lo, seg_n, stage, sums64) / weight)) / (total + 1)
        low, high = min(qmin[b], mixed), max(qmax[b], mixed)
        span = high - low
        scale = (c_visit + most) * c_scale
        if listed:
            out[b] = -np.inf
        for j in range(count):
            a = np.int64(legal_actions[b, j]) if listed else j
            weighted[a], masked[a] = 0, 0.0  # back to zero for the next row
            if not legal[b, a]:
                out[b, a] = -np.inf
                continue
            completed = q[a] if n[a] > 0 else mixed
            if two_player:
                norm = (completed + 1) / 2
            elif span > 1e-12:
                norm = (completed - low) / span
            else:
                norm = 0.5
            norm = min(max(norm, 0.0), 1.0)
            out[b, a] = noisy_logits[b, a] + scale * norm
