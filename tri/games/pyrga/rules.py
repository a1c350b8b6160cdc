"""Pyrga's config and the tables derived from it (imports only numpy and pydantic, so
``tri.config`` can import the config cheaply).

Cells ``i = 4 * row + col`` (row 0 at the top). Arrow directions: 0 up (row - 1), 1 right,
2 down, 3 left.
"""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from tri.games.kinrow.rules import CONNECT4_RECIPE

SIZE = 4
CELLS = SIZE * SIZE
DIRS = ((-1, 0), (0, 1), (1, 0), (0, -1))
ARROW_NAMES = ("^", ">", "v", "<")
TYPE_NAMES = ("square", "circle", "arrow")


class PyrgaConfig(BaseModel):
    """Pyrga on its 4 x 4 board with 5 squares, 5 circles and 5 arrows each. The rules have no
    settings; the section exists so the game is configured like every other."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    pieces: int = Field(5, ge=1, le=5, description="pieces of each type per player (5 in the rules; fewer: "
                                                   "shorter games, for tests)")


def rays(size: int = SIZE) -> np.ndarray:
    """``[cells, 4] uint64``: the bitboard of the cells from a cell's neighbour in each direction
    to the board's edge (the cell itself excluded)."""
    out = np.zeros((size * size, 4), np.uint64)
    for r in range(size):
        for c in range(size):
            for d, (dr, dc) in enumerate(DIRS):
                rr, cc, bits = r + dr, c + dc, 0
                while 0 <= rr < size and 0 <= cc < size:
                    bits |= 1 << (rr * size + cc)
                    rr, cc = rr + dr, cc + dc
                out[r * size + c, d] = bits
    return out


def orthogonal(size: int = SIZE) -> np.ndarray:
    """``[cells] uint64``: the bitboard of each cell's up to four orthogonal neighbours."""
    out = np.zeros(size * size, np.uint64)
    for r in range(size):
        for c in range(size):
            bits = 0
            for dr, dc in DIRS:
                if 0 <= r + dr < size and 0 <= c + dc < size:
                    bits |= 1 << ((r + dr) * size + c + dc)
            out[r * size + c] = bits
    return out


def direction_map(cells: np.ndarray, size: int = SIZE) -> np.ndarray:
    """``[4]``: the direction each arrow direction becomes under the symmetry ``cells``
    (:class:`~tri.games.base.Symmetry`'s convention: the source cell of each cell)."""
    forward = np.empty(size * size, np.int64)
    forward[cells] = np.arange(size * size)
    out = np.empty(4, np.int64)
    centre_r, centre_c = 1, 1  # a cell whose four neighbours are on the board
    origin = forward[centre_r * size + centre_c]
    for d, (dr, dc) in enumerate(DIRS):
        moved = forward[(centre_r + dr) * size + centre_c + dc]
        step = (moved // size - origin // size, moved % size - origin % size)
        out[d] = DIRS.index(step)
    return out


# The recipe: params.yaml sections over the embedded defaults. The Connect Four recipe's shape
# (PUCT with root noise) at Pyrga's length (at most 30 placements) and branching (up to 96
# actions; alpha for about 30 legal moves), and, as Gobang's, no gating: every candidate is
# promoted and the arena only measures it against the previous network. Measured: README,
# "Learning runs".
PYRGA_RECIPE: dict[str, dict] = {
    **CONNECT4_RECIPE,
    "mcts": {**CONNECT4_RECIPE["mcts"], "dirichlet_alpha": 0.3},
    "selfplay": {**CONNECT4_RECIPE["selfplay"], "max_moves": 30, "temperature_moves": 6},
    "arena": {**CONNECT4_RECIPE["arena"], "max_moves": 30, "win_rate": 0.0},
}
