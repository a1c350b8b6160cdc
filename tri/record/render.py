"""Pictures of a game played by a checkpoint: the triangle puzzle as a grid of boards, one per
move; two-player games as the final board with move numbers. Written atomically as PNG.

The generation flow draws its candidate's game (after the arena and the commit) into
:func:`tri.layout.game_picture_path` (``data/pictures/gen-NNNN.png``, a picture for people);
tracking only logs that file (:mod:`tri.record.runs`). This module plays the game (through the
players and the episode loop); the tracking modules do not import it.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from tri import atomic
from tri.arena import arena_seeds
from tri.config import Params
from tri.device import torch_threads
from tri.episodes import run_episodes
from tri.games import make_game
from tri.players import PlayerSpec, make_agent


def render_game(params: Params, checkpoint: Path, out: Path, *, generation: int = 0, seed: int | None = None,
                max_moves: int = 7, device: str = "cpu", game=None) -> Path | None:
    """Play one game with ``checkpoint`` and the arena's search settings (on the first arena seed
    of ``generation`` unless ``seed``) and write a PNG of it to ``out``. Triangle puzzle: the
    board before the game and after each of at most ``max_moves`` moves (just-placed triangles
    highlighted, cleared ones shaded). Two-player games: the candidate against itself to the end,
    the final board (:meth:`~tri.games.base.PlayableGame.geometry`) with the move numbers. ``device``: a resolved torch
    device (:func:`tri.device.resolve_device`). Returns ``out``, or None for a game it cannot
    draw. ``game``: the game of ``params`` if already built."""
    game = game or make_game(params.game)
    two = game.num_players == 2
    if not (two or game.name == "triangle"):  # the drawings this module knows
        return None
    ap = params.arena
    seed = int(arena_seeds(ap.seed, 1, generation)[0]) if seed is None else seed
    rng = np.random.default_rng([ap.seed, generation, 0xA2E4A])
    agent = make_agent(PlayerSpec("mcts", Path(checkpoint)), game, params.mcts, ap, rng, device)
    with torch_threads():  # as in the arena: the same moves on any machine
        ep = run_episodes(game, [agent] * game.num_players, np.array([seed]), concurrent=1,
                          max_moves=ap.max_moves if two else min(max_moves, ap.max_moves), record=True,
                          discount=params.mcts.discount)
    pos, summary = ep.positions, ep.games[0]
    after = game.step(pos.state[-1:], pos.action[-1:]).states if len(pos) else pos.state[:0]
    states = np.concatenate([pos.state, after])
    title = f"generation {generation} candidate, seed {seed}: {len(pos)} moves"
    title += "" if summary.terminal else " (cut)"
    if two:
        outcome = {1.0: "first player wins", -1.0: "second player wins"}.get(summary.outcome, "draw")
        _draw_stones(game, [game.board(s) for s in states], out, f"{title}, {outcome}")
    else:
        titles = ["start"]
        for i, (a, r, sc) in enumerate(zip(pos.action, pos.reward, pos.score)):
            slot, row, col = game.action_tuple(int(a))  # the triangle drawing: its own notation
            titles.append(f"{i + 1}: slot {slot} at ({row}, {col}), score {float(sc + r):g}")
        _draw_boards(game, [s.grid for s in game.states(states)], titles, out, title)
    return Path(out)


def _figure(width: float, height: float):
    # matplotlib takes ~1 s to import: only when a picture is drawn.
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=(width, height), dpi=90)


def _save(fig, out: Path) -> None:
    import matplotlib.pyplot as plt

    atomic.write_with(out, lambda tmp: fig.savefig(tmp, format="png"))
    plt.close(fig)


def _draw_boards(game, boards: list, titles: list[str], out: Path, title: str) -> None:
    """Triangle boards side by side, 4 to a row, in one axes (one collection: cheap to draw)."""
    from matplotlib.collections import PolyCollection

    b = game.geometry
    h = math.sqrt(3) / 2
    cells = [(r, c) for r in range(b.rows) for c in range(b.cols) if b.playable[r, c]]
    shapes = []
    for r, c in cells:
        x, top = (c + 1) / 2, -r * h
        shapes.append([(x - 0.5, top - h), (x + 0.5, top - h), (x, top)] if b.up[r, c]
                      else [(x - 0.5, top), (x + 0.5, top), (x, top - h)])
    width, height = (b.cols + 1) / 2 + 1.0, b.rows * h + 1.2  # a board plus margins and its caption
    ncols = min(4, len(boards))
    nrows = math.ceil(len(boards) / ncols)
    fig, ax = _figure(0.36 * width * ncols, 0.36 * height * nrows + 0.4)
    polys, colors, previous = [], [], None
    for i, grid in enumerate(boards):
        dx, dy = (i % ncols) * width, -(i // ncols) * height
        for (r, c), shape in zip(cells, shapes):
            polys.append([(x + dx, y + dy) for x, y in shape])
            before = previous is not None and previous[r, c]
            colors.append(("#4e79a7" if before or previous is None else "#f28e2b") if grid[r, c]
                          else "#f4c7c3" if before else "#e6e6e6")
        ax.text(dx + (b.cols + 1) / 4, dy + 0.25, titles[i], ha="center", va="bottom", fontsize=7)
        previous = grid
    ax.add_collection(PolyCollection(polys, facecolors=colors, edgecolors="white", linewidths=0.5))
    ax.set_xlim(-0.3, ncols * width - 0.7)
    ax.set_ylim(-(nrows - 1) * height - b.rows * h - 0.3, 0.9)
    ax.set_aspect("equal")
    ax.set_axis_off()
    ax.set_title(title + "  (orange: placed, pink: cleared)", fontsize=9)
    fig.subplots_adjust(left=0.01, right=0.99, bottom=0.01, top=0.93)
    _save(fig, out)


def _draw_stones(game, boards: list, out: Path, title: str) -> None:
    """A two-player game's final board: first player red, second yellow, each stone numbered
    with the move that placed it (Connect Four's row 0 is drawn at the bottom)."""
    from matplotlib.patches import Circle, Rectangle

    rows, cols = boards[-1].shape
    order = np.zeros((rows, cols), int)
    for i in range(1, len(boards)):
        for r, c in zip(*np.nonzero(boards[i] != boards[i - 1])):
            order[r, c] = i
    fig, ax = _figure(max(0.55 * cols + 0.6, 4.0), 0.55 * rows + 0.8)  # imports matplotlib (Agg) first
    ax.add_patch(Rectangle((-0.5, -0.5), cols, rows, color="#4e79a7"))
    for r in range(rows):
        for c in range(cols):
            y = r if getattr(game, "gravity", False) else rows - 1 - r
            v = int(boards[-1][r, c])
            ax.add_patch(Circle((c, y), 0.4, color={0: "white", 1: "#e15759", 2: "#edc948"}[v]))
            if v:
                ax.text(c, y, str(order[r, c]), ha="center", va="center", fontsize=8)
    ax.set_xlim(-0.6, cols - 0.4)
    ax.set_ylim(-0.6, rows - 0.4)
    ax.set_aspect("equal")
    ax.set_axis_off()
    ax.set_title(title, fontsize=8)
    _save(fig, out)
