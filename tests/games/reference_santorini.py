"""A slow, plain-Python Santorini engine (no god powers) written from the rules in
``/work/shared/santorini-rules.md`` (not from any engine in :mod:`tri`), to hold the fast engine
against move by move: a grid of lists for the heights, a list of cells for each player's workers,
and obvious loops over the 8 directions for every move and every build. No code is shared with
:mod:`tri`.

Rule points, as the rules file decides them (or, where it leaves room, as decided here):

* Heights are 0..3, and 4 is a dome. The first player (0) starts at (1, 2) and (3, 2), the second
  (1) at (2, 1) and (2, 3) on the 5 x 5 board; on an ``n x n`` board the analogous central cells
  (``n//2 - 1, n//2``), (``n//2 + 1, n//2``) and (``n//2, n//2 - 1``), (``n//2, n//2 + 1``).
  Any other start can be given as ``workers``.
* ``action = worker * 64 + move_dir * 8 + build_dir`` (128 actions): ``worker`` indexes the
  mover's two workers in row-major order of their cells at the start of the turn; the build
  direction is relative to the worker's cell after the move.
* A worker wins when its new cell has height 3 ("has moved onto height 3"), wherever it came from
  (so 3 -> 3 also wins; it cannot happen from a start with all heights 0, only in a hand-built
  position). A winning move builds nothing, and of its actions only the one with the
  lowest-numbered build direction *among the builds that would be legal after that move* (on the
  board, no worker, no dome) is legal. Since the cell just left is always a legal build, every
  move, winning or not, has at least one action.
* A player with no legal action at the start of their turn (no worker can move) loses.
* After ``max_actions`` actions the game is cut: a draw, marked ``cut``. A win, or a loss by
  having no move, decides the game even when it falls at the cap: the cap only cuts a game that
  would otherwise go on.
"""

from __future__ import annotations

# (d_row, d_col) of the directions 0..7, in the rules' order.
DIRECTIONS = [(-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1)]
DOME = 4


def encode(worker: int, move_dir: int, build_dir: int) -> int:
    """The action number of (worker 0/1, move direction 0..7, build direction 0..7)."""
    return worker * 64 + move_dir * 8 + build_dir


def decode(action: int) -> tuple[int, int, int]:
    """(worker, move_dir, build_dir) of an action 0..127."""
    return action // 64, (action // 8) % 8, action % 8


def default_workers(n: int) -> tuple[tuple[int, int], ...]:
    """The fixed start: the first player's two cells, then the second player's two cells."""
    m = n // 2
    return ((m - 1, m), (m + 1, m), (m, m - 1), (m, m + 1))


class ReferenceSantorini:
    """An ``n x n`` Santorini position.

    * ``height[r][c]``: 0..3, or 4 for a dome (row 0 at the top).
    * ``workers[p]``: the two (r, c) cells of player p (0 or 1), kept in row-major order.
    * ``to_move``: the player whose turn it is (0 moves first).
    * ``actions_played``: actions played so far (compared with ``max_actions``, the cap).
    * ``winner``: None, 0 or 1; ``cut``: True when the cap ended the game as a draw.

    ``workers``: ((r, c), (r, c)) for player 0 then ((r, c), (r, c)) for player 1, i.e. a sequence
    of four distinct cells (or two pairs of two); None for the fixed start (see
    :func:`default_workers`: the rules' cells on 5 x 5, the analogous central cells otherwise).
    A hand-edited position is settled (``winner``/``cut`` recomputed) by :meth:`is_over`.
    """

    def __init__(self, n: int = 5, max_actions: int = 200, workers=None):
        if n < 3:
            raise ValueError(f"board size {n} too small")
        self.n = n
        self.max_actions = max_actions
        self.height = [[0] * n for _ in range(n)]
        cells = default_workers(n) if workers is None else _flatten_cells(workers)
        if len(cells) != 4 or len(set(cells)) != 4 or not all(self.on_board(r, c) for r, c in cells):
            raise ValueError(f"need four distinct cells on the board, got {cells}")
        self.workers = [sorted(cells[:2]), sorted(cells[2:])]
        self.to_move = 0
        self.actions_played = 0
        self.winner: int | None = None
        self.cut = False

    def copy(self) -> ReferenceSantorini:
        other = ReferenceSantorini(self.n, self.max_actions, self.workers[0] + self.workers[1])
        other.height = [row[:] for row in self.height]
        other.to_move = self.to_move
        other.actions_played = self.actions_played
        other.winner = self.winner
        other.cut = self.cut
        return other

    def key(self) -> tuple:
        """Everything that makes up the position, as a hashable tuple (for comparing boards)."""
        return (self.n, self.max_actions, tuple(tuple(row) for row in self.height),
                tuple(tuple(self.worker_cells(p)) for p in (0, 1)), self.to_move,
                self.actions_played, self.winner, self.cut)

    def on_board(self, r: int, c: int) -> bool:
        return 0 <= r < self.n and 0 <= c < self.n

    def worker_cells(self, p: int) -> list[tuple[int, int]]:
        """Player p's two worker cells in row-major order (the order of the action's worker)."""
        return sorted(self.workers[p])

    def occupied(self) -> list[tuple[int, int]]:
        return self.workers[0] + self.workers[1]

    def moves_of(self, p: int) -> list[tuple[int, int, int, int]]:
        """Player p's legal moves, ignoring whose turn it is and whether the game is over:
        (worker index, move_dir, new row, new col)."""
        occupied = self.occupied()
        out = []
        for w, (r, c) in enumerate(self.worker_cells(p)):
            for d, (dr, dc) in enumerate(DIRECTIONS):
                nr, nc = r + dr, c + dc
                if not self.on_board(nr, nc) or (nr, nc) in occupied:
                    continue
                h = self.height[nr][nc]
                if h == DOME or h > self.height[r][c] + 1:
                    continue
                out.append((w, d, nr, nc))
        return out

    def builds_after(self, frm: tuple[int, int], to: tuple[int, int]) -> list[int]:
        """The legal build directions around ``to`` once the worker on ``frm`` has moved there:
        on the board, no worker (``frm`` is free now), no dome."""
        occupied = [cell for cell in self.occupied() if cell != frm] + [to]
        out = []
        for b, (dr, dc) in enumerate(DIRECTIONS):
            br, bc = to[0] + dr, to[1] + dc
            if self.on_board(br, bc) and (br, bc) not in occupied and self.height[br][bc] != DOME:
                out.append(b)
        return out

    def is_over(self) -> bool:
        """Whether the game has ended; settles ``winner`` and ``cut`` from the position first: a
        player to move without a legal move loses, and otherwise a game at the cap is cut."""
        if self.winner is not None:
            return True
        if not self.moves_of(self.to_move):
            self.winner = 1 - self.to_move
            return True
        if self.actions_played >= self.max_actions:
            self.cut = True
            return True
        return False

    def legal_actions(self) -> list[int]:
        """The legal actions (ints in 0..127, sorted); empty once the game is over."""
        if self.is_over():
            return []
        cells = self.worker_cells(self.to_move)
        out = []
        for w, d, nr, nc in self.moves_of(self.to_move):
            builds = self.builds_after(cells[w], (nr, nc))
            if self.height[nr][nc] == 3:
                builds = builds[:1]  # a winning move: only its lowest legal build direction
            for b in builds:
                out.append(encode(w, d, b))
        return sorted(out)

    def play(self, action: int) -> None:
        """Play a legal action (ValueError otherwise): move, then win or build; then the other
        player is to move (also after a win) and the end of the game is settled."""
        if action not in self.legal_actions():
            raise ValueError(f"illegal action {action}")
        w, d, b = decode(action)
        p = self.to_move
        r, c = self.worker_cells(p)[w]
        nr, nc = r + DIRECTIONS[d][0], c + DIRECTIONS[d][1]
        other = [cell for cell in self.workers[p] if cell != (r, c)]
        self.workers[p] = sorted(other + [(nr, nc)])
        # The rules: "moved onto height 3" -- the new cell has height 3, wherever the worker came
        # from (3 -> 3 wins too).
        if self.height[nr][nc] == 3:
            self.winner = p
        else:
            br, bc = nr + DIRECTIONS[b][0], nc + DIRECTIONS[b][1]
            self.height[br][bc] += 1  # 3 -> 4 is a dome
        self.actions_played += 1
        self.to_move = 1 - p
        self.is_over()

    def result(self) -> int | None:
        """None while the game goes on; else +1 (player 0 won), -1 (player 1 won) or 0 (cut)."""
        if not self.is_over():
            return None
        if self.winner is None:
            return 0
        return 1 if self.winner == 0 else -1

    def __str__(self) -> str:
        """One line per row: the height, then A/B for a worker of player 0/1 ('4' is a dome)."""
        lines = []
        for r in range(self.n):
            cells = []
            for c in range(self.n):
                mark = "A" if (r, c) in self.workers[0] else "B" if (r, c) in self.workers[1] else "."
                cells.append(f"{self.height[r][c]}{mark}")
            lines.append(" ".join(cells))
        return "\n".join(lines)


def _flatten_cells(workers) -> tuple[tuple[int, int], ...]:
    """((r, c), (r, c)), ((r, c), (r, c)) or four (r, c) pairs -> four (r, c) tuples."""
    flat = []
    for item in workers:
        if len(item) == 2 and all(isinstance(x, (tuple, list)) for x in item):
            flat.extend(tuple(int(v) for v in cell) for cell in item)
        else:
            flat.append(tuple(int(v) for v in item))
    return tuple(flat)


# ---- symmetries ---------------------------------------------------------------------------------
# k = 4 * reflect + turns, k in 0..7: first, if reflect, mirror left-right (c -> n - 1 - c); then
# turn the board a quarter clockwise `turns` times ((r, c) -> (c, n - 1 - r), so the top-left
# corner goes to the top-right corner). k = 0 is the identity.


def transform_cell(r: int, c: int, n: int, k: int) -> tuple[int, int]:
    """Where symmetry k sends cell (r, c) of an n x n board."""
    if k >= 4:
        c = n - 1 - c
    for _ in range(k % 4):
        r, c = c, n - 1 - r
    return r, c


def transform_direction(d: int, k: int) -> int:
    """The direction (index 0..7) that symmetry k sends direction d to: the direction's step taken
    from the centre of a 3 x 3 board, transformed like a cell."""
    dr, dc = DIRECTIONS[d]
    r, c = transform_cell(1 + dr, 1 + dc, 3, k)
    return DIRECTIONS.index((r - 1, c - 1))


def transformed(board: ReferenceSantorini, k: int) -> ReferenceSantorini:
    """A new board with the heights and workers moved by symmetry k (same turn, count, result)."""
    n = board.n
    cells = [transform_cell(r, c, n, k) for p in (0, 1) for r, c in board.workers[p]]
    out = ReferenceSantorini(n, board.max_actions, cells)
    for r in range(n):
        for c in range(n):
            tr, tc = transform_cell(r, c, n, k)
            out.height[tr][tc] = board.height[r][c]
    out.to_move = board.to_move
    out.actions_played = board.actions_played
    out.winner = board.winner
    out.cut = board.cut
    return out


def map_action(board: ReferenceSantorini, action: int, k: int) -> int:
    """The action of ``transformed(board, k)`` that makes the same move and build as ``action`` on
    ``board`` (the worker index recomputed from the transformed cells' row-major order). A
    winning move maps to the transformed board's one legal action for it: its lowest legal build
    direction there."""
    n = board.n
    w, d, b = decode(action)
    r, c = board.worker_cells(board.to_move)[w]
    cell = transform_cell(r, c, n, k)
    new_cells = sorted(transform_cell(rr, cc, n, k) for rr, cc in board.workers[board.to_move])
    tw, td, tb = new_cells.index(cell), transform_direction(d, k), transform_direction(b, k)
    dr, dc = DIRECTIONS[d]
    if board.on_board(r + dr, c + dc) and board.height[r + dr][c + dc] == 3:
        t = transformed(board, k)
        to = (cell[0] + DIRECTIONS[td][0], cell[1] + DIRECTIONS[td][1])
        tb = t.builds_after(cell, to)[0]
    return encode(tw, td, tb)


# ---- whole games --------------------------------------------------------------------------------


def perft(board: ReferenceSantorini, depth: int) -> int:
    """Action sequences of length ``depth`` from ``board`` (a finished game is one leaf)."""
    if depth == 0 or board.is_over():
        return 1
    total = 0
    for action in board.legal_actions():
        child = board.copy()
        child.play(action)
        total += perft(child, depth - 1)
    return total


def random_workers(n: int, rng) -> tuple[tuple[int, int], ...]:
    """Four distinct random cells (player 0's two, then player 1's two); ``rng``: a numpy
    Generator."""
    picks = rng.choice(n * n, size=4, replace=False)
    return tuple((int(x) // n, int(x) % n) for x in picks)


def random_game(n: int, rng, max_actions: int = 200, workers=None) -> list[int]:
    """The actions of one uniformly random game to its end (``rng``: a numpy Generator; each
    action drawn with ``rng.integers`` among the sorted legal actions)."""
    board, actions = ReferenceSantorini(n, max_actions, workers), []
    while not board.is_over():
        legal = board.legal_actions()
        action = legal[int(rng.integers(len(legal)))]
        board.play(action)
        actions.append(action)
    return actions
