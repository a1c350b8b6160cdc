"""The triangle puzzle's configuration and the tables derived from it.

Everything here runs once per config: the board geometry, the maximal lines, and for every
distinct shape the anchors where it fits the board and the bitboard of each placement. The
kernels in ``triangle_kernels`` only read these tables, so a state never carries any of them.

Bit layout: cell ``(r, c)`` is bit ``r * cols + c`` of a bitboard of ``W = ceil(rows*cols/64)``
little-endian ``uint64`` words (120 cells, 2 words by default). Death cells have bits too (they
are never set in a state); keeping the full rectangle lets a whole board shift by a shape offset.

A shape is a tuple of triangles ``(dr, dc, is_up)``; shapes are interned into ids ``0..K-1`` in a
:class:`ShapeTable`, so a slot holds a small integer.
"""

from __future__ import annotations

from typing import Annotated

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, PlainSerializer, field_validator, model_validator

Triangle = tuple[int, int, bool]
Shape = tuple[Triangle, ...]

# The reference templates (rules, "Shapes"); duplicates deliberately weight the draw.
_U, _D = True, False
DEFAULT_TEMPLATES: tuple[Shape, ...] = (
    ((0, 0, _U),),
    ((0, 0, _U),),
    ((0, 0, _U), (1, 0, _D)),
    ((0, 0, _U), (1, 0, _D)),
    ((0, 0, _D),),
    ((0, 0, _U), (0, 1, _D)),
    ((0, 0, _U), (0, 1, _D)),
    ((0, 0, _D), (0, 1, _U)),
    ((0, 0, _D), (0, 1, _U)),
    ((0, 0, _U), (0, 1, _D), (0, 2, _U)),
    ((0, 0, _D), (0, 1, _U), (0, 2, _D)),
    ((0, 0, _U), (0, 1, _D), (0, 2, _U), (1, 0, _D)),
    ((0, 0, _U), (0, 1, _D), (0, 2, _U), (1, 2, _D)),
    ((0, 0, _D), (0, 1, _U), (1, 0, _U), (1, 1, _D)),
    ((0, 0, _U), (0, 2, _U), (1, 0, _D), (1, 1, _U), (1, 2, _D)),
    ((0, 0, _U), (1, -2, _D), (1, -1, _U), (1, 0, _D)),
    ((0, 0, _U), (0, 1, _D), (1, 0, _D), (1, 1, _U)),
    ((0, 0, _U), (0, 1, _D), (1, 0, _D), (1, 1, _U), (1, 2, _D)),
    ((0, 0, _U), (0, 1, _D), (0, 2, _U), (1, 0, _D), (1, 1, _U)),
    ((0, 0, _U), (0, 1, _D), (0, 2, _U), (1, 0, _D), (1, 2, _D)),
    ((0, 0, _U), (0, 1, _D), (0, 2, _U), (1, 1, _U), (1, 2, _D)),
    ((0, 0, _U), (0, 2, _U), (1, 0, _D), (1, 1, _U), (1, 2, _D)),
    ((0, 0, _U), (0, 1, _D), (1, 0, _D), (1, 1, _U), (1, 2, _D)),
    ((0, 0, _D), (0, 1, _U), (1, 1, _D)),
    ((0, 0, _U), (1, -1, _U), (1, 0, _D)),
    ((0, 0, _U), (1, 0, _D), (1, 1, _U)),
    ((0, 0, _U), (1, -1, _U), (1, 0, _D), (1, 1, _U)),
    ((0, 0, _U), (1, -1, _U), (1, 0, _D)),
    ((0, 0, _D), (0, 1, _U), (0, 2, _D), (1, 1, _D)),
    ((0, 0, _D), (0, 1, _U), (1, 1, _D)),
    ((0, 0, _U), (0, 1, _D), (1, 0, _D)),
)
DEFAULT_PLAYABLE: tuple[tuple[int, int], ...] = (
    (3, 12), (2, 13), (1, 14), (0, 15), (0, 15), (1, 14), (2, 13), (3, 12),
)


def _parse_triangle(item: object) -> Triangle:
    """Accept ``[dr, dc, "U"|"D"|true|false]`` (YAML) or a tuple; return ``(dr, dc, is_up)``."""
    if not isinstance(item, (list, tuple)) or len(item) != 3:
        raise ValueError(f"a triangle is [dr, dc, U|D], got {item!r}")
    dr, dc, up = item
    if isinstance(up, str) and up.upper() in ("U", "D"):
        up = up.upper() == "U"
    if not isinstance(up, bool) or isinstance(dr, bool) or isinstance(dc, bool):
        raise ValueError(f"a triangle is [dr, dc, U|D], got {item!r}")
    if not isinstance(dr, int) or not isinstance(dc, int):
        raise ValueError(f"a triangle is [dr, dc, U|D], got {item!r}")
    return (dr, dc, up)


def _shape_to_yaml(shape: Shape) -> list[list[object]]:
    return [[dr, dc, "U" if up else "D"] for dr, dc, up in shape]


YamlShape = Annotated[Shape, PlainSerializer(_shape_to_yaml)]


class TriangleRewards(BaseModel):
    """Reward of a step: ``placed * n_placed + cleared * n_cleared (+ alive unless over)``."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    placed: float = Field(0.01, description="reward per triangle placed")
    cleared: float = Field(0.5, description="reward per triangle cleared (a cell of two completed lines "
                                            "counts once)")
    alive: float = Field(0.005, description="reward of a step after which the game goes on")
    illegal: float = Field(-10.0, description="reward of an illegal action, which ends the game (tri's "
                                              "players and prompts never make one)")


class TriangleConfig(BaseModel):
    """The triangle puzzle's rules (``../shared/triangle-rules.md``); defaults are the reference's."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    rows: int = Field(8, gt=0, le=32, description="rows of the board's rectangle; row 0 is the top")
    cols: int = Field(15, gt=0, le=32, description="columns of the rectangle; cell (r, c) is an up triangle "
                                                   "when r + c is odd")
    playable: tuple[tuple[int, int], ...] = Field(
        DEFAULT_PLAYABLE, description="per row, the [start, end) columns that are playable; the other "
                                      "cells are death cells")
    num_slots: int = Field(3, gt=0, le=8, description="preview slots, all refilled at once when all are "
                                                      "empty; actions are num_slots * rows * cols")
    templates: tuple[YamlShape, ...] = Field(
        DEFAULT_TEMPLATES, description="the shapes refills are drawn from, uniformly (duplicates weight "
                                       "the draw); each a list of [dr, dc, U|D] from its anchor")
    rewards: TriangleRewards = Field(TriangleRewards(), description="the rewards of a step; a game's score "
                                                                    "is their sum")

    @field_validator("templates", mode="before")
    @classmethod
    def _parse_templates(cls, value: object) -> object:
        if not isinstance(value, (list, tuple)) or not value:
            raise ValueError("must be a non-empty list of shapes")
        shapes = []
        for i, shape in enumerate(value):
            if not isinstance(shape, (list, tuple)) or not shape:
                raise ValueError(f"template {i} must be a non-empty list of [dr, dc, U|D]")
            try:
                shapes.append(tuple(_parse_triangle(t) for t in shape))
            except ValueError as exc:
                raise ValueError(f"template {i}: {exc}") from None
        return tuple(shapes)

    @model_validator(mode="after")
    def _check_playable(self) -> TriangleConfig:
        if len(self.playable) != self.rows:
            raise ValueError(f"playable must have one [start, end) per row ({self.rows})")
        for r, (start, end) in enumerate(self.playable):
            if not 0 <= start <= end <= self.cols:
                raise ValueError(f"playable row {r}: [{start}, {end}) is not inside [0, {self.cols})")
        return self


def is_up(r: int, c: int) -> bool:
    """Cell ``(r, c)`` is an up triangle when ``r + c`` is odd."""
    return (r + c) % 2 == 1


def to_words(cells: list[int], num_words: int) -> np.ndarray:
    """Bitboard ``[W] uint64`` with the given flat cell indices set."""
    words = np.zeros(num_words, dtype=np.uint64)
    for i in cells:
        words[i >> 6] |= np.uint64(1) << np.uint64(i & 63)
    return words


def from_words(words: np.ndarray, num_cells: int) -> np.ndarray:
    """Inverse of :func:`to_words`: ``[num_cells] bool``."""
    bits = np.unpackbits(np.ascontiguousarray(words, dtype="<u8").view(np.uint8), bitorder="little")
    return bits[:num_cells].astype(bool)


class Board:
    """Geometry of one config: playable cells, orientation and the maximal lines.

    Attributes (``n = rows * cols``, ``W`` words, ``L`` lines):
        playable: ``[rows, cols] bool``; playable_words: ``[W] uint64``.
        lines: list of ``L`` lists of flat cells; line_words: ``[L, W] uint64``.
        cell_lines: ``[n, 3] int32``: the line through each cell in each direction, or -1.
        line_lengths: ``[L] float64``: cells per line.
        neighbours: ``[n, 3] int32``: each cell's edge neighbours (left, right, and below an
            up cell or above a down cell), -1 where that side is off the board or a death cell.
    """

    DIRECTIONS = ("horizontal", "backslash", "slash")

    def __init__(self, cfg: TriangleConfig):
        self.rows, self.cols = cfg.rows, cfg.cols
        self.num_cells = cfg.rows * cfg.cols
        self.num_words = (self.num_cells + 63) // 64
        self.playable = np.zeros((cfg.rows, cfg.cols), dtype=bool)
        for r, (start, end) in enumerate(cfg.playable):
            self.playable[r, start:end] = True
        flat = [r * cfg.cols + c for r, c in zip(*np.nonzero(self.playable))]
        self.playable_words = to_words(flat, self.num_words)
        self.up = np.fromfunction(lambda r, c: (r + c) % 2 == 1, (cfg.rows, cfg.cols), dtype=int)
        self.lines: list[list[int]] = []
        self.cell_lines = np.full((self.num_cells, 3), -1, dtype=np.int32)
        for d in range(3):
            for run in self._runs(d):
                for cell in run:
                    self.cell_lines[cell, d] = len(self.lines)
                self.lines.append(run)
        self.line_words = np.stack([to_words(line, self.num_words) for line in self.lines]) if self.lines \
            else np.zeros((0, self.num_words), dtype=np.uint64)
        self.line_lengths = np.array([len(line) for line in self.lines], dtype=np.float64)
        self.neighbours = np.full((self.num_cells, 3), -1, dtype=np.int32)
        for r in range(self.rows):
            for c in range(self.cols):
                sides = ((r, c - 1), (r, c + 1), (r + 1, c) if is_up(r, c) else (r - 1, c))
                for j, (nr, nc) in enumerate(sides):
                    if self.on_board(nr, nc):
                        self.neighbours[r * self.cols + c, j] = nr * self.cols + nc

    def on_board(self, r: int, c: int) -> bool:
        return 0 <= r < self.rows and 0 <= c < self.cols and bool(self.playable[r, c])

    def _next(self, d: int, r: int, c: int) -> tuple[int, int]:
        """The next cell of a run in direction ``d`` (rules, "Line clears")."""
        up = is_up(r, c)
        if d == 0:
            return r, c + 1
        if d == 1:
            return (r + 1, c) if up else (r, c + 1)
        return (r, c + 1) if up else (r - 1, c)

    def _runs(self, d: int) -> list[list[int]]:
        """Maximal runs (length >= 2) of playable cells in direction ``d``."""
        successors = {}
        for r in range(self.rows):
            for c in range(self.cols):
                if self.playable[r, c]:
                    nr, nc = self._next(d, r, c)
                    if self.on_board(nr, nc):
                        successors[(r, c)] = (nr, nc)
        has_pred = set(successors.values())
        runs = []
        for r in range(self.rows):
            for c in range(self.cols):
                if not self.playable[r, c] or (r, c) in has_pred:
                    continue
                run, cell = [(r, c)], (r, c)
                while cell in successors:
                    cell = successors[cell]
                    run.append(cell)
                if len(run) >= 2:
                    runs.append([rr * self.cols + cc for rr, cc in run])
        return runs


class ShapeTable:
    """Interned shapes and, per shape, where it fits and what each placement covers.

    Arrays (``K`` shapes, ``n`` cells, ``W`` words, ``T`` = most triangles in a shape):
        sizes: ``[K] int32``; offsets: ``[K, T] int32`` flat ``dr * cols + dc`` (padded with 0).
        anchors: ``[K, W] uint64``: anchor cells where the shape lies on playable cells of its
            orientation (ignoring occupancy).
        masks: ``[K, n, W] uint64``: the cells a placement at each anchor covers (0 where it
            does not fit).
        images: ``[K, rows, cols] float32``: the shape drawn at a fixed place, for the network.
        lines: ``[K, n, M] int32``: the distinct lines through the cells of each placement
            (-1 padded), so a step checks each candidate line once.

    Ids are stable: adding a shape appends; the arrays are rebuilt, never edited in place, so
    earlier references stay valid.
    """

    def __init__(self, board: Board, shapes: tuple[Shape, ...] = ()):
        self.board = board
        self.shapes: list[Shape] = []
        self._ids: dict[frozenset[Triangle], int] = {}
        for shape in shapes:
            self.intern(shape)

    def __len__(self) -> int:
        return len(self.shapes)

    def intern(self, shape: Shape) -> int:
        """The id of ``shape`` (a sequence of ``(dr, dc, is_up)``), adding it if new."""
        shape = tuple(_parse_triangle(t) for t in shape)
        if not shape:
            raise ValueError("a shape needs at least one triangle")
        key = frozenset(shape)
        if len(key) != len(shape):
            raise ValueError(f"shape {shape} repeats a triangle")
        if key not in self._ids:
            self._ids[key] = len(self.shapes)
            self.shapes.append(shape)
            self._build()
        return self._ids[key]

    def _build(self) -> None:
        b = self.board
        k_count, t_max = len(self.shapes), max(len(s) for s in self.shapes)
        self.sizes = np.array([len(s) for s in self.shapes], dtype=np.int32)
        self.offsets = np.zeros((k_count, t_max), dtype=np.int32)
        self.anchors = np.zeros((k_count, b.num_words), dtype=np.uint64)
        self.masks = np.zeros((k_count, b.num_cells, b.num_words), dtype=np.uint64)
        self.images = np.zeros((k_count, b.rows, b.cols), dtype=np.float32)
        self.lines = np.full((k_count, b.num_cells, 3 * t_max), -1, dtype=np.int32)
        for k, shape in enumerate(self.shapes):
            self.offsets[k, : len(shape)] = [dr * b.cols + dc for dr, dc, _ in shape]
            fits = []
            for r in range(b.rows):
                for c in range(b.cols):
                    cells = [(r + dr, c + dc, up) for dr, dc, up in shape]
                    if all(b.on_board(rr, cc) and is_up(rr, cc) == up for rr, cc, up in cells):
                        a, flat = r * b.cols + c, [rr * b.cols + cc for rr, cc, _ in cells]
                        fits.append(a)
                        self.masks[k, a] = to_words(flat, b.num_words)
                        through = np.unique(b.cell_lines[flat])
                        through = through[through >= 0]
                        self.lines[k, a, : through.size] = through
            self.anchors[k] = to_words(fits, b.num_words)
            self.images[k] = self._image(shape)

    def _image(self, shape: Shape) -> np.ndarray:
        """The shape drawn with its top-left triangle near ``(0, 0)`` at a parity that keeps its
        orientations, clipped to the board; a fixed drawing per shape is all the network needs."""
        b = self.board
        r0 = -min(dr for dr, _, _ in shape)
        c0 = -min(dc for _, dc, _ in shape)
        dr, dc, up = shape[0]
        if is_up(r0 + dr, c0 + dc) != up:
            c0 += 1
        img = np.zeros((b.rows, b.cols), dtype=np.float32)
        for dr, dc, _ in shape:
            if 0 <= r0 + dr < b.rows and 0 <= c0 + dc < b.cols:
                img[r0 + dr, c0 + dc] = 1.0
        return img



# The measured recipe (README, "Learning runs"): params.yaml sections, over the embedded defaults,
# that trained the best triangle agent on this machine (its ablation table: 163 against greedy's 34
# after 58 minutes, then bfloat16, then reanalysed value targets: 180 with one tree after 32
# generations, then afterstates: 175.6 with one tree after 24 generations, +19.5 against the run
# without them at 24).
RECIPE: dict[str, dict] = {
    "mcts": {"simulations": 16, "gumbel": True, "gumbel_actions": 16, "discount": 0.95, "gumbel_c_scale": 1.0,
             "afterstates": True},
    "selfplay": {"games": 512, "shards": 2, "concurrent": 128, "td_steps": 10},
    "train": {"window": 6, "samples_per_position": 3.0, "max_steps": 500, "threads": 2, "reanalyse": True},
}
