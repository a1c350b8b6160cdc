"""A slow, plain reference implementation of the triangle puzzle, written straight from
``../shared/triangle-rules.md`` to check the packed engine against.

Independent of the engine on purpose: a 2-D list of cells, lines found by walking the three
directions and joining neighbours, legality checked triangle by triangle. Nothing from
``tri.games`` is used except, by the tests, the config values (rows, playable ranges, templates,
rewards). It never draws shapes: the caller supplies every refill.
"""

from __future__ import annotations

from dataclasses import dataclass

Shape = tuple[tuple[int, int, bool], ...]


def cell_is_up(r: int, c: int) -> bool:
    """Rules, "Board": cell ``(r, c)`` is an up triangle when ``r + c`` is odd."""
    return (r + c) % 2 == 1


def next_cell(direction: str, r: int, c: int) -> tuple[int, int]:
    """Rules, "Line clears": the cell after ``(r, c)`` along ``direction``."""
    if direction == "horizontal":
        return r, c + 1
    if direction == "backslash":
        return (r + 1, c) if cell_is_up(r, c) else (r, c + 1)
    if direction == "slash":
        return (r, c + 1) if cell_is_up(r, c) else (r - 1, c)
    raise ValueError(direction)


@dataclass
class RefStep:
    reward: float
    placed: int
    cleared: int  # distinct triangles removed
    lines: int
    refilled: bool
    game_over: bool


class ReferenceBoard:
    """Geometry: playable cells and the maximal lines of the three directions."""

    def __init__(self, rows: int, cols: int, playable: list[tuple[int, int]]):
        assert len(playable) == rows
        self.rows, self.cols = rows, cols
        self.playable = [[start <= c < end for c in range(cols)] for start, end in playable]
        self._fits: dict[Shape, list[tuple[int, int]]] = {}
        self.lines: list[frozenset[tuple[int, int]]] = []
        for direction in ("horizontal", "backslash", "slash"):
            self.lines.extend(self._lines(direction))

    def on_board(self, r: int, c: int) -> bool:
        return 0 <= r < self.rows and 0 <= c < self.cols and self.playable[r][c]

    def geometric_anchors(self, shape: Shape) -> list[tuple[int, int]]:
        """Anchors where every triangle of ``shape`` lies on a playable cell of its orientation
        (occupancy ignored): only a cache of the static half of ``ReferenceGame.is_legal``."""
        if shape not in self._fits:
            self._fits[shape] = [
                (r, c) for r in range(self.rows) for c in range(self.cols)
                if all(self.on_board(r + dr, c + dc) and cell_is_up(r + dr, c + dc) == up
                       for dr, dc, up in shape)]
        return self._fits[shape]

    def _lines(self, direction: str) -> list[frozenset[tuple[int, int]]]:
        """Maximal runs: the connected groups of playable cells joined by "next" steps that stay on
        playable cells, keeping groups of two or more cells. (Joining neighbours, rather than
        walking from run starts, is a different route to the same definition.)"""
        group = {}  # cell -> representative (union-find)

        def find(x):
            while group[x] != x:
                group[x] = group[group[x]]
                x = group[x]
            return x

        for r in range(self.rows):
            for c in range(self.cols):
                if self.playable[r][c]:
                    group[(r, c)] = (r, c)
        for r in range(self.rows):
            for c in range(self.cols):
                if not self.playable[r][c]:
                    continue
                nr, nc = next_cell(direction, r, c)
                if self.on_board(nr, nc):
                    group[find((r, c))] = find((nr, nc))
        members: dict[tuple[int, int], set[tuple[int, int]]] = {}
        for cell in group:
            members.setdefault(find(cell), set()).add(cell)
        return [frozenset(m) for m in members.values() if len(m) >= 2]


class ReferenceGame:
    """One game in progress. ``slots`` holds shapes (tuples of ``(dr, dc, is_up)``) or ``None``."""

    def __init__(self, board: ReferenceBoard, slots: list, rewards: tuple[float, float, float, float]):
        self.board = board
        self.grid = [[False] * board.cols for _ in range(board.rows)]
        self.slots = [None if s is None else tuple(s) for s in slots]
        self.placed_w, self.cleared_w, self.alive_w, self.illegal_w = rewards
        self.score = 0.0
        self.game_over = not self.legal_actions()

    # -- legality ---------------------------------------------------------------------------

    def is_legal(self, slot: int, r: int, c: int) -> bool:
        """Rules, "Actions", checked literally."""
        if self.game_over or not 0 <= slot < len(self.slots) or self.slots[slot] is None:
            return False
        for dr, dc, up in self.slots[slot]:
            rr, cc = r + dr, c + dc
            if not (0 <= rr < self.board.rows and 0 <= cc < self.board.cols):
                return False
            if not self.board.playable[rr][cc] or self.grid[rr][cc] or cell_is_up(rr, cc) != up:
                return False
        return True

    def legal_actions(self) -> list[tuple[int, int, int]]:
        """Every legal ``(slot, r, c)``, sorted."""
        out = []
        for s, shape in enumerate(self.slots):
            if shape is None:
                continue
            for r, c in self.board.geometric_anchors(shape):
                if all(not self.grid[r + dr][c + dc] for dr, dc, _ in shape):
                    out.append((s, r, c))
        return sorted(out)

    def legal_actions_slow(self) -> list[tuple[int, int, int]]:
        """The same list by trying every action with :meth:`is_legal` (ignores game over)."""
        over, self.game_over = self.game_over, False
        try:
            return [(s, r, c) for s in range(len(self.slots)) for r in range(self.board.rows)
                    for c in range(self.board.cols) if self.is_legal(s, r, c)]
        finally:
            self.game_over = over

    # -- a placement ------------------------------------------------------------------------

    def place(self, action: tuple[int, int, int], refill: list | None = None) -> RefStep:
        """Rules, "After a placement". ``refill``: the shapes the slots get if they all empty."""
        slot, r, c = action
        if not self.is_legal(slot, r, c):
            raise ValueError(f"illegal action {action}")
        shape = self.slots[slot]
        placed = [(r + dr, c + dc) for dr, dc, _ in shape]
        for rr, cc in placed:
            self.grid[rr][cc] = True
        self.slots[slot] = None
        done = [line for line in self.board.lines
                if any(cell in line for cell in placed) and all(self.grid[rr][cc] for rr, cc in line)]
        gone = set().union(*done) if done else set()
        for rr, cc in gone:
            self.grid[rr][cc] = False
        refilled = all(s is None for s in self.slots)
        if refilled:
            assert refill is not None and len(refill) == len(self.slots), "refill needed"
            self.slots = [None if s is None else tuple(s) for s in refill]
        self.game_over = not self.legal_actions()
        reward = self.placed_w * len(shape) + self.cleared_w * len(gone)
        if not self.game_over:
            reward += self.alive_w
        self.score += reward
        return RefStep(reward=reward, placed=len(shape), cleared=len(gone), lines=len(done),
                       refilled=refilled, game_over=self.game_over)

    def grid_ints(self) -> list[list[int]]:
        return [[int(v) for v in row] for row in self.grid]
