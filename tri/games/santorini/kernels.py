"""Santorini's numba kernels over batches of states (the layout and the rules:
:mod:`tri.games.santorini.game`)."""

from __future__ import annotations

import numba as nb
import numpy as np

MINE, THEIRS, L1, L2, L3, DOME, FLAGS = range(7)
OVER = np.uint64(1)
ILLEGAL = np.uint64(2)
SECOND = np.uint64(4)
CUT = np.uint64(8)
COUNT_SHIFT = np.uint64(16)
COUNT_MASK = np.uint64(0xFFFF)
NUM_ACTIONS = 128
COMPASS = ("NW", "N", "NE", "W", "E", "SW", "S", "SE")  # the rules' directions 0-7 (north is row 1)


@nb.njit(cache=True, nogil=True, inline="always")
def _bit(cell):
    return np.uint64(1) << np.uint64(cell)


@nb.njit(cache=True, nogil=True, inline="always")
def _height(s, cell):
    """Height of ``cell`` in state row ``s``: 0-3, 4 for a dome."""
    bit = _bit(cell)
    if s[DOME] & bit:
        return 4
    return int((s[L1] & bit) != 0) + int((s[L2] & bit) != 0) + int((s[L3] & bit) != 0)


@nb.njit(cache=True, nogil=True)
def _legal_row(s, nbr, out):
    """Write the legal actions of state row ``s`` into ``out [128]`` (False elsewhere); the number
    of legal actions. The game's end is not checked here."""
    for a in range(out.shape[0]):
        out[a] = False
    mine, occupied, dome = s[MINE], s[MINE] | s[THEIRS], s[DOME]
    count, w = 0, 0
    for cell in range(nbr.shape[0]):
        if not (mine & _bit(cell)):
            continue
        up = _height(s, cell) + 1
        for d in range(8):
            to = nbr[cell, d]
            if to < 0 or (occupied & _bit(to)) or (dome & _bit(to)):
                continue
            h = _height(s, to)
            if h > up:
                continue
            after = (occupied & ~_bit(cell)) | _bit(to)
            for e in range(8):
                at = nbr[to, e]
                if at < 0 or (after & _bit(at)) or (dome & _bit(at)):
                    continue
                out[w * 64 + d * 8 + e] = True
                count += 1
                if h == 3:
                    break  # a win builds nothing: only its lowest legal build direction
        w += 1
    return count


@nb.njit(cache=True, nogil=True)
def _can_move(s, nbr):
    """Whether the side to move of state row ``s`` has a worker that can move."""
    occupied, dome = s[MINE] | s[THEIRS], s[DOME]
    for cell in range(nbr.shape[0]):
        if not (s[MINE] & _bit(cell)):
            continue
        up = _height(s, cell) + 1
        for d in range(8):
            to = nbr[cell, d]
            if to >= 0 and not (occupied & _bit(to)) and not (dome & _bit(to)) and _height(s, to) <= up:
                return True
    return False


@nb.njit(cache=True, nogil=True)
def step_batch(states, actions, nbr, max_actions, out, reward, terminal):
    """Apply ``actions [B]`` to ``states [B, 7]`` into ``out [B, 7]``, ``reward [B]``, ``terminal [B]``."""
    legal = np.zeros(NUM_ACTIONS, np.bool_)
    for b in range(states.shape[0]):
        s = states[b]
        for i in range(7):
            out[b, i] = s[i]
        reward[b] = 0.0
        terminal[b] = (s[FLAGS] & OVER) != 0
        if terminal[b]:
            continue
        a = actions[b]
        _legal_row(s, nbr, legal)
        if a < 0 or a >= NUM_ACTIONS or not legal[a]:
            out[b, FLAGS] = s[FLAGS] | OVER | ILLEGAL
            reward[b] = -1.0
            terminal[b] = True
            continue
        worker, d, e = a // 64, (a // 8) % 8, a % 8
        cell, seen = -1, -1
        for c in range(nbr.shape[0]):
            if s[MINE] & _bit(c):
                seen += 1
                if seen == worker:
                    cell = c
                    break
        to = nbr[cell, d]
        mine = (s[MINE] & ~_bit(cell)) | _bit(to)
        count = ((s[FLAGS] >> COUNT_SHIFT) & COUNT_MASK) + np.uint64(1)
        flags = (s[FLAGS] & ~(COUNT_MASK << COUNT_SHIFT)) ^ SECOND
        flags |= count << COUNT_SHIFT
        won = _height(s, to) == 3
        if not won:
            at = nbr[to, e]
            h = _height(s, at)
            out[b, L1 + h] = s[L1 + h] | _bit(at)  # L1, L2, L3 or DOME: the next level
        out[b, MINE], out[b, THEIRS], out[b, FLAGS] = s[THEIRS], mine, flags
        if won or not _can_move(out[b], nbr):
            out[b, FLAGS] |= OVER
            reward[b] = 1.0
            terminal[b] = True
        elif count >= max_actions:
            out[b, FLAGS] |= OVER | CUT
            terminal[b] = True


@nb.njit(cache=True, nogil=True)
def legal_batch(states, nbr, out):
    """``out [B, 128] bool``; nothing in a finished game."""
    for b in range(states.shape[0]):
        if states[b, FLAGS] & OVER:
            for a in range(NUM_ACTIONS):
                out[b, a] = False
        else:
            _legal_row(states[b], nbr, out[b])


@nb.njit(cache=True, nogil=True)
def _hinder_batch(states, nbr, out):
    """``out [B]``: the ``greedy`` tie-break for the player who just moved (the state's THEIRS):
    its workers' heights, less 10 if the side to move can win next, less 0.1 per move up the
    side to move has."""
    for b in range(states.shape[0]):
        s = states[b]
        score = 0.0
        for cell in range(nbr.shape[0]):
            if s[THEIRS] & _bit(cell):
                score += _height(s, cell)
        threat, ups = False, 0
        occupied, dome = s[MINE] | s[THEIRS], s[DOME]
        for cell in range(nbr.shape[0]):
            if not (s[MINE] & _bit(cell)):
                continue
            h0 = _height(s, cell)
            for d in range(8):
                to = nbr[cell, d]
                if to < 0 or (occupied & _bit(to)) or (dome & _bit(to)):
                    continue
                h = _height(s, to)
                if h <= h0 + 1 and (h > h0 or h == 3):
                    ups += 1
                    threat = threat or h == 3
        out[b] = score - (10.0 if threat and not (s[FLAGS] & OVER) else 0.0) - 0.1 * ups
