"""Play the triangle puzzle yourself in the terminal (``tri play triangle``).

:func:`play_triangle` draws the board and the three slots with rich, reads one move per line from
``read_line`` (a callable like ``sys.stdin.readline``: the next line, ``''`` at the end of input)
and plays it with the scalar API of :class:`~tri.games.triangle.game.TriangleGame`. A move is
``slot row col`` (commas also work: ``0,3,4``): put the shape of ``slot`` with its anchor
triangle, marked ``[ ]`` in the slot's drawing, on cell ``(row, col)``.

With ``interactive=False`` (standard input is not a terminal) everything is printed plainly, with
no colours or control codes, and each line read is echoed after the prompt, so a scripted game
reads as a transcript::

    printf '0 3 4\\nq\\n' | tri play triangle --seed 1

Example (library)::

    import io
    from tri.games.triangle.game import TriangleGame
    from tri.terminal.triangle import play_triangle
    result = play_triangle(TriangleGame(), 7, io.StringIO("0 3 4\\nq\\n").readline, interactive=False)
    result.score, result.steps, result.quit
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from rich.console import Console
from rich.text import Text

from tri.games.triangle.game import Step, TriangleGame, TriangleState

PROMPT = "move (slot row col), ? for help, q to quit: "
QUIT_WORDS = frozenset({"q", "quit", "exit"})
HELP_WORDS = frozenset({"?", "h", "help"})
PLAIN_WIDTH = 100  # wide enough that nothing we print wraps

_UNICODE_GLYPHS = {"up": "▲", "down": "▼", "free_up": "△", "free_down": "▽"}
_ASCII_GLYPHS = {"up": "A", "down": "V", "free_up": "^", "free_down": "v"}

_STYLE_FILLED = "bold bright_cyan"
_STYLE_NEW = "bold bright_yellow"
_STYLE_FREE = "grey42"
_STYLE_LABEL = "bold"
_STYLE_AXIS = "grey50"
_STYLE_DIM = "dim"
_STYLE_ERROR = "bold red"
_STYLE_GOOD = "bold green"
_SLOT_STYLES = ("bold magenta", "bold green", "bold yellow", "bold blue")

_SEPARATORS = re.compile(r"[\s,;]+")
_NUMBER = re.compile(r"[+-]?\d{1,9}")  # longer numbers are no move (and int() may refuse them)


@dataclass(frozen=True)
class PlayResult:
    """How a played game ended.

    ``score``: sum of the step rewards; ``steps``: legal moves played; ``lines``: lines cleared;
    ``cleared``: triangles cleared; ``game_over``: no shape fitted any more; ``quit``: the person
    stopped first (``q``, end of input, or Ctrl-C).
    """

    score: float
    steps: int
    lines: int
    cleared: int
    game_over: bool
    quit: bool


def play_triangle(game: TriangleGame, seed: int, read_line: Callable[[], str], *, interactive: bool,
                  console: Console | None = None) -> PlayResult:
    """Play one game of ``game`` seeded by ``seed``, reading moves from ``read_line``, printing to
    ``console`` (default: stdout; plain text when ``interactive`` is False). Returns the outcome;
    never exits the process."""
    if console is None:
        console = default_console(interactive)
    return _Session(game, seed, read_line, interactive, console).run()


def parse_move(text: str) -> tuple[int, int, int] | None:
    """``(slot, row, col)`` from ``"0 3 4"``, ``"0,3,4"`` or ``"(0, 3, 4)"``; None if malformed."""
    parts = [p for p in _SEPARATORS.split(text.strip().strip("()[]")) if p]
    if len(parts) != 3 or not all(_NUMBER.fullmatch(p) for p in parts):
        return None
    slot, row, col = (int(p) for p in parts)
    return slot, row, col


def default_console(interactive: bool) -> Console:
    """Colours in a terminal; plain text, no control codes, no wrapping otherwise (every
    terminal game uses this)."""
    if interactive:
        return Console(highlight=False, emoji=False)
    return Console(force_terminal=False, force_interactive=False, no_color=True, color_system=None,
                   highlight=False, emoji=False, width=PLAIN_WIDTH, soft_wrap=True)


def prompt_line(console: Console, read_line: Callable[[], str], interactive: bool, prompt: str) -> str | None:
    """Show ``prompt`` and read the next line; None at the end of input (or Ctrl-C). Shared by
    every terminal game."""
    console.print(Text(prompt, style=_STYLE_LABEL), end="")
    try:
        line = read_line()
    except (KeyboardInterrupt, EOFError):
        console.print()
        return None
    if not interactive:
        # Echo what was read so a piped game reads as a transcript.
        console.print(Text(line.rstrip("\r\n") if line else "(end of input)"))
    elif not line:
        console.print()  # Ctrl-D: end the prompt's line
    return line or None


class _Session:
    """One game in progress: the state, the running totals and the drawing."""

    def __init__(self, game: TriangleGame, seed: int, read_line: Callable[[], str], interactive: bool,
                 console: Console):
        self.game, self.seed, self.read_line = game, seed, read_line
        self.interactive, self.console = interactive, console
        self.glyphs = _UNICODE_GLYPHS if _can_encode(console, "".join(_UNICODE_GLYPHS.values())) \
            else _ASCII_GLYPHS
        self.state: TriangleState = game.new_game(seed)
        self.score, self.steps, self.lines, self.cleared = 0.0, 0, 0, 0
        self.just_placed: set[tuple[int, int]] = set()

    # ---- the loop ------------------------------------------------------------------------

    def run(self) -> PlayResult:
        self.draw()
        quit_ = False
        while not self.state.game_over:
            line = self.prompt()
            if line is None:
                quit_ = True
                break
            text = line.strip()
            if not text:
                continue
            if text.lower() in QUIT_WORDS:
                quit_ = True
                break
            if text.lower() in HELP_WORDS:
                self.help()
                continue
            move = parse_move(text)
            if move is None:
                self.say(f'could not read "{_clip(text)}": type a move as: slot row col '
                         f"(for example {self.example()})", _STYLE_ERROR)
                continue
            try:
                state, step = self.game.place(self.state, move)
            except ValueError as exc:
                self.say(f"illegal move: {exc}", _STYLE_ERROR)
                continue
            self.apply(move, state, step)
        result = PlayResult(score=self.score, steps=self.steps, lines=self.lines, cleared=self.cleared,
                            game_over=self.state.game_over, quit=quit_)
        self.finish(result)
        return result

    def prompt(self) -> str | None:
        return prompt_line(self.console, self.read_line, self.interactive, PROMPT)

    def apply(self, move: tuple[int, int, int], state: TriangleState, step: Step) -> None:
        before = self.state.grid
        self.state = state
        self.score += step.reward
        self.steps += 1
        self.lines += step.lines
        self.cleared += step.cleared
        after = state.grid
        self.just_placed = {(int(r), int(c)) for r, c in zip(*(after & ~before).nonzero())}
        summary = self.summary(move, step)
        if self.interactive:
            self.draw()
            self.say(summary, _STYLE_GOOD if step.lines else None)
        else:
            self.say(summary)
            self.draw()

    def finish(self, result: PlayResult) -> None:
        totals = (f"score {result.score:.3f}, steps {result.steps}, lines {result.lines}, "
                  f"triangles {result.cleared}")
        if result.game_over:
            self.say("no shape fits anywhere.", _STYLE_DIM)
            self.say(f"game over: {totals}", _STYLE_LABEL)
        else:
            self.say(f"stopped: {totals}", _STYLE_LABEL)

    # ---- messages ------------------------------------------------------------------------

    def say(self, message: str, style: str | None = None) -> None:
        self.console.print(Text(message, style=style or ""))

    def summary(self, move: tuple[int, int, int], step: Step) -> str:
        parts = [f"{' '.join(map(str, move))}: placed {_count(step.placed, 'triangle')}",
                 f"reward {step.reward:+.3f}"]
        if step.lines:
            parts.append(f"cleared {_count(step.lines, 'line')} ({_count(step.cleared, 'triangle')})")
        if step.refilled:
            parts.append("new shapes")
        return ", ".join(parts)

    def example(self) -> str:
        legal = self.game.legal_actions(self.state)
        return " ".join(map(str, legal[0])) if legal else "0 3 5"

    def help(self) -> None:
        g = self.glyphs
        self.say(f"rules: put a shape on free cells of its orientation, "
                 f"its [{g['up']}]/[{g['down']}] at row col.")
        self.say("full rows and diagonals clear and score; new shapes come when all slots are used.")
        legal = self.game.legal_actions(self.state)
        self.say(f"for example: {'  '.join(' '.join(map(str, m)) for m in _spread(legal, 5))}  "
                 f"({_count(len(legal), 'legal move')})", _STYLE_DIM)

    # ---- drawing -------------------------------------------------------------------------

    def draw(self) -> None:
        if self.interactive:
            self.console.clear()
        c = self.console
        header = Text()
        header.append("triangle puzzle", style=_STYLE_LABEL)
        header.append(f"  seed {self.seed}", style=_STYLE_DIM)
        c.print(header)
        c.print(self.status())
        c.print()
        for line in self.board_lines():
            c.print(line)
        c.print()
        for line in self.slot_lines():
            c.print(line)
        c.print()

    def status(self) -> Text:
        t = Text()
        for i, (name, value) in enumerate((("score", f"{self.score:.3f}"), ("steps", str(self.steps)),
                                           ("lines", str(self.lines)), ("triangles", str(self.cleared)))):
            t.append("   " if i else "")
            t.append(f"{name} ", style=_STYLE_DIM)
            t.append(value, style=_STYLE_LABEL)
        return t

    def board_lines(self) -> list[Text]:
        b = self.game.board
        grid = self.state.grid
        top = Text("    ", style=_STYLE_AXIS)
        for col in range(b.cols):
            top.append(f"{col:^3}", style=_STYLE_AXIS)
        top.rstrip()
        lines = [top]
        for r in range(b.rows):
            t = Text(f"{r:>3} ", style=_STYLE_AXIS)
            for col in range(b.cols):
                if not b.playable[r, col]:
                    t.append("   ")
                    continue
                up = bool(b.up[r, col])
                if grid[r, col]:
                    style = _STYLE_NEW if (r, col) in self.just_placed else _STYLE_FILLED
                    t.append(f" {self.glyphs['up' if up else 'down']} ", style=style)
                else:
                    t.append(f" {self.glyphs['free_up' if up else 'free_down']} ", style=_STYLE_FREE)
            t.append(f" {r:<3}", style=_STYLE_AXIS)
            t.rstrip()
            lines.append(t)
        return lines

    def slot_lines(self) -> list[Text]:
        """The slots side by side: a label, then each shape in its own mini-grid."""
        legal_slots = {s for s, _, _ in self.game.legal_actions(self.state)}
        blocks = []
        for s, shape in enumerate(self.state.shapes):
            style = _SLOT_STYLES[s % len(_SLOT_STYLES)]
            label = Text(f"slot {s}", style=_STYLE_LABEL)
            if shape is None:
                blocks.append([label, Text("(empty)", style=_STYLE_DIM)])
                continue
            if s not in legal_slots:
                label.append(" (no room)", style=_STYLE_DIM)
            blocks.append([label, *self.shape_lines(shape, style)])
        width = max(max(line.cell_len for line in block) for block in blocks) + 4
        height = max(len(block) for block in blocks)
        out = []
        for i in range(height):
            t = Text("    ")
            for block in blocks:
                piece = block[i] if i < len(block) else Text()
                t.append_text(piece)
                t.append(" " * (width - piece.cell_len))
            t.rstrip()
            out.append(t)
        return out

    def shape_lines(self, shape: tuple, style: str) -> list[Text]:
        """A shape in its own mini-grid; the anchor ``(0, 0)`` (the cell that goes at row col) is
        drawn in brackets."""
        cells = {(dr, dc): up for dr, dc, up in shape}
        rows = [dr for dr, _ in cells] + [0]
        cols = [dc for _, dc in cells] + [0]
        lines = []
        for dr in range(min(rows), max(rows) + 1):
            t = Text()
            for dc in range(min(cols), max(cols) + 1):
                up = cells.get((dr, dc))
                if up is None:
                    t.append(" · " if (dr, dc) == (0, 0) else "   ", style=_STYLE_DIM)
                    continue
                glyph = self.glyphs["up" if up else "down"]
                if (dr, dc) == (0, 0):
                    t.append("[", style=_STYLE_DIM)
                    t.append(glyph, style=style)
                    t.append("]", style=_STYLE_DIM)
                else:
                    t.append(f" {glyph} ", style=style)
            t.rstrip()
            lines.append(t)
        return lines


def _can_encode(console: Console, text: str) -> bool:
    try:
        text.encode(console.encoding or "utf-8")
    except (UnicodeEncodeError, LookupError):
        return False
    return True


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _clip(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _spread(items: list, n: int) -> list:
    """Up to ``n`` items: the first move of each slot, then evenly spaced others."""
    if len(items) <= n:
        return list(items)
    picked, seen = [], set()
    for item in items:
        if item[0] not in seen:
            seen.add(item[0])
            picked.append(item)
    step = len(items) / n
    for i in range(n):
        item = items[int(i * step)]
        if len(picked) >= n:
            break
        if item not in picked:
            picked.append(item)
    return sorted(picked[:n])
