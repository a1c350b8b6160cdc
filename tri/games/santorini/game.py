"""Santorini (no god powers) under the batched game protocol, with a scalar API for play and tests.

A state is one row of ``L = 7`` ``uint64`` words, seen from the side to move (bit
``r * size + c`` is cell ``(r, c)``, :mod:`tri.games.santorini.rules`)::

    0   the side to move's two workers
    1   the other side's two workers
    2   cells of height >= 1       3   height >= 2       4   height >= 3       5   domes
    6   flags: OVER, ILLEGAL (the side to move tried an illegal action, which ended the game),
        SECOND (the second player is to move), CUT (the length cap ended the game); bits 16-31:
        actions played

Actions (128, the rules' encoding): ``worker * 64 + move_dir * 8 + build_dir``; ``worker`` is the
mover's worker in row-major order of its cell, the build direction is taken from the worker's new
cell. A worker moves to a neighbouring cell without a worker or a dome at most one level up (down
any number), then builds on a neighbour of its new cell without a worker or a dome (a height rises
by one; on 3 it is a dome). Moving onto height 3 wins at once with no build: of such a move's
actions only the one with the lowest build direction that would be legal is legal. The reward of
a move, to its mover: +1 for a win, and +1 when the opponent is then left without a move (a
player who cannot move loses); 0 otherwise, also when the game reaches ``max_actions`` and is cut
(a draw). An illegal action ends the game with -1 for the player who made it.

People name a move by cells, ``a1``-style (the column's letter, then the row's number, row 1 at
the top): the worker's cell, where it moves, and where it builds, e.g. ``c2 c1 b1``; a winning
move needs no build.

Symmetries: the 8 of the square, directions mapped alike. The worker index of an action is the
row-major order of the mover's workers, which a symmetry may swap, so the action map depends on
the position (:class:`SantoriniSymmetry`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from tri.games.base import Symmetry, Transition
from tri.games.kinrow.engine import pack, unpack
from tri.games.kinrow.rules import grid_symmetries
from tri.games.santorini.kernels import (COMPASS, COUNT_MASK, COUNT_SHIFT, CUT, DOME, FLAGS, L1, L2, L3, MINE,
                                         NUM_ACTIONS, OVER, SECOND, THEIRS, _hinder_batch, legal_batch,
                                         step_batch)
from tri.games.santorini.rules import SantoriniConfig, cell_name, direction_map, neighbours, start_cells

_CELL = re.compile(r"([a-z])\s*0*(\d{1,2})")


@dataclass(frozen=True)
class SantoriniSymmetry(Symmetry):
    """A symmetry of the square whose action map depends on the position: ``actions`` when the
    mover's two workers keep their row-major order, ``swapped`` when the symmetry swaps it
    (both ``[128]``, the action of the original each action of the transformed board comes from);
    ``game`` recomputes which, and which build a winning move's one action has."""

    swapped: np.ndarray = None
    game: SantoriniGame = None

    def apply_targets(self, policy: np.ndarray, legal: np.ndarray, states: np.ndarray):
        """``policy [B, A]``, ``legal [B, A]`` of ``states [B, L]`` -> those of the transformed
        states: each row mapped by its own worker order, the legal actions recomputed, and a
        winning move's weight moved to its one legal action (the lowest legal build there)."""
        moved = self.game.transform(states, self)
        source = np.where(self.game.swaps(states, self)[:, None], self.swapped[None], self.actions[None])
        policy = np.take_along_axis(policy, source, axis=1)
        legal = self.game.legal(moved)
        stray = np.where(legal, 0.0, policy).reshape(len(policy), 16, 8).sum(axis=2)  # per (worker, move)
        policy = np.where(legal, policy, 0.0).reshape(len(policy), 16, 8)
        first = np.argmax(legal.reshape(len(policy), 16, 8), axis=2)
        rows, groups = np.nonzero(stray > 0)
        policy[rows, groups, first[rows, groups]] += stray[rows, groups]
        return policy.reshape(len(legal), NUM_ACTIONS).astype(np.float32), legal


class SantoriniGame:
    """Santorini for one :class:`SantoriniConfig` (see the module docstring)."""

    name = "santorini"
    num_players = 2
    stochastic = False
    state_size = 7
    num_actions = NUM_ACTIONS

    def __init__(self, config: SantoriniConfig | None = None):
        self.config = config or SantoriniConfig()
        self.size = self.rows = self.cols = self.config.size
        self.num_cells = self.size * self.size
        self.move_limit = self.config.max_actions
        self.obs_shape = (8, self.size, self.size)
        self.nbr = neighbours(self.size)
        grid3 = dict(grid_symmetries(3, 3, True))
        syms = []
        for name, cells in grid_symmetries(self.size, self.size, True):
            dmap = direction_map(grid3[name])
            inverse = np.empty(8, np.int64)
            inverse[dmap] = np.arange(8)
            a = np.arange(NUM_ACTIONS)
            w, d, e = a // 64, (a // 8) % 8, a % 8
            kept = w * 64 + inverse[d] * 8 + inverse[e]
            syms.append(SantoriniSymmetry(name, cells, kept, swapped=(1 - w) * 64 + inverse[d] * 8 + inverse[e],
                                          game=self))
        self._symmetries = tuple(syms)

    # ---- batched protocol ----------------------------------------------------------------

    def initial(self, seeds: np.ndarray) -> np.ndarray:
        """New games: the fixed start, or (``start: random``) four distinct cells from each seed."""
        seeds = np.asarray(seeds)
        out = np.zeros((seeds.shape[0], self.state_size), np.uint64)
        for i, seed in enumerate(seeds):
            if self.config.start == "fixed":
                cells = start_cells(self.size)
            else:
                cells = np.random.default_rng(int(seed)).choice(self.num_cells, size=4, replace=False)
            out[i, MINE] = (1 << int(cells[0])) | (1 << int(cells[1]))
            out[i, THEIRS] = (1 << int(cells[2])) | (1 << int(cells[3]))
        return out

    def legal(self, states: np.ndarray) -> np.ndarray:
        out = np.empty((states.shape[0], NUM_ACTIONS), bool)
        legal_batch(np.ascontiguousarray(states, dtype=np.uint64), self.nbr, out)
        return out

    def step(self, states: np.ndarray, actions: np.ndarray) -> Transition:
        b = states.shape[0]
        out = np.empty((b, self.state_size), np.uint64)
        reward, terminal = np.empty(b), np.empty(b, bool)
        step_batch(np.ascontiguousarray(states, dtype=np.uint64), np.ascontiguousarray(actions, dtype=np.int64),
                   self.nbr, self.config.max_actions, out, reward, terminal)
        return Transition(out, reward, terminal)

    def terminal(self, states: np.ndarray) -> np.ndarray:
        return (states[:, FLAGS] & OVER) != 0

    def heights(self, states: np.ndarray) -> np.ndarray:
        """``[B, size * size] int8``: each cell's height, 4 for a dome."""
        bits = unpack(states[:, L1:DOME + 1], self.num_cells).astype(np.int8)  # [B, 4, cells]
        return np.where(bits[:, 3] == 1, 4, bits[:, :3].sum(axis=1)).astype(np.int8)

    def encode(self, states: np.ndarray) -> np.ndarray:
        """``[B, 8, size, size]``: the side to move's workers, the opponent's, heights 0, 1, 2 and
        3 (one plane each), domes, and ones (the board inside the network's zero padding)."""
        b = states.shape[0]
        out = np.empty((b, 8, self.num_cells), np.float32)
        out[:, :2] = unpack(states[:, :2], self.num_cells)
        h = self.heights(states)
        for level in range(5):
            out[:, 2 + level] = h == level
        out[:, 7] = 1.0
        return out.reshape(b, 8, self.size, self.size)

    def reseed(self, states: np.ndarray, seeds: np.ndarray) -> np.ndarray:
        return states.copy()  # deterministic: no chance stream

    def symmetries(self) -> tuple[Symmetry, ...]:
        """The 7 symmetries of the square besides the identity (:class:`SantoriniSymmetry`)."""
        return self._symmetries

    def transform(self, states: np.ndarray, symmetry: Symmetry) -> np.ndarray:
        """``[B, 7] -> [B, 7]``: the positions ``symmetry`` maps ``states`` to (flags kept)."""
        out = states.copy()
        out[:, :DOME + 1] = pack(unpack(states[:, :DOME + 1], self.num_cells)[..., symmetry.cells])
        return out

    def swaps(self, states: np.ndarray, symmetry: Symmetry) -> np.ndarray:
        """``[B] bool``: whether ``symmetry`` swaps the row-major order of the mover's workers."""
        forward = np.empty(self.num_cells, np.int64)
        forward[symmetry.cells] = np.arange(self.num_cells)
        bits = unpack(states[:, MINE], self.num_cells)  # [B, cells], two set in each row
        first = np.argmax(bits, axis=1)
        second = self.num_cells - 1 - np.argmax(bits[:, ::-1], axis=1)
        return forward[first] > forward[second]

    def line_fill(self, states: np.ndarray) -> np.ndarray:
        """``[B]``: the ``greedy`` player's tie-break after equal rewards (a win first), for the
        player who moved: climb (its workers' heights), and hinder (less 10 if the opponent can
        then win, less 0.1 per move up the opponent has)."""
        out = np.empty(states.shape[0])
        _hinder_batch(np.ascontiguousarray(states, dtype=np.uint64), self.nbr, out)
        return out

    # ---- scalar API (one state: a row [7] uint64) ------------------------------------------

    def new(self) -> np.ndarray:
        return self.initial(np.zeros(1, np.int64))[0]

    def position(self, heights, first: tuple[int, int], second: tuple[int, int], *, second_to_move: bool = False,
                 actions_played: int = 0) -> np.ndarray:
        """The state of a position: ``heights [size, size]`` (0-3, 4 a dome), the first and the
        second player's worker cells (as ``r * size + c``), who is to move, the actions played.
        Whether the game is already over is not settled here."""
        h = np.asarray(heights).reshape(-1)
        s = np.zeros(self.state_size, np.uint64)
        mover, other = (second, first) if second_to_move else (first, second)
        s[MINE] = sum(1 << int(c) for c in mover)
        s[THEIRS] = sum(1 << int(c) for c in other)
        for level, word in ((1, L1), (2, L2), (3, L3), (4, DOME)):
            s[word] = sum(1 << i for i in np.flatnonzero(h >= level))
        s[FLAGS] = (SECOND if second_to_move else np.uint64(0)) | (np.uint64(actions_played) << COUNT_SHIFT)
        return s

    def legal_actions(self, state: np.ndarray) -> list[int]:
        return np.flatnonzero(self.legal(state[None])[0]).tolist()

    def is_over(self, state: np.ndarray) -> bool:
        return bool(state[FLAGS] & OVER)

    def actions_played(self, state: np.ndarray) -> int:
        return int((state[FLAGS] >> COUNT_SHIFT) & COUNT_MASK)

    def workers(self, state: np.ndarray) -> tuple[list[int], list[int]]:
        """The first and the second player's worker cells, row-major."""
        mine, theirs = (np.flatnonzero(unpack(state[w], self.num_cells)).tolist() for w in (MINE, THEIRS))
        return (theirs, mine) if state[FLAGS] & SECOND else (mine, theirs)

    def result(self, state: np.ndarray) -> float | None:
        """The finished game's result for the first player (+1 win, 0 a cut game, -1 loss); None
        while it goes on. The last mover won unless the game was cut or ended on an illegal action."""
        if not self.is_over(state):
            return None
        if state[FLAGS] & CUT:
            return 0.0
        # Otherwise the side to move lost: the previous mover won, or it tried an illegal action.
        return -1.0 if self.to_move(state) == 0 else 1.0

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

    @property
    def column_labels(self) -> str:
        return "abcdefgh"[: self.size]

    def to_move(self, state: np.ndarray) -> int:
        return 1 if state[FLAGS] & SECOND else 0

    def board(self, state: np.ndarray) -> np.ndarray:
        """``[size, size] int8``: 1 a first player's worker, 2 a second player's, 0 none."""
        first, second = self.workers(state)
        out = np.zeros(self.num_cells, np.int8)
        out[first], out[second] = 1, 2
        return out.reshape(self.size, self.size)

    def decode(self, state: np.ndarray, action: int) -> tuple[int, int, int | None]:
        """``(from cell, to cell, build cell or None for a win)`` of a legal ``action``."""
        mover = np.flatnonzero(unpack(state[MINE], self.num_cells))
        w, d, e = action // 64, (action // 8) % 8, action % 8
        start = int(mover[w])
        to = int(self.nbr[start, d])
        won = self.heights(state[None])[0, to] == 3
        return start, to, None if won else int(self.nbr[to, e])

    def action_name(self, action: int, state: np.ndarray | None = None) -> str:
        """In ``state``: cells, ``c2 c1 b1`` (worker, move, build; a win names no build). Without
        a state: the worker (1 or 2, row-major) and the compass directions of the move and the
        build, ``1 N W``. :meth:`parse_move` reads both."""
        if state is None:
            return f"{action // 64 + 1} {COMPASS[(action // 8) % 8]} {COMPASS[action % 8]}"
        return " ".join(cell_name(c, self.size) for c in self.decode(state, action) if c is not None)

    def parse_move(self, text: str, state: np.ndarray) -> int:
        """``c2 c1 b1``: your worker's cell, the cell it moves to, the cell it builds on (no build
        for a move onto height 3, which wins); or ``1 N W``: your worker (1 or 2, in reading
        order) and the compass directions of the move and the build -> the action; ``ValueError``
        with a one-line message for anything unreadable, off the board or illegal now."""
        if self.is_over(state):
            raise ValueError("the game is over")
        words = text.strip().lower().replace(",", " ").split()
        shown = text.strip() if len(text.strip()) <= 40 else text.strip()[:37] + "..."
        if not 2 <= len(words) <= 3:
            raise ValueError(f'could not read "{shown}": type your worker\'s cell, where it moves and where it '
                             f"builds, for example {self._example(state)}")
        mover = np.flatnonzero(unpack(state[MINE], self.num_cells)).tolist()
        if words[0].isdigit():
            return self._parse_compass(words, state, mover, shown)
        cells = []
        for word in words:
            match = _CELL.fullmatch(word)
            if match is None:
                raise ValueError(f'could not read "{word[:20]}" in "{shown}": a cell is its column letter and '
                                 f"row number, for example {self._example(state)}")
            column, row = match.group(1), int(match.group(2))
            if column not in self.column_labels or not 1 <= row <= self.size:
                raise ValueError(f"{column}{row} is off the board (columns a-{self.column_labels[-1]}, "
                                 f"rows 1-{self.size})")
            cells.append((row - 1) * self.size + self.column_labels.index(column))
        start, to = cells[0], cells[1]
        name = cell_name(start, self.size)
        if start not in mover:
            raise ValueError(f"{name} has no worker of yours (yours: "
                             f"{', '.join(cell_name(c, self.size) for c in mover)})")
        d = _direction(self.nbr, start, to)
        if d < 0:
            raise ValueError(f"{cell_name(to, self.size)} is not next to {name}")
        legal = self.legal(state[None])[0]
        w = mover.index(start)
        if not legal[w * 64 + d * 8: w * 64 + d * 8 + 8].any():
            raise ValueError(f"{name} cannot move to {cell_name(to, self.size)}: it is taken, a dome, or more "
                             f"than one level up")
        h = self.heights(state[None])[0]
        if h[to] == 3:
            return w * 64 + d * 8 + int(np.argmax(legal[w * 64 + d * 8: w * 64 + d * 8 + 8]))
        if len(cells) == 2:
            raise ValueError(f"say where to build after moving to {cell_name(to, self.size)}, for example "
                             f"{name} {cell_name(to, self.size)} {cell_name(start, self.size)}")
        e = _direction(self.nbr, to, cells[2])
        if e < 0:
            raise ValueError(f"{cell_name(cells[2], self.size)} is not next to {cell_name(to, self.size)}, "
                             f"where the worker stands after the move")
        action = w * 64 + d * 8 + e
        if not legal[action]:
            raise ValueError(f"cannot build on {cell_name(cells[2], self.size)}: a worker stands there or it "
                             f"has a dome")
        return action

    def _parse_compass(self, words: list[str], state: np.ndarray, mover: list[int], shown: str) -> int:
        """``1 N W`` (worker, move, build; a win may leave out its build) -> the action."""
        worker = int(words[0][:6])
        dirs = [COMPASS.index(w.upper()) if w.upper() in COMPASS else -1 for w in words[1:]]
        if worker not in (1, 2) or min(dirs) < 0:
            raise ValueError(f'could not read "{shown}": a worker is 1 or 2 (in reading order), a direction one '
                             f"of {' '.join(COMPASS)}; or type cells, for example {self._example(state)}")
        start = mover[worker - 1]
        to = int(self.nbr[start, dirs[0]])
        if to < 0:
            raise ValueError(f"{cell_name(start, self.size)} {COMPASS[dirs[0]]} is off the board")
        if len(dirs) == 1 or self.heights(state[None])[0, to] == 3:
            return self.parse_move(f"{cell_name(start, self.size)} {cell_name(to, self.size)}", state)
        at = int(self.nbr[to, dirs[1]])
        if at < 0:
            raise ValueError(f"{cell_name(to, self.size)} {COMPASS[dirs[1]]} is off the board")
        return self.parse_move(" ".join(cell_name(c, self.size) for c in (start, to, at)), state)

    def _example(self, state: np.ndarray) -> str:
        legal = np.flatnonzero(self.legal(state[None])[0])
        return self.action_name(int(legal[0]), state) if legal.size else "c2 c1 b1"

    def move_help(self, state: np.ndarray) -> str:
        return (f"type your worker's cell, where it moves and where it then builds (for example "
                f"{self._example(state)}): move to a neighbouring cell at most one level up, build next to the "
                f"new cell; moving onto level 3 wins; a player who cannot move loses.")

    def render(self, state: np.ndarray) -> str:
        """The board as text: each cell its height (``D`` a dome) and ``X``/``O`` for a first or
        second player's worker; column letters above, row numbers beside."""
        h = self.heights(state[None])[0]
        first, second = self.workers(state)
        lines = ["   " + " ".join(f"{c} " for c in self.column_labels)]
        for r in range(self.size):
            cells = []
            for c in range(self.size):
                i = r * self.size + c
                mark = "X" if i in first else "O" if i in second else "."
                cells.append(("D" if h[i] == 4 else str(h[i])) + mark)
            lines.append(f"{r + 1:>2} " + " ".join(cells))
        lines.append(f"{'XO'[self.to_move(state)]} to move; action {self.actions_played(state)} of "
                     f"{self.config.max_actions}")
        return "\n".join(lines)


def _direction(nbr: np.ndarray, start: int, to: int) -> int:
    """The direction from ``start`` to the neighbouring ``to``; -1 if they are not neighbours."""
    hits = np.flatnonzero(nbr[start] == to)
    return int(hits[0]) if hits.size else -1
