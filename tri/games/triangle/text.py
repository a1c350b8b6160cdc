"""The triangle puzzle as text: the board (with its row and column numbers) and the slots (each
shape in its own mini-grid, side by side), as lines of ``(text, role)`` pieces.

:meth:`TriangleGame.render <tri.games.triangle.game.TriangleGame.render>` joins the texts
(:func:`plain`); the terminal (:mod:`tri.terminal.triangle`) gives each role a colour, and a web
page could give each a CSS class. Roles: ``axis`` (row and column numbers), ``filled``, ``new``
(filled by the last move), ``free`` (an empty cell), ``label`` (a slot's name), ``note`` (after
a label), ``dim`` (an empty slot, a shape's anchor brackets), ``slot0``, ``slot1``, ... (a shape's
triangles), ``""`` (spacing).

Example::

    from tri.games.triangle.game import TriangleGame
    from tri.games.triangle import text
    game = TriangleGame()
    state = game.new_game(7)
    print(text.plain(text.board_lines(game.geometry, state.grid)))
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np

from tri.games.triangle.rules import Board, Shape

GLYPHS = {"up": "▲", "down": "▼", "free_up": "△", "free_down": "▽"}
ASCII_GLYPHS = {"up": "A", "down": "V", "free_up": "^", "free_down": "v"}  # for consoles without them

Piece = tuple[str, str]
Line = list[Piece]


def board_lines(board: Board, grid: np.ndarray, glyphs: dict[str, str] = GLYPHS,
                new: Collection[tuple[int, int]] = ()) -> list[Line]:
    """The board, column numbers on top and row numbers either side; ``grid [rows, cols]``
    (nonzero: filled); ``new``: cells ``(r, c)`` drawn as ``new`` rather than ``filled``."""
    top: Line = [("    ", "axis")] + [(f"{col:^3}", "axis") for col in range(board.cols)]
    lines = [_rstrip(top)]
    for r in range(board.rows):
        line: Line = [(f"{r:>3} ", "axis")]
        for col in range(board.cols):
            if not board.playable[r, col]:
                line.append(("   ", ""))
                continue
            up = bool(board.up[r, col])
            if grid[r, col]:
                line.append((f" {glyphs['up' if up else 'down']} ", "new" if (r, col) in new else "filled"))
            else:
                line.append((f" {glyphs['free_up' if up else 'free_down']} ", "free"))
        line.append((f" {r:<3}", "axis"))
        lines.append(_rstrip(line))
    return lines


def slot_lines(shapes: Sequence[Shape | None], fits: Collection[int], glyphs: dict[str, str] = GLYPHS
               ) -> list[Line]:
    """The slots side by side: a label, then each shape in its own mini-grid; ``fits``: the
    slots whose shape has room somewhere (the others are marked "no room")."""
    blocks: list[list[Line]] = []
    for s, shape in enumerate(shapes):
        label: Line = [(f"slot {s}", "label")]
        if shape is None:
            blocks.append([label, [("(empty)", "dim")]])
            continue
        if s not in fits:
            label.append((" (no room)", "note"))
        blocks.append([label, *shape_lines(shape, f"slot{s}", glyphs)])
    width = max(_width(line) for block in blocks for line in block) + 4
    out = []
    for i in range(max(len(block) for block in blocks)):
        line: Line = [("    ", "")]
        for block in blocks:
            piece = block[i] if i < len(block) else []
            line.extend(piece)
            line.append((" " * (width - _width(piece)), ""))
        out.append(_rstrip(line))
    return out


def shape_lines(shape: Shape, role: str, glyphs: dict[str, str] = GLYPHS) -> list[Line]:
    """A shape in its own mini-grid; its anchor ``(0, 0)`` (the cell that goes at row col) is
    drawn in brackets, or as a dot when the shape does not cover it."""
    cells = {(dr, dc): up for dr, dc, up in shape}
    rows = [dr for dr, _ in cells] + [0]
    cols = [dc for _, dc in cells] + [0]
    lines = []
    for dr in range(min(rows), max(rows) + 1):
        line: Line = []
        for dc in range(min(cols), max(cols) + 1):
            up = cells.get((dr, dc))
            if up is None:
                line.append((" · " if (dr, dc) == (0, 0) else "   ", "dim"))
                continue
            glyph = glyphs["up" if up else "down"]
            if (dr, dc) == (0, 0):
                line += [("[", "dim"), (glyph, role), ("]", "dim")]
            else:
                line.append((f" {glyph} ", role))
        lines.append(_rstrip(line))
    return lines


def plain(lines: Sequence[Line]) -> str:
    """The lines without their roles, one string."""
    return "\n".join("".join(text for text, _ in line) for line in lines)


def _width(line: Line) -> int:
    return sum(len(text) for text, _ in line)


def _rstrip(line: Line) -> Line:
    """``line`` without trailing spaces."""
    out = list(line)
    while out and not out[-1][0].rstrip():
        out.pop()
    if out:
        out[-1] = (out[-1][0].rstrip(), out[-1][1])
    return out
