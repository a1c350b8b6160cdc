"""Fatal draws of the triangle puzzle: can a hand be placed, and how likely is the next draw to be
one that cannot (numba, over packed boards).

A game of the puzzle ends only when no shape in hand fits (``../shared/triangle-rules.md``). A
hand of ``S`` shapes is **placeable** on a board when some order of its shapes and some placement
of each, every line clear applied as it happens, places all of them: an exhaustive search over
orders and placements (:func:`placeable`). A **fatal draw** is a refill that is not placeable on
the board it lands on; the **fatal chance** of a board with empty slots (an afterstate,
:meth:`~tri.games.triangle.game.TriangleGame.afterstate`) is the probability that the next refill
is one: every multiset of ``S`` shapes the templates can draw, weighted by its exact probability
(:func:`draw_table`), tried exhaustively (:func:`fatal_chance`). Whether the refill itself can then
be followed by the next is not asked: the chance is of dying within the next cycle, not later.
The boards a hand can end its cycle on, over every order and placement, are :func:`cycle_ends`
(the engine's batched step, one level at a time, :func:`cycle_level`: a planner's view of one
cycle, shared with :mod:`tri.plan`).

What it answers (``tri eval deaths``, :mod:`tri.evaluate.deaths`): did a player die because the
cycle's shapes could not be placed at all (a fatal draw), or because it placed them badly; how
much risk its boards carried before the end.

Cost: an open board (chance 0) takes well under a millisecond, since each hand's first order and
placements succeed; a cramped one, where many hands fail and every order and placement is tried,
up to tens of milliseconds (2 cores, AVX2).

numba's on-disk cache of these kernels is keyed by this file only: after editing
:mod:`tri.games.triangle.kernels` (whose ``_fit`` they call), delete the ``*.nbi``/``*.nbc`` files
of ``tri/games/triangle/__pycache__`` or these run the old code.
"""

from __future__ import annotations

import itertools
from collections import Counter
from math import factorial
from typing import NamedTuple

import numba as nb
import numpy as np
from numba.cpython.unsafe.numbers import trailing_zeros

from tri.games.triangle import kernels as K

_ONE = np.uint64(1)


def draw_table(template_ids: np.ndarray, num_slots: int) -> tuple[np.ndarray, np.ndarray]:
    """Every refill the templates can draw, as ``(hands [M, S] int64, weights [M] float64)``: each
    multiset of ``S = num_slots`` shape ids once (ids sorted within a row), its probability under
    ``S`` uniform draws from ``template_ids [N]`` (the engine's draw: duplicate templates weigh
    their shape more), the likeliest first. The weights sum to 1. Default rules: 23 shapes, ``M`` = 2,300."""
    ids = np.asarray(template_ids).tolist()
    counts = sorted(Counter(ids).items())  # (shape id, templates drawing it)
    n = len(ids)
    hands, weights = [], []
    for combo in itertools.combinations_with_replacement(range(len(counts)), num_slots):
        orders = factorial(num_slots)
        for repeat in Counter(combo).values():
            orders //= factorial(repeat)
        w = float(orders)
        for i in combo:
            w *= counts[i][1]
        hands.append([counts[i][0] for i in combo])
        weights.append(w / n**num_slots)
    order = np.argsort(-np.array(weights), kind="stable")  # the likeliest first
    return np.array(hands, np.int64).reshape(-1, num_slots)[order], np.array(weights, np.float64)[order]


@nb.njit(cache=True, nogil=True, inline="always")
def _anchors(board, k, playable, anchors, offsets, sizes, empty, pad, out):
    """``out <-`` the anchors (flat cells) where shape ``k`` fits on ``board [W]``; returns the count."""
    W = playable.shape[0]
    for j in range(W):
        empty[pad + j] = playable[j] & ~board[j]
    count = 0
    for i in range(W):
        w = K._fit(empty, pad, k, i, anchors, offsets, sizes)
        while w:
            out[count] = i * 64 + trailing_zeros(w)
            count += 1
            w &= w - _ONE
    return count


@nb.njit(cache=True, nogil=True, inline="always")
def _fits(board, k, playable, anchors, offsets, sizes, empty, pad):
    """Whether shape ``k`` fits anywhere on ``board [W]``."""
    W = playable.shape[0]
    for j in range(W):
        empty[pad + j] = playable[j] & ~board[j]
    for i in range(W):
        if K._fit(empty, pad, k, i, anchors, offsets, sizes) != 0:
            return True
    return False


@nb.njit(cache=True, nogil=True, inline="always")
def _place(board, k, a, masks, place_lines, line_words, out, full):
    """``out [W] <-`` ``board [W]`` with shape ``k`` placed at anchor ``a`` and every line it
    completes cleared (``full [W]``: scratch)."""
    W = board.shape[0]
    for i in range(W):
        out[i] = board[i] | masks[k, a, i]
    K.full_lines(out, k, a, place_lines, line_words, full)
    for i in range(W):
        out[i] &= ~full[i]


@nb.njit(cache=True, nogil=True)
def _scratch(tab, S):
    """The buffers :func:`_placeable` works in, for hands of up to ``S`` shapes: ``(st [S + 1, W]``
    the board at each level, ``full [W]``, ``used``, ``slot``, ``cnt``, ``idx [S + 1]``, ``anc
    [S + 1, n]``, ``empty``, ``pad)`` (the last two :func:`kernels._empty_buffer`'s)."""
    playable, offsets, masks = tab[0], tab[2], tab[4]
    W, n = playable.shape[0], masks.shape[1]
    empty, pad = K._empty_buffer(playable, offsets)
    return (np.zeros((S + 1, W), np.uint64), np.zeros(W, np.uint64), np.zeros(S + 1, np.int64),
            np.zeros(S + 1, np.int64), np.zeros(S + 1, np.int64), np.zeros(S + 1, np.int64),
            np.zeros((S + 1, n), np.int64), empty, pad)


@nb.njit(cache=True, nogil=True)
def _placeable(board, hand, tab, scratch):
    """Whether every shape of ``hand [S]`` (shape ids ascending, -1 for none, last) can be placed
    on ``board [W]`` in some order: a depth-first search without recursion, one level per shape
    placed (``st`` the board at each level, ``slot``/``anc``/``cnt``/``idx`` the shape and the
    anchors tried there, ``used`` the shapes placed above; :func:`_scratch`). Of equal shapes only
    the first unplaced one is tried next: the others would repeat its subtrees."""
    st, full, used, slot, cnt, idx, anc, empty, pad = scratch
    playable, anchors, offsets, sizes, masks = tab[0], tab[1], tab[2], tab[3], tab[4]
    line_words, place_lines = tab[6], tab[11]
    W = playable.shape[0]
    k = 0
    while k < hand.shape[0] and hand[k] >= 0:
        k += 1
    if k == 0:
        return True
    if k == 1:
        return _fits(board, hand[0], playable, anchors, offsets, sizes, empty, pad)
    for i in range(W):
        st[0, i] = board[i]
    d = 0
    used[0] = 0
    slot[0] = -1
    cnt[0] = 0
    idx[0] = 0
    while d >= 0:
        if idx[d] < cnt[d]:  # the next anchor of this level's shape
            a = anc[d, idx[d]]
            idx[d] += 1
            _place(st[d], hand[slot[d]], a, masks, place_lines, line_words, st[d + 1], full)
            placed = used[d] | (1 << slot[d])
            if d + 2 == k:  # one shape left: it fits or this placement fails
                last = 0
                while (placed >> last) & 1:
                    last += 1
                if _fits(st[d + 1], hand[last], playable, anchors, offsets, sizes, empty, pad):
                    return True
                continue
            d += 1
            used[d] = placed
            slot[d] = -1
            cnt[d] = 0
            idx[d] = 0
            continue
        s = slot[d] + 1  # this level's next shape to place first
        while s < k and ((used[d] >> s) & 1 or (s > 0 and hand[s] == hand[s - 1] and not (used[d] >> (s - 1)) & 1)):
            s += 1
        if s >= k:
            d -= 1
            continue
        slot[d] = s
        cnt[d] = _anchors(st[d], hand[s], playable, anchors, offsets, sizes, empty, pad, anc[d])
        idx[d] = 0
    return False


@nb.njit(cache=True, nogil=True)
def placeable_batch(boards, hands, tab, out):
    """``out[B] <-`` whether ``hands[b]`` (``[B, S]`` shape ids, -1 for none) can all be placed on
    ``boards[b]`` (``[B, W]``)."""
    scratch = _scratch(tab, hands.shape[1])
    S = hands.shape[1]
    hand = np.zeros(S, np.int64)
    for b in range(boards.shape[0]):
        m = 0
        for s in range(S):  # the hand's shapes ascending, -1 after them
            if hands[b, s] >= 0:
                hand[m] = hands[b, s]
                m += 1
        for s in range(m, S):
            hand[s] = -1
        hand[:m].sort()
        out[b] = _placeable(boards[b], hand, tab, scratch)


@nb.njit(cache=True, nogil=True)
def fatal_chance_batch(boards, hands, weights, tab, least, out):
    """``out[B] <-`` the summed ``weights [M]`` of the ``hands [M, S]`` (ascending, as
    :func:`draw_table`'s) that cannot all be placed on ``boards[b]`` (``[B, W]``). ``least``: only
    the smallest of ``out`` is wanted, so a board stops as soon as its sum passes the smallest so
    far (its ``out`` is then a lower bound above it); the hands heaviest first make that soon."""
    scratch = _scratch(tab, hands.shape[1])
    best = np.inf
    for b in range(boards.shape[0]):
        dead = 0.0
        for m in range(hands.shape[0]):
            if not _placeable(boards[b], hands[m], tab, scratch):
                dead += weights[m]
                if least and dead > best:
                    break
        out[b] = dead
        best = min(best, dead)


def placeable(game, boards: np.ndarray, hands: np.ndarray) -> np.ndarray:
    """``[B] bool``: whether every shape of ``hands [B, S]`` (shape ids, -1 for an empty slot) can
    be placed on the boards of ``boards [B, L]`` (states; only their board words are read)."""
    w = game.geometry.num_words
    out = np.zeros(boards.shape[0], np.bool_)
    placeable_batch(np.ascontiguousarray(boards[:, :w], dtype=np.uint64),
                    np.ascontiguousarray(hands, dtype=np.int64), game.tab, out)
    return out


def hands_of(game, states: np.ndarray) -> np.ndarray:
    """``[B, S]`` shape ids in the slots of ``states [B, L]`` (-1 for an empty slot)."""
    w = game.geometry.num_words
    return states[:, w + 2:].astype(np.int64) - 1


class CycleLevel(NamedTuple):
    """One level of a cycle's walk (:func:`cycle_level`): ``states [M, L]`` after each move,
    ``reward [M]``, ``hands [M, S]`` the shapes left (sorted; 0 = an empty slot), ``ended [M]``
    the slots are empty (the cycle's end: an afterstate's board), ``dead [M]`` shapes are left
    but the game is over (they no longer fit), ``open [M]`` neither (the walk goes on)."""

    states: np.ndarray
    reward: np.ndarray
    hands: np.ndarray
    ended: np.ndarray
    dead: np.ndarray
    open: np.ndarray


def cycle_level(game, states: np.ndarray, actions: np.ndarray) -> CycleLevel:
    """``actions [M]`` played on ``states [M, L]`` with nothing drawn (refills of -1: a move that
    empties the slots leaves them empty, so no draw is made or read), split into the cycle's
    ends, dead ways and open positions (:class:`CycleLevel`)."""
    t = game.step(states, actions, np.full((states.shape[0], game.num_slots), -1, np.int32))
    hands = np.sort(t.states[:, game.geometry.num_words + 2:], axis=1)
    ended = ~(hands != 0).any(axis=1)
    return CycleLevel(t.states, t.reward, hands, ended, ~ended & t.terminal, ~ended & ~t.terminal)


def cycle_ends(game, start: np.ndarray) -> np.ndarray:
    """``[E, L]``: every distinct board (slots empty) that placing all the shapes in hand of
    ``start [L]`` can end on, over every order and placement, line clears applied (in the order
    they are first reached); ``[0, L]`` when none places them all."""
    w = game.geometry.num_words
    nodes, ends = start[None], [np.zeros((0, start.shape[0]), np.uint64)]
    while nodes.shape[0]:
        rows, actions = np.nonzero(game.legal(nodes))
        level = cycle_level(game, nodes[rows], actions)
        ends.append(level.states[level.ended])
        nodes = level.states[level.open]
        _, first = np.unique(np.concatenate([nodes[:, :w], level.hands[level.open]], axis=1), axis=0,
                             return_index=True)
        nodes = nodes[np.sort(first)]
    ends = np.concatenate(ends)
    _, first = np.unique(ends[:, :w], axis=0, return_index=True)
    return game.afterstate(ends[np.sort(first)])


def fatal_chance(game, boards: np.ndarray, table: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """``[B] float64``: the probability that the next refill cannot be placed on each board of
    ``boards [B, L]`` (states; their slots are ignored, as at an afterstate). ``table``: a
    :func:`draw_table` of ``game``'s templates, to reuse across calls."""
    hands, weights = table if table is not None else draw_table(game.template_ids, game.num_slots)
    w = game.geometry.num_words
    out = np.zeros(boards.shape[0], np.float64)
    fatal_chance_batch(np.ascontiguousarray(boards[:, :w], dtype=np.uint64), hands, weights, game.tab, False, out)
    return out


def least_fatal_chance(game, boards: np.ndarray, table: tuple[np.ndarray, np.ndarray] | None = None) -> float:
    """The smallest :func:`fatal_chance` of ``boards [B, L]`` (``B >= 1``), found without finishing
    the boards that are already riskier than the best so far."""
    hands, weights = table if table is not None else draw_table(game.template_ids, game.num_slots)
    w = game.geometry.num_words
    out = np.zeros(boards.shape[0], np.float64)
    fatal_chance_batch(np.ascontiguousarray(boards[:, :w], dtype=np.uint64), hands, weights, game.tab, True, out)
    return float(out.min())
