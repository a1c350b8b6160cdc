"""Exhaustive planning of the rest of a cycle (``mcts.plan_cycle``): where a position's shapes in
hand can be placed in few enough ways, value every way and play the best, instead of searching.

A game with refills (the triangle puzzle) deals its shapes in cycles: the slots fill, the player
places every shape, then the slots refill with a draw nobody can see in advance. Within a cycle
nothing is random, so the rest of it is a small deterministic tree: every order of the shapes in
hand and every placement of each, line clears applied, down to the board the next draw lands on.
Where that tree is small (a crowded board, or a cycle's last shapes), it can be walked whole:

- every path is stepped with no refill (:func:`tri.games.triangle.fatal.cycle_level`, which
  :func:`~tri.games.triangle.fatal.cycle_ends` walks too: the slots stay empty, no draw is ever
  made or read), its rewards summed with the search's discount;
- a path that empties the slots ends at its **afterstate** (``game.afterstate``, the board with
  no shapes in hand), valued as the search values one: ``discount ** k * scale * V`` with ``V``
  the network's value and ``scale`` ``mcts.value_scale``, so a way's worth is what the search's
  ``Q`` would be along it (but for the small reward for surviving the refill step, which depends
  on the draw: the triangle's ``alive``, 0.005, left out);
- a path on which the shapes left can no longer be placed ends the game there: its rewards only;
- a first move's worth is its best way's; the move played is the best first move.

The search's tree reaches the same afterstates but samples which ones: with ``simulations`` of
256 and Gumbel's 16 root actions it values a few hundred of the cycle's ends, guided by the
policy, while on a crowded board the whole cycle often has fewer. This values all of them.

Positions are walked together, level by level, as batched arrays (mctx's style): ``B`` roots,
``M`` open paths. Paths that reach the same board with the same shapes left, from the same root
move, are merged (the best rewards kept), and so are equal ends; every distinct end board is
evaluated once, in one network call for the whole batch. A root whose tree has more than
``limit`` distinct positions at some level (its ends included) is left to the search.
Nothing here draws: the real game's future shapes are never read (``tests/search/test_no_peeking.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tri.games.triangle.fatal import cycle_level


@dataclass(frozen=True)
class CyclePlan:
    """``q [B, A] float64``: each legal first move's worth, its best way to the cycle's end
    (-inf where illegal or not planned); ``planned [B] bool``: the roots walked whole (the others
    are left to the search); ``ends [B] int``: distinct end boards each planned root valued."""

    q: np.ndarray
    planned: np.ndarray
    ends: np.ndarray

    @property
    def action(self) -> np.ndarray:
        """``[B] int64``: the best first move of each planned root (ties: the lowest index); -1
        where not planned."""
        return np.where(self.planned, np.argmax(self.q, axis=1), -1)

    @property
    def value(self) -> np.ndarray:
        """``[B] float64``: the best first move's worth (nan where not planned)."""
        return np.where(self.planned, self.q.max(axis=1, initial=-np.inf), np.nan)


def _merge(keys: np.ndarray, ret: np.ndarray) -> np.ndarray:
    """Indices of ``keys [M, K]``'s distinct rows, each at its best ``ret [M]`` (ties: the first)."""
    order = np.argsort(-ret, kind="stable")
    _, first = np.unique(keys[order], axis=0, return_index=True)
    return order[np.sort(first)]


def plan_cycle(game, evaluate, states: np.ndarray, *, discount: float, scale: float, limit: int,
               bonus: float = 0.0) -> CyclePlan:
    """Walk the rest of each root's cycle whole where it is small enough (module docstring).

    ``states [B, L]``: roots with shapes in hand (a root that is over, or whose slots are
    empty, is not planned). ``evaluate(states [M, L]) -> (priors, legal, values [M])``: the
    search's evaluator (its values unscaled). ``discount`` and ``scale``: ``mcts.discount`` and
    ``mcts.value_scale``; ``bonus``: ``mcts.move_bonus``, added to every move's reward.
    ``limit``: the most distinct positions a root's cycle may have at any level, its ends
    included, for it to be planned (the network evaluates at most ``limit`` ends per root)."""
    b_count, num_actions = states.shape[0], game.num_actions
    w = game.geometry.num_words
    q = np.full((b_count, num_actions), -np.inf)
    failed = game.terminal(states) | ~(states[:, w + 2:] != 0).any(axis=1)
    legal = game.legal(states) & ~failed[:, None]
    rows, roots = np.nonzero(legal)
    failed |= np.bincount(rows, minlength=b_count) > limit
    keep = ~failed[rows]
    rows, roots = rows[keep], roots[keep]
    nodes, actions, ret = states[rows], roots.copy(), np.zeros(rows.size)
    end_boards, end_rows, end_roots, end_ret, end_disc = [], [], [], [], []
    disc = 1.0
    while rows.size:
        level = cycle_level(game, nodes, actions)
        ret = ret + disc * (level.reward + bonus)
        disc *= discount
        np.maximum.at(q, (rows[level.dead], roots[level.dead]), ret[level.dead])
        if level.ended.any():  # ends: one per (root, root move, board), its best rewards
            e = np.flatnonzero(level.ended)
            key = np.concatenate([rows[e, None].astype(np.uint64), roots[e, None].astype(np.uint64),
                                  level.states[e, :w]], axis=1)
            e = e[_merge(key, ret[e])]
            end_boards.append(level.states[e]), end_rows.append(rows[e]), end_roots.append(roots[e])
            end_ret.append(ret[e]), end_disc.append(np.full(e.size, disc))
        go = np.flatnonzero(level.open)
        key = np.concatenate([rows[go, None].astype(np.uint64), roots[go, None].astype(np.uint64),
                              level.states[go, :w], level.hands[go]], axis=1)
        go = go[_merge(key, ret[go])]
        failed |= np.bincount(rows[go], minlength=b_count) > limit
        go = go[~failed[rows[go]]]
        open_rows, open_roots, open_nodes, open_ret = rows[go], roots[go], level.states[go], ret[go]
        at, actions = np.nonzero(game.legal(open_nodes))
        rows, roots, nodes, ret = open_rows[at], open_roots[at], open_nodes[at], open_ret[at]
    ends = np.zeros(b_count, np.int64)
    if end_boards:
        boards, e_rows = np.concatenate(end_boards), np.concatenate(end_rows)
        e_roots, e_ret, e_disc = np.concatenate(end_roots), np.concatenate(end_ret), np.concatenate(end_disc)
        pairs = np.unique(np.concatenate([e_rows[:, None].astype(np.uint64), boards[:, :w]], axis=1), axis=0)
        ends = np.bincount(pairs[:, 0].astype(np.int64), minlength=b_count)
        failed |= ends > limit
        ok = ~failed[e_rows]
        boards, e_rows, e_roots, e_ret, e_disc = boards[ok], e_rows[ok], e_roots[ok], e_ret[ok], e_disc[ok]
        if e_rows.size:
            _, first, back = np.unique(boards[:, :w], axis=0, return_index=True, return_inverse=True)
            _, _, values = evaluate(game.afterstate(boards[first]))
            worth = e_ret + e_disc * scale * np.asarray(values, np.float64)[back.reshape(-1)]
            np.maximum.at(q, (e_rows, e_roots), worth)
    q[failed] = -np.inf
    ends[failed] = 0
    return CyclePlan(q=q, planned=~failed, ends=ends)
