"""Othello's config and the tables derived from it (imports only numpy and pydantic, so
``tri.config`` can import the config cheaply).

Bit layout: cell ``(r, c)`` (row 0 at the top, column 0 at the left) is bit ``r * size + c`` of
one ``uint64`` bitboard, so a board is at most 8 x 8. The 8 directions are shifts of a bitboard
by ``dr * size + dc`` bits, masked so nothing wraps from one row's end to the next row's start.
"""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

DIRECTIONS = ((-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1))


class OthelloConfig(BaseModel):
    """Othello (Reversi) on a ``size x size`` board: the standard rules (a move must flank and
    flips every flanked line; a player with no move passes; the game ends when neither can
    move; more discs wins)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    size: int = Field(6, ge=4, le=8, description="board side, even, 4-8 (8 is the standard board, 6 the "
                                                 "size alpha-zero-general trained and tri's recipe)")

    @field_validator("size")
    @classmethod
    def _even(cls, value: int) -> int:
        if value % 2:
            raise ValueError(f"size must be even (the four start discs sit in the centre), not {value}")
        return value


class Shifts:
    """Per direction ``d`` (:data:`DIRECTIONS`): ``amount[d]`` (bits; positive shifts left, towards
    higher cells) and ``mask[d]`` (the cells a shifted bit may land on: on the board, and not
    wrapped across a row's edge)."""

    def __init__(self, size: int):
        self.size = size
        self.num_cells = size * size
        self.full = np.uint64((1 << self.num_cells) - 1)
        self.amount = np.array([dr * size + dc for dr, dc in DIRECTIONS], dtype=np.int64)
        masks = []
        for _, dc in DIRECTIONS:
            mask = 0
            for r in range(size):
                for c in range(size):
                    if (dc == 1 and c == 0) or (dc == -1 and c == size - 1):
                        continue  # a bit arriving here wrapped around a row's edge
                    mask |= 1 << (r * size + c)
            masks.append(mask)
        self.mask = np.array(masks, dtype=np.uint64)
        self.cell_bits = np.array([1 << i for i in range(self.num_cells)], dtype=np.uint64)

    def start(self) -> tuple[int, int]:
        """``(black, white)`` bitboards of the start: white on the centre's main diagonal."""
        m, n = self.size // 2, self.size
        black = (1 << ((m - 1) * n + m)) | (1 << (m * n + m - 1))
        white = (1 << ((m - 1) * n + m - 1)) | (1 << (m * n + m))
        return black, white


def cell_name(cell: int, size: int) -> str:
    """``a1``-style: the column's letter, then the row's number, row 1 at the top."""
    r, c = divmod(cell, size)
    return f"{'abcdefgh'[c]}{r + 1}"


# The measured recipe (README, "Champions"): params.yaml sections over the embedded defaults. The
# Connect Four recipe's shape at Othello 6 x 6's length (at most 32 placements, and passes); its
# generation 17 (70 minutes) met issue 19's targets against greedy, random, alphabeta:3 and uct:1000.
OTHELLO_RECIPE: dict[str, dict] = {
    "net": {"channels": 64, "blocks": 5, "value_hidden": 64},
    "mcts": {"dirichlet_alpha": 0.5, "dirichlet_fraction": 0.25, "gumbel": False, "discount": 0.99,
             "gumbel_c_scale": 0.1, "simulations": 96, "precision": "float32"},  # as measured
    "selfplay": {"games": 256, "shards": 2, "concurrent": 64, "max_moves": 80, "temperature": 1.0,
                 "temperature_moves": 8, "noise": True},
    "train": {"window": 8, "batch_size": 256, "lr": 0.002, "warmup_steps": 20, "samples_per_position": 4.0,
              "max_steps": 600, "threads": 1, "precision": "float32"},
    "arena": {"games": 32, "simulations": 96, "concurrent": 64, "max_moves": 80, "win_rate": 0.55,
              "temperature_moves": 4, "temperature": 1.0},
}
