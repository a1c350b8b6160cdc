"""A slow, plain-Python Pyrga engine written from the rules (``/work/shared/pyrga-rules.md``), not
from any engine in :mod:`tri`, to hold a fast engine against move by move: a list of 16 cells, each
a dict of the pieces on it, the allowed cells found by walking from the previous placement, and no
shared code with the engine.

The rules' decided points, as implemented here:

- an arrow's ray runs from the neighbour of its cell to the board edge; the cell itself is not on
  it (an arrow at the edge pointing off the board has an empty ray);
- when none of the allowed cells can take any piece the mover still has, the mover may place any
  piece they have on any EMPTY cell (no piece at all) instead, and only there;
- the first move of the game may go anywhere;
- the game ends when the mover has no legal placement, fallback included (there is no pass);
- a tower is a cell with 3 pieces, owned by whoever owns 2 or 3 of them; more towers wins, equal
  counts (zero included) are a draw.

Actions (96): ``0..15`` a square on cell ``a``, ``16..31`` a circle on cell ``a - 16``,
``32..95`` an arrow on cell ``(a - 32) // 4`` pointing in direction ``(a - 32) % 4``.
"""

from __future__ import annotations

SQUARE, CIRCLE, ARROW = 0, 1, 2
PIECE_TYPES = (SQUARE, CIRCLE, ARROW)
DIRS = [(-1, 0), (0, 1), (1, 0), (0, -1)]  # 0 up, 1 right, 2 down, 3 left, as (row step, col step)
SIZE = 4
CELLS = SIZE * SIZE
PIECES_PER_TYPE = 5
CELL_CAPACITY = 3
NUM_ACTIONS = 96


def on_board(row: int, col: int) -> bool:
    return 0 <= row < SIZE and 0 <= col < SIZE


def neighbours(cell: int) -> list[int]:
    """The up to four orthogonal neighbours of ``cell``, in direction order (up, right, down, left)."""
    row, col = divmod(cell, SIZE)
    out = []
    for dr, dc in DIRS:
        if on_board(row + dr, col + dc):
            out.append((row + dr) * SIZE + col + dc)
    return out


def ray(cell: int, direction: int) -> list[int]:
    """The cells from the neighbour of ``cell`` in ``direction`` up to the board edge, nearest first;
    ``cell`` itself is not on it."""
    row, col = divmod(cell, SIZE)
    dr, dc = DIRS[direction]
    out = []
    row, col = row + dr, col + dc
    while on_board(row, col):
        out.append(row * SIZE + col)
        row, col = row + dr, col + dc
    return out


class ReferencePyrga:
    """A Pyrga position.

    ``cells[i]`` (``i = 4 * row + col``, row 0 at the top) maps a piece type on cell ``i`` to
    ``(owner, direction)``: ``direction`` is the arrow's direction (index into ``DIRS``) for an
    arrow, None otherwise. ``stock[p][t]`` is how many pieces of type ``t`` player ``p`` has left.
    ``to_move`` is 0 or 1 (0 moves first); ``previous`` is None before the first move, else the last
    placement as ``(cell, type, direction or None)``; ``moves_played`` counts placements so far.
    """

    def __init__(self):
        self.cells: list[dict[int, tuple[int, int | None]]] = [{} for _ in range(CELLS)]
        self.stock = [[PIECES_PER_TYPE] * 3 for _ in range(2)]
        self.to_move = 0
        self.previous: tuple[int, int, int | None] | None = None
        self.moves_played = 0

    def copy(self) -> ReferencePyrga:
        other = ReferencePyrga()
        other.cells = [dict(cell) for cell in self.cells]
        other.stock = [row[:] for row in self.stock]
        other.to_move = self.to_move
        other.previous = self.previous
        other.moves_played = self.moves_played
        return other

    # --- actions -------------------------------------------------------------------------------

    @staticmethod
    def encode(piece_type: int, cell: int, direction: int | None = None) -> int:
        """The action number of placing ``piece_type`` on ``cell`` (an arrow needs its direction)."""
        if not 0 <= cell < CELLS:
            raise ValueError(f"no cell {cell}")
        if piece_type == SQUARE:
            return cell
        if piece_type == CIRCLE:
            return 16 + cell
        if piece_type == ARROW:
            if direction is None or not 0 <= direction < 4:
                raise ValueError(f"an arrow needs a direction in 0..3, not {direction}")
            return 32 + 4 * cell + direction
        raise ValueError(f"no piece type {piece_type}")

    @staticmethod
    def decode(action: int) -> tuple[int, int, int | None]:
        """``(type, cell, direction or None)`` of an action number in 0..95."""
        if not 0 <= action < NUM_ACTIONS:
            raise ValueError(f"no action {action}")
        if action < 16:
            return SQUARE, action, None
        if action < 32:
            return CIRCLE, action - 16, None
        return ARROW, (action - 32) // 4, (action - 32) % 4

    # --- legality ------------------------------------------------------------------------------

    def can_take(self, cell: int, piece_type: int) -> bool:
        """Whether ``cell`` has room for a piece of ``piece_type``: fewer than 3 pieces and none of
        that type (whoever owns it)."""
        pieces = self.cells[cell]
        return len(pieces) < CELL_CAPACITY and piece_type not in pieces

    def types_in_hand(self) -> list[int]:
        """The piece types the player to move still has."""
        return [t for t in PIECE_TYPES if self.stock[self.to_move][t] > 0]

    def allowed_cells(self) -> list[int]:
        """The cells the previous placement allows, sorted, before any fallback: all 16 on the first
        move; the neighbours of a square; a circle's own cell; an arrow's ray (maybe empty)."""
        if self.previous is None:
            return list(range(CELLS))
        cell, piece_type, direction = self.previous
        if piece_type == SQUARE:
            return sorted(neighbours(cell))
        if piece_type == CIRCLE:
            return [cell]
        return sorted(ray(cell, direction))

    def constrained_placements(self) -> list[tuple[int, int]]:
        """``(type, cell)`` pairs the mover may place on the allowed cells (no fallback)."""
        out = []
        for cell in self.allowed_cells():
            for piece_type in self.types_in_hand():
                if self.can_take(cell, piece_type):
                    out.append((piece_type, cell))
        return out

    def fallback_placements(self) -> list[tuple[int, int]]:
        """``(type, cell)`` pairs of any piece the mover has on any empty cell."""
        out = []
        for cell in range(CELLS):
            if len(self.cells[cell]) == 0:
                for piece_type in self.types_in_hand():
                    out.append((piece_type, cell))
        return out

    def uses_fallback(self) -> bool:
        """True when the legal placements come from the fallback: no allowed cell can take any piece
        the mover has, and the fallback gives at least one placement. False on a finished game."""
        return not self.constrained_placements() and bool(self.fallback_placements())

    def placements(self) -> list[tuple[int, int]]:
        """The mover's legal ``(type, cell)`` pairs (an arrow may then point any of 4 ways)."""
        constrained = self.constrained_placements()
        if constrained:
            return constrained
        return self.fallback_placements()

    def legal_actions(self) -> list[int]:
        """The legal action numbers, sorted; empty when the game is over."""
        out = []
        for piece_type, cell in self.placements():
            if piece_type == ARROW:
                for direction in range(4):
                    out.append(self.encode(ARROW, cell, direction))
            else:
                out.append(self.encode(piece_type, cell))
        return sorted(out)

    def play(self, action: int) -> None:
        """Place the piece ``action`` names for the mover; the other player moves next."""
        if action not in self.legal_actions():
            raise ValueError(f"illegal action {action}")
        piece_type, cell, direction = self.decode(action)
        self.cells[cell][piece_type] = (self.to_move, direction)
        self.stock[self.to_move][piece_type] -= 1
        self.previous = (cell, piece_type, direction)
        self.moves_played += 1
        self.to_move = 1 - self.to_move

    # --- end and result ------------------------------------------------------------------------

    def is_over(self) -> bool:
        """The game is over when the mover has no legal placement, fallback included."""
        return not self.placements()

    def tower_owner(self, cell: int) -> int | None:
        """None when ``cell`` is not a tower (fewer than 3 pieces), else the player owning 2 or 3 of
        its pieces."""
        pieces = self.cells[cell]
        if len(pieces) < CELL_CAPACITY:
            return None
        owned_by_0 = 0
        for owner, _direction in pieces.values():
            if owner == 0:
                owned_by_0 += 1
        return 0 if owned_by_0 >= 2 else 1

    def towers(self) -> tuple[int, int]:
        """How many towers each player owns: (player 0, player 1)."""
        counts = [0, 0]
        for cell in range(CELLS):
            owner = self.tower_owner(cell)
            if owner is not None:
                counts[owner] += 1
        return counts[0], counts[1]

    def result(self) -> int | None:
        """None while the game goes on; else +1 if player 0 owns more towers, -1 if player 1 does,
        0 on equal counts."""
        if not self.is_over():
            return None
        mine, theirs = self.towers()
        return (mine > theirs) - (mine < theirs)


# --- symmetries ------------------------------------------------------------------------------------
#
# Symmetry k (0..7) is k % 4 clockwise quarter turns after a left-right mirror when k >= 4:
# mirror (row, col) -> (row, 3 - col), then each quarter turn (row, col) -> (col, 3 - row).
# k = 0 is the identity; k = 1 takes the top-left corner to the top-right corner.


def _transform_rc(row: int, col: int, k: int) -> tuple[int, int]:
    if k >= 4:
        col = SIZE - 1 - col
    for _ in range(k % 4):
        row, col = col, SIZE - 1 - row
    return row, col


def transform_cell(cell: int, k: int) -> int:
    """Where symmetry ``k`` takes ``cell``."""
    if not 0 <= k < 8:
        raise ValueError(f"no symmetry {k}")
    row, col = _transform_rc(*divmod(cell, SIZE), k)
    return row * SIZE + col


def transform_direction(direction: int, k: int) -> int:
    """Where symmetry ``k`` takes an arrow's direction: the step ``DIRS[direction]`` under the
    linear part of the map (mirror: col step negated; quarter turn: (dr, dc) -> (dc, -dr))."""
    if not 0 <= k < 8:
        raise ValueError(f"no symmetry {k}")
    dr, dc = DIRS[direction]
    if k >= 4:
        dc = -dc
    for _ in range(k % 4):
        dr, dc = dc, -dr
    return DIRS.index((dr, dc))


def transformed(board: ReferencePyrga, k: int) -> ReferencePyrga:
    """A new position: ``board`` under symmetry ``k``, pieces moved, arrows turned, and the previous
    placement (so the constraint it sets) mapped too. Stocks, mover and move count are unchanged."""
    other = board.copy()
    other.cells = [{} for _ in range(CELLS)]
    for cell in range(CELLS):
        for piece_type, (owner, direction) in board.cells[cell].items():
            new_direction = None if direction is None else transform_direction(direction, k)
            other.cells[transform_cell(cell, k)][piece_type] = (owner, new_direction)
    if board.previous is not None:
        cell, piece_type, direction = board.previous
        new_direction = None if direction is None else transform_direction(direction, k)
        other.previous = (transform_cell(cell, k), piece_type, new_direction)
    return other


def map_action(action: int, k: int) -> int:
    """The action under symmetry ``k``: its cell moved and, for an arrow, its direction turned."""
    piece_type, cell, direction = ReferencePyrga.decode(action)
    new_direction = None if direction is None else transform_direction(direction, k)
    return ReferencePyrga.encode(piece_type, transform_cell(cell, k), new_direction)


# --- whole games -----------------------------------------------------------------------------------


def perft(board: ReferencePyrga, depth: int) -> int:
    """Action sequences of length ``depth`` from ``board`` (a finished game is one leaf where it
    ends)."""
    if depth == 0 or board.is_over():
        return 1
    total = 0
    for action in board.legal_actions():
        child = board.copy()
        child.play(action)
        total += perft(child, depth - 1)
    return total


def random_game(rng) -> list[int]:
    """The actions of one game from the start to its end, each chosen uniformly among the legal
    actions with ``rng.integers`` (``rng`` a numpy Generator)."""
    board, actions = ReferencePyrga(), []
    while not board.is_over():
        legal = board.legal_actions()
        action = legal[int(rng.integers(len(legal)))]
        board.play(action)
        actions.append(action)
    return actions
