"""Pyrga's numba kernels over batches of states (the layout and the rules:
:mod:`tri.games.pyrga.game`)."""

from __future__ import annotations

import numba as nb
import numpy as np

MINE, THEIRS, ARROWS, FLAGS = range(4)
OVER = np.uint64(1)
ILLEGAL = np.uint64(2)
SECOND = np.uint64(4)
PREV_SHIFT = np.uint64(8)  # bits 8-11 the previous cell, 12-13 its type + 1 (0: none), 14-15 an arrow's direction
COUNT_SHIFT = np.uint64(16)  # bits 16-23: placements made
NUM_ACTIONS = 96
BOARD = np.uint64(0xFFFF)


@nb.njit(cache=True, nogil=True, inline="always")
def _count(x):
    n = 0
    while x:
        x &= x - np.uint64(1)
        n += 1
    return n


@nb.njit(cache=True, nogil=True)
def _legal_row(s, pieces, rays, orth, out):
    """Write the legal actions of state row ``s`` into ``out [96]``; their number. The previous
    placement decides the allowed cells; when none of them can take a piece the mover has, any
    empty cell can (the fallback). A finished game is not checked here."""
    for a in range(NUM_ACTIONS):
        out[a] = False
    both = s[MINE] | s[THEIRS]
    flags = s[FLAGS]
    kind = int((flags >> (PREV_SHIFT + np.uint64(4))) & np.uint64(3))
    prev = int((flags >> PREV_SHIFT) & np.uint64(15))
    if kind == 0:
        allowed = BOARD
    elif kind == 1:
        allowed = orth[prev]
    elif kind == 2:
        allowed = np.uint64(1) << np.uint64(prev)
    else:
        allowed = rays[prev, int((flags >> (PREV_SHIFT + np.uint64(6))) & np.uint64(3))]
    occupied = np.uint64(0)
    for t in range(3):
        occupied |= (both >> np.uint64(16 * t)) & BOARD
    takers = np.zeros(3, np.uint64)
    found = False
    for t in range(3):
        if _count((s[MINE] >> np.uint64(16 * t)) & BOARD) < pieces:
            takers[t] = allowed & ~(both >> np.uint64(16 * t)) & BOARD
            found = found or takers[t] != 0
    if not found:  # the fallback: any empty cell, for any piece in hand
        for t in range(3):
            if _count((s[MINE] >> np.uint64(16 * t)) & BOARD) < pieces:
                takers[t] = ~occupied & BOARD
    n = 0
    for t in range(3):
        for cell in range(16):
            if takers[t] & (np.uint64(1) << np.uint64(cell)):
                if t < 2:
                    out[16 * t + cell] = True
                    n += 1
                else:
                    for d in range(4):
                        out[32 + 4 * cell + d] = True
                    n += 4
    return n


@nb.njit(cache=True, nogil=True)
def towers(mine, theirs):
    """``(towers of mine, towers of theirs)``: cells with 3 pieces, owned by who has 2 or 3."""
    a, b = 0, 0
    for cell in range(16):
        m, t = 0, 0
        for k in range(3):
            bit = np.uint64(1) << np.uint64(16 * k + cell)
            m += (mine & bit) != 0
            t += (theirs & bit) != 0
        if m + t == 3:
            if m >= 2:
                a += 1
            else:
                b += 1
    return a, b


@nb.njit(cache=True, nogil=True)
def step_batch(states, actions, pieces, rays, orth, out, reward, terminal):
    """Apply ``actions [B]`` to ``states [B, 4]`` into ``out [B, 4]``, ``reward [B]``, ``terminal [B]``."""
    legal = np.zeros(NUM_ACTIONS, np.bool_)
    for b in range(states.shape[0]):
        s = states[b]
        for i in range(4):
            out[b, i] = s[i]
        reward[b] = 0.0
        terminal[b] = (s[FLAGS] & OVER) != 0
        if terminal[b]:
            continue
        a = actions[b]
        _legal_row(s, pieces, rays, orth, legal)
        if a < 0 or a >= NUM_ACTIONS or not legal[a]:
            out[b, FLAGS] = s[FLAGS] | OVER | ILLEGAL
            reward[b] = -1.0
            terminal[b] = True
            continue
        t = 0 if a < 16 else (1 if a < 32 else 2)
        cell = a - 16 * t if t < 2 else (a - 32) // 4
        d = 0 if t < 2 else (a - 32) % 4
        mine = s[MINE] | (np.uint64(1) << np.uint64(16 * t + cell))
        arrows = s[ARROWS]
        if t == 2:
            arrows = (arrows & ~(np.uint64(3) << np.uint64(2 * cell))) | (np.uint64(d) << np.uint64(2 * cell))
        count = ((s[FLAGS] >> COUNT_SHIFT) & np.uint64(255)) + np.uint64(1)
        flags = ((s[FLAGS] & np.uint64(7)) ^ SECOND) | (count << COUNT_SHIFT)
        flags |= (np.uint64(cell) | (np.uint64(t + 1) << np.uint64(4)) | (np.uint64(d) << np.uint64(6))) << PREV_SHIFT
        out[b, MINE], out[b, THEIRS], out[b, ARROWS], out[b, FLAGS] = s[THEIRS], mine, arrows, flags
        if _legal_row(out[b], pieces, rays, orth, legal) == 0:
            out[b, FLAGS] |= OVER
            terminal[b] = True
            ours, others = towers(mine, s[THEIRS])
            reward[b] = 1.0 if ours > others else (-1.0 if ours < others else 0.0)


@nb.njit(cache=True, nogil=True)
def legal_batch(states, pieces, rays, orth, out):
    """``out [B, 96] bool``; nothing in a finished game."""
    for b in range(states.shape[0]):
        if states[b, FLAGS] & OVER:
            for a in range(NUM_ACTIONS):
                out[b, a] = False
        else:
            _legal_row(states[b], pieces, rays, orth, out[b])


@nb.njit(cache=True, nogil=True)
def towers_batch(states, out):
    """``out [B, 2]``: the towers of the side to move and of the other side."""
    for b in range(states.shape[0]):
        out[b, 0], out[b, 1] = towers(states[b, MINE], states[b, THEIRS])


@nb.njit(cache=True, nogil=True)
def greedy_batch(states, pieces, rays, orth, out):
    """``out [B]``: the ``greedy`` tie-break for the player who just placed (the state's THEIRS):
    its towers, then less 0.01 per placement of the side to move that would complete a tower the
    side to move then owns (a tower given away)."""
    legal = np.zeros(NUM_ACTIONS, np.bool_)
    for b in range(states.shape[0]):
        s = states[b]
        _, ours = towers(s[MINE], s[THEIRS])
        given = 0
        if not (s[FLAGS] & OVER):
            _legal_row(s, pieces, rays, orth, legal)
            for a in range(NUM_ACTIONS):
                if not legal[a]:
                    continue
                cell = a if a < 16 else (a - 16 if a < 32 else (a - 32) // 4)
                m, t = 0, 0
                for k in range(3):
                    bit = np.uint64(1) << np.uint64(16 * k + cell)
                    m += (s[MINE] & bit) != 0
                    t += (s[THEIRS] & bit) != 0
                if m + t == 2 and m >= 1:
                    given += 1
        out[b] = ours - 0.01 * given
