"""Pyrga under the batched game protocol, with a scalar API for play and tests.

A state is one row of ``L = 4`` ``uint64`` words, seen from the side to move::

    0   the side to move's pieces: bits 0-15 its squares (bit i = cell i), 16-31 circles, 32-47 arrows
    1   the other side's pieces, likewise
    2   bits 2i, 2i+1: the direction of the arrow on cell i (0 up, 1 right, 2 down, 3 left)
    3   flags: OVER, ILLEGAL (the side to move tried an illegal action, which ended the game),
        SECOND (the second player is to move); bits 8-15 the previous placement (cell, type + 1
        or 0 before the first, an arrow's direction); bits 16-23 placements made

A player's pieces in hand are ``pieces`` (5) less those of that type on the board.

Actions (96, the rules' encoding): ``0-15`` a square on cell ``a``, ``16-31`` a circle on cell
``a - 16``, ``32-95`` an arrow on cell ``(a - 32) // 4`` pointing ``(a - 32) % 4``. A cell holds
at most one piece of each type. The previous placement allows: after a square, its orthogonal
neighbours; after a circle, its cell; after an arrow, the cells along its ray to the edge; if
none of them can take a piece the mover has, any empty cell can (the fallback); the first
placement goes anywhere. The game ends when the side to move has no placement: then towers
(cells of 3 pieces) belong to who has 2 or 3 of their pieces, and more towers wins. The last
placement's reward, to its mover: +1 if it owns more towers, -1 fewer, 0 as many; every other
reward is 0. An illegal action ends the game with -1 for the player who made it.

People type ``s b2`` (a square on b2), ``c b2`` (a circle), ``a b2 >`` (an arrow, and its
direction: ``^ > v <`` or ``up right down left``). Cells are ``a1``-style, row 1 at the top.

Symmetries: the 8 of the square; arrow directions (on the board, in the previous placement,
in the actions and in the network's direction planes) are mapped with the cells.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from tri.games.base import Symmetry, Transition
from tri.games.kinrow.engine import pack, unpack
from tri.games.kinrow.rules import grid_symmetries
from tri.games.pyrga.kernels import (ARROWS, COUNT_SHIFT, FLAGS, ILLEGAL, MINE, NUM_ACTIONS, OVER, PREV_SHIFT,
                                     SECOND, THEIRS, greedy_batch, legal_batch, step_batch, towers_batch)
from tri.games.pyrga.rules import ARROW_NAMES, CELLS, SIZE, TYPE_NAMES, PyrgaConfig, direction_map, orthogonal, rays

_CELL = re.compile(r"([a-z])\s*0*(\d{1,2})")
_TYPES = {"s": 0, "square": 0, "c": 1, "circle": 1, "a": 2, "arrow": 2}
_DIRECTIONS = {"^": 0, "up": 0, "u": 0, ">": 1, "right": 1, "r": 1, "v": 2, "down": 2, "d": 2, "<": 3, "left": 3,
               "l": 3}
DIRECTION_PLANES = 6  # encode(): the first of the four arrow-direction planes


@dataclass(frozen=True)
class PyrgaSymmetry(Symmetry):
    """A symmetry of the square that also maps arrow directions: ``directions [4]`` gives the
    direction each becomes; the network's four direction planes are reordered to match."""

    directions: np.ndarray = None

    def apply_planes(self, planes: np.ndarray) -> np.ndarray:
        out = super().apply_planes(planes)
        moved = out.copy()
        for d in range(4):
            moved[..., DIRECTION_PLANES + self.directions[d], :, :] = out[..., DIRECTION_PLANES + d, :, :]
        return moved


class PyrgaGame:
    """Pyrga for one :class:`PyrgaConfig` (see the module docstring)."""

    name = "pyrga"
    num_players = 2
    stochastic = False
    state_size = 4
    num_actions = NUM_ACTIONS
    size = rows = cols = SIZE
    num_cells = CELLS

    def __init__(self, config: PyrgaConfig | None = None):
        self.config = config or PyrgaConfig()
        self.pieces = self.config.pieces
        self.move_limit = 6 * self.pieces
        self.obs_shape = (18, SIZE, SIZE)
        self._tab = (self.pieces, rays(), orthogonal())
        syms = []
        for name, cells in grid_symmetries(SIZE, SIZE, True):
            dmap = direction_map(cells)
            inverse = np.empty(4, np.int64)
            inverse[dmap] = np.arange(4)
            arrows = (32 + 4 * cells[:, None] + inverse[None, :]).reshape(-1)
            syms.append(PyrgaSymmetry(name, cells, np.concatenate([cells, 16 + cells, arrows]), directions=dmap))
        self._symmetries = tuple(syms)

    # ---- batched protocol ----------------------------------------------------------------

    def initial(self, seeds: np.ndarray) -> np.ndarray:
        return np.zeros((np.asarray(seeds).shape[0], self.state_size), np.uint64)

    def legal(self, states: np.ndarray) -> np.ndarray:
        out = np.empty((states.shape[0], NUM_ACTIONS), bool)
        legal_batch(np.ascontiguousarray(states, dtype=np.uint64), *self._tab, out)
        return out

    def step(self, states: np.ndarray, actions: np.ndarray) -> Transition:
        b = states.shape[0]
        out = np.empty((b, self.state_size), np.uint64)
        reward, terminal = np.empty(b), np.empty(b, bool)
        step_batch(np.ascontiguousarray(states, dtype=np.uint64), np.ascontiguousarray(actions, dtype=np.int64),
                   *self._tab, out, reward, terminal)
        return Transition(out, reward, terminal)

    def terminal(self, states: np.ndarray) -> np.ndarray:
        return (states[:, FLAGS] & OVER) != 0

    def pieces_of(self, states: np.ndarray) -> np.ndarray:
        """``[B, 2, 3, 16] bool``: the side to move's and the other side's squares, circles, arrows."""
        words = np.stack([states[:, MINE], states[:, THEIRS]], axis=1)
        return unpack(words, 48).reshape(-1, 2, 3, CELLS)

    def arrow_directions(self, states: np.ndarray) -> np.ndarray:
        """``[B, 16] int8``: the direction of each cell's arrow (meaningless where there is none)."""
        shifts = 2 * np.arange(CELLS, dtype=np.uint64)
        return ((states[:, ARROWS, None] >> shifts) & np.uint64(3)).astype(np.int8)

    def encode(self, states: np.ndarray) -> np.ndarray:
        """``[B, 18, 4, 4]``: the side to move's squares, circles and arrows, the other side's,
        the arrows pointing up, right, down and left (either side's), the cells the side to move
        may place on now, its pieces in hand of each type and the other side's (constant planes,
        over ``pieces``), and ones."""
        b = states.shape[0]
        out = np.zeros((b, 18, CELLS), np.float32)
        pieces = self.pieces_of(states)
        out[:, :6] = pieces.reshape(b, 6, CELLS)
        arrows = pieces[:, 0, 2] | pieces[:, 1, 2]
        dirs = self.arrow_directions(states)
        for d in range(4):
            out[:, DIRECTION_PLANES + d] = arrows & (dirs == d)
        legal = self.legal(states)
        out[:, 10] = legal[:, :16] | legal[:, 16:32] | legal[:, 32:].reshape(b, CELLS, 4).any(axis=2)
        out[:, 11:17] = (self.pieces - pieces.sum(axis=3)).reshape(b, 6, 1) / self.pieces
        out[:, 17] = 1.0
        return out.reshape(b, 18, SIZE, SIZE)

    def reseed(self, states: np.ndarray, seeds: np.ndarray) -> np.ndarray:
        return states.copy()  # deterministic: no chance stream

    def symmetries(self) -> tuple[Symmetry, ...]:
        """The 7 symmetries of the square besides the identity (:class:`PyrgaSymmetry`)."""
        return self._symmetries

    def transform(self, states: np.ndarray, symmetry: PyrgaSymmetry) -> np.ndarray:
        """``[B, 4] -> [B, 4]``: the positions ``symmetry`` maps ``states`` to: pieces, arrow
        directions and the previous placement moved."""
        out = states.copy()
        pieces = self.pieces_of(states)[..., symmetry.cells]  # [B, 2, 3, 16]
        out[:, MINE] = pack(pieces[:, 0].reshape(-1, 48))
        out[:, THEIRS] = pack(pieces[:, 1].reshape(-1, 48))
        has_arrow = pieces[:, :, 2].any(axis=1)  # [B, 16], already moved
        dirs = symmetry.directions[self.arrow_directions(states)][:, symmetry.cells]
        dirs = np.where(has_arrow, dirs, 0).astype(np.uint64)  # a cell without an arrow keeps 0
        out[:, ARROWS] = np.bitwise_or.reduce(dirs << (2 * np.arange(CELLS, dtype=np.uint64)), axis=1)
        forward = np.empty(CELLS, np.int64)
        forward[symmetry.cells] = np.arange(CELLS)
        flags = states[:, FLAGS]
        cell = forward[((flags >> PREV_SHIFT) & np.uint64(15)).astype(np.int64)].astype(np.uint64)
        kind = (flags >> (PREV_SHIFT + np.uint64(4))) & np.uint64(3)
        d = symmetry.directions[((flags >> (PREV_SHIFT + np.uint64(6))) & np.uint64(3)).astype(np.int64)]
        d = np.where(kind == 3, d, 0).astype(np.uint64)
        cell = np.where(kind == 0, 0, cell).astype(np.uint64)
        prev = cell | (kind << np.uint64(4)) | (d << np.uint64(6))
        out[:, FLAGS] = (flags & ~(np.uint64(255) << PREV_SHIFT)) | (prev << PREV_SHIFT)
        return out

    def line_fill(self, states: np.ndarray) -> np.ndarray:
        """``[B]``: the ``greedy`` player's tie-break after equal rewards (a won ending first), for
        the player who placed: its towers, then the fewest towers given away (placements that
        would complete a tower the opponent owns, 0.01 each)."""
        out = np.empty(states.shape[0])
        greedy_batch(np.ascontiguousarray(states, dtype=np.uint64), *self._tab, out)
        return out

    # ---- scalar API (one state: a row [4] uint64) ------------------------------------------

    def new(self) -> np.ndarray:
        return self.initial(np.zeros(1, np.int64))[0]

    def legal_actions(self, state: np.ndarray) -> list[int]:
        return np.flatnonzero(self.legal(state[None])[0]).tolist()

    def is_over(self, state: np.ndarray) -> bool:
        return bool(state[FLAGS] & OVER)

    def placements_made(self, state: np.ndarray) -> int:
        return int((state[FLAGS] >> COUNT_SHIFT) & np.uint64(255))

    def towers(self, state: np.ndarray) -> tuple[int, int]:
        """``(first player's towers, second player's)``."""
        out = np.empty((1, 2), np.int64)
        towers_batch(state[None].astype(np.uint64), out)
        mine, theirs = int(out[0, 0]), int(out[0, 1])
        return (theirs, mine) if state[FLAGS] & SECOND else (mine, theirs)

    def result(self, state: np.ndarray) -> float | None:
        """The finished game's result for the first player (+1 win, 0 draw, -1 loss); None while
        it goes on."""
        if not self.is_over(state):
            return None
        if state[FLAGS] & ILLEGAL:
            return -1.0 if self.to_move(state) == 0 else 1.0
        first, second = self.towers(state)
        return float(np.sign(first - second))

    def play(self, state: np.ndarray, action: int) -> tuple[np.ndarray, float, bool]:
        """``(next state, reward to the mover, terminal)`` of a legal ``action``; ``ValueError``
        for an illegal one."""
        if self.is_over(state):
            raise ValueError("the game is over")
        if not (0 <= action < NUM_ACTIONS and self.legal(state[None])[0, action]):
            raise ValueError(f"action {action} is not legal here")
        t = self.step(state[None], np.array([action]))
        return t.states[0], float(t.reward[0]), bool(t.terminal[0])

    # ---- for people (tri.games.base.PlayableGame) --------------------------------------------

    column_labels = "abcd"

    def to_move(self, state: np.ndarray) -> int:
        return 1 if state[FLAGS] & SECOND else 0

    def owners(self, state: np.ndarray) -> np.ndarray:
        """``[2, 3, 16] bool``: the first and the second player's squares, circles, arrows."""
        p = self.pieces_of(state[None])[0]
        return p[::-1] if state[FLAGS] & SECOND else p

    def board(self, state: np.ndarray) -> np.ndarray:
        """``[4, 12] int8``: each cell as three slots, its square, circle and arrow (cell
        ``(r, c)``'s at columns ``3c``, ``3c + 1``, ``3c + 2``): 1 the first player's piece, 2 the
        second's, 0 none."""
        own = self.owners(state)  # [2, 3, 16]
        slots = own[0].astype(np.int8) + 2 * own[1].astype(np.int8)  # [3, 16]
        return slots.T.reshape(SIZE, SIZE * 3)

    def action_name(self, action: int) -> str:
        """``s b2``, ``c b2`` or ``a b2 >``."""
        if action < 32:
            return f"{'sc'[action // 16]} {_cell_name(action % 16)}"
        cell, d = divmod(action - 32, 4)
        return f"a {_cell_name(cell)} {ARROW_NAMES[d]}"

    def parse_move(self, text: str, state: np.ndarray) -> int:
        """``s b2`` / ``c b2`` / ``a b2 >`` (type, cell, an arrow's direction) -> the action;
        ``ValueError`` with a one-line message for anything unreadable, off the board or illegal."""
        if self.is_over(state):
            raise ValueError("the game is over")
        words = text.strip().lower().split()
        shown = text.strip() if len(text.strip()) <= 40 else text.strip()[:37] + "..."
        if not 2 <= len(words) <= 3 or words[0] not in _TYPES:
            raise ValueError(f'could not read "{shown}": type a piece (s, c or a), a cell and for an arrow its '
                             f"direction (^ > v <), for example {self._example(state)}")
        kind = _TYPES[words[0]]
        match = _CELL.fullmatch(words[1])
        if match is None:
            raise ValueError(f'could not read the cell "{words[1][:20]}": its column letter and row number, '
                             f"for example b2")
        column, row = match.group(1), int(match.group(2))
        if column not in self.column_labels or not 1 <= row <= SIZE:
            raise ValueError(f"{column}{row} is off the board (columns a-d, rows 1-4)")
        cell = (row - 1) * SIZE + self.column_labels.index(column)
        if kind == 2:
            if len(words) != 3 or words[2] not in _DIRECTIONS:
                raise ValueError("an arrow needs its direction: ^ > v < (or up, right, down, left)")
            action = 32 + 4 * cell + _DIRECTIONS[words[2]]
        elif len(words) == 3:
            raise ValueError(f"only an arrow has a direction; a {TYPE_NAMES[kind]} is placed with its cell alone")
        else:
            action = 16 * kind + cell
        if not self.legal(state[None])[0, action]:
            raise ValueError(self._why_illegal(state, kind, cell))
        return action

    def _why_illegal(self, state: np.ndarray, kind: int, cell: int) -> str:
        name = _cell_name(cell)
        mine = self.pieces_of(state[None])[0]
        if mine[0, kind].sum() >= self.pieces:
            return f"you have no {TYPE_NAMES[kind]}s left"
        on_cell = mine[:, :, cell].any(axis=0)
        if on_cell.sum() == 3:
            return f"{name} is full (3 pieces)"
        if on_cell[kind]:
            return f"{name} already has a {TYPE_NAMES[kind]}"
        cells = sorted({a % 16 if a < 32 else (a - 32) // 4 for a in self.legal_actions(state)})
        return f"not on {name} now: the last piece allows {', '.join(_cell_name(c) for c in cells)}"

    def _example(self, state: np.ndarray) -> str:
        legal = self.legal_actions(state)
        return self.action_name(legal[0]) if legal else "s b2"

    def move_help(self, state: np.ndarray) -> str:
        return (f"type a piece, a cell and for an arrow its direction (for example {self._example(state)}): "
                "after a square play next to it, after a circle on it, after an arrow along it; "
                "3 pieces make a tower, owned by who has 2 of them; more towers wins.")

    def render(self, state: np.ndarray) -> str:
        """Each cell's pieces: ``S``, ``C``, ``A`` and its direction (``A>``) for the first player
        (``X``), lower case for the second (``O``); ``*`` a cell you may place on now; then the
        towers and the pieces in hand."""
        own = self.owners(state)
        dirs = self.arrow_directions(state[None])[0]
        legal = self.legal(state[None])[0]
        open_cells = legal[:16] | legal[16:32] | legal[32:].reshape(CELLS, 4).any(axis=1)
        lines = ["   " + " ".join(f"{c:<4}" for c in self.column_labels)]
        for r in range(SIZE):
            cells = []
            for c in range(SIZE):
                i = r * SIZE + c
                text = ""
                for p, letters in ((0, "SCA"), (1, "sca")):
                    text += "".join(letters[k] for k in range(2) if own[p, k, i])
                    if own[p, 2, i]:
                        text += letters[2] + ARROW_NAMES[dirs[i]]
                cells.append(f"{text or ('*' if open_cells[i] else '.'):<4}")
            lines.append(f"{r + 1:>2} " + " ".join(cells))
        first, second = self.towers(state)
        hand = self.pieces - own.sum(axis=2)
        lines.append(f"towers X {first}, O {second}; in hand X {hand[0, 0]}S {hand[0, 1]}C {hand[0, 2]}A, "
                     f"O {hand[1, 0]}s {hand[1, 1]}c {hand[1, 2]}a; {'XO'[self.to_move(state)]} to move")
        return "\n".join(lines)


def _cell_name(cell: int) -> str:
    r, c = divmod(cell, SIZE)
    return f"{'abcd'[c]}{r + 1}"
