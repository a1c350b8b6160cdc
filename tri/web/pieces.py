"""Boards of kind ``pieces``: games whose cell holds more than one thing and whose move takes more
than one click. Santorini: a cell has a height (0-3) or a dome, and maybe a worker; a move is the
worker, the cell it moves to, and the cell it builds on. Pyrga: a cell holds a square, a circle
and an arrow, each of either player; a move is a cell, then the piece.

A move is a **path** of tokens: cell names as on the board (``b2``) and words (``circle``,
``arrow >``). The page highlights the cells that continue the path picked so far, offers the
words as buttons, and sends the move's text (the game's own notation, as typed in the terminal)
once a path is complete. The JSON shape is in :mod:`tri.web`.

One view per game (:data:`VIEWS`, by registry name): what a cell shows, the paths of the legal
moves, the cell a move is drawn on in the search's heat map, and a line or two of facts.
"""

from __future__ import annotations

import numpy as np

from tri.games.base import PlayableGame


class _Santorini:
    """Heights, domes and workers; a move is ``worker cell, move cell[, build cell]``."""

    def cells(self, game, state: np.ndarray) -> list[list[dict]]:
        h = game.heights(state[None])[0]
        first, second = game.workers(state)
        out = []
        for r in range(game.size):
            row = []
            for c in range(game.size):
                i = r * game.size + c
                owner = 1 if i in first else 2 if i in second else 0
                row.append({"level": int(min(h[i], 3)), "dome": bool(h[i] == 4),
                            "pieces": [{"owner": owner, "kind": "worker"}] if owner else [], "tower": 0})
            out.append(row)
        return out

    def path(self, game, state: np.ndarray, action: int) -> list[str]:
        return game.action_name(action, state).split()

    def move_name(self, game, state: np.ndarray, action: int) -> str:
        return game.action_name(action, state)

    def cell_of(self, game, state: np.ndarray, action: int) -> int:
        """Where the worker moves."""
        return game.decode(state, action)[1]

    def facts(self, game, state: np.ndarray) -> list[str]:
        return [f"action {game.actions_played(state)} of {game.config.max_actions}"]


class _Pyrga:
    """Squares, circles and arrows of either player; a move is ``cell, piece``."""

    KINDS = ("square", "circle", "arrow")
    ARROWS = ("^", ">", "v", "<")

    def cells(self, game, state: np.ndarray) -> list[list[dict]]:
        own = game.owners(state)  # [2, 3, 16]: first, second player's squares, circles, arrows
        dirs = game.arrow_directions(state[None])[0]
        out = []
        for r in range(game.rows):
            row = []
            for c in range(game.cols):
                i = r * game.cols + c
                pieces = [{"owner": p + 1, "kind": kind, **({"direction": self.ARROWS[int(dirs[i])]} if k == 2 else {})}
                          for k, kind in enumerate(self.KINDS) for p in range(2) if own[p, k, i]]
                counts = own[:, :, i].sum(axis=1)
                tower = 0 if len(pieces) < 3 else 1 if counts[0] >= 2 else 2
                row.append({"level": 0, "dome": False, "pieces": pieces, "tower": tower})
            out.append(row)
        return out

    def path(self, game, state: np.ndarray, action: int) -> list[str]:
        words = game.action_name(action).split()  # "s b2", "a b2 >"
        kind = self.KINDS["sca".index(words[0])]
        return [words[1], kind if len(words) == 2 else f"{kind} {words[2]}"]

    def move_name(self, game, state: np.ndarray, action: int) -> str:
        return game.action_name(action)

    def cell_of(self, game, state: np.ndarray, action: int) -> int:
        return action % 16 if action < 32 else (action - 32) // 4

    def facts(self, game, state: np.ndarray) -> list[str]:
        own = game.owners(state)
        first, second = game.towers(state)
        hand = game.pieces - own.sum(axis=2)  # [2, 3]
        held = ["{} squares, {} circles, {} arrows".format(*hand[p]) for p in range(2)]
        return [f"towers: first {first}, second {second}",
                f"in hand: first {held[0]}; second {held[1]}"]


VIEWS = {"santorini": _Santorini(), "pyrga": _Pyrga()}


def has_view(game: PlayableGame) -> bool:
    return game.name in VIEWS


def move_name(game: PlayableGame, state: np.ndarray, action: int) -> str:
    """``action``, played in ``state [L]``, as the game's notation names it to a person."""
    return VIEWS[game.name].move_name(game, state, action) if game.name in VIEWS else game.action_name(action)


def board(game: PlayableGame, state: np.ndarray, before: np.ndarray | None) -> dict:
    """The ``pieces`` Board of ``state [L]``; ``before``: the position before the last move, whose
    changed cells are ``last``."""
    view = VIEWS[game.name]
    rows, cols = game.rows, game.cols
    labels = list(game.column_labels)
    names = [[f"{labels[c]}{r + 1}" for c in range(cols)] for r in range(rows)]
    cells = view.cells(game, state)
    over = bool(game.terminal(state[None])[0])
    legal = [] if over else np.flatnonzero(game.legal(state[None])[0]).tolist()
    moves = [{"move": view.move_name(game, state, a), "path": view.path(game, state, a)} for a in legal]
    last = []
    if before is not None:
        was = view.cells(game, before)
        last = [[r, c] for r in range(rows) for c in range(cols) if was[r][c] != cells[r][c]]
    return {"rows": rows, "cols": cols, "col_labels": labels[:cols], "row_labels": [str(r + 1) for r in range(rows)],
            "names": names, "cells": cells, "moves": moves, "last": last, "facts": view.facts(game, state),
            "extra": []}


def heat(game: PlayableGame, state: np.ndarray, p: np.ndarray) -> np.ndarray:
    """``p [A]`` (normalised, zero off the legal moves) summed on the cell each move is drawn on:
    ``[rows, cols]``."""
    view = VIEWS[game.name]
    grid = np.zeros(game.rows * game.cols)
    for a in np.flatnonzero(p > 0):
        grid[view.cell_of(game, state, int(a))] += p[a]
    return grid.reshape(game.rows, game.cols)
