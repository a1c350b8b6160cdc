"""Othello (Reversi) under the batched game protocol, with a scalar API for play and tests.

A state is one row of ``L = 3`` ``uint64`` words, seen from the side to move::

    0   the side to move's discs (bit r * size + c, :mod:`tri.games.othello.rules`)
    1   the other side's discs
    2   flags: OVER (nobody can move), ILLEGAL (the side to move tried an illegal move, which
        ended the game), WHITE (white, the second player, is to move)

Actions: a cell ``r * size + c`` (row 0 at the top), and ``size * size``: **pass**, legal only
when the side to move has no placement (and the game is not over). A placement must flank at
least one line of the opponent's discs and flips every line it flanks. After a move, if neither
side can place, the game is over: the reward of that last move, to its mover, is +1 if it has
more discs, -1 if fewer, 0 for a draw; every other move's reward is 0. An illegal action ends
the game with -1 for the player who made it (the protocol's penalty).

People name cells ``a1``-style: the column's letter (``a`` at the left) and the row's number
(``1`` at the top); black (``X``, the first player) opens with one of ``d3``, ``c4``, ``f5``,
``e6`` on 8 x 8.

Symmetries: the rules are those of the square, so all 8 of its symmetries map positions to
positions of equal value (the 7 besides the identity are returned for augmentation, pass fixed).
The start position itself is invariant under only 4 of them (identity, half turn and the two
diagonal reflections); the other 4 swap its colours, so they map reachable positions to
positions with the colours' roles exchanged, still of equal value for the side to move.
"""

from __future__ import annotations

import re

import numba as nb
import numpy as np

from tri.games.base import Symmetry, Transition
from tri.games.kinrow.engine import pack, unpack
from tri.games.kinrow.rules import grid_symmetries
from tri.games.othello.rules import OthelloConfig, Shifts, cell_name

OVER = np.uint64(1)
ILLEGAL = np.uint64(2)
WHITE = np.uint64(4)
MINE, THEIRS, FLAGS = 0, 1, 2
_CELL = re.compile(r"([a-z])\s*0*(\d{1,2})")


@nb.njit(cache=True, nogil=True, inline="always")
def _shift(b, d, amount, mask):
    s = amount[d]
    if s > 0:
        return (b << np.uint64(s)) & mask[d]
    return (b >> np.uint64(-s)) & mask[d]


@nb.njit(cache=True, nogil=True)
def _moves(mine, theirs, size, amount, mask, full):
    """Bitboard of the placements legal for ``mine`` against ``theirs``."""
    empty = ~(mine | theirs) & full
    moves = np.uint64(0)
    for d in range(8):
        x = _shift(mine, d, amount, mask) & theirs
        for _ in range(size - 3):
            x |= _shift(x, d, amount, mask) & theirs
        moves |= _shift(x, d, amount, mask) & empty
    return moves


@nb.njit(cache=True, nogil=True)
def _flips(mine, theirs, move, amount, mask):
    """The discs of ``theirs`` that a disc placed on bit ``move`` flips."""
    flips = np.uint64(0)
    for d in range(8):
        line = np.uint64(0)
        y = _shift(move, d, amount, mask)
        while y & theirs:
            line |= y
            y = _shift(y, d, amount, mask)
        if y & mine:
            flips |= line
    return flips


@nb.njit(cache=True, nogil=True)
def _count(x):
    n = 0
    while x:
        x &= x - np.uint64(1)
        n += 1
    return n


@nb.njit(cache=True, nogil=True)
def step_batch(states, actions, size, amount, mask, full, out, reward, terminal):
    """Apply ``actions [B]`` to ``states [B, 3]`` into ``out [B, 3]``, ``reward [B]``, ``terminal [B]``."""
    n = size * size
    for b in range(states.shape[0]):
        mine, theirs, flags = states[b, 0], states[b, 1], states[b, 2]
        out[b, 0], out[b, 1], out[b, 2] = mine, theirs, flags
        reward[b] = 0.0
        terminal[b] = (flags & OVER) != 0
        if terminal[b]:
            continue
        a = actions[b]
        legal = _moves(mine, theirs, size, amount, mask, full)
        if a == n and legal == 0:  # a pass: the opponent has a move, or the game would be over
            out[b, 0], out[b, 1], out[b, 2] = theirs, mine, flags ^ WHITE
            continue
        if a < 0 or a >= n or (legal >> np.uint64(a)) & np.uint64(1) == 0:
            out[b, 2] = flags | OVER | ILLEGAL
            reward[b] = -1.0
            terminal[b] = True
            continue
        bit = np.uint64(1) << np.uint64(a)
        f = _flips(mine, theirs, bit, amount, mask)
        mine = mine | f | bit
        theirs = theirs & ~f
        flags = flags ^ WHITE
        if _moves(theirs, mine, size, amount, mask, full) == 0 and _moves(mine, theirs, size, amount, mask, full) == 0:
            flags |= OVER
            terminal[b] = True
            diff = _count(mine) - _count(theirs)
            reward[b] = 1.0 if diff > 0 else (-1.0 if diff < 0 else 0.0)
        out[b, 0], out[b, 1], out[b, 2] = theirs, mine, flags


@nb.njit(cache=True, nogil=True)
def legal_batch(states, size, amount, mask, full, out):
    """``out [B, A] bool``: the placements, else only the pass; nothing in a finished game."""
    n = size * size
    for b in range(states.shape[0]):
        for a in range(n + 1):
            out[b, a] = False
        if (states[b, 2] & OVER) != 0:
            continue
        moves = _moves(states[b, 0], states[b, 1], size, amount, mask, full)
        if moves == 0:
            out[b, n] = True
        for a in range(n):
            if (moves >> np.uint64(a)) & np.uint64(1):
                out[b, a] = True


@nb.njit(cache=True, nogil=True)
def moves_batch(states, size, amount, mask, full, out):
    """``out [B] uint64``: the placements of the side to move, as bitboards."""
    for b in range(states.shape[0]):
        out[b] = _moves(states[b, 0], states[b, 1], size, amount, mask, full)


class OthelloGame:
    """Othello for one :class:`OthelloConfig` (see the module docstring)."""

    name = "othello"
    num_players = 2
    stochastic = False
    state_size = 3

    def __init__(self, config: OthelloConfig | None = None):
        self.config = config or OthelloConfig()
        self.size = self.config.size
        self.rows = self.cols = self.size
        self.num_cells = self.size * self.size
        self.pass_action = self.num_cells
        self.num_actions = self.num_cells + 1
        self.move_limit = 2 * (self.num_cells - 4)  # every placement, each perhaps after a pass
        self.obs_shape = (4, self.size, self.size)
        self.shifts = Shifts(self.size)
        self._tab = (self.size, self.shifts.amount, self.shifts.mask, self.shifts.full)
        self._symmetries = tuple(
            Symmetry(name, cells, np.append(cells, self.pass_action))
            for name, cells in grid_symmetries(self.size, self.size, True))

    # ---- batched protocol ----------------------------------------------------------------

    def initial(self, seeds: np.ndarray) -> np.ndarray:
        black, white = self.shifts.start()
        out = np.zeros((np.asarray(seeds).shape[0], self.state_size), dtype=np.uint64)
        out[:, MINE], out[:, THEIRS] = black, white
        return out

    def legal(self, states: np.ndarray) -> np.ndarray:
        out = np.empty((states.shape[0], self.num_actions), dtype=bool)
        legal_batch(np.ascontiguousarray(states, dtype=np.uint64), *self._tab, out)
        return out

    def placements(self, states: np.ndarray) -> np.ndarray:
        """``[B] uint64``: the side to move's legal placements as bitboards (mobility)."""
        out = np.empty(states.shape[0], dtype=np.uint64)
        moves_batch(np.ascontiguousarray(states, dtype=np.uint64), *self._tab, out)
        return out

    def step(self, states: np.ndarray, actions: np.ndarray) -> Transition:
        b = states.shape[0]
        out = np.empty((b, self.state_size), dtype=np.uint64)
        reward, terminal = np.empty(b), np.empty(b, dtype=bool)
        step_batch(np.ascontiguousarray(states, dtype=np.uint64), np.ascontiguousarray(actions, dtype=np.int64),
                   *self._tab, out, reward, terminal)
        return Transition(out, reward, terminal)

    def terminal(self, states: np.ndarray) -> np.ndarray:
        return (states[:, FLAGS] & OVER) != 0

    def encode(self, states: np.ndarray) -> np.ndarray:
        """``[B, 4, size, size]``: the side to move's discs, the opponent's, its legal placements,
        and ones (the board inside the network's zero padding)."""
        b = states.shape[0]
        out = np.empty((b, 4, self.size, self.size), dtype=np.float32)
        out[:, :2] = unpack(states[:, :2], self.num_cells).reshape(b, 2, self.size, self.size)
        out[:, 2] = unpack(self.placements(states), self.num_cells).reshape(b, self.size, self.size)
        out[:, 3] = 1.0
        return out

    def reseed(self, states: np.ndarray, seeds: np.ndarray) -> np.ndarray:
        return states.copy()  # deterministic: no chance stream

    def symmetries(self) -> tuple[Symmetry, ...]:
        """The 7 symmetries of the square besides the identity (the pass action stays put)."""
        return self._symmetries

    def transform(self, states: np.ndarray, symmetry: Symmetry) -> np.ndarray:
        """``[B, 3] -> [B, 3]``: the positions ``symmetry`` maps ``states`` to (flags kept)."""
        out = states.copy()
        out[:, :2] = pack(unpack(states[:, :2], self.num_cells)[..., symmetry.cells])
        return out

    def line_fill(self, states: np.ndarray) -> np.ndarray:
        """``[B]``: the ``greedy`` player's tie-break, for the player who moved last: its disc
        difference over the board's cells (``greedy`` takes a won ending first, then the move that
        leaves the best disc difference)."""
        last = np.bitwise_count(states[:, THEIRS]).astype(np.float64)
        nxt = np.bitwise_count(states[:, MINE]).astype(np.float64)
        return (last - nxt) / self.num_cells

    # ---- scalar API (one state: a row [3] uint64) ------------------------------------------

    def new(self) -> np.ndarray:
        return self.initial(np.zeros(1, dtype=np.int64))[0]

    def legal_actions(self, state: np.ndarray) -> list[int]:
        return np.flatnonzero(self.legal(state[None])[0]).tolist()

    def is_over(self, state: np.ndarray) -> bool:
        return bool(state[FLAGS] & OVER)

    def black_to_move(self, state: np.ndarray) -> bool:
        return not bool(state[FLAGS] & WHITE)

    def discs(self, state: np.ndarray) -> tuple[int, int]:
        """``(black, white)`` disc counts."""
        mine, theirs = int(np.bitwise_count(state[MINE])), int(np.bitwise_count(state[THEIRS]))
        return (mine, theirs) if self.black_to_move(state) else (theirs, mine)

    def play(self, state: np.ndarray, action: int) -> tuple[np.ndarray, float, bool]:
        """``(next state, reward to the mover, terminal)`` of a legal ``action``; ``ValueError``
        saying why for an illegal one."""
        why = self.why_illegal(state, action)
        if why is not None:
            raise ValueError(why)
        t = self.step(state[None], np.array([action]))
        return t.states[0], float(t.reward[0]), bool(t.terminal[0])

    def from_moves(self, moves: str) -> np.ndarray:
        """The state after ``moves`` (``"d3 c5 pass ..."``) from the start; ``ValueError`` names the
        first unreadable or illegal one."""
        state = self.new()
        for i, text in enumerate(moves.split()):
            try:
                action = self.parse_move(text, state)
            except ValueError as exc:
                raise ValueError(f"move {i + 1}: {exc}") from None
            state = self.step(state[None], np.array([action])).states[0]
        return state

    def result(self, state: np.ndarray) -> float | None:
        """The finished game's result for black (+1 win, 0 draw, -1 loss); None while it goes on."""
        if not self.is_over(state):
            return None
        sign = 1.0 if self.black_to_move(state) else -1.0
        if state[FLAGS] & ILLEGAL:
            return -sign  # the side to move tried an illegal move and lost
        black, white = self.discs(state)
        return float(np.sign(black - white))

    # ---- for people (tri.games.base.PlayableGame) --------------------------------------------

    @property
    def column_labels(self) -> str:
        """The columns' letters, left to right (the web page labels the board with them)."""
        return "abcdefgh"[: self.size]

    def to_move(self, state: np.ndarray) -> int:
        """0 when black (``X``, the first player) is to move, 1 for white (``O``)."""
        return 0 if self.black_to_move(state) else 1

    def board(self, state: np.ndarray) -> np.ndarray:
        """``[size, size] int8``: 1 black, 2 white, 0 empty; row 0 at the top."""
        mine, theirs = unpack(np.asarray(state[:2], dtype=np.uint64), self.num_cells)
        black, white = (mine, theirs) if self.black_to_move(state) else (theirs, mine)
        return (black.astype(np.int8) + 2 * white.astype(np.int8)).reshape(self.size, self.size)

    def action_name(self, action: int) -> str:
        return "pass" if action == self.pass_action else cell_name(action, self.size)

    def why_illegal(self, state: np.ndarray, action: int) -> str | None:
        """None if ``action`` is legal in ``state``, else a short reason for a person."""
        if self.is_over(state):
            return "the game is over"
        legal = self.legal(state[None])[0]
        if action == self.pass_action:
            if legal[action]:
                return None
            first = self.action_name(int(np.flatnonzero(legal)[0]))
            return f"you cannot pass: you have a move (for example {first})"
        if not 0 <= action < self.num_cells:
            return f"there is no cell {action}"
        name = cell_name(action, self.size)
        if legal[action]:
            return None
        if legal[self.pass_action]:
            return f"{name}: you have no move, type pass"
        if self.board(state).reshape(-1)[action]:
            return f"{name} is taken"
        return f"{name} flips nothing: a disc must close a line of the opponent's discs"

    def parse_move(self, text: str, state: np.ndarray) -> int:
        """A cell ``a1``-style (``d3``, ``D 3``) or ``pass`` -> the action; ``ValueError`` with a
        one-line message for anything unreadable, off the board or illegal now."""
        t = text.strip().lower()
        letters = "abcdefgh"[: self.size]
        if t in ("pass", "p"):
            action = self.pass_action
        else:
            match = _CELL.fullmatch(t)
            if match is None:
                shown = t if len(t) <= 40 else t[:37] + "..."
                raise ValueError(f'could not read "{shown}": type a cell as its column letter and row number '
                                 f"(for example {cell_name(self._example(state), self.size)}), or pass")
            column, row = match.group(1), int(match.group(2))
            if column not in letters or not 1 <= row <= self.size:
                raise ValueError(f"{column}{row} is off the board (columns a-{letters[-1]}, rows 1-{self.size})")
            action = (row - 1) * self.size + letters.index(column)
        why = self.why_illegal(state, action)
        if why is not None:
            raise ValueError(why)
        return action

    def _example(self, state: np.ndarray) -> int:
        legal = np.flatnonzero(self.legal(state[None])[0][: self.num_cells])
        return int(legal[0]) if legal.size else 0

    def move_help(self, state: np.ndarray) -> str:
        return ("type a cell as its column letter and row number (for example "
                f"{cell_name(self._example(state), self.size)}): your disc must close a line of the opponent's "
                "discs, which turn to yours; pass only when you have no move. More discs at the end wins.")

    def render(self, state: np.ndarray) -> str:
        """The board as text: ``X`` black, ``O`` white, ``.`` empty, ``*`` a legal placement;
        column letters above, row numbers beside; then the disc counts."""
        grid = self.board(state)
        legal = self.legal(state[None])[0]
        lines = ["   " + " ".join("abcdefgh"[: self.size])]
        for r in range(self.size):
            cells = []
            for c in range(self.size):
                v = int(grid[r, c])
                cells.append("XO"[v - 1] if v else ("*" if legal[r * self.size + c] else "."))
            lines.append(f"{r + 1:>2} " + " ".join(cells))
        black, white = self.discs(state)
        lines.append(f"X {black}, O {white}")
        return "\n".join(lines)
