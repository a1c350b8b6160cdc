"""Pictures of a whole game played by a checkpoint: the triangle puzzle as a strip of its key
moments ending with the final position, above its score after every move (and, if asked, a GIF
of every move); two-player games as the final board with move numbers. Written atomically.

The generation flow draws its candidate's game (after the arena and the commit) into
:func:`tri.layout.game_picture_path` (``data/pictures/gen-NNNN.png``, a picture for people);
tracking only logs that file (:mod:`tri.record.runs`). This module plays the game (through the
players and the episode loop); the tracking modules do not import it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tri import atomic
from tri.arena import arena_seeds
from tri.config import Params
from tri.device import torch_threads
from tri.episodes import run_episodes
from tri.games import make_game
from tri.player_specs import PlayerSpec
from tri.players import make_agent


def render_game(params: Params, checkpoint: Path, out: Path, *, generation: int = 0, seed: int | None = None,
                max_moves: int | None = None, panels: int = 12, simulations: int | None = None,
                device: str = "cpu", game=None, animation: Path | None = None) -> Path | None:
    """Play one whole game with ``checkpoint`` and the arena's search settings (on the first
    arena seed of ``generation`` unless ``seed``; at most ``arena.max_moves`` moves, or
    ``max_moves``; ``simulations``: another search budget, for a cheaper picture) and write a
    PNG of it to ``out``. Triangle puzzle: a strip of at most ``panels`` boards, the key moments
    of the game (:func:`key_moves`: evenly spread, preferring moves that cleared lines) ending
    with the final position, each with its move number and score (just-placed triangles
    highlighted, cleared ones shaded), above the score after every move. Two-player games: the
    candidate against itself to the end, the final board
    (:meth:`~tri.games.base.PlayableGame.geometry`) with the move numbers. ``device``: a
    resolved torch device (:func:`tri.device.resolve_device`). Returns ``out``, or None for a
    game it cannot draw. ``game``: the game of ``params`` if already built. ``animation``: also
    write a GIF of every move there (triangle puzzle; a fraction of a second more)."""
    game = game or make_game(params.game)
    two = game.num_players == 2
    if not (two or game.name == "triangle"):  # the drawings this module knows
        return None
    ap = params.arena
    seed = int(arena_seeds(ap.seed, 1, generation)[0]) if seed is None else seed
    rng = np.random.default_rng([ap.seed, generation, 0xA2E4A])
    agent = make_agent(PlayerSpec("mcts", Path(checkpoint), simulations), game, params.mcts, ap, rng, device)
    with torch_threads():  # as in the arena: the same moves on any machine
        ep = run_episodes(game, [agent] * game.num_players, np.array([seed]), concurrent=1,
                          max_moves=min(max_moves or ap.max_moves, ap.max_moves), record=True,
                          discount=params.mcts.discount, bonus=params.mcts.move_bonus)
    pos, summary = ep.positions, ep.games[0]
    after = game.step(pos.state[-1:], pos.action[-1:]).states if len(pos) else pos.state[:0]
    states = np.concatenate([pos.state, after])
    title = f"generation {generation} candidate, seed {seed}: {len(pos)} moves"
    if two:
        title += "" if summary.terminal else " (cut)"
        outcome = {1.0: "first player wins", -1.0: "second player wins"}.get(summary.outcome, "draw")
        _draw_stones(game, [game.board(s) for s in states], out,
                     f"{title}, {outcome}\nthe final position, each stone numbered by the move that placed it")
    else:
        _draw_triangle_game(game, states, pos.action, out, title, terminal=summary.terminal, panels=panels,
                            animation=animation)
    return Path(out)


def key_moves(lines: np.ndarray, panels: int) -> list[int]:
    """The moves (1-based) a strip of ``panels`` boards shows of a game whose move ``i`` cleared
    ``lines[i - 1]`` lines: evenly spread over the game, each the line-clearing move nearest its
    place when one is within half a spacing, always ending with the last move."""
    n = len(lines)
    if n == 0:
        return []
    if n <= panels:
        return list(range(1, n + 1))
    clears = np.flatnonzero(np.asarray(lines) > 0) + 1
    spacing = n / panels
    chosen = {n}
    for j in range(1, panels):
        target = round(j * spacing)
        near = [int(c) for c in clears if abs(c - target) <= spacing / 2 and c not in chosen and c != n]
        chosen.add(min(near, key=lambda c: (abs(c - target), c)) if near else target)
    return sorted(chosen)


@dataclass(frozen=True)
class _Moves:
    """A triangle game move by move: ``boards[i]`` (occupancy after move ``i``; 0: the start),
    ``placed[i]`` (the cells move ``i`` filled, cleared or not), ``score[i]`` (after move
    ``i``), ``lines[i - 1]`` (lines move ``i`` cleared)."""

    boards: list
    placed: list[set]
    score: np.ndarray
    lines: np.ndarray


def _moves(game, states: np.ndarray, actions: np.ndarray) -> _Moves:
    n = len(actions)
    info = game.step_info(states[:-1], actions)[1] if n else np.zeros((0, 6))
    placed: list[set] = [set()]
    for i, (state, action) in enumerate(zip(game.states(states[:-1]), actions)):
        slot, row, col = game.action_tuple(int(action))  # the triangle drawing: its own notation
        placed.append({(row + dr, col + dc) for dr, dc, _ in state.shapes[slot] or ()})
    return _Moves([s.grid for s in game.states(states)], placed, np.concatenate([[0.0], np.cumsum(info[:, 0])]),
                  info[:, 2].astype(int))


def _draw_triangle_game(game, states: np.ndarray, actions: np.ndarray, out: Path, title: str, *,
                        terminal: bool, panels: int = 12, animation: Path | None = None) -> None:
    """The strip of key moments (:func:`key_moves`) and the score after every move; a GIF of
    every move to ``animation`` if given."""
    n = len(actions)
    m = _moves(game, states, actions)
    shown = key_moves(m.lines, panels) or [0]
    titles = []
    for i in shown:
        k = int(m.lines[i - 1]) if i else 0
        label = f"move {i}: score {m.score[i]:.2f}" + (f", {k} line{'s' if k > 1 else ''}" if k else "")
        titles.append("start" if i == 0 else label + (" (last)" if i == n else ""))
    end = "game over" if terminal else "cut at the move limit"
    title = f"{title}, score {m.score[-1]:.2f}, {int(m.lines.sum())} lines cleared, {end}"
    _draw_boards(game, [m.boards[i] for i in shown], [m.boards[max(i - 1, 0)] for i in shown],
                 [m.placed[i] for i in shown], titles, out, title, score=m.score, lines=m.lines, shown=shown)
    if animation is not None:
        _animate(game, m, animation, end)


def _animate(game, m: _Moves, out: Path, end: str, *, side: int = 30) -> None:
    """A GIF with a frame per move (Pillow draws it directly: about 2 ms a frame), the last
    frame held; colours as in the strip."""
    # Pillow comes with matplotlib; only when an animation is asked for.
    from PIL import Image, ImageDraw, ImageFont

    b = game.geometry
    h = math.sqrt(3) / 2
    cells = [(r, c) for r in range(b.rows) for c in range(b.cols) if b.playable[r, c]]
    polys = []
    for r, c in cells:
        x, top = (c + 1) / 2, r * h
        shape = ([(x - 0.5, top + h), (x + 0.5, top + h), (x, top)] if b.up[r, c]
                 else [(x - 0.5, top), (x + 0.5, top), (x, top + h)])
        polys.append([(10 + px * side, 50 + py * side) for px, py in shape])
    size = (max(int(20 + (b.cols + 1) / 2 * side), 240), int(60 + b.rows * h * side))
    # white, empty, kept, placed, cleared, text: the strip's colours
    palette = [255, 255, 255, 230, 230, 230, 78, 121, 167, 242, 142, 43, 244, 199, 195, 34, 34, 34]
    font = ImageFont.load_default(size=13)
    n = len(m.boards) - 1
    frames = []
    for i, grid in enumerate(m.boards):
        before, new = m.boards[max(i - 1, 0)], m.placed[i]
        frame = Image.new("P", size, 0)
        frame.putpalette(palette)
        draw = ImageDraw.Draw(frame)
        for (r, c), poly in zip(cells, polys):
            colour = (3 if (r, c) in new else 2) if grid[r, c] else 4 if before[r, c] or (r, c) in new else 1
            draw.polygon(poly, fill=colour, outline=0)
        k = int(m.lines[i - 1]) if i else 0
        draw.text((10, 6), f"move {i}/{n}: score {m.score[i]:.2f}", fill=5, font=font)
        note = end if i == n else f"cleared {k} line{'s' if k > 1 else ''}" if k else ""
        draw.text((10, 24), note, fill=5, font=font)
        frames.append(frame)
    durations = [300] * (len(frames) - 1) + [3000]
    atomic.write_with(out, lambda tmp: frames[0].save(tmp, format="GIF", save_all=True, append_images=frames[1:],
                                                      duration=durations, loop=0))


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


def _draw_boards(game, boards: list, befores: list, placed: list[set], titles: list[str], out: Path, title: str,
                 *, score: np.ndarray, lines: np.ndarray, shown: list[int]) -> None:
    """Triangle boards side by side, 4 to a row, in one axes (one collection: cheap to draw);
    below them the score after every move, the moves that cleared lines and the shown ones."""
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
    chart = 1.9  # inches: the score chart
    board_h = 0.36 * height * nrows + 0.4
    fig, ax = _figure(max(0.36 * width * ncols, 6.0), board_h + chart)
    polys, colors = [], []
    for i, (grid, before, new) in enumerate(zip(boards, befores, placed)):
        dx, dy = (i % ncols) * width, -(i // ncols) * height
        for (r, c), shape in zip(cells, shapes):
            polys.append([(x + dx, y + dy) for x, y in shape])
            if grid[r, c]:
                colors.append("#f28e2b" if (r, c) in new else "#4e79a7")
            else:
                colors.append("#f4c7c3" if before[r, c] or (r, c) in new else "#e6e6e6")
        ax.text(dx + (b.cols + 1) / 4, dy + 0.25, titles[i], ha="center", va="bottom", fontsize=7)
    ax.add_collection(PolyCollection(polys, facecolors=colors, edgecolors="white", linewidths=0.5))
    ax.set_xlim(-0.3, ncols * width - 0.7)
    ax.set_ylim(-(nrows - 1) * height - b.rows * h - 0.3, 0.9)
    ax.set_aspect("equal")
    ax.set_axis_off()
    ax.set_title(title + "\n(orange: placed by the move, pink: cleared)", fontsize=9)
    total = board_h + chart
    ax.set_position([0.01, chart / total, 0.98, board_h / total - 0.06])
    sc = fig.add_axes([0.08, 0.32 * chart / total, 0.9, 0.6 * chart / total])
    moves = np.arange(len(score))
    sc.plot(moves, score, color="#4e79a7", lw=1.2)
    cleared = np.flatnonzero(lines > 0) + 1
    sc.plot(cleared, score[cleared], "|", color="#e15759", ms=7, label="cleared lines")
    sc.plot(shown, score[shown], "o", color="#f28e2b", ms=3.5, label="shown above")
    sc.set_xlim(-0.5, max(len(score) - 1, 1) + 0.5)
    sc.set_xlabel("move", fontsize=7, labelpad=1)
    sc.set_ylabel("score", fontsize=7)
    sc.tick_params(labelsize=6)
    sc.grid(alpha=0.3)
    sc.legend(loc="upper left", fontsize=6, frameon=False)
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
