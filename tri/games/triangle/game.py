"""The triangle puzzle (``../shared/triangle-rules.md``): scalar API for people and tools, and the
batched :class:`~tri.games.base.Game` protocol for search and self-play.

Actions: ``(slot, r, c)`` <-> ``slot * rows * cols + r * cols + c`` (360 by default). People
type them as ``slot row col`` (:meth:`TriangleGame.parse_move`, :meth:`TriangleGame.action_name`).

Example::

    from tri.games.triangle.game import TriangleGame
    game = TriangleGame()
    state = game.new_game(seed=7)
    action = game.legal_actions(state)[0]
    state, step = game.place(state, action)
    step.reward, step.cleared, step.game_over
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tri.games.base import Symmetry, Transition
from tri.games.triangle import fatal, text
from tri.games.triangle import kernels as k
from tri.games.triangle.rules import Board, Shape, ShapeTable, TriangleConfig, from_words, is_up, to_words

_DRAW = -2  # refill row marker: draw from the state's own stream
_SEPARATORS = re.compile(r"[\s,;]+")
_NUMBER = re.compile(r"[+-]?0*\d{1,9}")  # longer numbers are no move (and int() may refuse them)


def parse_placement(text: str) -> tuple[int, int, int] | None:
    """``(slot, row, col)`` from ``"0 3 4"``, ``"0,3,4"`` or ``"(0, 3, 4)"``; None if malformed
    (also for numbers of more than 9 digits, leading zeros aside: no board is that big)."""
    parts = [p for p in _SEPARATORS.split(text.strip().strip("()[]")) if p]
    if len(parts) != 3 or not all(_NUMBER.fullmatch(p) for p in parts):
        return None
    slot, row, col = (int(p) for p in parts)
    return slot, row, col


@dataclass(frozen=True)
class Step:
    """What one placement did: ``reward`` (float), ``cleared`` (distinct triangles removed),
    ``lines`` (lines cleared), ``placed`` (triangles placed), ``refilled`` (new shapes were
    drawn or injected), ``game_over``."""

    reward: float
    cleared: int
    lines: int
    placed: int
    refilled: bool
    game_over: bool


class TriangleState:
    """One position. Immutable by convention: :meth:`TriangleGame.place` returns a new state.

    ``data`` is a batch of one: the packed ``[1, L] uint64`` row described in
    :mod:`tri.games.triangle.kernels`.
    """

    __slots__ = ("data", "game")

    def __init__(self, data: np.ndarray, game: TriangleGame):
        self.data = data
        self.game = game

    @property
    def grid(self) -> np.ndarray:
        """Occupancy, ``[rows, cols] bool``."""
        b = self.game.geometry
        return from_words(self.data[0, : b.num_words], b.num_cells).reshape(b.rows, b.cols)

    @property
    def shapes(self) -> tuple[Shape | None, ...]:
        """Per slot: ``None`` or the shape as a tuple of ``(dr, dc, is_up)``."""
        return tuple(self.game.shape_table.shapes[i] if i >= 0 else None for i in self.slot_ids)

    @property
    def slot_ids(self) -> tuple[int, ...]:
        """Per slot: the interned shape id, or -1 when the slot is empty."""
        base = self.game.geometry.num_words + 2
        return tuple(int(v) - 1 for v in self.data[0, base:])

    @property
    def game_over(self) -> bool:
        return bool(self.data[0, self.game.geometry.num_words + 1] & k.GAME_OVER)

    def copy(self) -> TriangleState:
        return TriangleState(self.data.copy(), self.game)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TriangleState) and np.array_equal(self.data, other.data)

    def __hash__(self) -> int:
        return hash(self.data.tobytes())

    def __repr__(self) -> str:
        return f"TriangleState(filled={int(self.grid.sum())}, slots={self.slot_ids}, over={self.game_over})"


class TriangleGame:
    """The triangle puzzle for one :class:`TriangleConfig` (the reference rules by default)."""

    name = "triangle"
    num_players = 1
    stochastic = True
    move_limit = None  # a game lasts as long as lines keep clearing

    def __init__(self, config: TriangleConfig | None = None):
        self.config = config or TriangleConfig()
        self.geometry = Board(self.config)  # rows, cols, playable cells, lines, bit layout
        self.shape_table = ShapeTable(self.geometry)
        self.template_ids = np.array(
            [self.shape_table.intern(t) for t in self.config.templates], dtype=np.int32)
        self.num_slots = self.config.num_slots
        self.num_actions = self.num_slots * self.geometry.num_cells
        self.state_size = self.geometry.num_words + 2 + self.num_slots
        # The distinct template shapes, in first-seen order: one "where it fits" plane each.
        self.template_kinds = np.array(list(dict.fromkeys(self.template_ids.tolist())), dtype=np.int32)
        self.obs_shape = (3 + 2 * self.num_slots + len(self.template_kinds) + 4, self.geometry.rows,
                          self.geometry.cols)
        self._rewards = np.array([self.config.rewards.placed, self.config.rewards.cleared,
                                  self.config.rewards.alive, self.config.rewards.illegal])
        self._const = np.stack([self.geometry.playable, self.geometry.up]).astype(np.float32)
        self._actions = [(s, r, c) for s in range(self.num_slots)
                         for r in range(self.geometry.rows) for c in range(self.geometry.cols)]
        self._no_refill = np.full((1, self.num_slots), _DRAW, dtype=np.int32)
        self._tab_len = -1

    # ---- shared tables -------------------------------------------------------------------

    @property
    def tab(self) -> tuple:
        """The kernels' tables (rebuilt only when a new shape was interned)."""
        t = self.shape_table
        if self._tab_len != len(t):
            b = self.geometry
            self._tab = (b.playable_words, t.anchors, t.offsets, t.sizes, t.masks, b.cell_lines,
                         b.line_words, self.template_ids, t.images, self._rewards, self._const,
                         t.lines, self.template_kinds, b.line_lengths, b.neighbours)
            self._tab_len = len(t)
        return self._tab

    # ---- scalar API ----------------------------------------------------------------------

    def new_game(self, seed: int) -> TriangleState:
        """A new game whose shapes are drawn from its own stream, seeded by ``seed``."""
        return TriangleState(self.initial(np.array([seed], dtype=np.int64)), self)

    def position(self, grid: Sequence[Sequence[int]] | np.ndarray,
                 shapes: Sequence[Sequence[Sequence] | None], seed: int = 0) -> TriangleState:
        """A state from an occupancy grid (``rows x cols`` of 0/1) and one entry per slot (``None``
        or a list of ``(dr, dc, is_up)``); later refills are drawn from a stream seeded by
        ``seed``. Raises ``ValueError`` for a grid of the wrong size or filled death cells."""
        b = self.geometry
        g = np.asarray(grid)
        if g.shape != (b.rows, b.cols):
            raise ValueError(f"grid must be {b.rows} x {b.cols}, got {'x'.join(map(str, g.shape))}")
        if not np.isin(g, (0, 1)).all():
            raise ValueError("grid cells must be 0 or 1")
        g = g.astype(bool)
        if (g & ~b.playable).any():
            r, c = np.argwhere(g & ~b.playable)[0]
            raise ValueError(f"cell ({r}, {c}) is not on the board but is filled")
        if len(shapes) != self.num_slots:
            raise ValueError(f"expected {self.num_slots} slots, got {len(shapes)}")
        data = np.zeros((1, self.state_size), dtype=np.uint64)
        data[0, : b.num_words] = to_words(list(np.flatnonzero(g.reshape(-1))), b.num_words)
        data[0, b.num_words] = k.seed_stream(seed)
        for s, shape in enumerate(shapes):
            data[0, b.num_words + 2 + s] = 0 if shape is None else self.shape_table.intern(shape) + 1
        if not k.any_legal(data, self.tab):
            data[0, b.num_words + 1] |= np.uint64(k.GAME_OVER)
        return TriangleState(data, self)

    def legal_actions(self, state: TriangleState) -> list[tuple[int, int, int]]:
        """Every legal ``(slot, r, c)``, sorted."""
        out = np.empty(self.num_actions, dtype=np.int64)
        count = k.legal_indices(state.data, self.tab, out)
        return list(map(self._actions.__getitem__, out[:count].tolist()))

    def place(self, state: TriangleState, action: tuple[int, int, int],
              refill: Sequence[Sequence[Sequence] | None] | None = None) -> tuple[TriangleState, Step]:
        """Play ``action = (slot, r, c)``. ``refill``: shapes to use instead of a random draw if
        this placement empties every slot. Raises ``ValueError`` naming an illegal action."""
        s, a = self._check(state, action)
        if refill is None:
            refill_ids = self._no_refill
        else:
            if len(refill) != self.num_slots:
                raise ValueError(f"refill needs {self.num_slots} slots, got {len(refill)}")
            refill_ids = np.array([[-1 if sh is None else self.shape_table.intern(sh) for sh in refill]],
                                  dtype=np.int32)
        data, info = state.data.copy(), np.empty((1, 6))
        k.step_batch(data, np.array([s * self.geometry.num_cells + a]), refill_ids, self.tab, info)
        reward, cleared, lines, placed, over, refilled = info[0].tolist()
        return TriangleState(data, self), Step(
            reward=reward, cleared=int(cleared), lines=int(lines), placed=int(placed),
            refilled=bool(refilled), game_over=bool(over))

    def _check(self, state: TriangleState, action: tuple[int, int, int]) -> tuple[int, int]:
        """``(slot, flat cell)`` of a legal action; ``ValueError`` saying why one is illegal."""
        b = self.geometry
        try:
            s, r, c = (int(v) for v in action)
        except (TypeError, ValueError):
            raise ValueError(f"an action is (slot, row, col), got {action!r}") from None
        if self._is_legal(state, s, r, c):
            return s, r * b.cols + c
        raise ValueError(f"illegal action ({s}, {r}, {c}): {self._why_illegal(state, s, r, c)}")

    def _is_legal(self, state: TriangleState, s: int, r: int, c: int) -> bool:
        b = self.geometry
        return 0 <= s < self.num_slots and 0 <= r < b.rows and 0 <= c < b.cols \
            and bool(k.is_legal(state.data, s, r * b.cols + c, self.tab))

    def _why_illegal(self, state: TriangleState, s: int, r: int, c: int) -> str:
        b = self.geometry
        if state.game_over:
            return "the game is over"
        if not 0 <= s < self.num_slots:
            return f"there is no slot {s} (slots are 0-{self.num_slots - 1})"
        shape = state.shapes[s]
        if shape is None:
            return f"slot {s} is empty"
        grid = state.grid
        for dr, dc, up in shape:
            rr, cc = r + dr, c + dc
            if not b.on_board(rr, cc):
                return f"cell ({rr}, {cc}) is off the board"
            if is_up(rr, cc) != up:
                want, got = ("up", "down") if up else ("down", "up")
                return f"cell ({rr}, {cc}) points {got} but the shape needs {want} there"
            if grid[rr, cc]:
                return f"cell ({rr}, {cc}) is already filled"
        return "not a legal placement"

    def action_index(self, action: tuple[int, int, int]) -> int:
        s, r, c = action
        return s * self.geometry.num_cells + r * self.geometry.cols + c

    def action_tuple(self, index: int) -> tuple[int, int, int]:
        return self._actions[index]

    # ---- for people (tri.games.base.PlayableGame; a state is a row [L]) ------------------

    def parse_move(self, text: str, state: np.ndarray) -> int:
        """The action of a typed ``slot row col`` (also ``0,3,4`` and ``(0, 3, 4)``): put the shape
        of ``slot`` with its anchor (drawn in brackets) on cell ``(row, col)``. ``ValueError`` with
        a one-line message when it cannot be read or is illegal now."""
        t = text.strip()
        scalar = self.scalar(state)
        move = parse_placement(t)
        if move is None:
            legal = self.legal_actions(scalar)
            example = " ".join(map(str, legal[0])) if legal else "0 3 5"
            raise ValueError(f'could not read "{_clip(t)}": type a move as: slot row col '
                             f"(for example {example})")
        if not self._is_legal(scalar, *move):
            raise ValueError(f"illegal move {' '.join(map(str, move))}: {self._why_illegal(scalar, *move)}")
        return self.action_index(move)

    def action_name(self, action: int) -> str:
        """``slot row col``, as :meth:`parse_move` reads it."""
        return " ".join(map(str, self._actions[action]))

    def move_help(self, state: np.ndarray) -> str:
        return ("type a move as: slot row col, to put the shape of that slot with its anchor "
                "(the triangle in brackets) on the cell at row col.")

    def to_move(self, state: np.ndarray) -> int:
        return 0  # one player

    def board(self, state: np.ndarray) -> np.ndarray:
        """``[rows, cols] int8``: 1 filled, 0 empty or not part of the board."""
        g = self.geometry
        bits = from_words(np.asarray(state, dtype=np.uint64)[: g.num_words], g.num_cells)
        return bits.reshape(g.rows, g.cols).astype(np.int8)

    def occupied(self, states: np.ndarray) -> np.ndarray:
        """``[B, L] -> [B, rows * cols] bool``: the filled cells, numbered ``r * cols + c`` as the
        network's planes are (the occupancy head's targets: :mod:`tri.occupancy`)."""
        g = self.geometry
        words = np.ascontiguousarray(states[:, : g.num_words], dtype="<u8")
        bits = np.unpackbits(words.view(np.uint8).reshape(len(states), -1), axis=1, bitorder="little")
        return bits[:, : g.num_cells].astype(bool)

    def render(self, state: np.ndarray) -> str:
        """The board with its row and column numbers, then the slots (:mod:`.text`)."""
        scalar = self.scalar(state)
        fits = {s for s, _, _ in self.legal_actions(scalar)}
        return text.plain(text.board_lines(self.geometry, scalar.grid) + [[]]
                          + text.slot_lines(scalar.shapes, fits))

    def scalar(self, state: np.ndarray) -> TriangleState:
        """The :class:`TriangleState` of a state row ``[L]`` (sharing its memory)."""
        return TriangleState(np.ascontiguousarray(state, dtype=np.uint64).reshape(1, self.state_size), self)

    # ---- batched protocol ----------------------------------------------------------------

    def initial(self, seeds: np.ndarray) -> np.ndarray:
        seeds = np.ascontiguousarray(seeds, dtype=np.int64)
        out = np.zeros((seeds.shape[0], self.state_size), dtype=np.uint64)
        k.initial_batch(seeds, self.tab, out)
        return out

    def legal(self, states: np.ndarray) -> np.ndarray:
        mask = np.zeros((states.shape[0], self.num_actions), dtype=bool)
        k.legal_batch(states, self.tab, mask)
        return mask

    def step(self, states: np.ndarray, actions: np.ndarray, refills: np.ndarray | None = None,
             ) -> Transition:
        """Protocol step; ``refills [B, S]`` optionally injects shape ids for games whose slots
        empty (-1 = leave empty; a row starting with -2 draws as usual). ``transition.cleared`` and
        ``.lines`` are not part of the protocol; use :meth:`step_info` for them."""
        return self.step_info(states, actions, refills)[0]

    def step_info(self, states: np.ndarray, actions: np.ndarray, refills: np.ndarray | None = None,
                  ) -> tuple[Transition, np.ndarray]:
        """Like :meth:`step`, also returning ``info [B, 6]``: reward, cleared triangles, lines
        cleared, placed triangles, game over, refilled."""
        new = states.copy()
        if refills is None:
            refills = np.full((states.shape[0], self.num_slots), _DRAW, dtype=np.int32)
        info = np.empty((states.shape[0], 6))
        k.step_batch(new, np.ascontiguousarray(actions, dtype=np.int64),
                     np.ascontiguousarray(refills, dtype=np.int32), self.tab, info)
        stats = {"lines": info[:, 2].astype(np.int64), "cleared": info[:, 1].astype(np.int64)}
        return Transition(new, info[:, 0].copy(), info[:, 4] != 0, stats, chance=info[:, 5] != 0), info

    def terminal(self, states: np.ndarray) -> np.ndarray:
        return (states[:, self.geometry.num_words + 1] & np.uint64(k.GAME_OVER)) != 0

    def encode(self, states: np.ndarray) -> np.ndarray:
        out = np.zeros((states.shape[0], *self.obs_shape), dtype=np.float32)
        k.encode_batch(states, self.tab, out)
        return out

    def reseed(self, states: np.ndarray, seeds: np.ndarray) -> np.ndarray:
        new = states.copy()
        k.reseed_batch(new, np.ascontiguousarray(seeds, dtype=np.int64), self.geometry.num_words)
        return new

    def dead_ends(self, states: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """``[B] bool``: legal ``actions [B]`` on ``states [B, L]`` after which the shapes left in
        hand can no longer all be placed, in any order (:func:`fatal.placeable`), so the game ends
        within this cycle whatever follows; False for a placement that empties the slots (the draw
        decides what comes next)."""
        rows = states.shape[0]
        after = self.step(states, actions, np.full((rows, self.num_slots), -1, np.int32)).states
        hands = fatal.hands_of(self, after)
        left = (hands >= 0).any(axis=1)
        dead = np.zeros(rows, bool)
        dead[left] = ~fatal.placeable(self, after[left], hands[left])
        return dead

    def afterstate(self, states: np.ndarray) -> np.ndarray:
        """``[B, L] -> [B, L]``: states a drawing step produced (``Transition.chance``), as they were
        before the draw: the board kept, every slot empty, not over (the draw decides that). The
        network reads one as a position with no shapes in hand; its value is the expected value
        over the draws (``mcts.afterstates``)."""
        new = states.copy()
        w = self.geometry.num_words
        new[:, w + 2:] = 0
        new[:, w + 1] &= ~np.uint64(k.GAME_OVER)
        return new

    def sample_refills(self, rng: np.random.Generator, count: int) -> np.ndarray:
        """``[count, S]`` int32: refills for :meth:`step`'s ``refills``, each slot's shape drawn
        uniformly from the templates as the engine draws (duplicates weigh), from ``rng``, not
        from any state's stream."""
        return self.template_ids[rng.integers(0, self.template_ids.size, size=(count, self.num_slots))]

    def symmetries(self) -> tuple[Symmetry, ...]:
        """None. The board's mirror images map the board to itself, but not the template set
        (template 15 mirrored is no template), so a mirrored position has different future
        draws and, in general, a different value."""
        return ()

    def line_fill(self, states: np.ndarray) -> np.ndarray:
        """``[B]``: sum over the board's lines of (filled fraction)^2, the greedy player's
        tie-break (it prefers placements that build towards complete lines)."""
        b = self.geometry
        occ = states[:, None, : b.num_words] & b.line_words[None]
        filled = np.bitwise_count(occ).sum(axis=2)
        return ((filled / self.geometry.line_lengths) ** 2).sum(axis=1)

    def states(self, batch: np.ndarray) -> list[TriangleState]:
        """Scalar states of a batch ``[B, L]`` (copies)."""
        return [TriangleState(batch[i : i + 1].copy(), self) for i in range(batch.shape[0])]


def _clip(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
