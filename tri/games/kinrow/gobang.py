"""Gobang (five in a row, freestyle; 9 x 9 by default): the m,n,k engine
(:mod:`tri.games.kinrow.mnk`) under its own name, section (``game.gobang``), recipe and champion,
with Go-style coordinates for people.

People name a cell by its column letter and row number, ``e5`` (columns ``a``, ``b``, ... from
the left, rows 1, 2, ... from the top, as :meth:`GobangGame.render` labels them), or as ``row col``
numbers (both 1-based)::

    from tri.games.kinrow.gobang import GobangGame
    game = GobangGame()
    state = game.from_moves("41 42 32")        # cell numbers, row by row from the top left
    state = game.play(state, game.parse_move("e6", state))[0]
    print(game.render(state))
"""

from __future__ import annotations

import re
import string

import numpy as np

from tri.games.kinrow.engine import quoted
from tri.games.kinrow.mnk import MnkGame
from tri.games.kinrow.rules import GobangConfig

__all__ = ["GobangConfig", "GobangGame"]

_CELL = re.compile(r"([a-z])\s*(\d{1,3})")
_ROW_COL = re.compile(r"(\d{1,3})[\s,]+(\d{1,3})")


class GobangGame(MnkGame):
    """Gobang for one :class:`GobangConfig` (``params.yaml``'s ``game.gobang``)."""

    name = "gobang"

    def __init__(self, config: GobangConfig | None = None):
        super().__init__(config or GobangConfig())
        self.letters = string.ascii_lowercase[: self.cols]

    @property
    def column_labels(self) -> list[str]:
        """The columns' letters, left to right (the web page labels its board with them)."""
        return list(self.letters)

    def cell_name(self, action: int) -> str:
        """``e5``: the column's letter, then the row's number (row 1 at the top)."""
        r, c = divmod(action, self.cols)
        return f"{self.letters[c]}{r + 1}"

    def why_illegal(self, state: np.ndarray, action: int) -> str | None:
        if self.is_over(state):
            return "the game is over"
        if not 0 <= action < self.num_cells:
            return f"cell {action} is off the board"
        if not self.legal(state[None])[0, action]:
            return f"{self.cell_name(action)} is already taken"
        return None

    def parse_move(self, text: str, state: np.ndarray) -> int:
        """A person's move -> the action: ``e5`` (column letter, row number; ``E 5`` too) or
        ``row col`` (1-based numbers, ``5 5`` or ``5,5``). ``ValueError`` with a one-line message
        for anything else (unreadable, off the board, a taken cell), however long."""
        t = text.strip().lower()
        last = self.letters[-1]
        letter, numbers = _CELL.fullmatch(t), _ROW_COL.fullmatch(t)
        if letter is not None:
            column, row = letter.group(1), int(letter.group(2))
            if column not in self.letters or not 1 <= row <= self.rows:
                raise ValueError(f"{column}{row} is off the board (columns a-{last}, rows 1-{self.rows})")
            action = (row - 1) * self.cols + self.letters.index(column)
        elif numbers is not None:
            row, col = int(numbers.group(1)), int(numbers.group(2))
            if not (1 <= row <= self.rows and 1 <= col <= self.cols):
                raise ValueError(f"row {row}, column {col} is off the board (rows 1-{self.rows}, "
                                 f"columns 1-{self.cols})")
            action = (row - 1) * self.cols + col - 1
        else:
            raise ValueError(f'could not read "{quoted(t)}": type a cell as its column letter and row '
                             f"number (for example {self.cell_name(self._example(state))}) or row and column")
        why = self.why_illegal(state, action)
        if why is not None:
            raise ValueError(why)
        return action

    def action_name(self, action: int) -> str:
        return self.cell_name(action)

    def move_help(self, state: np.ndarray) -> str:
        example = self._example(state)
        return (f"type an empty cell as its column letter and row number (for example "
                f"{self.cell_name(example)}), or row and column (e.g. {example // self.cols + 1} "
                f"{example % self.cols + 1}). {self.k} or more in a row (across, down or diagonal) wins.")

    def _example(self, state: np.ndarray) -> int:
        """The empty cell nearest the centre (the first in reading order among equals)."""
        free = np.flatnonzero(self.board(state).reshape(-1) == 0)
        if free.size == 0:
            return 0
        r, c = np.divmod(free, self.cols)
        dist = (r - (self.rows - 1) / 2) ** 2 + (c - (self.cols - 1) / 2) ** 2
        return int(free[np.argmin(dist)])

    def render(self, state: np.ndarray) -> str:
        """The board as text: ``X`` the first player (black), ``O`` the second, ``.`` empty; column
        letters above, row numbers beside."""
        grid = self.board(state)
        width = len(str(self.rows))
        lines = [" " * (width + 1) + " ".join(self.letters)]
        for r in range(self.rows):
            cells = " ".join(".XO"[int(v)] for v in grid[r])
            lines.append(f"{r + 1:>{width}} {cells}")
        return "\n".join(lines)
