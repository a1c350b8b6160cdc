"""Santorini's config and the tables derived from it (imports only numpy and pydantic, so
``tri.config`` can import the config cheaply).

Cell ``(r, c)`` (row 0 at the top) is bit ``r * size + c`` of a ``uint64`` bitboard, so a board is
at most 8 x 8. Directions ``0..7`` are the rules' ``(d_row, d_col)``: (-1,-1), (-1,0), (-1,1),
(0,-1), (0,1), (1,-1), (1,0), (1,1).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from tri.games.kinrow.rules import CONNECT4_RECIPE

DIRECTIONS = ((-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1))


class SantoriniConfig(BaseModel):
    """Santorini without god powers on a ``size x size`` board: move one of your two workers to a
    neighbouring cell at most one level up, then build next to it; moving onto height 3 wins; a
    player who cannot move loses."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    size: int = Field(5, ge=4, le=8, description="board side, 4-8 (5 is the game's board; one 64-bit word "
                                                 "per board plane)")
    start: Literal["fixed", "random"] = Field("fixed", description="fixed: the workers start on the central "
                                                                   "cells (the rules' start); random: on four "
                                                                   "distinct cells drawn from each game's seed")
    max_actions: int = Field(200, ge=1, le=65535, description="a game still going after this many actions "
                                                              "is cut: a draw, marked as cut (the rules have "
                                                              "no draws)")


def neighbours(size: int) -> np.ndarray:
    """``[size * size, 8] int64``: the cell one step in each direction, -1 off the board."""
    out = np.full((size * size, 8), -1, np.int64)
    for r in range(size):
        for c in range(size):
            for d, (dr, dc) in enumerate(DIRECTIONS):
                if 0 <= r + dr < size and 0 <= c + dc < size:
                    out[r * size + c, d] = (r + dr) * size + c + dc
    return out


def start_cells(size: int) -> tuple[int, int, int, int]:
    """The fixed start: the first player's workers at (m-1, m) and (m+1, m), the second's at
    (m, m-1) and (m, m+1), m = size // 2 (the rules' cells on 5 x 5)."""
    m = size // 2
    return ((m - 1) * size + m, (m + 1) * size + m, m * size + m - 1, m * size + m + 1)


def direction_map(cells: np.ndarray) -> np.ndarray:
    """``[8]``: for a symmetry of a 3 x 3 grid given as ``cells [9]`` (the source cell of each
    cell, :class:`~tri.games.base.Symmetry`'s convention), the direction each direction becomes."""
    forward = np.empty(9, np.int64)
    forward[cells] = np.arange(9)
    out = np.empty(8, np.int64)
    for d, (dr, dc) in enumerate(DIRECTIONS):
        r, c = divmod(int(forward[(1 + dr) * 3 + 1 + dc]), 3)
        out[d] = DIRECTIONS.index((r - 1, c - 1))
    return out


def cell_name(cell: int, size: int) -> str:
    """``a1``-style: the column's letter, then the row's number, row 1 at the top."""
    r, c = divmod(cell, size)
    return f"{'abcdefgh'[c]}{r + 1}"


# The recipe: params.yaml sections over the embedded defaults. The Connect Four recipe's shape
# (PUCT with root noise) at Santorini's 128 actions (Dirichlet alpha for about 30 legal moves) and
# its length (games of 20-60 actions; cut at 200), and, as Gobang's, no gating: every candidate
# is promoted and the arena only measures it against the previous network. Measured: README,
# "Learning runs".
SANTORINI_RECIPE: dict[str, dict] = {
    **CONNECT4_RECIPE,
    "mcts": {**CONNECT4_RECIPE["mcts"], "dirichlet_alpha": 0.3},
    "selfplay": {**CONNECT4_RECIPE["selfplay"], "max_moves": 200},
    "arena": {**CONNECT4_RECIPE["arena"], "max_moves": 200, "win_rate": 0.0},
}
