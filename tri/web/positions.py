"""A position as the page draws it, and the search's view of it as a heat map (the JSON shapes are in
:mod:`tri.web`).

Three board kinds: ``triangle`` (the triangle puzzle: cells, orientations, slots and every legal
placement, so the page can draw the ghost of a shape without asking) and ``grid`` (any game whose
:meth:`~tri.games.base.PlayableGame.board` is its whole picture: Connect Four, m,n,k-games). A
grid game's action is a cell (``r * cols + c``), or a column when the game has ``gravity`` (its
row 0 is then the bottom row, drawn last); a game may name its columns (``column_labels``, as
Othello's letters). Actions past the clickable ones (Othello's pass) are listed as ``extra``. And ``pieces`` (:mod:`tri.web.pieces`: Santorini, Pyrga), whose
cells hold several things and whose moves take several clicks.
"""

from __future__ import annotations

import numpy as np

from tri.games.base import PlayableGame
from tri.games.triangle.game import TriangleGame
from tri.web import pieces

TOP_MOVES = 5


def kind(game: PlayableGame) -> str:
    return "triangle" if isinstance(game, TriangleGame) else "pieces" if pieces.has_view(game) else "grid"


def move_name(game: PlayableGame, state: np.ndarray, action: int) -> str:
    """``action``, played in ``state [L]``, in the notation a person types (Santorini names cells
    of the position it was played in)."""
    return pieces.move_name(game, state, action)


def board(game: PlayableGame, state: np.ndarray, before: np.ndarray | None = None,
          action: int | None = None) -> dict:
    """The Board of ``state [L]``; ``before`` and ``action``: the last move, for its highlights."""
    if isinstance(game, TriangleGame):
        return _triangle_board(game, state, before, action)
    if pieces.has_view(game):
        return pieces.board(game, state, before)
    return _grid_board(game, state, before)


def heat(game: PlayableGame, state: np.ndarray, policy: np.ndarray) -> list[list[float]]:
    """``policy [A]`` (over actions, in ``state [L]``) as ``[rows][cols]`` shares in display order,
    summing to 1 (all zeros if it has no mass): the triangle puzzle's per anchor cell over the
    slots, a gravity game's on the cell the stone would land on, otherwise per cell."""
    p = np.clip(np.asarray(policy, dtype=np.float64), 0, None)
    p = p / p.sum() if p.sum() > 0 else p
    if isinstance(game, TriangleGame):
        b = game.geometry
        grid = p.reshape(game.num_slots, b.rows, b.cols).sum(axis=0)
    elif pieces.has_view(game):
        grid = pieces.heat(game, state, p)
    else:
        rows, cols = game.board(state).shape
        grid = np.zeros((rows, cols))
        if getattr(game, "gravity", False):
            heights = (game.board(state) != 0).sum(axis=0)  # stones per column, from the bottom
            for c in range(cols):
                if heights[c] < rows:
                    grid[heights[c], c] = p[c]
            grid = grid[::-1]
        else:
            grid = p[: rows * cols].reshape(rows, cols)  # an action past the cells (a pass) is not drawn
    return [[round(float(v), 5) for v in row] for row in grid]


def top_moves(game: PlayableGame, state: np.ndarray, policy: np.ndarray, legal: np.ndarray) -> list[dict]:
    """The ``TOP_MOVES`` legal moves in ``state [L]`` with the largest share of ``policy [A]``."""
    p = np.where(legal, np.clip(np.asarray(policy, dtype=np.float64), 0, None), -1.0)
    total = p[p > 0].sum()
    order = np.argsort(-p, kind="stable")[:TOP_MOVES]
    return [{"move": move_name(game, state, int(a)), "share": round(float(p[a] / total), 5) if total > 0 else 0.0}
            for a in order if p[a] >= 0]


def _grid_board(game: PlayableGame, state: np.ndarray, before: np.ndarray | None) -> dict:
    cells = game.board(state).astype(int)
    rows, cols = cells.shape
    gravity = bool(getattr(game, "gravity", False))
    legal = game.legal(state[None])[0]
    over = bool(game.terminal(state[None])[0])
    moves, ok = [], []
    for r in range(rows):
        action_row = [c if gravity else r * cols + c for c in range(cols)]
        moves.append([game.action_name(a) if a < game.num_actions else None for a in action_row])
        ok.append([bool(a < game.num_actions and legal[a] and not over) for a in action_row])
    last = None
    if before is not None:
        changed = np.argwhere(game.board(before).astype(int) != cells)
        if len(changed):
            last = [int(v) for v in changed[0]]
    if gravity:  # row 0 is the bottom: draw it last
        cells, moves, ok = cells[::-1], moves[::-1], ok[::-1]
        last = None if last is None else [rows - 1 - last[0], last[1]]
        row_labels = [str(rows - r) for r in range(rows)]
        col_labels = [game.action_name(c).split()[-1] for c in range(cols)]
    else:
        row_labels = [str(r + 1) for r in range(rows)]
        col_labels = [str(c + 1) for c in range(cols)]
        col_labels = list(getattr(game, "column_labels", col_labels))  # Othello's letters
    clicks = cols if gravity else rows * cols
    extra = [{"move": game.action_name(a), "legal": bool(legal[a] and not over)}  # e.g. Othello's pass
             for a in range(clicks, game.num_actions)]
    return {"rows": rows, "cols": cols, "cells": np.asarray(cells).tolist(), "moves": moves,
            "legal": ok, "last": last, "col_labels": col_labels, "row_labels": row_labels, "extra": extra}


def _triangle_board(game: TriangleGame, state: np.ndarray, before: np.ndarray | None,
                    action: int | None) -> dict:
    b = game.geometry
    scalar = game.scalar(state)
    legal = game.legal_actions(scalar)
    fits = {s for s, _, _ in legal}
    slots = [None if shape is None else {"cells": [[int(dr), int(dc), bool(up)] for dr, dc, up in shape],
                                         "fits": s in fits}
             for s, shape in enumerate(scalar.shapes)]
    filled = scalar.grid
    placed, cleared = [], []
    if before is not None and action is not None:
        prior = game.scalar(before)
        s, r, c = game.action_tuple(action)
        shape = prior.shapes[s] or ()
        cells = {(r + dr, c + dc) for dr, dc, _ in shape}
        placed = sorted([rr, cc] for rr, cc in cells if filled[rr, cc])
        was = prior.grid.copy()
        for rr, cc in cells:
            was[rr, cc] = True
        cleared = [[int(rr), int(cc)] for rr, cc in np.argwhere(was & ~filled)]
    return {"rows": b.rows, "cols": b.cols, "playable": b.playable.tolist(), "up": b.up.tolist(),
            "filled": filled.tolist(), "slots": slots, "legal": [list(m) for m in legal],
            "placed": placed, "cleared": cleared}
