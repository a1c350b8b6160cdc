"""k-in-a-row games (Connect Four, m,n,k-games): their configs and the tables derived from them.

Both games put stones on a ``rows x cols`` board and win with ``k`` of one's own stones in a row,
horizontally, vertically or diagonally; Connect Four drops a stone to the lowest empty cell of a
column (gravity), an m,n,k-game puts it on any empty cell.

Bit layout: cell ``(r, c)`` is bit ``i = r * cols + c`` of a bitboard of ``words =
ceil(rows * cols / 64)`` ``uint64`` words: bit ``i % 64`` of word ``i // 64``. Connect Four and
Tic-Tac-Toe fit one word; Gobang's 9 x 9 takes two, 15 x 15 four. Connect Four's row 0 is the
bottom row (stones fall towards it); an m,n,k-game's row 0 is the top row. Everything here is built once per config; the numba kernels in
:mod:`tri.games.kinrow.engine` only read these tables.

This module imports only numpy and pydantic, so ``tri.config`` can import the configs cheaply.
"""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

MAX_CELLS = 361  # 19 x 19, a Go board: six uint64 words per player


class Connect4Config(BaseModel):
    """Connect Four: ``cols`` columns of ``rows`` cells; ``connect`` in a row wins (7 x 6, 4)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    rows: int = Field(6, gt=0, le=MAX_CELLS, description="cells per column (the board's height); rows * cols "
                                                         "at most 361")
    cols: int = Field(7, gt=0, le=MAX_CELLS, description="columns, one action each (the board's width)")
    connect: int = Field(4, ge=2, description="stones in a row (across, down or diagonal) that win; at most "
                                              "max(rows, cols)")

    @model_validator(mode="after")
    def _check(self) -> Connect4Config:
        _check_board(self.rows, self.cols, self.connect, "connect")
        return self


class MnkConfig(BaseModel):
    """An m,n,k-game: ``m`` rows, ``n`` columns, ``k`` in a row wins (Tic-Tac-Toe: 3, 3, 3)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    m: int = Field(3, gt=0, le=MAX_CELLS, description="rows; m * n at most 361 (19 x 19)")
    n: int = Field(3, gt=0, le=MAX_CELLS, description="columns; every empty cell is a legal move")
    k: int = Field(3, ge=2, description="stones in a row (across, down or diagonal) that win; at most "
                                        "max(m, n)")

    @model_validator(mode="after")
    def _check(self) -> MnkConfig:
        _check_board(self.m, self.n, self.k, "k")
        return self


class GobangConfig(MnkConfig):
    """Gobang, the m,n,k-game's named preset: five in a row on a 9 x 9 board (15 x 15, the
    traditional board, is ``m: 15, n: 15``). Freestyle rules: five *or more* in a row wins, for
    both players (no renju restrictions); a full board is a draw."""

    m: int = Field(9, gt=0, le=MAX_CELLS, description="rows; 9 by default (what tri's recipe trains), 15 the "
                                                      "traditional board")
    n: int = Field(9, gt=0, le=MAX_CELLS, description="columns; every empty cell is a legal move")
    k: int = Field(5, ge=2, description="stones in a row (across, down or diagonal) that win; five or more "
                                        "count (freestyle)")


def _check_board(rows: int, cols: int, k: int, k_name: str) -> None:
    if rows * cols > MAX_CELLS:
        raise ValueError(f"the board has {rows * cols} cells; tri's k-in-a-row engine takes at most {MAX_CELLS}")
    if k > max(rows, cols):
        raise ValueError(f"{k_name} = {k} is longer than the board ({rows} x {cols}): nobody could win")


class Lines:
    """The winning windows of a ``rows x cols`` board with ``k`` in a row.

    Attributes (``n = rows * cols`` cells, ``L = words`` words per bitboard, ``W`` windows, ``M``
    the most windows through a cell):
        words: ``L = ceil(n / 64)``.
        cell_word: ``[n] int64``, the word of each cell (``cell // 64``).
        cell_bit: ``[n] uint64``, the cell's bit within that word (``1 << cell % 64``).
        windows: ``[W, L] uint64``, every run of ``k`` cells in a row (horizontal, vertical, both
            diagonals), as a bitboard.
        cell_windows: ``[n, M] int32``: the windows through each cell, ``-1`` padded (a move can
            only complete a window through the cell it fills).
        full: ``[L] uint64``, every cell.
    """

    DIRECTIONS = ((0, 1), (1, 0), (1, 1), (1, -1))  # (dr, dc): horizontal, vertical, two diagonals

    def __init__(self, rows: int, cols: int, k: int):
        self.rows, self.cols, self.k = rows, cols, k
        self.num_cells = rows * cols
        self.words = -(-self.num_cells // 64)
        self.cell_word = np.arange(self.num_cells, dtype=np.int64) // 64
        self.cell_bit = np.array([1 << (i % 64) for i in range(self.num_cells)], dtype=np.uint64)
        runs: list[list[int]] = []
        for dr, dc in self.DIRECTIONS:
            for r in range(rows):
                for c in range(cols):
                    end_r, end_c = r + dr * (k - 1), c + dc * (k - 1)
                    if 0 <= end_r < rows and 0 <= end_c < cols:
                        runs.append([(r + dr * i) * cols + c + dc * i for i in range(k)])
        self.runs = runs
        self.windows = np.array([to_words(sum(1 << i for i in run), self.words) for run in runs],
                                dtype=np.uint64).reshape(len(runs), self.words)
        through: list[list[int]] = [[] for _ in range(self.num_cells)]
        for w, run in enumerate(runs):
            for cell in run:
                through[cell].append(w)
        width = max(1, max(len(t) for t in through))
        self.cell_windows = np.full((self.num_cells, width), -1, dtype=np.int32)
        for cell, ws in enumerate(through):
            self.cell_windows[cell, : len(ws)] = ws
        self.full = np.array(to_words((1 << self.num_cells) - 1, self.words), dtype=np.uint64)


def to_words(bits: int, words: int) -> list[int]:
    """A Python integer bitboard as ``words`` 64-bit words, the lowest first."""
    return [(bits >> (64 * i)) & 0xFFFF_FFFF_FFFF_FFFF for i in range(words)]


def grid_symmetries(rows: int, cols: int, square: bool) -> list[tuple[str, np.ndarray]]:
    """``(name, cells [rows*cols])`` for the board's symmetries other than the identity:
    ``cells[j]`` is the cell of the original board that lands on cell ``j`` (the convention of
    :class:`~tri.games.base.Symmetry`). A square board has 7 (rotations, reflections), a
    rectangle 3 (the two mirrors and the half turn)."""
    idx = np.arange(rows * cols).reshape(rows, cols)
    maps = [("mirror_lr", np.fliplr(idx)), ("mirror_ud", np.flipud(idx)), ("rot180", np.rot90(idx, 2))]
    if square:
        maps += [("rot90", np.rot90(idx, 1)), ("rot270", np.rot90(idx, 3)), ("transpose", idx.T.copy()),
                 ("antitranspose", np.rot90(idx, 2).T.copy())]
    return [(name, np.ascontiguousarray(m).reshape(-1).astype(np.int64)) for name, m in maps]


# The measured recipes (README, "Learning runs"): params.yaml sections, over the embedded
# defaults, that met each game's target on this machine.
# Both search with PUCT and Dirichlet root noise (the defaults are the triangle's Gumbel search);
# discount and c_scale do not act then, but are pinned so `tri new` writes what these trained with;
# so is float32, the number format they were measured in (the default, auto, would be bfloat16 on
# a CPU that computes it natively).
_PUCT = {"dirichlet_alpha": 1.0, "dirichlet_fraction": 0.25, "gumbel": False, "discount": 0.99,
         "gumbel_c_scale": 0.1, "precision": "float32"}
CONNECT4_RECIPE: dict[str, dict] = {
    "net": {"channels": 64, "blocks": 5, "value_hidden": 64},
    "mcts": {**_PUCT, "simulations": 96},
    "selfplay": {"games": 256, "shards": 2, "concurrent": 64, "max_moves": 42, "temperature": 1.0,
                 "temperature_moves": 8, "noise": True},
    "train": {"window": 8, "batch_size": 256, "lr": 0.002, "warmup_steps": 20, "samples_per_position": 4.0,
              "max_steps": 600, "threads": 1, "precision": "float32"},
    "arena": {"games": 32, "simulations": 96, "concurrent": 64, "max_moves": 42, "win_rate": 0.55,
              "temperature_moves": 4, "temperature": 1.0},
}
# Gobang 9 x 9: the Connect Four recipe at Gobang's length (at most 81 placements), with
# root noise for about 60 legal moves (AlphaZero scaled alpha inversely with the legal moves:
# 0.3 for chess's ~35, 0.15 for shogi's ~90), and the 32 x 4 network: on 81 cells the 64 x 5 one
# evaluates about a third as many positions a second (1,200 against 3,700 at batch 64 on one
# core), so a run would see a third of the generations. Measured: README, "Learning runs".
GOBANG_RECIPE: dict[str, dict] = {
    **CONNECT4_RECIPE,
    "net": {"channels": 32, "blocks": 4, "value_hidden": 64},
    "mcts": {**CONNECT4_RECIPE["mcts"], "dirichlet_alpha": 0.2},
    "selfplay": {**CONNECT4_RECIPE["selfplay"], "max_moves": 81, "temperature_moves": 6},
    # No gating (AlphaZero's, not AlphaGo Zero's, way): every candidate is promoted, and the arena
    # only measures it against the previous network. The untrained network (uniform priors, value
    # 0) searches ties in action order and builds rows along the top edge; the early candidates
    # lost to it (0.09 and 0.22 in generations 1-2; a Gumbel variant's 0.15), so with gating
    # self-play never left it. Without, each generation beat the one before (0.67, 0.70, 0.77 over
    # generations 2-4, 0.72 on average over 2-30), and generation 30 beat greedy 37 games of 40.
    "arena": {**CONNECT4_RECIPE["arena"], "max_moves": 81, "win_rate": 0.0},
}
TICTACTOE_RECIPE: dict[str, dict] = {
    "net": {"channels": 32, "blocks": 2, "value_hidden": 32},
    "mcts": {**_PUCT, "simulations": 64},
    # Six sampled opening moves (not three): self-play then reaches the odd openings too, and the
    # champion never loses from any reachable position (README, "Tic-Tac-Toe").
    "selfplay": {"games": 256, "shards": 2, "concurrent": 64, "max_moves": 9, "temperature": 1.0,
                 "temperature_moves": 6, "noise": True},
    "train": {"window": 6, "batch_size": 128, "lr": 0.002, "warmup_steps": 10, "samples_per_position": 6.0,
              "max_steps": 400, "threads": 1, "precision": "float32"},
    "arena": {"games": 32, "simulations": 64, "concurrent": 64, "max_moves": 9, "win_rate": 0.5,
              "temperature_moves": 2, "temperature": 1.0},
}
