"""Compiled kernels of the triangle puzzle (numba), over packed states.

A state is one row of ``uint64`` (``L = W + 2 + S`` words, ``W`` board words, ``S`` slots)::

    [0, W)        occupancy bitboard (bit r*cols + c)
    W             the state's own chance stream (splitmix64 counter) that draws refills
    W + 1         flags: bit 0 = game over
    W + 2 + s     slot s: shape id + 1, or 0 when empty

so copying a state copies ``L`` integers and a batch is one ``[B, L]`` array. Every kernel reads the
shared tables ``tab`` (built once per config by ``triangle.TriangleGame``)::

    tab = (playable [W] u64, anchors [K, W] u64, offsets [K, T] i32, sizes [K] i32,
           masks [K, n, W] u64, cell_lines [n, 3] i32, line_words [L, W] u64,
           template_ids [N] i32, images [K, rows, cols] f32, rewards [4] f64 (placed, cleared,
           alive, illegal), const_planes [2, rows, cols] f32 (playable, up),
           place_lines [K, n, M] i32 (the distinct lines through each placement, -1 padded),
           template_kinds [Kt] i32 (the distinct template shape ids, in first-seen order),
           line_lengths [L] f64, neighbours [n, 3] i32 (edge neighbours, -1 off the board))

The batch kernels are the single implementation of the rules: the scalar API calls them with
``B = 1``, so the two cannot drift apart. Each kernel unpacks ``tab`` once and writes its
per-state work inline in the loop over ``B``; helpers take ``(states, b)`` and scalars. (A call
per state to a large function taking many arrays costs numba a reference-count update per array
per call, which was slower than the rules themselves.)
"""

from __future__ import annotations

import numba as nb
import numpy as np
from numba.cpython.unsafe.numbers import trailing_zeros

_ONE = np.uint64(1)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_M1 = np.uint64(0x5555555555555555)
_M2 = np.uint64(0x3333333333333333)
_M4 = np.uint64(0x0F0F0F0F0F0F0F0F)
_H01 = np.uint64(0x0101010101010101)


GAME_OVER = 1


@nb.njit(cache=True, nogil=True)
def _mix(z):
    """splitmix64's output function: a bijective 64-bit hash."""
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    return z ^ (z >> np.uint64(31))


@nb.njit(cache=True, nogil=True)
def seed_stream(seed):
    """The chance-stream word for an integer seed (hashed, so nearby seeds are unrelated)."""
    return _mix(np.uint64(seed) + _GOLDEN)


@nb.njit(cache=True, nogil=True)
def _popcount(x):
    x = x - ((x >> np.uint64(1)) & _M1)
    x = (x & _M2) + ((x >> np.uint64(2)) & _M2)
    x = (x + (x >> np.uint64(4))) & _M4
    return np.int64((x * _H01) >> np.uint64(56))


@nb.njit(cache=True, nogil=True)
def _empty_buffer(playable, offsets):
    """``(empty, pad)``: a scratch buffer for :func:`_read_empty` (``W + 2 * pad`` zeros) and its
    padding, the words of zeros on each side of the board's: enough for the largest offset of a
    shape's triangle from its anchor."""
    pad = np.abs(offsets).max() // 64 + 1
    return np.zeros(playable.shape[0] + 2 * pad, np.uint64), pad


@nb.njit(cache=True, nogil=True, inline="always")
def _read_empty(states, b, playable, empty, pad):
    """``empty[pad + j] <-`` state ``b``'s empty playable cells, board word ``j``; the ``pad``
    words on each side stay zero (off the board)."""
    for j in range(playable.shape[0]):
        empty[pad + j] = playable[j] & ~states[b, j]


@nb.njit(cache=True, nogil=True, inline="always")
def _fit(empty, pad, k, i, anchors, offsets, sizes):
    """Word ``i`` of the bitboard of anchors where shape ``k`` fits in the state whose empty cells
    :func:`_read_empty` put in ``empty``: the shape's geometric anchors AND, for each of its
    triangles, the empty cells shifted by that triangle's offset (so bit ``a`` says whether cell
    ``a + offset`` is empty)."""
    w = anchors[k, i]
    for t in range(sizes[k]):
        if w == 0:
            break
        off = offsets[k, t]
        if off >= 0:
            q, r = off >> 6, off & 63
            e = empty[pad + i + q] >> np.uint64(r)
            if r:
                e |= empty[pad + i + q + 1] << np.uint64(64 - r)
        else:
            q, r = (-off) >> 6, (-off) & 63
            e = empty[pad + i - q] << np.uint64(r)
            if r:
                e |= empty[pad + i - q - 1] >> np.uint64(64 - r)
        w &= e
    return w


@nb.njit(cache=True, nogil=True)
def _any_legal(states, b, playable, anchors, offsets, sizes, empty, pad):
    """Whether any slot's shape fits anywhere in state ``b`` (ignores the game-over flag);
    ``empty``: a scratch buffer of ``W + 2 * pad`` zeros (:func:`_read_empty`)."""
    W = playable.shape[0]
    _read_empty(states, b, playable, empty, pad)
    for s in range(states.shape[1] - W - 2):
        k = np.int64(states[b, W + 2 + s]) - 1
        if k >= 0:
            for i in range(W):
                if _fit(empty, pad, k, i, anchors, offsets, sizes) != 0:
                    return True
    return False


@nb.njit(cache=True, nogil=True)
def _draw(states, b, W, templates):
    """Fill every slot of state ``b`` with a template drawn uniformly from its own stream."""
    size = np.uint64(templates.shape[0])
    for s in range(states.shape[1] - W - 2):
        states[b, W] += _GOLDEN
        u = _mix(states[b, W])
        states[b, W + 2 + s] = np.uint64(templates[((u >> np.uint64(32)) * size) >> np.uint64(32)] + 1)


@nb.njit(cache=True, nogil=True)
def initial_batch(seeds, tab, out):
    """``out[B, L]`` (zeroed) <- new games; slots drawn from each game's stream ``seeds[B]``."""
    playable, anchors, offsets, sizes, templates = tab[0], tab[1], tab[2], tab[3], tab[7]
    W = playable.shape[0]
    empty, pad = _empty_buffer(playable, offsets)
    for b in range(seeds.shape[0]):
        out[b, W] = seed_stream(seeds[b])
        _draw(out, b, W, templates)
        if not _any_legal(out, b, playable, anchors, offsets, sizes, empty, pad):
            out[b, W + 1] |= np.uint64(GAME_OVER)


@nb.njit(cache=True, nogil=True)
def legal_batch(states, tab, mask):
    """``mask[B, A]`` (zeroed) <- legal actions of ``states[B, L]``; returns the total count."""
    playable, anchors, offsets, sizes, n = tab[0], tab[1], tab[2], tab[3], tab[4].shape[1]
    W = playable.shape[0]
    empty, pad = _empty_buffer(playable, offsets)
    total = 0
    for b in range(states.shape[0]):
        if states[b, W + 1] & GAME_OVER:
            continue
        _read_empty(states, b, playable, empty, pad)
        for s in range(states.shape[1] - W - 2):
            k = np.int64(states[b, W + 2 + s]) - 1
            if k < 0:
                continue
            for i in range(W):
                w = _fit(empty, pad, k, i, anchors, offsets, sizes)
                while w:
                    mask[b, s * n + i * 64 + trailing_zeros(w)] = True
                    total += 1
                    w &= w - _ONE
    return total


@nb.njit(cache=True, nogil=True)
def legal_indices(states, tab, out):
    """Legal actions of ``states[0]``, increasing, into ``out[A]``; returns the count."""
    playable, anchors, offsets, sizes, n = tab[0], tab[1], tab[2], tab[3], tab[4].shape[1]
    W = playable.shape[0]
    count = 0
    if states[0, W + 1] & GAME_OVER:
        return 0
    empty, pad = _empty_buffer(playable, offsets)
    _read_empty(states, 0, playable, empty, pad)
    for s in range(states.shape[1] - W - 2):
        k = np.int64(states[0, W + 2 + s]) - 1
        if k < 0:
            continue
        for i in range(W):
            w = _fit(empty, pad, k, i, anchors, offsets, sizes)
            while w:
                out[count] = s * n + i * 64 + trailing_zeros(w)
                count += 1
                w &= w - _ONE
    return count


@nb.njit(cache=True, nogil=True)
def is_legal(states, s, a, tab):
    """Whether placing slot ``s`` with its anchor at flat cell ``a`` is legal in ``states[0]``."""
    anchors, masks = tab[1], tab[4]
    W, n = anchors.shape[1], masks.shape[1]
    if states[0, W + 1] & GAME_OVER or s < 0 or s >= states.shape[1] - W - 2 or a < 0 or a >= n:
        return False
    k = np.int64(states[0, W + 2 + s]) - 1
    if k < 0 or not (anchors[k, a >> 6] >> np.uint64(a & 63)) & _ONE:
        return False
    for i in range(W):
        if masks[k, a, i] & states[0, i]:
            return False
    return True


@nb.njit(cache=True, nogil=True)
def any_legal(states, tab):
    """Whether ``states[0]`` has a legal action (ignoring its game-over flag)."""
    empty, pad = _empty_buffer(tab[0], tab[2])
    return _any_legal(states, 0, tab[0], tab[1], tab[2], tab[3], empty, pad)


@nb.njit(cache=True, nogil=True, inline="always")
def full_lines(cells, k, a, place_lines, line_words, full):
    """``full [W] <-`` the cells of every line through shape ``k``'s placement at anchor ``a`` that
    ``cells`` (a board's ``W`` words, or a longer state row, the shape already placed) fills, each
    line once (precomputed in ``place_lines``); returns how many lines. The engine's step and
    :mod:`tri.games.triangle.fatal` clear a placement's lines through this one check."""
    W = full.shape[0]
    for i in range(W):
        full[i] = 0
    lines = 0
    for j in range(place_lines.shape[2]):
        line = place_lines[k, a, j]
        if line < 0:
            break
        complete = True
        for i in range(W):
            if (cells[i] & line_words[line, i]) != line_words[line, i]:
                complete = False
        if complete:
            lines += 1
            for i in range(W):
                full[i] |= line_words[line, i]
    return lines


@nb.njit(cache=True, nogil=True)
def step_batch(states, actions, refills, tab, info):
    """Play ``actions[B]`` on ``states[B, L]`` in place; ``info[B, 6]`` f64 <- (reward, cleared
    triangles, lines cleared, placed triangles, game over, refilled).

    ``refills[B, S]``: shape ids to put in the slots of a game whose placement empties them all
    (-1 leaves a slot empty); a row starting with -2 draws from the state's own stream instead.
    A terminal state is left unchanged with reward 0; an illegal action ends the game with the
    ``illegal`` reward and leaves the board unchanged.
    """
    playable, anchors, offsets, sizes, masks = tab[0], tab[1], tab[2], tab[3], tab[4]
    line_words, templates, rewards, place_lines = tab[6], tab[7], tab[9], tab[11]
    W, n = playable.shape[0], masks.shape[1]
    S = states.shape[1] - W - 2
    full = np.zeros(W, dtype=np.uint64)
    free, pad = _empty_buffer(playable, offsets)  # _any_legal's scratch (`empty` is the slots' state below)
    for b in range(states.shape[0]):
        for j in range(6):
            info[b, j] = 0.0
        info[b, 4] = 1.0
        if states[b, W + 1] & GAME_OVER:
            continue
        s, a = actions[b] // n, actions[b] % n
        k = np.int64(states[b, W + 2 + s]) - 1 if 0 <= s < S and actions[b] >= 0 else -1
        legal = k >= 0 and (anchors[k, a >> 6] >> np.uint64(a & 63)) & _ONE
        for i in range(W):
            if legal and masks[k, a, i] & states[b, i]:
                legal = False
        if not legal:
            states[b, W + 1] |= np.uint64(GAME_OVER)
            info[b, 0] = rewards[3]
            continue
        for i in range(W):
            states[b, i] |= masks[k, a, i]
        states[b, W + 2 + s] = 0
        lines = full_lines(states[b], k, a, place_lines, line_words, full)
        cleared = 0
        for i in range(W):
            cleared += _popcount(full[i])
            states[b, i] &= ~full[i]
        empty = True
        for j in range(S):
            if states[b, W + 2 + j] != 0:
                empty = False
        if empty:
            info[b, 5] = 1.0
            if refills[b, 0] == -2:
                _draw(states, b, W, templates)
            else:
                for j in range(S):
                    states[b, W + 2 + j] = np.uint64(refills[b, j] + 1)
        over = not _any_legal(states, b, playable, anchors, offsets, sizes, free, pad)
        if over:
            states[b, W + 1] |= np.uint64(GAME_OVER)
        reward = sizes[k] * rewards[0] + cleared * rewards[1]
        if not over:
            reward += rewards[2]
        info[b, 0], info[b, 1], info[b, 2], info[b, 3] = reward, cleared, lines, sizes[k]
        info[b, 4] = 1.0 if over else 0.0


@nb.njit(cache=True, nogil=True)
def encode_batch(states, tab, out):
    """``out[B, 3 + 2S + Kt + 4, rows, cols]`` (zeroed) <- network input planes.

    Planes: occupied, playable, up-orientation, the shape in each slot (drawn at a fixed place),
    for each slot the anchors where its shape fits now (its legal placements; none once the game
    is over), for each distinct template the anchors where it would fit (what the next draws
    could still do: the board's survival prospects, which a value must judge), then for each
    direction the filled fraction of the line through each cell, and the holes (empty cells
    whose three edge neighbours are filled or off the board: only a single triangle fills one).
    Lines span the board and holes are what the best hand-written evaluations penalise; a few
    3x3 convolutions can only approximate either, and a value trained on noisy returns learns
    far faster from them given (1-ply play: 56 -> 67 on the same data).

    Each state's empty words are read once, each distinct shape's fits are computed once (a slot
    reuses its template's), and planes are written through one flat index: self-play encodes
    every position it evaluates, so this is on the search's hot path (``tri bench search``).
    """
    playable, anchors, offsets, sizes, images, const = tab[0], tab[1], tab[2], tab[3], tab[8], tab[10]
    cell_lines, line_words, kinds, lengths, neighbours = tab[5], tab[6], tab[12], tab[13], tab[14]
    W, n, P = playable.shape[0], tab[4].shape[1], out.shape[1]
    S = states.shape[1] - W - 2
    plane = out.shape[2] * out.shape[3]  # cell = r * cols + c, the bit layout's numbering
    kind_planes, line_planes = 3 + 2 * S, 3 + 2 * S + kinds.shape[0]  # then the holes plane
    fill = np.zeros(line_words.shape[0])
    fits = np.zeros((anchors.shape[0], W), np.uint64)  # fits[k]: shape k's anchors, this state
    stamp = np.zeros(anchors.shape[0], np.int64)  # b + 1 once fits[k] holds state b's
    empty, pad = _empty_buffer(playable, offsets)  # the state's empty cells, read once for all its shapes
    flat = out.reshape(out.size)
    for b in range(states.shape[0]):
        base = b * P * plane
        out[b, 1:3] = const
        _read_empty(states, b, playable, empty, pad)
        for i in range(W):
            _scatter(flat, base + i * 64, states[b, i])
        for j in range(kinds.shape[0]):
            _fits(fits, stamp, b, kinds[j], empty, pad, anchors, offsets, sizes)
            for i in range(W):
                _scatter(flat, base + (kind_planes + j) * plane + i * 64, fits[kinds[j], i])
        over = (states[b, W + 1] & GAME_OVER) != 0  # no legal placements once the game is over
        for s in range(S):
            k = np.int64(states[b, W + 2 + s]) - 1
            if k < 0:
                continue
            out[b, 3 + s] = images[k]
            if over:
                continue
            _fits(fits, stamp, b, k, empty, pad, anchors, offsets, sizes)
            for i in range(W):
                _scatter(flat, base + (3 + S + s) * plane + i * 64, fits[k, i])
        for line in range(line_words.shape[0]):
            count = 0
            for i in range(W):
                count += _popcount(states[b, i] & line_words[line, i])
            fill[line] = count / lengths[line]
        occupied, lines = base, base + line_planes * plane
        for cell in range(n):
            if flat[base + plane + cell] == 0.0:  # not playable
                continue
            for d in range(3):
                if cell_lines[cell, d] >= 0:
                    flat[lines + d * plane + cell] = fill[cell_lines[cell, d]]
            if flat[occupied + cell] == 0.0:
                hole = True
                for j in range(3):
                    m = neighbours[cell, j]
                    if m >= 0 and flat[occupied + m] == 0.0:
                        hole = False
                if hole:
                    flat[lines + 3 * plane + cell] = 1.0


@nb.njit(cache=True, nogil=True, inline="always")
def _scatter(flat, start, w):
    """``flat[start + i] = 1`` for each set bit ``i`` of the word ``w``."""
    while w:
        flat[start + trailing_zeros(w)] = 1.0
        w &= w - _ONE


@nb.njit(cache=True, nogil=True, inline="always")
def _fits(fits, stamp, b, k, empty, pad, anchors, offsets, sizes):
    """``fits[k] <-`` the anchors where shape ``k`` fits in state ``b`` (:func:`_fit`, its empty
    cells in ``empty``), unless ``stamp[k]`` says they are state ``b``'s already."""
    if stamp[k] == b + 1:
        return
    stamp[k] = b + 1
    for i in range(fits.shape[1]):
        fits[k, i] = _fit(empty, pad, k, i, anchors, offsets, sizes)


@nb.njit(cache=True, nogil=True)
def reseed_batch(states, seeds, W):
    """Replace each state's chance stream: the search plans with draws of its own."""
    for b in range(states.shape[0]):
        states[b, W] = seed_stream(seeds[b])
