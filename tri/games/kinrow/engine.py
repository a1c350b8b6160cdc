"""The engine shared by the k-in-a-row games (:mod:`tri.games.kinrow.connect4`, :mod:`tri.games.kinrow.mnk`,
Gobang): numba kernels over packed states and :class:`KInRowGame`, the batched protocol plus a scalar
API.

A state is one row of ``2 * W + 1`` ``uint64`` words, seen from the side to move, where ``W`` is the
words of one bitboard (:class:`~tri.games.kinrow.rules.Lines`: 1 for Connect Four and Tic-Tac-Toe,
so their states are ``[3]``; 2 for Gobang's 9 x 9)::

    [0, W)      the side to move's stones (cell i: bit i % 64 of word i // 64)
    [W, 2W)     the other side's stones (the player who moved last)
    2W          flags: OVER (game over), WON (the last mover completed a row), ILLEGAL (the side
                to move tried an illegal move, which ended the game; the halves were not swapped)

A legal move adds a stone to the first half and swaps the halves, so the opponent is to move. Who
is who in absolute terms (the first player, ``X``, or the second, ``O``) follows from the number
of stones: the first player is to move when it is even.

Rewards (to the player who acted, :mod:`tri.games.base`): +1 for completing ``k`` in a row (the
game ends), 0 for any other legal move (a full board without a row ends the game drawn), -1 for
an illegal move (an occupied cell, a full column, an action out of range), which ends the game:
a loss for the player who made it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

import numba as nb
import numpy as np

from tri.games.base import Symmetry, Transition
from tri.games.kinrow.rules import Lines

_SEPARATORS = re.compile(r"[\s,;]+")  # between moves of a move list

OVER = np.uint64(1)
WON = np.uint64(2)
ILLEGAL = np.uint64(4)
ILLEGAL_REWARD = -1.0

_PUNCTUATION = re.compile(r"[(),;:\[\]]")
_NUMBER = re.compile(r"[+-]?\d+")
_LONG_NUMBER = re.compile(r"\d{10,}")
MAX_DIGITS = 9  # no board has a billion cells: a longer number is no move


@nb.njit(cache=True, nogil=True)
def _free(states, b, nw, cell, cell_word, cell_bit):
    """Whether ``cell`` is empty in ``states[b]``."""
    w = cell_word[cell]
    return ((states[b, w] | states[b, nw + w]) & cell_bit[cell]) == 0


@nb.njit(cache=True, nogil=True)
def step_batch(states, actions, gravity, rows, cols, cell_word, cell_bit, windows, cell_windows, full,
               out, reward, terminal):
    """Apply ``actions [B]`` to ``states [B, 2W + 1]``, writing ``out [B, 2W + 1]``, ``reward [B]``
    and ``terminal [B]``. ``gravity``: an action is a column (the stone falls to its lowest empty
    cell); otherwise an action is a cell."""
    nw = full.shape[0]
    f = 2 * nw
    for b in range(states.shape[0]):
        for i in range(f + 1):
            out[b, i] = states[b, i]
        flags = states[b, f]
        reward[b] = 0.0
        if (flags & OVER) != 0:
            terminal[b] = True
            continue
        a = actions[b]
        cell = -1
        if gravity:
            if 0 <= a < cols:
                for r in range(rows):
                    if _free(states, b, nw, r * cols + a, cell_word, cell_bit):
                        cell = r * cols + a
                        break
        elif 0 <= a < rows * cols and _free(states, b, nw, a, cell_word, cell_bit):
            cell = a
        if cell < 0:
            out[b, f] = flags | OVER | ILLEGAL
            reward[b] = -1.0
            terminal[b] = True
            continue
        for i in range(nw):  # swap the halves: the mover's stones (with the new one) go second
            out[b, i] = states[b, nw + i]
            out[b, nw + i] = states[b, i]
        w = cell_word[cell]
        out[b, nw + w] = out[b, nw + w] | cell_bit[cell]
        won = False
        for j in range(cell_windows.shape[1]):
            win = cell_windows[cell, j]
            if win < 0:
                break
            complete = True
            for i in range(nw):
                if (out[b, nw + i] & windows[win, i]) != windows[win, i]:
                    complete = False
                    break
            if complete:
                won = True
                break
        if won:
            flags = flags | OVER | WON
            reward[b] = 1.0
        else:
            filled = True
            for i in range(nw):
                if (out[b, i] | out[b, nw + i]) != full[i]:
                    filled = False
                    break
            if filled:
                flags = flags | OVER
        out[b, f] = flags
        terminal[b] = (flags & OVER) != 0


@nb.njit(cache=True, nogil=True)
def legal_batch(states, gravity, rows, cols, cell_word, cell_bit, nw, out):
    """``out [B, A] bool``: with gravity, a column whose top cell is empty; otherwise an empty
    cell. Nothing is legal in a finished game. ``nw``: words per bitboard."""
    for b in range(states.shape[0]):
        if (states[b, 2 * nw] & OVER) != 0:
            for a in range(out.shape[1]):
                out[b, a] = False
            continue
        if gravity:
            top = (rows - 1) * cols
            for c in range(cols):
                out[b, c] = _free(states, b, nw, top + c, cell_word, cell_bit)
        else:
            for a in range(rows * cols):
                out[b, a] = _free(states, b, nw, a, cell_word, cell_bit)


def unpack(words: np.ndarray, num_cells: int) -> np.ndarray:
    """``[...] uint64 -> [..., num_cells] bool``: the bits of each bitboard."""
    shifts = np.arange(num_cells, dtype=np.uint64)
    return ((words[..., None] >> shifts) & np.uint64(1)).astype(bool)


def pack(bits: np.ndarray) -> np.ndarray:
    """Inverse of :func:`unpack`: ``[..., n] bool -> [...] uint64``."""
    n = bits.shape[-1]
    weights = np.uint64(1) << np.arange(n, dtype=np.uint64)
    return np.bitwise_or.reduce(np.where(bits, weights, np.uint64(0)), axis=-1).astype(np.uint64)


def unpack_words(words: np.ndarray, num_cells: int) -> np.ndarray:
    """``[..., W] uint64 -> [..., num_cells] bool``: the bits of a bitboard of ``W`` words (cell
    ``i`` is bit ``i % 64`` of word ``i // 64``)."""
    bits = unpack(words, 64).reshape(*words.shape[:-1], words.shape[-1] * 64)
    return bits[..., :num_cells]


def pack_words(bits: np.ndarray, words: int) -> np.ndarray:
    """Inverse of :func:`unpack_words`: ``[..., n] bool -> [..., words] uint64``."""
    padded = np.zeros((*bits.shape[:-1], words * 64), dtype=bool)
    padded[..., : bits.shape[-1]] = bits
    return pack(padded.reshape(*bits.shape[:-1], words, 64))


class KInRowGame:
    """A two-player k-in-a-row game on a ``rows x cols`` board (see the module docstring).

    Subclasses set ``name`` and ``gravity`` and describe moves to people (``why_illegal`` and
    the :class:`~tri.games.base.PlayableGame` methods ``parse_move``, ``action_name``,
    ``move_help``, ``render``). Actions: a column ``0..cols-1`` with gravity, else a cell
    ``r * cols + c``.

    ``encode`` gives 4 planes ``[B, 4, rows, cols]``: the side to move's stones, the opponent's,
    ones (marks the board inside the network's zero padding), and ones when the side to move is
    the first player (in Connect Four parity decides many endgames).
    """

    num_players = 2
    stochastic = False
    name = "kinrow"
    gravity = False

    def __init__(self, rows: int, cols: int, k: int):
        self.rows, self.cols, self.k = rows, cols, k
        self.lines = Lines(rows, cols, k)
        self.num_cells = rows * cols
        self.words = self.lines.words  # W, words per bitboard
        self.state_size = 2 * self.words + 1
        self.flags = 2 * self.words  # the flags word's index
        self.move_limit = self.num_cells  # a stone per move, and the board fills
        self.num_actions = cols if self.gravity else self.num_cells
        self.obs_shape = (4, rows, cols)
        self._tab = (self.gravity, rows, cols, self.lines.cell_word, self.lines.cell_bit, self.lines.windows,
                     self.lines.cell_windows, self.lines.full)

    # ---- batched protocol ----------------------------------------------------------------

    def initial(self, seeds: np.ndarray) -> np.ndarray:
        return np.zeros((np.asarray(seeds).shape[0], self.state_size), dtype=np.uint64)

    def legal(self, states: np.ndarray) -> np.ndarray:
        out = np.empty((states.shape[0], self.num_actions), dtype=bool)
        g, rows, cols, word, bit = self._tab[:5]
        legal_batch(np.ascontiguousarray(states, dtype=np.uint64), g, rows, cols, word, bit, self.words, out)
        return out

    def step(self, states: np.ndarray, actions: np.ndarray) -> Transition:
        b = states.shape[0]
        out = np.empty((b, self.state_size), dtype=np.uint64)
        reward, terminal = np.empty(b), np.empty(b, dtype=bool)
        step_batch(np.ascontiguousarray(states, dtype=np.uint64),
                   np.ascontiguousarray(actions, dtype=np.int64), *self._tab, out, reward, terminal)
        return Transition(out, reward, terminal)

    def terminal(self, states: np.ndarray) -> np.ndarray:
        return (states[:, self.flags] & OVER) != 0

    def encode(self, states: np.ndarray) -> np.ndarray:
        b = states.shape[0]
        out = np.empty((b, 4, self.rows, self.cols), dtype=np.float32)
        stones = self._cells(states).reshape(b, 2, self.rows, self.cols)
        out[:, :2] = stones
        out[:, 2] = 1.0
        out[:, 3] = (self.stones(states) % 2 == 0).astype(np.float32)[:, None, None]
        return out

    def reseed(self, states: np.ndarray, seeds: np.ndarray) -> np.ndarray:
        return states.copy()  # deterministic: no chance stream

    def symmetries(self) -> tuple[Symmetry, ...]:
        raise NotImplementedError

    def transform(self, states: np.ndarray, symmetry: Symmetry) -> np.ndarray:
        """``[B, L] -> [B, L]``: the positions ``symmetry`` maps ``states`` to (stones moved by
        ``symmetry.cells``, flags kept)."""
        out = states.copy()
        moved = pack_words(self._cells(states)[..., symmetry.cells], self.words)
        out[:, : self.flags] = moved.reshape(states.shape[0], self.flags)
        return out

    def _cells(self, states: np.ndarray) -> np.ndarray:
        """``[B, L] -> [B, 2, n] bool``: the side to move's stones and the other side's."""
        halves = states[:, : self.flags].reshape(states.shape[0], 2, self.words)
        return unpack_words(halves, self.num_cells)

    def stones(self, states: np.ndarray) -> np.ndarray:
        """``[B]`` int64: stones on the board (moves played, illegal attempts excluded)."""
        stones = states[:, : self.words] | states[:, self.words: self.flags]
        return np.bitwise_count(stones).sum(axis=1).astype(np.int64)

    def line_fill(self, states: np.ndarray) -> np.ndarray:
        """``[B]``: the greedy player's tie-break, scored for the player who moved *last* (the
        opponent of the side to move in ``states``): the sum over the windows still open to it
        (no opposing stone) of its squared filled fraction, minus the same sum for the side to
        move. It prefers moves that build rows and block the opponent's."""
        w = self.lines.windows[None]  # [1, W, words]
        last = states[:, None, self.words: self.flags]  # [B, 1, words]
        nxt = states[:, None, : self.words]

        def filled(a: np.ndarray) -> np.ndarray:  # [B, W]: a's stones in each window
            return np.bitwise_count(a & w).sum(axis=2)

        mine_fill = (filled(last) / self.k) ** 2 * (filled(nxt) == 0)
        their_fill = (filled(nxt) / self.k) ** 2 * (filled(last) == 0)
        return mine_fill.sum(axis=1) - their_fill.sum(axis=1)

    # ---- scalar API (one state: a row [L] uint64) -------------------------------------------

    def new(self) -> np.ndarray:
        """The empty board, ``[L] uint64``."""
        return np.zeros(self.state_size, dtype=np.uint64)

    def legal_actions(self, state: np.ndarray) -> list[int]:
        return np.flatnonzero(self.legal(state[None])[0]).tolist()

    def is_over(self, state: np.ndarray) -> bool:
        return bool(state[self.flags] & OVER)

    def play(self, state: np.ndarray, action: int) -> tuple[np.ndarray, float, bool]:
        """``(next state, reward to the mover, terminal)`` of a legal ``action``; an illegal one
        raises ``ValueError`` saying why (use :meth:`step` to apply the protocol's penalty)."""
        why = self.why_illegal(state, action)
        if why is not None:
            raise ValueError(why)
        t = self.step(state[None], np.array([action]))
        return t.states[0], float(t.reward[0]), bool(t.terminal[0])

    def from_moves(self, moves: str) -> np.ndarray:
        """The state after ``moves``: 1-based move numbers (a column with gravity, else a cell)
        from the empty board, separated by spaces or commas, or run together when every move is
        one digit (Pons' Connect Four notation ``"4453"``, Tic-Tac-Toe's ``"519"``).
        ``ValueError`` names a malformed or illegal move."""
        text = moves.strip()
        if self.num_actions <= 9 and not _SEPARATORS.search(text):
            parts = list(text)
        else:
            parts = [p for p in _SEPARATORS.split(text) if p]
        noun = "column" if self.gravity else "cell"
        actions = []
        for i, p in enumerate(parts):
            if not p.isdigit():
                raise ValueError(f"move {i + 1}: {p!r} is not a {noun} number")
            actions.append(int(p) - 1)
        return self.from_actions(actions)

    def from_actions(self, actions: Iterable[int]) -> np.ndarray:
        """The state after playing ``actions`` (0-based) from the empty board; ``ValueError``
        naming the first illegal one."""
        state = self.new()
        for i, a in enumerate(actions):
            why = self.why_illegal(state, int(a))
            if why is not None:
                raise ValueError(f"move {i + 1}: {why}")
            state = self.step(state[None], np.array([int(a)])).states[0]
        return state

    def first_to_move(self, state: np.ndarray) -> bool:
        """Whether the first player (``X``) is to move."""
        return int(self.stones(state[None])[0]) % 2 == 0

    def board(self, state: np.ndarray) -> np.ndarray:
        """``[rows, cols] int8`` in absolute colours: 1 = the first player's stone (``X``),
        2 = the second player's (``O``), 0 = empty; row ``r`` is bit row ``r``."""
        mine, theirs = self._cells(state[None])[0]
        x_stones, o_stones = (mine, theirs) if self.first_to_move(state) else (theirs, mine)
        return (x_stones.astype(np.int8) + 2 * o_stones.astype(np.int8)).reshape(self.rows, self.cols)

    def result(self, state: np.ndarray) -> float | None:
        """The finished game's result for the first player (+1 win, 0 draw, -1 loss); None while
        it goes on."""
        flags = state[self.flags]
        if not flags & OVER:
            return None
        sign = 1.0 if self.first_to_move(state) else -1.0  # +1: the first half is X's stones
        if flags & ILLEGAL:
            return -sign  # the side to move tried an illegal move and lost
        if flags & WON:
            return -sign  # the last mover (the second half) completed a row
        return 0.0

    # ---- for people (tri.games.base.PlayableGame; the notation is the subclass's) ----------

    def to_move(self, state: np.ndarray) -> int:
        """The seat to move: 0 for the first player (``X``), 1 for the second (``O``)."""
        return 0 if self.first_to_move(state) else 1

    def why_illegal(self, state: np.ndarray, action: int) -> str | None:
        """None if ``action`` is legal in ``state``, else a short reason for a person."""
        raise NotImplementedError


def read_numbers(text: str, words: Mapping[str, str]) -> list[tuple[str | None, int | None]] | None:
    """``text`` as a list of numbers, each with the label of the word before it, if any
    (``words`` maps spellings to labels): ``"cell 5 (row 2, column 2)"`` ->
    ``[("cell", 5), ("row", 2), ("col", 2)]`` with ``{"cell": "cell", "row": "row", "column":
    "col"}``. Brackets, commas and semicolons separate like spaces. None if anything else is in
    the text. A number of more than :data:`MAX_DIGITS` digits (leading zeros aside) reads as None
    (Python's ``int`` refuses more than 4300 digits; no board needs 10)."""
    out: list[tuple[str | None, int | None]] = []
    label = None
    for token in _PUNCTUATION.sub(" ", text.lower()).split():
        if label is None and token in words:
            label = words[token]
            continue
        if not _NUMBER.fullmatch(token):
            return None
        digits = token.lstrip("+-").lstrip("0") or "0"
        value = int(digits) if len(digits) <= MAX_DIGITS else None
        out.append((label, -value if value is not None and token.startswith("-") else value))
        label = None
    return out if label is None else None


def quoted(text: str, limit: int = 40) -> str:
    """``text`` shortened for a one-line message: every number of more than :data:`MAX_DIGITS`
    digits cut to its first 9 and "...", then the whole to ``limit`` characters."""

    def cut(number: re.Match) -> str:
        digits = number[0].lstrip("0") or "0"
        return digits if len(digits) <= MAX_DIGITS else digits[:MAX_DIGITS] + "..."

    text = _LONG_NUMBER.sub(cut, text)
    return text if len(text) <= limit else text[: limit - 3] + "..."
