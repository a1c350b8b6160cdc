"""m,n,k-games (Tic-Tac-Toe is 3,3,3, the default) under the batched game protocol, with a
scalar API for play and evaluation.

``m`` rows, ``n`` columns, ``k`` in a row wins. Actions: a cell ``r * n + c`` (row 0 at the top).
State, rewards and network input: :mod:`tri.games.kinrow.engine`. Symmetries: the 8 of the square when
``m == n`` (rotations and reflections), else the 4 of the rectangle (identity excluded, as
always).

People name cells ``1..m*n``, row by row from the top left (the numbers :meth:`MnkGame.render`
shows in empty cells), or as ``row col`` (both 1-based)::

    from tri.games.kinrow.mnk import MnkGame
    game = MnkGame()
    state = game.from_moves("5 1 9")           # centre, top left, bottom right
    print(game.render(state))
"""

from __future__ import annotations

import numpy as np

from tri.games.base import Symmetry
from tri.games.kinrow.engine import KInRowGame, quoted, read_numbers
from tri.games.kinrow.rules import MnkConfig, grid_symmetries

__all__ = ["MnkConfig", "MnkGame"]

_WORDS = {"cell": "cell", "row": "row", "column": "column", "col": "column"}
# The labels a move may come with: a cell, a row and column (words optional), or both.
_FORMS = {(None,), ("cell",), (None, None), ("row", "column"), ("cell", "row", "column")}


class MnkGame(KInRowGame):
    """An m,n,k-game for one :class:`MnkConfig` (``params.yaml``'s ``game.tictactoe``)."""

    name = "tictactoe"
    gravity = False

    def __init__(self, config: MnkConfig | None = None):
        self.config = config or MnkConfig()
        super().__init__(self.config.m, self.config.n, self.config.k)
        self._symmetries = tuple(Symmetry(name, cells, cells.copy())  # actions are cells
                                 for name, cells in grid_symmetries(self.rows, self.cols,
                                                                    self.rows == self.cols))

    def symmetries(self) -> tuple[Symmetry, ...]:
        """7 on a square board, 3 on a rectangle."""
        return self._symmetries

    # ---- scalar API ----------------------------------------------------------------------

    def why_illegal(self, state: np.ndarray, action: int) -> str | None:
        if self.is_over(state):
            return "the game is over"
        if not 0 <= action < self.num_cells:
            return f"cell {action + 1} is off the board (cells are 1-{self.num_cells})"
        if not self.legal(state[None])[0, action]:
            r, c = divmod(action, self.cols)
            return f"cell {action + 1} (row {r + 1}, column {c + 1}) is already taken"
        return None

    def parse_move(self, text: str, state: np.ndarray) -> int:
        """A person's move -> the action: a 1-based cell number (``5``, ``cell 5``), ``row col``
        (1-based: ``2 3``, ``2,3``, ``row 2 column 3``), or both as :meth:`action_name` writes
        them (``cell 5 (row 2, column 2)``). ``ValueError`` with a one-line message for anything
        else (not a number, off the board, an occupied cell), however long."""
        t = text.strip()
        parts = read_numbers(t, _WORDS)
        labels = tuple(label for label, _ in parts or ())
        numbers = [n for _, n in parts or ()]
        if None in numbers or labels not in _FORMS:
            raise ValueError(f'could not read "{quoted(t)}": type a cell number 1-{self.num_cells} '
                             f"or row and column (e.g. 2 3)")
        if len(numbers) == 1:
            action = numbers[0] - 1
        else:  # a row and a column, after the cell in action_name's form
            r, c = numbers[-2] - 1, numbers[-1] - 1
            if not (0 <= r < self.rows and 0 <= c < self.cols):
                raise ValueError(f"row {r + 1}, column {c + 1} is off the board "
                                 f"(rows 1-{self.rows}, columns 1-{self.cols})")
            action = r * self.cols + c
            if len(numbers) == 3 and numbers[0] - 1 != action:
                raise ValueError(f"cell {numbers[0]} is not at row {r + 1}, column {c + 1} "
                                 f"(cell {action + 1} is)")
        why = self.why_illegal(state, action)
        if why is not None:
            raise ValueError(why)
        return action

    def action_name(self, action: int) -> str:
        r, c = divmod(action, self.cols)
        return f"cell {action + 1} (row {r + 1}, column {c + 1})"

    def move_help(self, state: np.ndarray) -> str:
        return (f"type the number of an empty cell (1-{self.num_cells}, shown on the board) or row and "
                f"column (e.g. 2 3). {self.k} in a row wins.")

    def render(self, state: np.ndarray) -> str:
        """The board as text, top row first: ``X`` the first player, ``O`` the second, and the
        1-based number of each empty cell."""
        grid = self.board(state)
        width = len(str(self.num_cells)) + 1
        lines = []
        for r in range(self.rows):
            cells = []
            for c in range(self.cols):
                v = int(grid[r, c])
                cells.append(f"{'.XO'[v] if v else r * self.cols + c + 1:>{width}}")
            lines.append("".join(cells))
        return "\n".join(lines)

