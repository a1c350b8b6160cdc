"""A slow, plain-Python k-in-a-row engine written from the rules (not from the kernels), to hold
Connect Four and the m,n,k-games against: a grid of lists, a scan of the whole board for a row
after every move, and the documented state layout packed by hand. Also :func:`random_positions`,
positions from random play for the symmetry tests."""

from __future__ import annotations

import numpy as np

from tri.games.base import sample_legal

EMPTY, X, O = 0, 1, 2


class ReferenceBoard:
    """``grid[r][c]`` in absolute colours. ``gravity``: an action is a column and the stone goes to
    the lowest empty row (row 0 is the bottom); otherwise an action is the cell ``r * cols + c``."""

    def __init__(self, rows: int, cols: int, k: int, gravity: bool):
        self.rows, self.cols, self.k, self.gravity = rows, cols, k, gravity
        self.grid = [[EMPTY] * cols for _ in range(rows)]
        self.to_move = X
        self.over = self.won = self.illegal = False

    def num_actions(self) -> int:
        return self.cols if self.gravity else self.rows * self.cols

    def target(self, action: int) -> tuple[int, int] | None:
        """The cell a legal action fills, or None."""
        if self.gravity:
            if not 0 <= action < self.cols:
                return None
            for r in range(self.rows):
                if self.grid[r][action] == EMPTY:
                    return r, action
            return None
        if not 0 <= action < self.rows * self.cols:
            return None
        r, c = divmod(action, self.cols)
        return (r, c) if self.grid[r][c] == EMPTY else None

    def legal(self) -> list[bool]:
        return [not self.over and self.target(a) is not None for a in range(self.num_actions())]

    def has_row(self, player: int) -> bool:
        for r in range(self.rows):
            for c in range(self.cols):
                for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
                    cells = [(r + i * dr, c + i * dc) for i in range(self.k)]
                    if all(0 <= rr < self.rows and 0 <= cc < self.cols and self.grid[rr][cc] == player
                           for rr, cc in cells):
                        return True
        return False

    def play(self, action: int) -> float:
        """Apply one action; returns the reward to the mover (the protocol's, penalty included)."""
        if self.over:
            return 0.0
        cell = self.target(action)
        if cell is None:
            self.over = self.illegal = True
            return -1.0
        r, c = cell
        self.grid[r][c] = self.to_move
        if self.has_row(self.to_move):
            self.over = self.won = True
            reward = 1.0
        else:
            reward = 0.0
            if all(v != EMPTY for row in self.grid for v in row):
                self.over = True
        self.to_move = O if self.to_move == X else X
        return reward

    def words(self) -> list[int]:
        """``[mine..., theirs..., flags]`` as documented in ``tri.games.kinrow.engine``: each side's
        stones a bitboard of ``ceil(rows * cols / 64)`` 64-bit words, the lowest first. After an
        illegal move the halves are not swapped: the side to move is still the one that tried it
        (so is ``to_move`` here: :meth:`play` returns before passing the turn)."""
        mover = self.to_move
        other = O if mover == X else X
        mine = sum(1 << (r * self.cols + c) for r in range(self.rows) for c in range(self.cols)
                   if self.grid[r][c] == mover)
        theirs = sum(1 << (r * self.cols + c) for r in range(self.rows) for c in range(self.cols)
                     if self.grid[r][c] == other)
        flags = (1 if self.over else 0) | (2 if self.won else 0) | (4 if self.illegal else 0)
        n = -(-(self.rows * self.cols) // 64)
        split = [[(bits >> (64 * i)) & (2 ** 64 - 1) for i in range(n)] for bits in (mine, theirs)]
        return split[0] + split[1] + [flags]

    def result(self) -> float | None:
        """For the first player: +1 win, 0 draw, -1 loss; None while the game goes on."""
        if not self.over:
            return None
        if self.illegal:
            return -1.0 if self.to_move == X else 1.0
        if self.won:
            return 1.0 if self.to_move == O else -1.0  # the last mover won
        return 0.0


def random_positions(game, count: int, seed: int) -> np.ndarray:
    """Non-terminal positions from random play (each game stopped at a random move)."""
    rng = np.random.default_rng(seed)
    states = game.initial(np.arange(count))
    stop = rng.integers(0, game.num_cells, size=count)
    out = states.copy()
    for move in range(game.num_cells):
        live = ~game.terminal(states)
        keep = live & (stop == move)
        out[keep] = states[keep]
        actions = sample_legal(game.legal(states), rng)
        states = np.where(live[:, None], game.step(states, np.maximum(actions, 0)).states, states)
    return out[~game.terminal(out)]
