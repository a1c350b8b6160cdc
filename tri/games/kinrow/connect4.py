"""Connect Four (7 columns x 6 rows, four in a row by default) under the batched game protocol,
with a scalar API for play and evaluation.

Actions: a column ``0..cols-1``; the stone falls to the lowest empty cell. State, rewards and
network input: :mod:`tri.games.kinrow.engine` (row 0 of the board is the bottom row). Symmetry: the
left-right mirror.

People and Pascal Pons' test sets name columns ``1..cols``; :meth:`Connect4Game.from_moves`
reads such a move string::

    from tri.games.kinrow.connect4 import Connect4Game
    game = Connect4Game()
    state = game.from_moves("4453")            # [3] uint64, seen from the side to move
    print(game.render(state))
    game.legal_actions(state)                  # 0-based columns
    state, reward, over = game.play(state, 3)  # ValueError for a full column
"""

from __future__ import annotations

import numpy as np

from tri.games.base import Symmetry
from tri.games.kinrow.engine import KInRowGame, quoted, read_numbers
from tri.games.kinrow.rules import Connect4Config

__all__ = ["Connect4Config", "Connect4Game"]

_WORDS = {"column": "column", "col": "column"}  # "column 4", as action_name says, reads as 4


class Connect4Game(KInRowGame):
    """Connect Four for one :class:`Connect4Config`."""

    name = "connect4"
    gravity = True

    def __init__(self, config: Connect4Config | None = None):
        self.config = config or Connect4Config()
        super().__init__(self.config.rows, self.config.cols, self.config.connect)
        mirror = np.arange(self.num_cells).reshape(self.rows, self.cols)[:, ::-1].reshape(-1)
        self._symmetries = (Symmetry("mirror", np.ascontiguousarray(mirror),
                                     np.arange(self.cols)[::-1].copy()),)

    def symmetries(self) -> tuple[Symmetry, ...]:
        """The left-right mirror (cells and columns)."""
        return self._symmetries

    # ---- scalar API ----------------------------------------------------------------------

    def why_illegal(self, state: np.ndarray, action: int) -> str | None:
        if self.is_over(state):
            return "the game is over"
        if not 0 <= action < self.cols:
            return f"column {action + 1} is off the board (columns are 1-{self.cols})"
        if not self.legal(state[None])[0, action]:
            return f"column {action + 1} is full"
        return None

    def parse_move(self, text: str, state: np.ndarray) -> int:
        """A person's move: a 1-based column number (``4``, or ``column 4`` as
        :meth:`action_name` writes it) -> the action. ``ValueError`` with a one-line message for
        anything else (not a number, off the board, a full column), however long."""
        t = text.strip()
        parts = read_numbers(t, _WORDS)
        if not parts or len(parts) != 1 or parts[0][1] is None:
            raise ValueError(f'could not read "{quoted(t)}": type a column number 1-{self.cols}')
        action = parts[0][1] - 1
        why = self.why_illegal(state, action)
        if why is not None:
            raise ValueError(why)
        return action

    def action_name(self, action: int) -> str:
        return f"column {action + 1}"

    def move_help(self, state: np.ndarray) -> str:
        return (f"type a column number (1-{self.cols}): your stone drops to its lowest empty cell. "
                f"{self.k} in a row (across, up or diagonal) wins.")

    def render(self, state: np.ndarray) -> str:
        """The board as text, top row first: ``X`` the first player, ``O`` the second, ``.``
        empty, column numbers (1-based) underneath."""
        grid = self.board(state)
        width = len(str(self.cols)) + 1
        glyphs = {0: ".", 1: "X", 2: "O"}
        lines = ["".join(f"{glyphs[int(v)]:>{width}}" for v in grid[r]) for r in range(self.rows - 1, -1, -1)]
        lines.append("".join(f"{c + 1:>{width}}" for c in range(self.cols)))
        return "\n".join(lines)

