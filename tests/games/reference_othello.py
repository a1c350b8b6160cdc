"""A slow, plain-Python Othello engine written from the rules (not from the bitboard kernels), to
hold :mod:`tri.games.othello` against: a grid of lists, a walk along each of the 8 directions for
every move, and no shared code with the engine."""

from __future__ import annotations

EMPTY, BLACK, WHITE = 0, 1, 2
DIRECTIONS = [(dr, dc) for dr in (-1, 0, 1) for dc in (-1, 0, 1) if (dr, dc) != (0, 0)]


class ReferenceOthello:
    """``grid[r][c]`` in EMPTY/BLACK/WHITE (row 0 at the top); BLACK moves first. Actions:
    ``r * n + c`` for a placement, ``n * n`` for a pass (legal only without a placement, while
    the game goes on)."""

    def __init__(self, n: int = 8):
        self.n = n
        self.grid = [[EMPTY] * n for _ in range(n)]
        m = n // 2
        self.grid[m - 1][m - 1] = self.grid[m][m] = WHITE
        self.grid[m - 1][m] = self.grid[m][m - 1] = BLACK
        self.to_move = BLACK

    def copy(self) -> ReferenceOthello:
        other = ReferenceOthello(self.n)
        other.grid = [row[:] for row in self.grid]
        other.to_move = self.to_move
        return other

    def flipped(self, r: int, c: int, player: int) -> list[tuple[int, int]]:
        """The discs a disc of ``player`` on the empty cell (r, c) would flip."""
        if self.grid[r][c] != EMPTY:
            return []
        other = WHITE if player == BLACK else BLACK
        out = []
        for dr, dc in DIRECTIONS:
            line = []
            rr, cc = r + dr, c + dc
            while 0 <= rr < self.n and 0 <= cc < self.n and self.grid[rr][cc] == other:
                line.append((rr, cc))
                rr, cc = rr + dr, cc + dc
            if line and 0 <= rr < self.n and 0 <= cc < self.n and self.grid[rr][cc] == player:
                out += line
        return out

    def placements_of(self, player: int) -> list[tuple[int, int]]:
        return [(r, c) for r in range(self.n) for c in range(self.n) if self.flipped(r, c, player)]

    def placements(self) -> list[tuple[int, int]]:
        return self.placements_of(self.to_move)

    def is_over(self) -> bool:
        return not self.placements_of(BLACK) and not self.placements_of(WHITE)

    def legal_actions(self) -> list[int]:
        if self.is_over():
            return []
        moves = self.placements()
        return [r * self.n + c for r, c in moves] if moves else [self.n * self.n]

    def play(self, action: int) -> None:
        if action not in self.legal_actions():
            raise ValueError(f"illegal action {action}")
        if action != self.n * self.n:
            r, c = divmod(action, self.n)
            for rr, cc in self.flipped(r, c, self.to_move):
                self.grid[rr][cc] = self.to_move
            self.grid[r][c] = self.to_move
        self.to_move = WHITE if self.to_move == BLACK else BLACK

    def counts(self) -> tuple[int, int]:
        cells = [v for row in self.grid for v in row]
        return cells.count(BLACK), cells.count(WHITE)

    def result(self) -> int | None:
        if not self.is_over():
            return None
        black, white = self.counts()
        return (black > white) - (black < white)


def perft(board: ReferenceOthello, depth: int) -> int:
    """Action sequences of length ``depth`` (a pass is an action; a finished game is one leaf)."""
    if depth == 0 or board.is_over():
        return 1
    total = 0
    for action in board.legal_actions():
        child = board.copy()
        child.play(action)
        total += perft(child, depth - 1)
    return total


def random_game(n: int, rng) -> list[int]:
    """The actions of one uniformly random game to the end."""
    board, actions = ReferenceOthello(n), []
    while not board.is_over():
        legal = board.legal_actions()
        action = legal[int(rng.integers(len(legal)))]
        board.play(action)
        actions.append(action)
    return actions
