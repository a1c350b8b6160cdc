"""The triangle puzzle's board view (``tri play triangle``): the board and the three slots in
colour (:mod:`tri.games.triangle.text` lays them out), a status line with the running totals, a
summary of every move. A move is ``slot row col`` (commas also work: ``0,3,4``): put the shape of
``slot`` with its anchor triangle, marked ``[ ]`` in the slot's drawing, on cell ``(row, col)``.

A scripted game reads as a transcript (:mod:`tri.terminal.session`)::

    printf '0 3 4\\nq\\n' | tri play triangle --seed 1

Example (library)::

    import io
    from tri.games.triangle.game import TriangleGame
    from tri.terminal import play
    result = play(TriangleGame(), io.StringIO("0 3 4\\nq\\n").readline, seed=7, interactive=False)
    result.score, result.steps, result.stats["lines"], result.quit
"""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from tri.games.base import Transition
from tri.games.triangle import text as layout
from tri.games.triangle.game import TriangleGame
from tri.terminal.view import STYLE_DIM, STYLE_GOOD, STYLE_LABEL, BoardView, Progress

PROMPT = "move (slot row col), ? for help, q to quit: "

_ROLE_STYLES = {"filled": "bold bright_cyan", "new": "bold bright_yellow", "free": "grey42",
                "label": STYLE_LABEL, "note": f"{STYLE_LABEL} {STYLE_DIM}", "axis": "grey50",
                "dim": STYLE_DIM, "": ""}
_SLOT_STYLES = ("bold magenta", "bold green", "bold yellow", "bold blue")


class TriangleView(BoardView):
    """The triangle puzzle in colour; just-placed triangles highlighted."""

    prompt = PROMPT
    redraws = True
    over_note = "no shape fits anywhere."
    stat_labels = (("lines", "lines"), ("cleared", "triangles"))
    game: TriangleGame

    def __init__(self, game: TriangleGame, console: Console, interactive: bool):
        super().__init__(game, console, interactive)
        self.glyphs = layout.GLYPHS if _can_encode(console, "".join(layout.GLYPHS.values())) \
            else layout.ASCII_GLYPHS

    def draw(self, p: Progress) -> None:
        if self.interactive:
            self.console.clear()
        c = self.console
        header = Text()
        header.append("triangle puzzle", style=STYLE_LABEL)
        header.append(f"  seed {p.seed}", style=STYLE_DIM)
        c.print(header)
        c.print(self.status(p))
        c.print()
        state = self.game.scalar(p.state)
        new = set()
        if p.before is not None:
            fresh = state.grid & ~self.game.scalar(p.before).grid
            new = {(int(r), int(col)) for r, col in zip(*fresh.nonzero())}
        for line in layout.board_lines(self.game.geometry, state.grid, self.glyphs, new):
            c.print(_styled(line, first_is_base=True))
        c.print()
        fits = {s for s, _, _ in self.game.legal_actions(state)}
        for line in layout.slot_lines(state.shapes, fits, self.glyphs):
            c.print(_styled(line))
        c.print()

    def status(self, p: Progress) -> Text:
        t = Text()
        values = (("score", f"{p.score:.3f}"), ("steps", str(len(p.moves))),
                  ("lines", str(p.stats.get("lines", 0))), ("triangles", str(p.stats.get("cleared", 0))))
        for i, (name, value) in enumerate(values):
            t.append("   " if i else "")
            t.append(f"{name} ", style=STYLE_DIM)
            t.append(value, style=STYLE_LABEL)
        return t

    def help(self, p: Progress) -> None:
        g = self.glyphs
        self.say(f"rules: put a shape on free cells of its orientation, "
                 f"its [{g['up']}]/[{g['down']}] at row col.")
        self.say("full rows and diagonals clear and score; new shapes come when all slots are used.")
        legal = self.game.legal_actions(self.game.scalar(p.state))
        self.say(f"for example: {'  '.join(' '.join(map(str, m)) for m in _spread(legal, 5))}  "
                 f"({_count(len(legal), 'legal move')})", STYLE_DIM)

    def describe(self, p: Progress, seat: int, action: int, t: Transition, who: str) -> Text:
        before = self.game.scalar(p.before)
        slot = self.game.action_tuple(action)[0]
        placed = len(before.shapes[slot])
        lines, cleared = int(t.stats["lines"][0]), int(t.stats["cleared"][0])
        parts = [f"{self.game.action_name(action)}: placed {_count(placed, 'triangle')}",
                 f"reward {float(t.reward[0]):+.3f}"]
        if lines:
            parts.append(f"cleared {_count(lines, 'line')} ({_count(cleared, 'triangle')})")
        if sum(i >= 0 for i in before.slot_ids) == 1:  # the last shape: the slots are refilled
            parts.append("new shapes")
        return Text(", ".join(parts), style=STYLE_GOOD if lines else "")


def _styled(line: layout.Line, first_is_base: bool = False) -> Text:
    """``line`` in colour; ``first_is_base``: the first piece's style is the whole line's (a
    board row's number colours its spacing too)."""
    t = Text()
    for i, (text, role) in enumerate(line):
        style = _SLOT_STYLES[int(role[4:]) % len(_SLOT_STYLES)] if role.startswith("slot") \
            else _ROLE_STYLES[role]
        if i == 0 and first_is_base:
            t = Text(text, style=style)
        else:
            t.append(text, style=style)
    return t


def _can_encode(console: Console, text: str) -> bool:
    try:
        text.encode(console.encoding or "utf-8")
    except (UnicodeEncodeError, LookupError):
        return False
    return True


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


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
